// Issue 11: random touches are generated a batch at a time (touch_page_gen), and the
// per-page object state is sparse (sparse.h). These check that both give exactly what the
// dense versions gave: the same pages in the same order, the same bits.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

#include "model/sparse.h"
#include "workload/pattern.h"

namespace vmlab {
namespace {

constexpr bytes kPage4k = 4096;

// The uniform pattern as it was before issue 11: one list, a dense permutation.
std::vector<uint64_t> dense_uniform(const op& o, bytes page = kPage4k) {
  const uint64_t pages = o.len / page, count = std::min(o.count, pages);
  rng r(o.seed);
  std::vector<uint64_t> out;
  if (count * 2 <= pages) {
    std::vector<uint64_t> seen((pages + 63) / 64, 0);
    while (out.size() < count) {
      const uint64_t p = r.below(pages);
      if ((seen[p >> 6] >> (p & 63)) & 1) continue;
      seen[p >> 6] |= uint64_t{1} << (p & 63);
      out.push_back(p);
    }
  } else {
    std::vector<uint64_t> perm(pages);
    std::iota(perm.begin(), perm.end(), 0);
    for (uint64_t i = 0; i < count; ++i) {
      std::swap(perm[i], perm[i + r.below(pages - i)]);
      out.push_back(perm[i]);
    }
  }
  for (auto& p : out) p += o.off / page;
  return out;
}

op touch(touch_pattern pat, uint64_t pages, uint64_t count, uint64_t seed) {
  op o;
  o.kind = op_kind::touch;
  o.pattern = pat;
  o.off = 8 * 4096;
  o.len = pages * 4096;
  o.count = count;
  o.seed = seed;
  o.theta = 0.99;
  return o;
}

// Below 2^20 pages the permutation is a vector, above it a hash map of displaced entries:
// both must draw the same pages as the dense shuffle, batch boundaries included.
TEST(TouchPageGen, UniformMatchesTheDenseShuffle) {
  for (uint64_t pages : {uint64_t{1000}, uint64_t{1} << 20, (uint64_t{1} << 20) + 4097})
    for (uint64_t count : {pages / 3, pages * 3 / 4, pages}) {
      const op o = touch(touch_pattern::uniform, pages, count, 77 + pages + count);
      const std::vector<uint64_t> want = dense_uniform(o);
      EXPECT_EQ(touch_page_list(o, kPage4k), want) << pages << " pages, count " << count;
      touch_page_gen g(o, kPage4k);
      std::vector<uint64_t> got, batch;
      while (g.next(batch, 1000)) got.insert(got.end(), batch.begin(), batch.end());
      EXPECT_EQ(got, want) << pages << " pages, count " << count << " in batches of 1000";
      EXPECT_EQ(g.produced(), want.size());
    }
}

// Zipf in batches: the concatenation is the one list, and page_set (hash set, then a
// bitmap) drops exactly the repeats first_touches drops.
TEST(TouchPageGen, ZipfBatchesAndFirstTouches) {
  const op o = touch(touch_pattern::zipf, uint64_t{1} << 30, 200000, 5);
  touch_page_gen g(o, kPage4k);
  std::vector<uint64_t> all, batch, firsts;
  page_set seen(o.off / 4096 + o.len / 4096);
  while (g.next(batch, 4096))
    for (uint64_t p : batch) {
      all.push_back(p);
      if (seen.insert(p)) firsts.push_back(p);
    }
  EXPECT_EQ(all.size(), 200000u);
  EXPECT_EQ(all, touch_page_list(o, kPage4k));
  EXPECT_EQ(firsts, first_touches(all));
  EXPECT_LT(firsts.size(), all.size());  // Zipf repeats its hot pages
}

// The pages are the kernel's: on a 64 KiB-page kernel a range has a sixteenth as many,
// and every page drawn lies inside it (a 4 KiB index would lie outside the mapping).
TEST(TouchPageGen, DrawsTheKernelsPages) {
  constexpr bytes k64k = 65536;
  op o = touch(touch_pattern::uniform, 16 * 1000, 300, 9);  // 16,000 4 KiB pages
  o.off = 2 * k64k;
  const std::vector<uint64_t> got = touch_page_list(o, k64k);
  EXPECT_EQ(got, dense_uniform(o, k64k));
  ASSERT_EQ(got.size(), 300u);
  for (uint64_t p : got) {
    EXPECT_GE(p, o.off / k64k);
    EXPECT_LT(p, (o.off + o.len) / k64k);
  }
  touch_page_gen g(o, k64k);
  EXPECT_EQ(g.limit(), (o.off + o.len) / k64k);
}

TEST(PageSet, TurnsDenseWithoutLosingPages) {
  // 2^27 pages: past the always-dense bound (2^26), so it starts as a hash set and turns
  // into a 16 MiB bitmap at 2^24 / 32 = 524,288 pages.
  const uint64_t limit = uint64_t{1} << 27;
  page_set s(limit);
  std::mt19937_64 r(3);
  std::vector<bool> in(limit);
  for (int i = 0; i < 700000; ++i) {
    const uint64_t p = i % 7 == 0 && i ? r() % uint64_t(i) : r() % limit;  // some repeats
    EXPECT_EQ(s.insert(p), !in[p]) << i;
    in[p] = true;
  }
}

TEST(SparseBitmap, ReadsZerosAndCostsWhatIsWritten) {
  size_t acct = 0;  // outlives b, whose destructor takes its chunks off it
  sparse_bitmap b;
  b.account_to(&acct);
  EXPECT_EQ(b.word(uint64_t{1} << 50), 0u);
  EXPECT_EQ(acct, 0u);  // reading allocates nothing
  b.set((uint64_t{1} << 56) + 3);
  b.set(5);
  b.set(64 * 64 + 1);  // the second chunk
  EXPECT_TRUE(b.test((uint64_t{1} << 56) + 3));
  EXPECT_FALSE(b.test((uint64_t{1} << 56) + 4));
  EXPECT_EQ(b.popcount(), 3u);
  EXPECT_EQ(b.window(3), (uint64_t{1} << 2));  // bit 5 seen from bit 3
  EXPECT_EQ(b.window(64 * 64 - 60), uint64_t{1} << 61);  // across the chunk boundary
  std::vector<uint64_t> words;
  b.for_each_word([&](uint64_t w, uint64_t) { words.push_back(w); });
  EXPECT_EQ(words, (std::vector<uint64_t>{0, 64, (uint64_t{1} << 50)}));  // in order
  EXPECT_GT(acct, 0u);
  EXPECT_LT(acct, 4096u);  // three chunks of 512 bytes and their nodes
  b.put(5, false);
  EXPECT_EQ(b.popcount(), 2u);
  b.clear();
  EXPECT_EQ(acct, 0u);
}

}  // namespace
}  // namespace vmlab
