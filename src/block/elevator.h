// The request queue and its elevator: in what order requests reach the device, and which
// ones are merged into one.
//
// Linux: drivers/block/ll_rw_blk.c and elevator.c (2.4), block/ll_rw_blk.c,
// block/deadline-iosched.c, block/noop-iosched.c (2.6). Three elevators:
//   * noop: FIFO; a request adjacent to the tail merges with it (2.6 noop, through the
//     elevator core's last_merge).
//   * linus (2.4's elevator_linus_merge): a new request is inserted in ascending sector
//     order, scanning back from the tail, but never ahead of a request that has already
//     been scanned past `passovers` times (its elevator_sequence ran out): the
//     starvation bound. 2.4 sets it per request from the queue's read_latency or
//     write_latency (ELEVATOR_LINUS in include/linux/elevator.h: 8192 and 16384).
//   * deadline (2.6): per direction a sector-sorted list and a FIFO with deadlines
//     (read_expire 500 ms, write_expire 5 s); requests are dispatched in batches of
//     fifo_batch (16) along the sorted list; a batch starts at the FIFO head if that has
//     expired; reads are preferred, but writes go after writes_starved (2) read batches
//     that skipped waiting writes.
// Not modelled: anticipatory and cfq (2.6). Anticipatory's idle wait after a read and
// cfq's per-process queues matter for many readers; a single-threaded sequential reader
// sees deadline's order. Plugging/unplugging is the caller's business (add while the
// device is busy, then take()).
//
// Merging (all elevators): a request whose start is another's end (back merge) or whose
// end is another's start (front merge), in the same direction, merges if the result is
// at most max_sectors (2.4 IDE: 128 sectors = 64 KiB per request, drivers/ide/ide-probe.c
// max_sectors; 2.6 default BLK_DEF_MAX_SECTORS 1024 = 512 KiB).
//
// Invariants: every added id comes out of take() exactly once; a taken request's sectors
// are the union of its ids' sectors, contiguous.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <optional>
#include <vector>

#include "block/device.h"

namespace vmlab::block {

enum class elevator_kind { noop, linus, deadline };

struct queue_limits {
  uint32_t max_sectors = 128;
  // linus: how many later requests may be inserted ahead of a read or a write.
  int32_t read_latency = 8192, write_latency = 16384;
  // deadline (block/deadline-iosched.c defaults).
  sim_ns read_expire{500'000'000}, write_expire{5'000'000'000};
  uint32_t fifo_batch = 16, writes_starved = 2;
};

struct queued_request {
  io_request rq;
  std::vector<uint64_t> ids;  // the callers' requests merged into this one
  sim_ns arrival{};
  sim_ns deadline{};
  int32_t passovers = 0;      // linus: how many more times it may be passed
};

class request_queue {
 public:
  request_queue(elevator_kind k, queue_limits l) : kind_(k), lim_(l) {}
  // Queues `r` (merging it where it can), known to the caller as `id`.
  void add(const io_request& r, uint64_t id, sim_ns now);
  // The next request the elevator sends to the device, if any.
  std::optional<queued_request> take(sim_ns now);
  [[nodiscard]] size_t size() const { return q_.size(); }
  [[nodiscard]] uint64_t merges() const { return merges_; }

 private:
  using iter = std::list<queued_request>::iterator;
  bool try_merge(const io_request& r, uint64_t id);
  void insert_linus(queued_request q);
  iter pick_deadline(sim_ns now);

  elevator_kind kind_;
  queue_limits lim_;
  std::list<queued_request> q_;  // noop, linus: dispatch order; deadline: arrival order
  uint64_t merges_ = 0;
  // deadline state
  std::optional<uint64_t> next_sector_[2];
  uint32_t batching_ = 0, starved_ = 0;
  int last_dir_ = 0;
};

}  // namespace vmlab::block
