// 2.4's mapped-fault read-around (src/model/readaround_24.h), from mm/filemap.c 2.4.0.
#include <gtest/gtest.h>

#include "model/readaround_24.h"

namespace vmlab {
namespace {

TEST(ReadAround24, PageClusterFromMemory) {  // mm/swap.c swap_setup
  EXPECT_EQ(page_cluster_24(8ull << 20, 4096), 2u);
  EXPECT_EQ(page_cluster_24(16ull << 20, 4096), 3u);
  EXPECT_EQ(page_cluster_24(31ull << 20, 4096), 3u);
  EXPECT_EQ(page_cluster_24(32ull << 20, 4096), 4u);
  EXPECT_EQ(page_cluster_24(512ull << 20, 4096), 4u);
}

TEST(ReadAround24, ClusterIsAlignedAndCutAtEof) {
  const page_span a = read_around_24(37, 1000, 4, false);  // CLUSTER_OFFSET(37) = 32
  EXPECT_EQ(a.first, 32u);
  EXPECT_EQ(a.count, 16u);
  const page_span b = read_around_24(995, 1000, 4, false);  // 992 .. 999
  EXPECT_EQ(b.first, 992u);
  EXPECT_EQ(b.count, 8u);
  const page_span r = read_around_24(37, 1000, 4, true);  // MADV_RANDOM: the page alone
  EXPECT_EQ(r.first, 37u);
  EXPECT_EQ(r.count, 1u);
}

// MAX_READAHEAD 31 pages rounds up to two 16-page clusters; the next window is read when
// the fault is half a window before vm_raend.
TEST(ReadAround24, SequentialWindow) {
  const uint64_t w = seq_ra_window_24(31, 4);
  EXPECT_EQ(w, 32u);
  seq_readahead_24 ra;
  for (uint64_t p = 0; p < 16; ++p) EXPECT_EQ(ra.after_fault(p, w, 1000).count, 0u) << p;
  const page_span first = ra.after_fault(16, w, 1000);  // 16 + 16 == 32
  EXPECT_EQ(first.first, 32u);
  EXPECT_EQ(first.count, 32u);
  for (uint64_t p = 17; p < 48; ++p) EXPECT_EQ(ra.after_fault(p, w, 1000).count, 0u) << p;
  const page_span second = ra.after_fault(48, w, 1000);
  EXPECT_EQ(second.first, 64u);
  EXPECT_EQ(second.count, 32u);
  // Flush-behind once vm_raend (64 before the move) is past two windows: not yet.
  EXPECT_EQ(ra.flushed.count, 0u);
  const page_span third = ra.after_fault(80, w, 1000);  // vm_raend 96 > 64: flush [0, 32)
  EXPECT_EQ(third.first, 96u);
  EXPECT_EQ(ra.flushed.first, 0u);
  EXPECT_EQ(ra.flushed.count, 32u);
  EXPECT_EQ(ra.after_fault(81, w, 1000).count, 0u);
  EXPECT_EQ(ra.flushed.count, 0u);  // only the fault that reads a window flushes
}

}  // namespace
}  // namespace vmlab
