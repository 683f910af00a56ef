// tiobench on the sim engine: tiotest's four tests replayed against the page cache of the
// profile's kernel and a simulated disk, in simulated time (issue 9; docs/decisions.md,
// "Issue 9: the sim's tiobench").
//
// What is modelled, per test (tiotest -M: each op a memcpy to or from a MAP_SHARED
// mapping of the thread's file, madvise SEQUENTIAL or RANDOM by test, munmap and fsync
// at the end):
//  * Threads: each runs its ops in order; the one furthest behind in simulated time runs
//    next (ties: the lower thread), one op at a time, so two threads' requests reach the
//    disk queue in simulated time order. Same spec, options and seed: the same result,
//    bit for bit (integer nanoseconds throughout).
//  * The first touch of a page in a test's mapping is a fault: a cached page costs a
//    minor fault; an uncached one is read by 2.4's read-around (readaround_24.h) and the
//    thread waits for it; MADV_SEQUENTIAL faults also start the next read-ahead window.
//    A page never written (the file is ftruncate'd, so a hole) is zero-filled without I/O.
//  * Write ops dirty their PTEs. The dirty bit reaches the page (set_page_dirty) by
//    MADV_SEQUENTIAL's flush-behind of the window two behind, by reclaim, or by munmap at
//    the test's end. Dirty pages are written by kupdate every 5 s (every dirty page of
//    each inode in turn, then waited for: sync_inodes), when memory runs out (the oldest
//    page is dirty: SWAP_CLUSTER_MAX of the oldest dirty pages are written and the
//    allocating thread waits), and by fsync at the end of each test (every dirty page of
//    the thread's file from the highest index down, then the wait). Blocks get disk addresses when written.
//  * The disk: the profile's request queue (elevator, merging up to max_sectors, at most
//    nr_requests per direction, a thread waiting for a free one) in front of the device
//    profile's model (src/block), one request at a time.
//  * CPU: per fault, per page submitted, per byte copied (src/block/cpu_cost.h, machine
//    `cpu`); memcpy is user time, the rest system time. CPU% as tiobench computes it.
//
// Simplified (docs/decisions.md says why): page reclaim takes pages in the order they
// entered the page cache (no page aging, no active/inactive lists, no swap_out scan: a
// dirty PTE is a dirty page at once); read-ahead pages are added only when a clean page
// can be dropped without waiting; each thread's file is one contiguous extent, the
// files one after the other from the partition's start (ext2 allocates by block group
// and in writeback order); the CPU time of the threads does not contend (no run queue);
// kswapd and bdflush do not run (bdflush writes dirty buffers, which mapped pages get
// only when written); kupdate's CPU time is its own, not the process's.
#pragma once

#include <string>

#include "vmlab/status.h"
#include "workload/tiobench.h"

namespace vmlab::sim {

struct tiobench_sim_options {
  std::string profile = "linux-2.4";
  std::string device = "ibm-dtla-307075";  // src/block/profiles.h
  std::string cpu = "piii-800";            // src/block/cpu_cost.h machine
  uint64_t memory_bytes = 0;               // 0: the profile's default_memory
};

// What the run did, over all four tests (for tests and the report's notes).
struct tiobench_sim_stats {
  uint64_t read_requests = 0, write_requests = 0;  // dispatched to the disk, after merging
  uint64_t pages_read = 0, pages_written = 0;
  uint64_t faults = 0, major_faults = 0;  // first touches of a page per mapping; those that read
  uint64_t cache_pages = 0;   // page-cache capacity the memory leaves
  uint32_t page_cluster = 0;  // 2.4's, from the memory size
};

// REQUIRES nothing: a spec or option the sim cannot run is a status (invalid_argument for
// an unknown profile, device or cpu; not_supported for pread mode, O_DIRECT, or a profile
// without 2.4's mapped read-around).
result<tiobench_run> run_tiobench_sim(const tiobench_spec& s, const tiobench_sim_options& o,
                                            tiobench_sim_stats* stats = nullptr);

}  // namespace vmlab::sim
