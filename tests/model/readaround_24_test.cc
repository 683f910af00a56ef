// 2.4's mapped-fault read-around (src/model/readaround_24.h), from mm/filemap.c 2.4.0.
#include <gtest/gtest.h>

#include <algorithm>

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

// read()'s read-ahead (do_generic_file_read, generic_file_readahead, 2.4.0). A 4 KiB read
// at page 0 of a fresh struct file continues the (empty) window, so f_ramax becomes
// MIN_READAHEAD; the miss reads pages 1 .. 3 ahead and doubles f_ramax.
TEST(FileReadahead24, FirstReadAtZeroReadsMinReadaheadAhead) {
  const uint64_t page = 4096, max_ra = 31;
  file_readahead_24 f;
  const bool ok = f.start_read(0, 0, page, page, max_ra);
  EXPECT_TRUE(ok);  // 0 > f_raend (0) is false, and 0 + f_rawin < f_raend is false
  EXPECT_EQ(f.ramax, kMinReadahead24);
  const page_span ra = f.readahead(ok, 0, /*locked=*/true, 1000, max_ra);
  EXPECT_EQ(ra.first, 1u);
  EXPECT_EQ(ra.count, kMinReadahead24);
  EXPECT_EQ(f.ralen, 1 + kMinReadahead24);
  EXPECT_EQ(f.rawin, 1 + kMinReadahead24);
  EXPECT_EQ(f.raend, kMinReadahead24 + 1);
  EXPECT_EQ(f.ramax, 2 * kMinReadahead24);
}

// A read far from the window resets the context: f_ramax is what the read needs, one
// page past it ((offset + count) >> PAGE_SHIFT) + 1 = 2 for a whole page; a miss reads
// that many pages after it. A hit (the page up to date) reads nothing ahead.
TEST(FileReadahead24, RandomMissReadsNeededPagesAhead) {
  const uint64_t page = 4096, max_ra = 31;
  file_readahead_24 f;
  f.start_read(0, 0, page, page, max_ra);
  f.readahead(true, 0, true, 100000, max_ra);
  const bool ok = f.start_read(5000, 0, page, page, max_ra);
  EXPECT_FALSE(ok);
  EXPECT_EQ(f.ramax, 2u);
  const page_span ra = f.readahead(ok, 5000, true, 100000, max_ra);
  EXPECT_EQ(ra.first, 5001u);
  EXPECT_EQ(ra.count, 2u);
  const bool ok2 = f.start_read(70000, 0, page, page, max_ra);
  EXPECT_FALSE(ok2);
  EXPECT_EQ(f.readahead(ok2, 70000, /*locked=*/false, 100000, max_ra).count, 0u);
  // At the end of the file the loop stops at i_size: nothing past the last page.
  const bool ok3 = f.start_read(99999, 0, page, page, max_ra);
  EXPECT_EQ(f.readahead(ok3, 99999, true, 100000, max_ra).count, 0u);
}

// Sequential read()s: the window doubles up to max_readahead, and a read inside the last
// read-ahead starts the next one asynchronously (unlocked page) of f_ramax + 1 pages.
TEST(FileReadahead24, SequentialReadsGrowTheWindowToTheMaximum) {
  const uint64_t page = 4096, max_ra = 31, end = 100000;
  file_readahead_24 f;
  uint64_t cached_to = 0, largest = 0;  // pages [0, cached_to) read or read ahead
  for (uint64_t i = 0; i < 2000; ++i) {
    const bool ok = f.start_read(i, 0, page, page, max_ra);
    EXPECT_LE(f.ramax, max_ra);
    const bool miss = i >= cached_to;
    const page_span ra = f.readahead(ok, i, miss, end, max_ra);
    if (miss) cached_to = i + 1;
    if (ra.count) {
      EXPECT_GT(ra.first, i);  // only pages after the one read
      cached_to = std::max(cached_to, ra.first + ra.count);
      largest = std::max(largest, ra.count);
    }
    EXPECT_GT(cached_to, i) << i;
  }
  EXPECT_EQ(largest, max_ra + 1);
  EXPECT_EQ(f.ramax, max_ra);
}

}  // namespace
}  // namespace vmlab
