#include "model/phys.h"

#include <algorithm>

namespace vmlab {

const char* zone_name(zone_type z) {
  switch (z) {
    case zone_type::dma: return "DMA";
    case zone_type::dma32: return "DMA32";
    case zone_type::normal: return "Normal";
    case zone_type::highmem: return "HighMem";
  }
  return "?";
}

const char* page_use_name(page_use u) {
  switch (u) {
    case page_use::anon: return "anonymous pages";
    case page_use::cache: return "page cache";
    case page_use::pgtable: return "page tables";
    case page_use::slab: return "slab";
    case page_use::reserved: return "mem_map and kernel image";
    case page_use::hugetlb: return "hugetlb pool";
    case page_use::pinned: return "pinned pages of fragmented pageblocks";
  }
  return "?";
}

phys::phys(const zone_policy& zp, uint8_t page_shift, uint64_t total_pages, uint64_t reserved,
           uint64_t pageblock_pages, double fragmentation)
    : total_(total_pages), ppb_(std::max<uint64_t>(pageblock_pages, 1)) {
  const uint64_t kDmaPages = (16 * MiB) >> page_shift;
  auto z = [&](zone_type t) -> uint64_t& { return present_[static_cast<int>(t)]; };
  uint64_t rest = total_pages;
  z(zone_type::dma) = std::min(rest, kDmaPages);
  rest -= z(zone_type::dma);
  if (zp.highmem) {
    z(zone_type::normal) = std::min(rest, (zp.lowmem_limit >> page_shift) - kDmaPages);
    z(zone_type::highmem) = rest - z(zone_type::normal);
    highuser_ = {zone_type::highmem, zone_type::normal, zone_type::dma};
    kernel_ = {zone_type::normal, zone_type::dma};
  } else if (zp.dma32_limit) {
    z(zone_type::dma32) = std::min(rest, (zp.dma32_limit >> page_shift) - kDmaPages);
    z(zone_type::normal) = rest - z(zone_type::dma32);
    highuser_ = kernel_ = {zone_type::normal, zone_type::dma32, zone_type::dma};
  } else {
    z(zone_type::normal) = rest;
    highuser_ = kernel_ = {zone_type::normal, zone_type::dma};
  }
  // Drop zones with no pages from the lists; boot reservations come from low memory.
  for (auto* l : {&highuser_, &kernel_})
    l->erase(std::remove_if(l->begin(), l->end(), [&](zone_type t) { return z(t) == 0; }), l->end());
  for (gfp_zone g : {gfp_zone::highuser, gfp_zone::kernel})
    if (!zonelist(g).empty()) first_[static_cast<int>(g)] = static_cast<int>(zonelist(g).front());
  alloc(page_use::reserved, gfp_zone::kernel, std::min(reserved, low_pages()));
  // Fragmentation: one pinned page in each polluted block, spread over every zone.
  for (int zi = 0; zi < kZones; ++zi) {
    blocks_[zi] = present_[zi] / ppb_;
    polluted_[zi] = static_cast<uint64_t>(double(blocks_[zi]) * std::clamp(fragmentation, 0.0, 1.0) + 0.5);
    const uint64_t pins = std::min(polluted_[zi], present_[zi] - zone_used_[zi]);
    if (pins) {
      take(static_cast<zone_type>(zi), static_cast<int>(page_use::pinned), pins);
      account(static_cast<int>(page_use::pinned), pins);
    }
  }
}

// Free pageblocks of zone z: the blocks without a pinned page, less the huge pages', less
// as many as the small pages outside the pinned blocks fill (packed: compaction).
uint64_t phys::zone_free_blocks(int z) const {
  const uint64_t clean = blocks_[z] - polluted_[z];
  const uint64_t small = zone_used_[z] - huge_blocks_[z] * ppb_;
  const uint64_t in_polluted = polluted_[z] * ppb_;
  const uint64_t spill = small > in_polluted ? div_round_up(small - in_polluted, ppb_) : 0;
  const uint64_t taken = huge_blocks_[z] + spill;
  return clean > taken ? clean - taken : 0;
}

uint64_t phys::free_blocks() const {
  uint64_t n = 0;
  for (zone_type z : highuser_) n += zone_free_blocks(static_cast<int>(z));
  return n;
}

bool phys::alloc_huge(page_use use, uint64_t blocks) {
  for (zone_type z : highuser_) {
    const int zi = static_cast<int>(z);
    if (zone_free_blocks(zi) < blocks) continue;
    // A 1 GiB page needs its 512 blocks in one clean run: only an unfragmented zone has one.
    if (blocks > 1 && polluted_[zi]) continue;
    const int u = static_cast<int>(use);
    take(z, u, blocks * ppb_);
    account(u, blocks * ppb_);
    huge_blocks_[zi] += blocks;
    huge_by_use_[zi][u] += blocks;
    return true;
  }
  return false;
}

void phys::free_huge(page_use use, uint64_t blocks) {
  const int u = static_cast<int>(use);
  for (int zi = 0; zi < kZones && blocks; ++zi) {
    const uint64_t give = std::min(blocks, huge_by_use_[zi][u]);
    if (!give) continue;
    huge_by_use_[zi][u] -= give;
    huge_blocks_[zi] -= give;
    used_[zi][u] -= give * ppb_;
    zone_used_[zi] -= give * ppb_;
    if (static_cast<zone_type>(zi) != zone_type::highmem) low_used_ -= give * ppb_;
    by_use_[u] -= give * ppb_;
    used_total_ -= give * ppb_;
    blocks -= give;
  }
}

void phys::split_huge(uint64_t blocks) {
  const int u = static_cast<int>(page_use::anon);
  for (int zi = 0; zi < kZones && blocks; ++zi) {
    const uint64_t give = std::min(blocks, huge_by_use_[zi][u]);
    huge_by_use_[zi][u] -= give;
    huge_blocks_[zi] -= give;
    blocks -= give;
  }
}

uint64_t phys::low_pages() const {
  return present_[static_cast<int>(zone_type::dma)] + present_[static_cast<int>(zone_type::dma32)] +
         present_[static_cast<int>(zone_type::normal)];
}

bool phys::can_alloc(gfp_zone g, uint64_t n) const {
  uint64_t avail = 0;
  for (zone_type z : zonelist(g)) {
    avail += zone_free(z);
    if (avail >= n) return true;
  }
  return n == 0;
}

void phys::take(zone_type z, int use, uint64_t n) {
  const int zi = static_cast<int>(z);
  used_[zi][use] += n;
  zone_used_[zi] += n;
  if (z != zone_type::highmem) low_used_ += n;
}

// The preferred zone is short: take what each zone of the list has, in order.
bool phys::alloc_fallback(page_use use, gfp_zone g, uint64_t n) {
  if (!can_alloc(g, n)) return false;
  const int u = static_cast<int>(use);
  uint64_t left = n;
  for (zone_type z : zonelist(g)) {
    const uint64_t part = std::min(left, zone_free(z));
    take(z, u, part);
    left -= part;
    if (!left) break;
  }
  account(u, n);
  return true;
}

void phys::free(page_use use, uint64_t n) {
  const int u = static_cast<int>(use);
  by_use_[u] -= n;
  used_total_ -= n;
  for (int z = 0; z < kZones && n; ++z) {  // DMA, DMA32, Normal, HighMem: least preferred first
    // Small pages only: a huge page's blocks go back through free_huge.
    const uint64_t give = std::min(n, used_[z][u] - huge_by_use_[z][u] * ppb_);
    used_[z][u] -= give;
    zone_used_[z] -= give;
    if (static_cast<zone_type>(z) != zone_type::highmem) low_used_ -= give;
    n -= give;
  }
}

uint32_t phys::share_anon(uint32_t origin) {
  uint32_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<uint32_t>(ids_.size());
    ids_.emplace_back();
  }
  ids_[id] = {1, 0, origin};
  return id;
}

uint32_t phys::share_anon_range(uint32_t n, uint32_t mapcount, uint32_t origin) {
  const uint32_t first = static_cast<uint32_t>(ids_.size());
  ids_.resize(ids_.size() + n, anon_state{mapcount, 0, origin});
  return first;
}

}  // namespace vmlab
