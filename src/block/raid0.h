// Striping (RAID-0) over N member devices with a fixed chunk size.
//
// Linux: drivers/md/raid0.c (2.4 and 2.6: one strip zone when all members are equal).
// Sector s of the set lives on member (s / chunk) mod N at member sector
// (s / (chunk x N)) x chunk + s mod chunk. A request is split at chunk boundaries; the
// pieces that land on one member are contiguous there and go to it as one request; the
// request completes when the last member does.
//
// Simplification: md in 2.4 splits into chunk-sized buffer_heads that the members'
// elevators merge again; we hand each member its contiguous run directly (the merged
// result), so a member's request may exceed its queue's max_sectors.
#pragma once

#include <memory>
#include <vector>

#include "block/device.h"

namespace vmlab::block {

class raid0 final : public block_device {
 public:
  // REQUIRES: members non-empty, all of the same capacity; chunk_sectors > 0.
  raid0(std::vector<std::unique_ptr<block_device>> members, uint32_t chunk_sectors);
  sim_ns submit(const io_request& r, sim_ns now) override;
  [[nodiscard]] uint64_t capacity_sectors() const override { return capacity_; }
  [[nodiscard]] std::string describe() const override;

 private:
  std::vector<std::unique_ptr<block_device>> m_;
  uint32_t chunk_;
  uint64_t capacity_;
};

}  // namespace vmlab::block
