#include "block/raid0.h"

#include <algorithm>

namespace vmlab::block {

raid0::raid0(std::vector<std::unique_ptr<block_device>> members, uint32_t chunk_sectors)
    : m_(std::move(members)), chunk_(chunk_sectors) {
  const uint64_t per = m_.front()->capacity_sectors() / chunk_ * chunk_;
  capacity_ = per * m_.size();
}

std::string raid0::describe() const {
  return "RAID-0, " + std::to_string(m_.size()) + " x " + m_.front()->describe() + ", chunk " +
         std::to_string(chunk_ * kSectorBytes / 1024) + " KiB";
}

sim_ns raid0::submit(const io_request& r, sim_ns now) {
  const uint64_t n = m_.size();
  // Each member's run: first member sector and sector count (contiguous on the member).
  std::vector<uint64_t> first(n, UINT64_MAX), count(n, 0);
  for (uint64_t s = r.sector; s < r.end();) {
    const uint64_t chunk_no = s / chunk_, in_chunk = s % chunk_;
    const uint64_t len = std::min<uint64_t>(chunk_ - in_chunk, r.end() - s);
    const uint64_t member = chunk_no % n, msector = chunk_no / n * chunk_ + in_chunk;
    if (first[member] == UINT64_MAX) first[member] = msector;
    count[member] += len;
    s += len;
  }
  sim_ns done = now;
  for (uint64_t i = 0; i < n; ++i)
    if (count[i]) done = max(done, m_[i]->submit({first[i], uint32_t(count[i]), r.write}, now));
  return done;
}

}  // namespace vmlab::block
