// Readahead of mapped faults on files: the model's mm/readahead.c and the mmap half of
// mm/filemap.c (do_sync_mmap_readahead, do_async_mmap_readahead), Linux 6.x with order-0
// folios (page_cache_policy::mmap_ra, profile.h).
//
// Kernel (6.18): a read fault first maps what fault-around finds (memory.cc), skipping
// pages with PG_readahead (next_uptodate_folio), and each page it takes lowers
// f_ra.mmap_miss. If the faulting page is still unmapped, filemap_fault runs:
//  * a miss: do_sync_mmap_readahead. Under MADV_RANDOM nothing is read ahead (the page is
//    read alone); under MADV_SEQUENTIAL page_cache_sync_ra; otherwise mmap_miss++ (to at
//    most 1000) and, unless it exceeds MMAP_LOTSAMISS (100), read-around: ra_pages pages
//    from pgoff - ra_pages / 2 (not below 0), async_size ra_pages / 4.
//  * a hit: do_async_mmap_readahead (not under MADV_RANDOM): mmap_miss-- and, on a page
//    with PG_readahead, page_cache_async_ra: the next window after the expected marker, or
//    one from the next uncached page (at most ra_pages ahead) otherwise; async_size = size,
//    the window's end rounded down to 4 pages (6.18).
// A window is read as page_cache_ra_unbounded reads it: cached pages skipped, the read
// clipped at EOF (the lookahead is not), PG_readahead on start + size - async_size if this
// read added that page. A fault that read or read ahead is retried once, and the retry's
// fault-around maps what the read brought in (memory.cc).
//
// State: per object, as the live engine's workers share one open file per object (one
// struct file, one f_ra): mem_object::mra and the ra_mark bitmap.
//
// Simplifications: order-0 folios only (6.x file systems with large folios, ext4 from
// 6.16, read ahead into folios of growing order and map more per fault: docs/decisions.md,
// "mapped-fault readahead"); the read() path's prev_pos is not shared with
// page_cache_sync_ra, which sees only the start of the file as sequential; readahead stops
// at the first page memory cannot hold (it allocates with __GFP_NORETRY) and never reclaims;
// write faults (do_shared_fault, do_cow_fault) go through filemap_fault too and so read
// ahead in the kernel, but here they read only the pages written.
//
// Invariant (check_invariants): ra_mark pages are cached pages of file objects.
#pragma once

#include <cstdint>

namespace vmlab {

struct kernel;
struct vm_area_struct;

// Whether mapped faults on `vma` read ahead (a file mapping on a profile that does).
[[nodiscard]] bool mmap_readahead_applies(const kernel& k, const vm_area_struct& vma);
// do_sync_mmap_readahead for a fault at object page pg that missed the page cache (the
// faulting page is read with the window when the window covers it).
void mmap_sync_readahead(kernel& k, const vm_area_struct& vma, uint64_t pg);
// do_async_mmap_readahead for a fault at cached object page pg. Returns whether it read
// or dropped the lock for it (the fault is then retried).
bool mmap_async_readahead(kernel& k, const vm_area_struct& vma, uint64_t pg);
// filemap_map_pages's mmap_miss accounting: fault-around took n pages.
void mmap_miss_hits(kernel& k, const vm_area_struct& vma, uint64_t n);

}  // namespace vmlab
