// tiobench on the sim engine: tiotest's four tests replayed against the page cache of the
// profile's kernel and a simulated disk, in simulated time (issue 9; docs/decisions.md,
// "Issue 9: the sim's tiobench").
//
// What is modelled, per test (the tiotest of `tiotest_build`: with --mmap by default
// tiotest 0.3.1 built with USE_MMAP, seed 003's: the sequential tests memcpy to or from a
// MAP_SHARED mapping of the thread's file with no madvise, the random tests lseek and
// read() or write() one block; without --mmap every test read()s or write()s; see
// tiotest_build for the other builds):
//  * Threads: each runs its ops in order; the one furthest behind in simulated time runs
//    next (ties: the lower thread), one op at a time, so two threads' requests reach the
//    disk queue in simulated time order. Same spec, options and seed: the same result,
//    bit for bit (integer nanoseconds throughout).
//  * Mapped ops: the first touch of a page in a test's mapping is a fault: a cached page
//    costs a minor fault; an uncached one is read by 2.4's read-around (readaround_24.h:
//    its cluster, one page under MADV_RANDOM) and the thread waits for it; MADV_SEQUENTIAL
//    faults also start the next read-ahead window. A page never written (the file is
//    ftruncate'd, so a hole) is zero-filled without I/O.
//  * read(): 2.4.0's do_generic_file_read with the struct file's read-ahead
//    (file_readahead_24: a random 4 KiB read that misses reads its page and the next two);
//    write() of whole pages: no read, the page's buffers dirty.
//  * Mapped writes dirty their PTEs. The dirty bit reaches the page (set_page_dirty) by
//    MADV_SEQUENTIAL's flush-behind of the window two behind, by reclaim, or by munmap at
//    the test's end. Dirty pages are written by kupdate every 5 s (every PG_dirty page of
//    each inode in turn, then waited for: sync_inodes), when memory runs out (the oldest
//    page is dirty: SWAP_CLUSTER_MAX of the oldest dirty pages are written and the
//    allocating thread waits), and by fsync (every PG_dirty page of the thread's file
//    from the highest index down, then its dirty buffers from the most recently dirtied,
//    then the wait). Blocks get disk addresses when written.
//  * The disk: the profile's request queue (elevator, merging up to max_sectors, at most
//    nr_requests per direction, a thread waiting for a free one) in front of the device
//    profile's model (src/block), one request at a time.
//  * CPU: per fault, per page submitted, per byte copied (src/block/cpu_cost.h, machine
//    `cpu`); a memcpy to or from a mapping is user time, read()'s and write()'s copies and
//    the rest system time. CPU% as tiobench computes it.
//
// Simplified (docs/decisions.md says why): page reclaim takes pages in the order they
// entered the page cache (no page aging, no active/inactive lists, no swap_out scan: a
// dirty PTE is a dirty page at once, and a mapped page is as reclaimable as an unmapped
// one); read-ahead pages are added only when a clean page can be dropped without waiting;
// drop_behind is not modelled; each thread's file is one contiguous extent, the files one
// after the other from the partition's start (ext2 allocates blocks when pages are first
// written, so two files written together interleave: not modelled, and the sequential
// read's rate depends on it); no ext2 indirect blocks; the CPU time of the threads does
// not contend (no run queue); kswapd and bdflush do not run, and kupdate does not write
// buffers dirtied by write() (their age_buffer of 30 s; fsync writes them first here);
// kupdate's CPU time is its own, not the process's.
#pragma once

#include <string>

#include "vmlab/status.h"
#include "workload/tiobench.h"

namespace vmlab::sim {

// Which tiotest the sim replays; the four tests' I/O follows from it
// (tiobench_sim.cc, kTiotestBuilds).
enum class tiotest_build : uint8_t {
  // tiotest v0.3.1 (June 2000, mkuoppal/tiobench commit 27062af, tiotest.c) built with
  // -DUSE_MMAP, seed 003's: the sequential tests through a MAP_SHARED mapping with no
  // madvise, the random tests with lseek + read()/write() (USE_MMAP changes only
  // do_write_test and do_read_test), fsync after the writes, the read test's mapping never
  // unmapped (its munmap is under `#ifdef MMAP`, a macro nothing defines).
  v031_mmap,
  // The same built with -DUSE_MMAP -DUSE_MADVISE: madvise(MADV_RANDOM) on both
  // sequential tests' mappings (tiotest.c 0.3.1 calls no other advice).
  v031_mmap_madvise,
  // tiotest 0.4.x -M (mkuoppal/tiobench HEAD, the live engine's): every test through the
  // mapping, MADV_SEQUENTIAL for the sequential tests and MADV_RANDOM for the random ones,
  // munmap and fsync after each.
  v04_mmap,
  // tiotest v0.3.1 built without USE_MMAP, the read()/write() build (the same I/O as
  // tiotest 0.4 without -M): write() and read() of each block in order, lseek + write() /
  // read() for the random tests; fsync after both write tests, nothing after the reads.
  // The one build a spec without --mmap runs.
  v031_rw,
};

struct tiobench_sim_options {
  std::string profile = "linux-2.4";
  std::string device = "ibm-dtla-307075";  // src/block/profiles.h
  std::string cpu = "piii-800";            // src/block/cpu_cost.h machine
  uint64_t memory_bytes = 0;               // 0: the profile's default_memory
  // Memory free when the run starts: the page cache can grow into it, the rest stays with
  // the processes and the kernel (0: all of it less mem_map and the kernel image).
  uint64_t free_bytes = 0;
  // The build a --mmap spec replays (one of the *_mmap builds); a spec without --mmap
  // always replays v031_rw.
  tiotest_build tiotest = tiotest_build::v031_mmap;
};

// What the run did, over all four tests (for tests and the report's notes).
struct tiobench_sim_stats {
  uint64_t read_requests = 0, write_requests = 0;  // dispatched to the disk, after merging
  uint64_t pages_read = 0, pages_written = 0;
  uint64_t faults = 0, major_faults = 0;  // first touches of a page per mapping; those that read
  uint64_t cache_pages = 0;   // page-cache capacity the memory leaves
  uint32_t page_cluster = 0;  // 2.4's, from the memory size
  // Per test (by tiobench_test): read requests dispatched and pages they read.
  uint64_t test_read_requests[4] = {}, test_pages_read[4] = {};
};

// REQUIRES nothing: a spec or option the sim cannot run is a status (invalid_argument for
// an unknown profile, device or cpu, or v031_rw asked for with --mmap; not_supported for
// O_DIRECT or a profile without 2.4's page-cache I/O paths).
result<tiobench_run> run_tiobench_sim(const tiobench_spec& s, const tiobench_sim_options& o,
                                            tiobench_sim_stats* stats = nullptr);

}  // namespace vmlab::sim
