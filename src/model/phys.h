// Physical memory: the page allocator's zones, every allocation tagged with what it is
// for, and anonymous pages with their mapcounts.
//
// Kernel: mm/page_alloc.c (zonelists, the allocation that can fail), include/linux/mmzone.h
// (ZONE_DMA, ZONE_DMA32, ZONE_NORMAL, ZONE_HIGHMEM), arch/i386/mm/init.c (896 MiB of
// direct-mapped low memory), include/linux/mm.h (page_mapcount).
//
// Why zones matter here: on i386 every kernel allocation vmlab models (page tables unless
// CONFIG_HIGHPTE, pte_chains, VMAs, anon_vmas, mm_structs, the mem_map itself) comes out of
// ZONE_DMA + ZONE_NORMAL, 896 MiB however much RAM the box has. That limit, not RAM, is
// what made 2.5's pte_chains fail at scale (seed 000).
//
// Simplifications (named here and in docs/decisions.md):
//  * No lowmem_reserve, no swap, and no reclaim here: a zone is usable to its last page
//    and an allocation never waits or reclaims. Page-cache reclaim runs at the model's
//    safe points, against watermarks summed over the zones (vmscan.h); a page stays
//    allocated until it is freed, and an allocation no zone of its zonelist can satisfy
//    fails (the kernel would enter the OOM killer; vmlab stops the run
//    and reports the op, the allocation and the zone).
//  * Pages carry no zone: a free of n pages of one use returns them to the zones that use
//    holds pages in, least-preferred zone first (the fallback allocations, made last, go
//    back first). Exact for every use that lives in one zone, which is all kernel uses
//    unless ZONE_NORMAL overflowed into ZONE_DMA.
//  * An allocation of n pages either gets all of them (across zones, in zonelist order)
//    or none; the callers that must fail part-way allocate page by page.
//  * Huge pages (THPs, the hugetlb pool) need a whole free pageblock (the huge page of
//    the PMD level: 2 MiB, 4 MiB on i386 without PAE), and a 1 GiB page 512 of them in
//    one zone. The buddy allocator is modelled at pageblock granularity, with perfect
//    anti-fragmentation and compaction inside the blocks it can use: `fragmentation` of
//    each zone's pageblocks hold one unmovable page from boot (a long-running machine)
//    and can never be had whole; 4 KiB pages fill those blocks first, and the rest of the
//    4 KiB pages are packed into as few of the other blocks as they need. A 1 GiB page
//    needs an unfragmented machine (fragmentation 0): with a pinned page every 1/f
//    blocks no 512-block run is clean once f >= 1/512, and vmlab assumes none below.
//
// Invariants:
//  1. sum over zones of used(z) + free(z) == present pages; used(z) == sum of its uses.
//  2. anon id 0 is never handed out; mapcount(id) == 0 iff id is free.
//  3. used(page_use::anon) counts exclusive anonymous pages (no id) plus pages with an id.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "model/profile.h"
#include "vmlab/run_result.h"

namespace vmlab {

enum class zone_type : uint8_t { dma, dma32, normal, highmem };
inline constexpr int kZones = 4;
const char* zone_name(zone_type z);  // the kernel's names: "DMA", "DMA32", "Normal", "HighMem"

// What a page is used for. Every simulated allocation carries one of these tags.
enum class page_use : uint8_t {
  anon,      // anonymous user pages (AnonPages)
  cache,     // page cache of shm segments and files
  pgtable,   // page-table pages (all levels, whatever PageTables reports)
  slab,      // slab pages of every simulated kmem_cache
  reserved,  // boot: mem_map and the kernel image
  hugetlb,   // the hugetlb pools (HugePages_Total), free or in use
  pinned,    // one unmovable page in each fragmented pageblock (machine fragmentation)
};
inline constexpr int kUses = 7;
const char* page_use_name(page_use u);

// The zone modifier of an allocation's gfp mask: which zonelist it walks.
enum class gfp_zone : uint8_t {
  highuser,  // GFP_HIGHUSER(_MOVABLE): user pages, and PTE pages under CONFIG_HIGHPTE
  kernel,    // GFP_KERNEL: slab, page tables; never ZONE_HIGHMEM
};

class phys {
 public:
  // A machine of total_pages page frames, zoned as the policy says, with `reserved` pages
  // (mem_map, kernel image) taken from low memory at boot; pageblocks of
  // `pageblock_pages` pages, `fragmentation` of them with a pinned page.
  phys(const zone_policy& zp, uint8_t page_shift, uint64_t total_pages, uint64_t reserved,
       uint64_t pageblock_pages, double fragmentation);

