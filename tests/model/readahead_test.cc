// Readahead of mapped faults on files, Linux 6.x (readahead.h): read-around on a miss,
// the PG_readahead marker that fault-around skips and whose fault reads the next window,
// mmap_miss, MADV_RANDOM and MADV_SEQUENTIAL. The expected figures are worked out by hand
// from 6.18's mm/filemap.c, mm/memory.c and mm/readahead.c (ra_pages 32, fault-around 16
// pages, order-0 folios), fault by fault in the comments.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model_util.h"

namespace vmlab {
namespace {

using testing::make;
using testing::proc;

constexpr uint64_t kPage = 4096;
constexpr bytes kFile = 1 * MiB;  // 256 pages
constexpr uint64_t kPages = kFile / kPage;

// One process, a fresh 1 MiB file mapped MAP_SHARED (2 MiB-aligned, so the fault-around
// blocks are the file's 16-page blocks), with `adv` if given.
std::unique_ptr<sim_kernel> one_mapping(const std::string& profile = "linux-6.18", int adv = -1) {
  auto k = make(profile, {}, 1 * GiB, {{"data", object_kind::file, kFile, 0}});
  if (!k) return nullptr;
  EXPECT_TRUE(k->spawn(1).ok());
  EXPECT_TRUE(k->mmap(ops::mmap_object(1, 0, 0, kFile).shared().align(2 * MiB)).ok());
  if (adv >= 0) {
    EXPECT_TRUE(k->madvise(1, 0, 0, kFile, static_cast<advice>(adv)).ok());
  }
  return k;
}

uint64_t cached_pages(sim_kernel& k) { return k.snapshot("x").cached_workload / kPage; }
uint64_t mapped_pages(sim_kernel& k) { return proc(k.snapshot("x"), 1).rss_file; }

// A cold file read in order. Fault 0 misses: read-around from max(0, 0 - 16) reads pages
// 0-31 and marks 24 (0 + 32 - 8); the retry's fault-around maps 0-15. Fault 16 maps 16-31
// but 24 (marked). Fault 24: the expected marker, so the next window, 32-63, marked on 32
// (async_size = size); 24 mapped. Then per 32-page window two faults: 32k (the marker:
// fault-around maps 32k+1..32k+15, the fault reads the next window and maps 32k) and
// 32k + 16. The window after 224 starts at 256, past EOF: nothing read. 3 + 7 x 2 = 17.
TEST(MmapReadahead, ACold1MiBFileReadInOrderTakes17Faults) {
  auto k = one_mapping();
  ASSERT_TRUE(k);
  std::vector<uint64_t> pages;
  for (uint64_t p = 0; p < kPages; ++p) pages.push_back(p);
  ASSERT_TRUE(k->touch_pages(1, 0, pages, false).ok());
  EXPECT_EQ(k->faults(), 17u);
  EXPECT_EQ(proc(k->snapshot("x"), 1).min_flt, 17u);
  EXPECT_EQ(cached_pages(*k), kPages);
  EXPECT_EQ(mapped_pages(*k), kPages);
  EXPECT_EQ(k->check_invariants(), "");
}

// The same through a range touch (touch(): the page-at-a-time path of fault_table).
TEST(MmapReadahead, ARangeTouchFaultsAsThePagesDo) {
  auto k = one_mapping();
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->touch(1, 0, 0, kFile, kPage, false).ok());
  EXPECT_EQ(k->faults(), 17u);
  EXPECT_EQ(cached_pages(*k), kPages);
  EXPECT_EQ(k->check_invariants(), "");
}

// MADV_RANDOM: no readahead; each fault reads its page alone, and fault-around finds no
// cached neighbour: 256 faults.
TEST(MmapReadahead, MadvRandomReadsEveryPageAlone) {
  auto k = one_mapping("linux-6.18", static_cast<int>(advice::random));
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->touch(1, 0, 0, kFile, kPage, false).ok());
  EXPECT_EQ(k->faults(), kPages);
  EXPECT_EQ(cached_pages(*k), kPages);
}

