// tiobench on this host, for real: tiotest's four tests with its threads, files, ops and
// clocks, in this process (docs/decisions.md, "Issue 9: storage models and tiobench": why
// not through the live engine's workers).
//
// What it does, as tiotest.c does it: per test, `threads` std::threads are created and
// wait at a start flag; the wall clock starts just before the flag is released and stops
// after every thread has been joined, so it includes each thread's mmap/munmap and fsync.
// Each thread calls getrusage(RUSAGE_SELF) (process-wide on Linux) at the start and the
// end of its test; the deltas are summed and divided by the thread count. Each thread
// has its own file; each op is one pread/pwrite of a block, or a memcpy to or from a
// MAP_SHARED mapping of the whole file (madvise SEQUENTIAL or RANDOM by test); fsync(fd)
// ends every test. Per-op latency from steady_clock around the op.
//
// Differences from tiotest, on purpose: files are unlinked as soon as they are created
// (the threads hold them open across the four tests), so nothing is left on the disk
// however the run ends, SIGKILL included; the whole file is mapped at once (tiotest maps
// 1 GiB chunks, and its chunk loop is broken at 1 GiB and over: A.1 of the reference);
// random mmap ops cover the whole file (tiotest: the first chunk only).
//
// Errors: a missing or unwritable --dir, or too little free space for the files, is bad
// input (exit 2) before anything runs; an I/O error during the run (ENOSPC, EIO) and a
// SIGBUS in a mapping (the file shrank) end the run with status io_error naming the test,
// the thread and the error (exit 3); SIGINT/SIGTERM/SIGHUP/SIGQUIT stop it (128 + N).
// Every path removes the files and, when vmlab made it, the directory.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "vmlab/status.h"
#include "workload/tiobench.h"

namespace vmlab::live {

struct tiobench_live_options {
  std::string dir;  // empty: a new directory under $TMPDIR or /var/tmp, removed afterwards
};

result<tiobench_run> run_tiobench_live(const tiobench_spec& s, const tiobench_live_options& o);

}  // namespace vmlab::live