  // n pages for `use` from the zonelist of g, preferred zone first; all or nothing (on
  // failure nothing changes; oom_status() says where memory went).
  bool alloc(page_use use, gfp_zone g, uint64_t n) {
    const int z = first_[static_cast<int>(g)];
    if (z < 0 || present_[z] - zone_used_[z] < n) return alloc_fallback(use, g, n);
    const int u = static_cast<int>(use);
    used_[z][u] += n;
    zone_used_[z] += n;
    if (z != static_cast<int>(zone_type::highmem)) low_used_ += n;
    account(u, n);
    return true;
  }
  [[nodiscard]] bool can_alloc(gfp_zone g, uint64_t n) const;
  // Whether g's preferred zone alone has n free pages: n pages from g would not fall back.
  [[nodiscard]] bool preferred_zone_has(gfp_zone g, uint64_t n) const {
    const int z = first_[static_cast<int>(g)];
    return z >= 0 && present_[z] - zone_used_[z] >= n;
  }
  // Returns n pages of `use` (REQUIRES: that many are allocated).
  void free(page_use use, uint64_t n);

  // `blocks` whole pageblocks, in one zone of the GFP_HIGHUSER zonelist, for one huge
  // page of `use` (1 for a THP or a PMD-level hugetlb page, 512 for a 1 GiB page). false
  // (nothing changed) when no zone has that many free whole blocks.
  bool alloc_huge(page_use use, uint64_t blocks);
  // A huge page goes: whole (free_huge), or broken into small pages of `use` that stay
  // allocated and are freed one by one (split_huge: a THP mapped by PTEs).
  void free_huge(page_use use, uint64_t blocks);
  void split_huge(uint64_t blocks);
  // Whole pageblocks a huge allocation could have now, over every zone it may use.
  [[nodiscard]] uint64_t free_blocks() const;
  [[nodiscard]] uint64_t pageblock_pages() const { return ppb_; }

  // Gives an exclusive anonymous page an identity (mapcount 1); it is already counted.
  // `origin`: the anon_vma it belongs to (folio->mapping), 0 under schemes without one.
  uint32_t share_anon(uint32_t origin);
  // n consecutive ids of pages already counted, each with mapcount `mapcount` (the
  // subpages of a THP when it first gets mapped by PTEs); returns the first.
  uint32_t share_anon_range(uint32_t n, uint32_t mapcount, uint32_t origin);
  [[nodiscard]] uint32_t anon_origin(uint32_t id) const { return ids_[id].origin; }
  // The page's mapcount and pte_chain head, where struct page keeps them (see rmap.h).
  uint32_t* anon_mapcount(uint32_t id) { return &ids_[id].mapcount; }
  uint32_t* anon_chain(uint32_t id) { return &ids_[id].chain; }
  [[nodiscard]] uint32_t mapcount(uint32_t id) const { return ids_[id].mapcount; }
  [[nodiscard]] uint32_t chain(uint32_t id) const { return ids_[id].chain; }
  // Releases an id whose mapcount reached 0; its page is freed by the caller
  // (free(page_use::anon, ...), batched per PTE word).
  void release_anon(uint32_t id) { free_ids_.push_back(id); }