// Five scattered reads. 100: read-around 84-115, marked 108; fault-around maps 96-111 but
// 108 (15). 10: 0-31, marked 24; maps 0-15 (16). 200: 184-215, marked 208; maps 192-207
// (16). 108: fault-around maps nothing (108 marked, the rest mapped); the marker is not the
// expected one (184 + 32 - 8 = 208), so the window starts at the next uncached page, 116:
// 116-147, marked 116; 108 mapped (1). 250: read-around from 234, clipped at EOF to 22
// pages (234-255), the mark 8 before that end: 248; maps 240-255 but 248 (15). 5 faults,
// 63 PTEs, 150 pages cached (0-31, 84-147, 184-215, 234-255).
TEST(MmapReadahead, ScatteredReadsAndAnUnexpectedMarker) {
  auto k = one_mapping();
  ASSERT_TRUE(k);
  for (uint64_t p : {100, 10, 200, 108, 250}) ASSERT_TRUE(k->touch_pages(1, 0, {p}, false).ok()) << p;
  EXPECT_EQ(k->faults(), 5u);
  EXPECT_EQ(mapped_pages(*k), 63u);
  EXPECT_EQ(cached_pages(*k), 150u);
  // The marks left: 24, 116, 208 and 248 are cached but unmapped (fault-around skipped them).
  for (uint64_t p : {24, 116, 208, 248}) {
    auto r = k->page_at(1, 0, p * kPage);
    ASSERT_TRUE(r.ok()) << p;
    EXPECT_FALSE(r.value().present) << "page " << p << " is mapped";
  }
  auto mapped = k->page_at(1, 0, 109 * kPage);
  ASSERT_TRUE(mapped.ok());
  EXPECT_TRUE(mapped.value().present);
  EXPECT_EQ(k->check_invariants(), "");
}

// MADV_SEQUENTIAL: page_cache_sync_ra at index 0 reads 0-31 with async_size 16 (the mark
// on 16); the retry maps 0-15. 16: the expected marker: 32-63, marked 32; maps 16-31.
// Then two faults per 32 pages as without advice: 2 + 7 x 2 = 16.
TEST(MmapReadahead, MadvSequentialMarksHalfWayIntoTheFirstWindow) {
  auto k = one_mapping("linux-6.18", static_cast<int>(advice::sequential));
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->touch(1, 0, 0, kFile, kPage, false).ok());
  EXPECT_EQ(k->faults(), 16u);
  EXPECT_EQ(cached_pages(*k), kPages);
}

// mmap_miss: a miss raises it, a page fault-around takes lowers it, and above
// MMAP_LOTSAMISS (100) a miss reads its page alone. Reads of every 64th page of a 64 MiB
// file (255 faults, never a cached neighbour when they come).
std::unique_ptr<sim_kernel> sparse_reads(std::vector<std::pair<std::string, std::string>> ov) {
  constexpr bytes kBig = 64 * MiB;
  auto k = make("linux-6.18", std::move(ov), 1 * GiB, {{"data", object_kind::file, kBig, 0}});
  if (!k) return nullptr;
  EXPECT_TRUE(k->spawn(1).ok());
  EXPECT_TRUE(k->mmap(ops::mmap_object(1, 0, 0, kBig).shared().align(2 * MiB)).ok());
  std::vector<uint64_t> pages;
  for (uint64_t p = 64; p < kBig / kPage; p += 64) pages.push_back(p);
  EXPECT_TRUE(k->touch_pages(1, 0, pages, false).ok());
  EXPECT_EQ(k->faults(), 255u);
  return k;
}

// With fault-around, the retry of each miss maps its block but the mark (pg - 16 + 24 =
// pg + 8): 15 pages taken, mmap_miss back to 0. Every miss reads around: 32 pages each.
TEST(MmapReadahead, FaultAroundKeepsMmapMissDown) {
  auto k = sparse_reads({});
  ASSERT_TRUE(k);
  EXPECT_EQ(cached_pages(*k), 32u * 255);
  EXPECT_EQ(mapped_pages(*k), 15u * 255);
}

// Without fault-around (fault_around_bytes = one page: filemap_map_pages never runs)
// nothing lowers it: the first 100 misses read around, the other 155 read their page.
TEST(MmapReadahead, MissesWithoutHitsStopReadAroundAfter100) {
  auto k = sparse_reads({{"fault_around_bytes", "4096"}});
  ASSERT_TRUE(k);
  EXPECT_EQ(cached_pages(*k), 32u * 100 + 155);
  EXPECT_EQ(mapped_pages(*k), 255u);
}

// The profiles without it: one page per miss, as before (2.6.15 has no fault-around).
TEST(MmapReadahead, OtherProfilesReadTheFaultingPageAlone) {
  auto k = one_mapping("linux-2.6.15");
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->touch(1, 0, 0, kFile, kPage, false).ok());
  EXPECT_EQ(k->faults(), kPages);
  EXPECT_EQ(cached_pages(*k), kPages);
}

}  // namespace
}  // namespace vmlab
