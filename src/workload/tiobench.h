// tiobench as a workload: what tiotest runs, with the parameters tiobench.pl passes it.
//
// Source: mkuoppal/tiobench, tiotest.c and tiobench.pl (docs/reference summary in
// /work/shared/reference/io-bench-and-databases.md, A.1). Four tests in tiotest's order
// (Tests[]: sequential write, random write, sequential read, random read); one file per
// thread; each op is one pread/pwrite of block_bytes, or with mmap a memcpy between a
// MAP_SHARED mapping of the thread's file and the thread's buffer, madvise SEQUENTIAL or
// RANDOM by test; fsync at the end of every test. tiobench.pl's --size is the total, and
// it passes size/threads as tiotest's per-thread -f; likewise --random ops in total,
// random/threads per thread. Rate = blocks done x block size / wall time of the whole
// test, where a random test's blocks done = random ops per thread x threads. MB = 2^20.
//
// The spec is what both engines need: the live engine runs it (src/engine/live/
// tiobench_runner.h) as tiotest 0.4 does, and the sim replays it (src/engine/tiobench_sim.h)
// as the tiotest its options name, by default 0.3.1 built with USE_MMAP (seed 003's:
// only the sequential tests mapped, the random ones with read()/write()), with the same
// offsets (tiobench_offset), so a random test touches the same blocks in both. tiotest
// draws them with rand_r() % (blocks - 1) (0.3.1) from a seed of gettimeofday's
// microseconds; tiobench_offset draws uniformly over all blocks, reproducibly.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "vmlab/status.h"

namespace vmlab {

enum class tiobench_test { write, random_write, read, random_read };
inline constexpr std::array<tiobench_test, 4> kTiobenchOrder = {tiobench_test::write, tiobench_test::random_write,
                                                                 tiobench_test::read, tiobench_test::random_read};

struct tiobench_spec {
  uint64_t size_mb = 0;          // total, as tiobench.pl's --size (MB = MiB); per thread size_mb / threads
  uint32_t block_bytes = 4096;   // --block
  uint32_t threads = 1;          // --threads
  uint64_t random_ops = 4000;    // total, as tiobench.pl's --random (its default)
  bool mmap = false;             // tiotest -M
  bool direct = false;           // tiotest -X: O_DIRECT
  bool drop_caches = false;      // tiotest -F: echo 3 > /proc/sys/vm/drop_caches before each test
  uint64_t seed = 1;             // the random tests' block choice (tiotest: rand_r per thread)

  [[nodiscard]] uint64_t file_bytes() const;          // per thread, whole blocks
  [[nodiscard]] uint64_t blocks_per_file() const { return file_bytes() / block_bytes; }
  [[nodiscard]] uint64_t random_ops_per_thread() const { return random_ops / threads; }
  // Ops one thread does in `t`: the file's blocks, or its random ops.
  [[nodiscard]] uint64_t ops_per_thread(tiobench_test t) const;
};

// Checks the spec as tiotest and tiobench.pl would refuse it, plus what vmlab cannot do
// (O_DIRECT with mmap). invalid_argument naming the option.
status validate_tiobench(const tiobench_spec& s);

// "write", "random_write", "read", "random_read" (JSON) and tiobench.pl's section titles.
const char* tiobench_test_key(tiobench_test t);
const char* tiobench_test_title(tiobench_test t);
[[nodiscard]] inline bool is_random(tiobench_test t) {
  return t == tiobench_test::random_write || t == tiobench_test::random_read;
}
[[nodiscard]] inline bool is_write(tiobench_test t) {
  return t == tiobench_test::write || t == tiobench_test::random_write;
}

// The byte offset of op `i` of `thread` in test `t`: i x block for the sequential tests,
// a block drawn by a fixed generator (splitmix64 of seed, thread, test, i) otherwise.
uint64_t tiobench_offset(const tiobench_spec& s, tiobench_test t, uint32_t thread, uint64_t i);

// What one test measured (either engine).
struct tiobench_test_result {
  tiobench_test test = tiobench_test::write;
  uint64_t blocks = 0;          // blocks done, all threads
  double seconds = 0;           // wall time of the test
  double utime = 0, stime = 0;  // seconds: per-thread process-wide rusage deltas, summed, / threads
  double lat_avg_ms = 0, lat_max_ms = 0;
  uint64_t lat_over_2s = 0, lat_over_10s = 0, ops = 0;

  [[nodiscard]] double rate_mb_s(uint32_t block_bytes) const;
  [[nodiscard]] double cpu_percent() const;  // 100 (utime + stime) / seconds, tiobench.pl's cpu
  [[nodiscard]] double cpu_eff(uint32_t block_bytes) const;  // rate / (cpu / 100 + 0.00001)
};

// A whole run, on either engine: what the reports print.
struct tiobench_run {
  tiobench_spec spec;
  std::string engine = "live";
  std::string identifier;  // live: uname -r, as tiobench.pl's default; sim: the profile
  std::string dir;         // where the files were (sim: the simulated disk and memory)
  // How the tests did their I/O, for the table's heading; empty: from spec.mmap (the live
  // engine's "mmap (tiotest -M)" or "pread/pwrite"). The sim names the tiotest build.
  std::string io;
  bool temp_dir = false;   // vmlab made (and removed) it
  std::vector<tiobench_test_result> tests;  // in kTiobenchOrder
};

}  // namespace vmlab