  [[nodiscard]] uint64_t total_pages() const { return total_; }
  [[nodiscard]] uint64_t used() const { return used_total_; }
  [[nodiscard]] uint64_t used(page_use u) const { return by_use_[static_cast<int>(u)]; }
  [[nodiscard]] bool zone_present(zone_type z) const { return present_[static_cast<int>(z)] > 0; }
  [[nodiscard]] uint64_t zone_pages(zone_type z) const { return present_[static_cast<int>(z)]; }
  [[nodiscard]] uint64_t zone_used(zone_type z) const { return zone_used_[static_cast<int>(z)]; }
  [[nodiscard]] uint64_t zone_used(zone_type z, page_use u) const {
    return used_[static_cast<int>(z)][static_cast<int>(u)];
  }
  [[nodiscard]] uint64_t zone_free(zone_type z) const { return zone_pages(z) - zone_used(z); }
  [[nodiscard]] bool has_highmem() const { return zone_present(zone_type::highmem); }
  // ZONE_DMA + ZONE_DMA32 + ZONE_NORMAL (LowTotal/LowFree on a highmem kernel).
  [[nodiscard]] uint64_t low_pages() const;
  [[nodiscard]] uint64_t low_free() const { return low_pages() - low_used_; }
  // The smallest low_free() and free pages ever seen (LowFree / MemFree minima).
  [[nodiscard]] uint64_t min_low_free() const { return low_pages() - max_low_used_; }
  [[nodiscard]] uint64_t min_free() const { return total_ - max_used_total_; }
  [[nodiscard]] uint64_t min_high_free() const { return zone_pages(zone_type::highmem) - max_high_used_; }
  [[nodiscard]] uint64_t max_used(page_use u) const { return max_by_use_[static_cast<int>(u)]; }

  bytes nr_pagetable = 0;      // NR_PAGETABLE: the levels the profile counts, in bytes
  level_counts tables{};       // page-table nodes in existence, per level

 private:
  [[nodiscard]] const std::vector<zone_type>& zonelist(gfp_zone g) const {
    return g == gfp_zone::highuser ? highuser_ : kernel_;
  }
  void take(zone_type z, int use, uint64_t n);
  [[nodiscard]] uint64_t zone_free_blocks(int z) const;
  bool alloc_fallback(page_use use, gfp_zone g, uint64_t n);
  void account(int u, uint64_t n) {
    by_use_[u] += n;
    used_total_ += n;
    if (by_use_[u] > max_by_use_[u]) max_by_use_[u] = by_use_[u];
    if (used_total_ > max_used_total_) max_used_total_ = used_total_;
    if (low_used_ > max_low_used_) max_low_used_ = low_used_;
    const uint64_t high = zone_used_[static_cast<int>(zone_type::highmem)];
    if (high > max_high_used_) max_high_used_ = high;
  }

  // Counters kept per (zone, use), and their sums, so that an allocation on the fault
  // path is a handful of adds.
  uint64_t total_;
  std::array<uint64_t, kZones> present_{};
  std::array<std::array<uint64_t, kUses>, kZones> used_{};
  std::array<uint64_t, kZones> zone_used_{};
  // Pageblocks per zone, those with a pinned page, and those held whole by huge pages.
  uint64_t ppb_ = 512;
  std::array<uint64_t, kZones> blocks_{}, polluted_{}, huge_blocks_{};
  // Where each use's huge pages are, zone by zone (a free goes back to the same zone).
  std::array<std::array<uint64_t, kUses>, kZones> huge_by_use_{};
  std::array<uint64_t, kUses> by_use_{};
  uint64_t used_total_ = 0, low_used_ = 0;
  std::vector<zone_type> highuser_, kernel_;  // zonelists, preferred first
  std::array<int, 2> first_{-1, -1};          // each zonelist's preferred zone (-1: none)
  // Maxima of the used counts: the free minima are what they leave.
  std::array<uint64_t, kUses> max_by_use_{};
  uint64_t max_used_total_ = 0, max_low_used_ = 0, max_high_used_ = 0;
  // What struct page holds for a shared anonymous page, by anon id.
  struct anon_state {
    uint32_t mapcount = 0;
    uint32_t chain = 0;   // pte_chain head + 1, 0 = none
    uint32_t origin = 0;  // its anon_vma
  };
  std::vector<anon_state> ids_{1};  // id 0: none
  std::vector<uint32_t> free_ids_;
};

}  // namespace vmlab
