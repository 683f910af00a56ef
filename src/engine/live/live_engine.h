// The live engine: the op stream as real processes on this host, measured through the
// kernel's own reports.
//
// How it runs (entry points run_live and host_profile_overrides are in engine/engine.h):
//  * A shadow sim_kernel receives every op first. It gives each mapping its address (the
//    live engine maps at exactly that address, MAP_FIXED_NOREPLACE, in [16, 64) TiB where
//    the C runtime has nothing) and it refuses the ops the model refuses (an op the model
//    says kills the process — SIGSEGV — is recorded as a failure and not tried on the host).
//  * Objects are memfds (shm) and unnamed (O_TMPFILE) sparse files under /var/tmp. Each
//    workload process is a worker process (worker.h), driven over a socketpair (driver.h),
//    forked from one idle zygote so that every worker starts from the same image. Nothing
//    outlives the run, even a SIGKILL of vmlab: see driver.h and host_state.h.
//  * One live run at a time (host_state.h: a lock); a run first undoes what a killed
//    earlier run left (settings it changed, journalled before the change).
//  * Measurement: /proc/meminfo PageTables, folded with /proc/sys/vm/stat_refresh, read
//    with every other process's page tables beside it (host_activity.h) and until it stops
//    falling (page tables are freed after an RCU grace period); per process
//    /proc/PID/status (VmPTE, Rss*) and /proc/PID/stat (minflt); at phases and the end the
//    slab caches of the rmap (/proc/slabinfo after flushing the per-CPU caches). The
//    workload's share is what remains after removing each worker's baseline, and for the
//    slab caches what an image pass (the process ops alone, on idle workers, before the
//    run) measured for the workers' own images — see the notes in the result. A system-wide
//    figure the rest of the host would not let it measure is marked so in the sample
//    (page_tables_busy, slabs_busy) rather than reported wrong.
#pragma once

#include "vmlab/op.h"
#include "vmlab/status.h"
#include "vmlab/units.h"

namespace vmlab::live {

// An upper estimate of the host memory the op stream needs at its peak: anonymous memory
// plus page cache (at most the objects' sizes) plus page tables, from a sim pass that
// looks before every op that frees memory and at the end. invalid_argument for a
// malformed stream.
result<bytes> estimate_peak_memory(const op_stream& s);

}  // namespace vmlab::live
