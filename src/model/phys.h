// Physical memory: what the simulated kernel has allocated, by kind, against the
// machine's size; and anonymous pages with their mapcounts.
//
// Kernel: mm/page_alloc.c (the allocation that can fail), include/linux/mm.h
// (page_mapcount), the NR_PAGETABLE vmstat counter behind /proc/meminfo PageTables.
// Simplifications (named here, and in docs/decisions.md): no zones yet (one node, one
// zone), no buddy orders, no reclaim and no swap, so a page that is allocated stays until
// it is freed and an allocation beyond the machine's size fails (the kernel would enter
// the OOM killer; vmlab stops the run and reports the op).
//
// Invariants:
//  1. used() == anon_pages + cache_pages + pgtable_pages + slab_pages <= total_pages.
//  2. anon id 0 is never handed out; mapcount(id) == 0 iff id is free.
//  3. anon_pages counts exclusive anonymous pages (no id) plus pages with an id.
#pragma once

#include <cstdint>
#include <vector>

#include "vmlab/run_result.h"

namespace vmlab {

class phys {
 public:
  explicit phys(uint64_t total_pages) : total_(total_pages) { mapcount_.push_back(0); }

  // Whether n more pages fit. Callers then count the pages in the counter of their kind
  // (anon_pages, cache_pages, pgtable_pages), which is what used() adds up.
  [[nodiscard]] bool try_charge(uint64_t n) const { return used() + n <= total_; }
  [[nodiscard]] uint64_t total_pages() const { return total_; }
  [[nodiscard]] uint64_t used() const { return anon_pages + cache_pages + pgtable_pages + slab_bytes / 4096; }

  // Anonymous pages. Exclusive ones are only counted (REQUIRES: try_charge(n)); a page
  // that fork makes shared gets an id with a mapcount.
  void add_exclusive_anon(uint64_t n) { anon_pages += n; }
  void free_exclusive_anon(uint64_t n) { anon_pages -= n; }
  // Gives an exclusive page an identity (mapcount 1); the page is already counted.
  uint32_t share_anon();
  void get_anon(uint32_t id) { ++mapcount_[id]; }
  // Drops one mapping; frees the page when it was the last.
  void put_anon(uint32_t id);
  [[nodiscard]] uint32_t mapcount(uint32_t id) const { return mapcount_[id]; }

  uint64_t anon_pages = 0;     // AnonPages
  uint64_t cache_pages = 0;    // page cache of shm segments and files (Shmem + Cached)
  uint64_t pgtable_pages = 0;  // every page-table page, whatever the profile reports
  uint64_t slab_bytes = 0;     // slab-allocated page tables (PAE PGDs)
  bytes nr_pagetable = 0;      // NR_PAGETABLE: the levels the profile counts, in bytes
  level_counts tables{};       // page-table nodes in existence, per level

 private:
  uint64_t total_;
  std::vector<uint32_t> mapcount_;  // by anon id
  std::vector<uint32_t> free_ids_;
};

}  // namespace vmlab
