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
  }
  return "?";
}

phys::phys(const zone_policy& zp, uint8_t page_shift, uint64_t total_pages, uint64_t reserved) : total_(total_pages) {
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
    const uint64_t give = std::min(n, used_[z][u]);
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

}  // namespace vmlab
