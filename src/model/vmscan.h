// Page reclaim: the LRU of evictable page-cache pages, the watermarks that wake reclaim,
// and the eviction of a page, which must first unmap it through the profile's rmap
// design. The model's mm/vmscan.c.
//
// Kernel: mm/vmscan.c (shrink_inactive_list, shrink_folio_list / shrink_page_list,
// folio_check_references / page_check_references, pageout, __remove_mapping; 2.4's
// swap_out / swap_out_mm / try_to_swap_out and page_launder), mm/rmap.c (try_to_unmap,
// page_referenced), mm/page_alloc.c (the zone watermarks: 2.4 free_area_init_core's
// zone_balance_ratio, 2.6+ setup_per_zone_wmarks from min_free_kbytes).
//
// What is evictable. File pages only: vmlab has no swap device, and without swap the
// kernel cannot reclaim anonymous or shmem pages (can_reclaim_anon_pages() is false; 2.4
// had nowhere to put them). Hugetlb pages are never reclaimed. So the LRU holds every page
// of every `file` object's page cache, and only those.
//
// The list. One inactive list in the order pages entered the page cache, kept as runs of
// consecutive pages of one object (a read of 1 GiB is one entry, not 262,144). Reclaim
// takes pages from its head (the oldest). A page carries PG_referenced (the per-object
// `referenced` bitmap), set when a PTE comes to map it (the young bit a fault leaves in the
// PTE) and when read() or write() finds it cached (mark_page_accessed). A referenced page
// at the head gets a second chance: its bit is cleared (page_referenced clears the young
// bits it finds) and it goes to the tail. An unreferenced page is evicted: unmapped from
// every PTE (try_to_unmap), written back if dirty (pageout), and removed from the page
// cache with its index nodes (remove_from_page_cache).
//
// Finding the PTEs, by design (the policy is rmap_ops::finds_ptes_by_scan and its walk):
//  * pte_chain, anon_vma, anon_vma_chain: page_referenced and try_to_unmap walk the page's
//    rmap; the work is counted per page as each design's walk does it (chain entries and
//    objects; the VMAs of i_mmap that cover the page's offset and a page-table walk each).
//  * none (2.4): a mapped page cannot be found from the page. When the list's head holds
//    mapped pages, swap_out() scans the processes' page tables from where it last stopped
//    (swap_mm, swap_address), round robin: a PTE of a referenced page loses the bit
//    (age_page_up), the PTE of an unreferenced file page is cleared (try_to_swap_out drops
//    the mapping; the page stays in the cache, now unmapped), until as many PTEs are
//    cleared as map the pages waiting (at least SWAP_CLUSTER_MAX pages wait), or every
//    process was scanned twice. Every entry it looks at is counted (rmap_work::
//    ptes_scanned). Then the list is scanned again. (2.4.1's swap_out sizes its effort by
//    priority and swap_cnt instead; the model asks for what frees the waiting pages, so
//    that the pages asked for are freed and the scanning that costs is counted.)
//
// Watermarks. Reclaim runs at the model's safe points (the start of an op, each PTE table
// a range touch or a fault works on, each word of pages a read adds) when free memory is
// below the low watermark plus what the next step may allocate, and reclaims until it is
// above the high watermark plus that, as kswapd balances a node; allocation itself never
// reclaims and never fails for a watermark. The watermarks are the profile's
// (reclaim_policy): 2.4 per zone managed / 128 clamped to [20, 255] pages, low 2x,
// high 3x; 2.6+ min_free_kbytes = sqrt(16 x lowmem kB) clamped to [128 kB, the version's
// maximum], low = min + max(min / 4, managed x watermark_scale_factor / 10000), high = low
// + the same step. Summed over the zones: the model's pages carry no zone (phys.h).
//
// Simplifications (each in docs/decisions.md, "Issue 9: reclaim"):
//  * One list with a second chance, not the active/inactive lists (2.6-6.x), page aging
//    (2.4) or MGLRU (6.1+): a page referenced since it was last scanned survives one scan,
//    whatever its history.
//  * The referenced bit is per page, not per PTE: the first page_referenced (or 2.4 scan)
//    that meets it clears it for every mapping. A touch of a page already mapped does not
//    set it (the model does not follow accesses to mapped pages; the kernel's hardware
//    would set the young bit).
//  * Dirty pages are written and evicted in the same scan (pageout with the write waited
//    for); the kernel leaves them to the flusher and reclaims them once clean.
//  * A page that an mlocked VMA maps, or that a shared page table maps (ptshare.h), is not
//    evicted: it goes back to the tail (the kernel moves mlocked pages to the unevictable
//    list; reclaim through shared page tables is not modelled).
//  * No PTE page is freed by reclaim (as in the kernel): the tables stay, emptier.
//
// Invariants (check_invariants recounts them):
//  1. every cached page of a file object is on the list exactly once, and nothing else is:
//     lru.nr_pages == the file objects' cached pages, and the runs cover them;
//  2. referenced pages are cached pages of file objects; so are PG_readahead pages
//     (readahead.h).
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "vmlab/run_result.h"

namespace vmlab {

struct kernel;
struct kernel_profile;

// Pages [pg, pg + n) of object obj, in the order they entered the list.
struct lru_run {
  int32_t obj = -1;
  uint32_t n = 0;
  uint64_t pg = 0;
};

struct lru_state {
  std::deque<lru_run> runs;
  uint64_t nr_pages = 0;  // pages on the list (the file objects' cached pages)
  // Watermarks in pages, summed over the zones (reclaim_policy, set by vmscan_init).
  uint64_t wmark_min = 0, wmark_low = 0, wmark_high = 0;
  // 2.4 swap_out's cursor: the mm it scans (swap_mm) and where (mm->swap_address).
  uint32_t swap_pid = 0;
  uint64_t swap_address = 0;
  reclaim_stats st;
};

// The watermarks of the machine the kernel was built on.
void vmscan_init(kernel& k);
// Pages of an object entered the page cache, bit b of `bits` page 64w + b (lru_cache_add):
// a file's go onto the list's tail, each run of consecutive pages in address order.
void lru_add_word(kernel& k, int32_t obj, uint64_t w, uint64_t bits);
// Page pg of obj, just added, leaves the cache again (an allocation after it failed):
// off the list's tail. REQUIRES: pg is the last page on the list.
void lru_unadd(kernel& k, int32_t obj, uint64_t pg);

// Reclaims up to nr pages (memory.reclaim, kswapd's target). Returns the pages freed.
uint64_t shrink_page_cache(kernel& k, uint64_t nr);

// A safe point of the fault and read paths: if free memory is below the low watermark
// plus `need` pages and the list holds pages, reclaims to the high watermark plus `need`.
void balance_pgdat(kernel& k, uint64_t need);
// (reclaim_point, the inline test in front of it, is in kernel.h.)

// Recounts invariants 1 and 2; "" when they hold.
std::string check_lru(const kernel& k);

}  // namespace vmlab
