// The tiobench workload spec: tiobench.pl's split of --size and --random over the
// threads, the random tests' offsets, tiobench's Rate and CPU% arithmetic, and refusals.
#include <gtest/gtest.h>

#include <set>

#include "workload/tiobench.h"

namespace vmlab {
namespace {

tiobench_spec seed003() {
  tiobench_spec s;  // seed 003: 1024 MB, 4096-byte blocks, 2 threads, mmap
  s.size_mb = 1024;
  s.block_bytes = 4096;
  s.threads = 2;
  s.mmap = true;
  return s;
}

TEST(TiobenchSpec, SizeAndRandomOpsAreTotalsSplitOverTheThreads) {
  const tiobench_spec s = seed003();
  EXPECT_EQ(s.file_bytes(), 512ull << 20);  // tiobench.pl passes -f size/threads
  EXPECT_EQ(s.blocks_per_file(), (512ull << 20) / 4096);
  EXPECT_EQ(s.random_ops_per_thread(), 2000u);  // tiobench.pl's default 4000, over 2 threads
  EXPECT_EQ(s.ops_per_thread(tiobench_test::read), s.blocks_per_file());
  EXPECT_EQ(s.ops_per_thread(tiobench_test::random_write), 2000u);
  EXPECT_TRUE(validate_tiobench(s).ok());
}

TEST(TiobenchSpec, OffsetsAreSequentialOrRandomBlocksInsideTheFile) {
  const tiobench_spec s = seed003();
  EXPECT_EQ(tiobench_offset(s, tiobench_test::read, 1, 7), 7u * 4096);
  std::set<uint64_t> seen;
  for (uint64_t i = 0; i < 2000; ++i) {
    const uint64_t off = tiobench_offset(s, tiobench_test::random_read, 0, i);
    ASSERT_EQ(off % 4096, 0u);
    ASSERT_LT(off, s.file_bytes());
    seen.insert(off);
    // Deterministic: the sim will expand the same spec into the same offsets.
    ASSERT_EQ(off, tiobench_offset(s, tiobench_test::random_read, 0, i));
  }
  // 2000 uniform draws from 131072 blocks repeat about 2000^2 / (2 x 131072) = 15 times;
  // 40 would be six standard deviations out.
  EXPECT_GE(seen.size(), 2000u - 40);
  // Threads and tests draw different blocks.
  EXPECT_NE(tiobench_offset(s, tiobench_test::random_read, 0, 0), tiobench_offset(s, tiobench_test::random_read, 1, 0));
  EXPECT_NE(tiobench_offset(s, tiobench_test::random_read, 0, 0), tiobench_offset(s, tiobench_test::random_write, 0, 0));
}

TEST(TiobenchSpec, RateAndCpuAsTiobenchComputesThem) {
  // tiotest's sample row: "Random Write 156 MBs" = 2 threads x 20000 ops x 4 KiB in 0.1 s.
  tiobench_test_result r;
  r.blocks = 2 * 20000;
  r.seconds = 0.5;
  r.utime = 0.1;  // already summed over the threads and divided by their number
  r.stime = 0.8;
  EXPECT_DOUBLE_EQ(r.rate_mb_s(4096), 40000.0 * 4096 / 1048576 / 0.5);
  EXPECT_DOUBLE_EQ(r.cpu_percent(), 180.0);  // more than one CPU: above 100%, as tiobench prints
  EXPECT_DOUBLE_EQ(r.cpu_eff(4096), r.rate_mb_s(4096) / (1.8 + 0.00001));
}

TEST(TiobenchSpec, RefusalsNameTheOption) {
  auto msg = [](tiobench_spec s) { return validate_tiobench(s).message(); };
  tiobench_spec s = seed003();
  s.threads = 0;
  EXPECT_NE(msg(s).find("--threads"), std::string::npos);
  s = seed003();
  s.block_bytes = 1000;
  EXPECT_NE(msg(s).find("--block"), std::string::npos);
  s = seed003();
  s.direct = true;
  EXPECT_NE(msg(s).find("--direct and --mmap"), std::string::npos);
  s = seed003();
  s.size_mb = 1;
  s.threads = 512;
  s.block_bytes = 4096;
  EXPECT_NE(msg(s).find("less than one 4096-byte block per thread"), std::string::npos);
  s = seed003();
  s.random_ops = 1;
  EXPECT_NE(msg(s).find("no op per thread"), std::string::npos);
}

}  // namespace
}  // namespace vmlab
