// A block device as the simulated block layer sees it: requests in, completion times out.
//
// Linux: include/linux/blkdev.h (struct request_queue, struct request) and the drivers
// below it. A device takes one request at a time from its queue (the elevator decides the
// order, src/block/elevator.h) and answers when it completes; devices with internal
// parallelism (NVMe, a RAID-0 set) overlap requests themselves.
//
// Contract: submit() calls come in non-decreasing `now` order; a device never looks at a
// real clock. Same requests at the same times give the same completions (deterministic).
#pragma once

#include <cstdint>
#include <string>

#include "block/clock.h"

namespace vmlab::block {

inline constexpr uint32_t kSectorBytes = 512;  // Linux's sector_t unit, whatever the media

struct io_request {
  uint64_t sector = 0;  // first 512-byte sector
  uint32_t count = 0;   // sectors, > 0
  bool write = false;
  [[nodiscard]] uint64_t end() const { return sector + count; }
  [[nodiscard]] uint64_t bytes() const { return uint64_t(count) * kSectorBytes; }
};

class block_device {
 public:
  virtual ~block_device() = default;
  // Starts `r` no earlier than `now` and returns when it completes.
  // REQUIRES: r.count > 0, r.end() <= capacity_sectors(), now >= the previous call's now.
  virtual sim_ns submit(const io_request& r, sim_ns now) = 0;
  [[nodiscard]] virtual uint64_t capacity_sectors() const = 0;
  [[nodiscard]] virtual std::string describe() const = 0;
};

}  // namespace vmlab::block
