#include "block/elevator.h"

#include <iterator>

namespace vmlab::block {
namespace {

// 2.4's bh_rq_in_between (drivers/block/elevator.c): does a request at `s` belong
// between `rq` and the request after it, in a queue that ascends and may wrap once?
bool in_between(uint64_t s, uint64_t rq, uint64_t next) {
  if (s < next && s > rq) return true;
  if (next > rq) return false;
  return s > rq || s < next;  // rq, next not ordered: the wrap point
}

}  // namespace

bool request_queue::try_merge(const io_request& r, uint64_t id) {
  // linus: 2.4 scans back from the tail and stops at a request whose sequence ran out;
  // that aging is done in insert_linus, and a merge anywhere in the queue is allowed here
  // (a simplification: 2.4 would not merge past a starved request).
  const bool tail_only = kind_ == elevator_kind::noop;
  for (auto it = q_.rbegin(); it != q_.rend(); ++it) {
    io_request& q = it->rq;
    if (q.write == r.write && q.count + r.count <= lim_.max_sectors) {
      if (q.end() == r.sector) {
        q.count += r.count;
        it->ids.push_back(id);
        ++merges_;
        return true;
      }
      if (r.end() == q.sector && !tail_only) {
        q.sector = r.sector;
        q.count += r.count;
        it->ids.push_back(id);
        ++merges_;
        return true;
      }
    }
    if (tail_only) break;
  }
  return false;
}

void request_queue::insert_linus(queued_request n) {
  auto spot = q_.end();  // default: the tail
  for (auto it = q_.end(); it != q_.begin();) {
    --it;
    if (it->passovers-- <= 0) break;  // starved: nothing may pass it
    auto next = std::next(it);
    if (spot == q_.end() && next != q_.end() && in_between(n.rq.sector, it->rq.sector, next->rq.sector)) spot = next;
  }
  q_.insert(spot, std::move(n));
}

void request_queue::add(const io_request& r, uint64_t id, sim_ns now) {
  if (try_merge(r, id)) return;
  queued_request n{r, {id}, now, now + (r.write ? lim_.write_expire : lim_.read_expire),
                   r.write ? lim_.write_latency : lim_.read_latency};
  if (kind_ == elevator_kind::linus)
    insert_linus(std::move(n));
  else
    q_.push_back(std::move(n));
}

// 2.6's deadline_dispatch_requests, over one arrival-ordered list: the FIFO head of a
// direction is its first entry; the sorted successor is the lowest sector at or past the
// batch's position.
request_queue::iter request_queue::pick_deadline(sim_ns now) {
  auto first = [&](int dir) {
    for (auto it = q_.begin(); it != q_.end(); ++it)
      if (int(it->rq.write) == dir) return it;
    return q_.end();
  };
  auto successor = [&](int dir) {
    auto best = q_.end();
    if (!next_sector_[dir]) return best;
    for (auto it = q_.begin(); it != q_.end(); ++it)
      if (int(it->rq.write) == dir && it->rq.sector >= *next_sector_[dir] &&
          (best == q_.end() || it->rq.sector < best->rq.sector))
        best = it;
    return best;
  };
  if (batching_ < lim_.fifo_batch) {
    auto it = successor(last_dir_);
    if (it != q_.end()) {
      ++batching_;
      return it;
    }
  }
  const bool reads = first(0) != q_.end(), writes = first(1) != q_.end();
  int dir = 0;
  if (reads && !(writes && starved_++ >= lim_.writes_starved)) {
    dir = 0;
  } else {
    dir = 1;
    starved_ = 0;
  }
  auto head = first(dir), next = successor(dir);
  auto it = (head->deadline <= now || next == q_.end()) ? head : next;
  batching_ = 1;
  last_dir_ = dir;
  return it;
}

std::optional<queued_request> request_queue::take(sim_ns now) {
  if (q_.empty()) return std::nullopt;
  iter it = q_.begin();
  if (kind_ == elevator_kind::deadline) {
    it = pick_deadline(now);
    next_sector_[0].reset();
    next_sector_[1].reset();
    next_sector_[int(it->rq.write)] = it->rq.end();
  }
  queued_request out = std::move(*it);
  q_.erase(it);
  return out;
}

}  // namespace vmlab::block
