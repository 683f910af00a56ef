// Linux 2.4's read-around and read-ahead of mapped faults, and the read-ahead of read(),
// as pure functions of page indices: which pages a fault on an uncached page of a
// MAP_SHARED file mapping reads, and which pages a read() reads ahead.
//
// Kernel: mm/filemap.c (2.4.0, the text read here: liexusong/linux-2.4.0) filemap_nopage,
// read_cluster_nonblocking, nopage_sequential_readahead; mm/swap.c swap_setup for
// page_cluster; include/linux/blkdev.h MAX_READAHEAD (31 pages), which ide-probe.c gives
// every IDE disk as its max_readahead.
//
// Rules (2.4.0):
//  * A fault on an uncached page reads the cluster CLUSTER_OFFSET(pgoff) .. + CLUSTER_PAGES
//    (1 << page_cluster pages, cut at EOF), unless the VMA is MADV_RANDOM: then the page
//    alone (page_cache_read).
//  * MADV_SEQUENTIAL, after the page is found: the window is get_max_readahead rounded
//    up to whole clusters (ra_window); vm_raend starts at vm_pgoff + ra_window; a fault at
//    pgoff with pgoff + ra_window / 2 == vm_raend reads [vm_raend, vm_raend + ra_window)
//    (cut at the VMA and EOF) and moves vm_raend on by ra_window. (The kernel adds
//    vm_pgoff twice to vm_raend's start; tiotest maps from offset 0, where it does not
//    matter.) Flush-behind (filemap_sync of the window two back) only moves PTE dirty bits
//    to the page, which the sim does at the fault.
//  * read() (do_generic_file_read and generic_file_readahead, 2.4.0): the struct file's
//    f_raend, f_ralen, f_ramax, f_rawin decide, per read() call and per page, how many
//    pages after the page are read ahead (file_readahead_24 below, line for line).
#pragma once

#include <cstdint>

namespace vmlab {

struct page_span {
  uint64_t first = 0, count = 0;
};

// swap_setup(): 2 below 16 MiB of memory, 3 below 32 MiB, else 4.
[[nodiscard]] uint32_t page_cluster_24(uint64_t memory_bytes, uint64_t page_bytes);

// The pages filemap_nopage reads for a fault at pgoff on an uncached page.
// REQUIRES: pgoff < file_pages.
[[nodiscard]] page_span read_around_24(uint64_t pgoff, uint64_t file_pages, uint32_t page_cluster, bool random_hint);

// nopage_sequential_readahead's fixed window in pages: ra_pages rounded up to clusters.
[[nodiscard]] uint64_t seq_ra_window_24(uint64_t ra_pages, uint32_t page_cluster);

// One VMA's sequential read-ahead state (vm_raend, relative to vm_pgoff = 0).
struct seq_readahead_24 {
  uint64_t raend = 0;  // 0: no read-ahead yet in this VMA
  // Set by after_fault when it reads a window: the pages whose dirty PTEs it moves to
  // their pages (flush-behind: filemap_sync of the window two behind vm_raend, once
  // vm_raend is past two windows); count 0 otherwise.
  page_span flushed;
  // After the fault at pgoff found its page: the window to read now (count 0: none).
  page_span after_fault(uint64_t pgoff, uint64_t window, uint64_t file_pages);
};

// include/linux/mm.h (2.4.0): the read-ahead a read() keeps once it is sequential.
inline constexpr uint64_t kMinReadahead24 = 3;

// One struct file's read-ahead context (2.4.0 mm/filemap.c): all zero at open. The kernel
// keeps it in pages (f_raend: the page after the last one read ahead).
struct file_readahead_24 {
  uint64_t raend = 0, ralen = 0, ramax = 0, rawin = 0;

  // do_generic_file_read's start, once per read() of `count` bytes at page `index`,
  // `offset` bytes into it: resets the context when the read is outside the previous
  // window, sets f_ramax to what the read needs (at least MIN_READAHEAD when it continues
  // a window, at most `max_readahead` pages). Returns reada_ok.
  bool start_read(uint64_t index, uint64_t offset, uint64_t count, uint64_t page_bytes, uint64_t max_readahead);

  // generic_file_readahead for page `index` of that read(): `locked` when the page is
  // being read (just added, or found not up to date), else it was found up to date.
  // Returns the pages after it to read (page_cache_read each: one already cached costs
  // nothing) and updates the context; `end_index` is i_size in pages. (drop_behind, which
  // the kernel then calls, only moves unmapped pages behind `index` to the inactive list;
  // not returned.)
  page_span readahead(bool reada_ok, uint64_t index, bool locked, uint64_t end_index, uint64_t max_readahead);
};

}  // namespace vmlab
