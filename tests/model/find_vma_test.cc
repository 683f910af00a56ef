// find_vma's one-entry cache (mm_struct::mmap_cache, as 2.4-2.6's mm->mmap_cache): every
// fault asks find_vma, and after the VMA it last answered with is split, shrunk, merged
// away or unmapped, the next answer must still be the VMA that covers the address now.
// Each test first makes a fault leave the cache on the VMA it then changes.
#include <gtest/gtest.h>

#include <vector>

#include "model/kernel.h"
#include "tests/model/model_util.h"
#include "vmlab/sim_kernel.h"

namespace vmlab {
namespace {

using namespace vmlab::testing;

constexpr bytes kPage = 4096;

const mm_struct& mm_of(sim_kernel& k, uint32_t pid) { return *sim_kernel_internals::of(k).mms.at(pid); }

TEST(FindVmaCache, AVmaSplitUnderTheCacheAnswersForEachPart) {
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 8 * kPage)).ok());
  ASSERT_TRUE(k->touch_pages(1, 0, {0}, true).ok());
  ASSERT_NE(mm_of(*k, 1).mmap_cache, nullptr);
  // The cached VMA keeps pages 0-3 (shrunk in place); pages 4-7 become a new, read-only one.
  ASSERT_TRUE(k->mprotect(1, 0, 4 * kPage, 4 * kPage, prot_read).ok());
  EXPECT_FALSE(k->touch_pages(1, 0, {5}, true).ok());  // SIGSEGV: the cache must not answer for page 5
  EXPECT_TRUE(k->touch_pages(1, 0, {5}, false).ok());
  EXPECT_TRUE(k->touch_pages(1, 0, {1}, true).ok());
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(FindVmaCache, AnUnmappedVmaIsForgotten) {
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 8 * kPage)).ok());
  ASSERT_TRUE(k->touch_pages(1, 0, {2}, true).ok());
  ASSERT_TRUE(k->munmap(1, 0, 0, 8 * kPage).ok());
  EXPECT_EQ(mm_of(*k, 1).mmap_cache, nullptr);
  EXPECT_FALSE(k->touch_pages(1, 0, {2}, false).ok());  // SIGSEGV: nothing is mapped there
  // A new mapping, read-only, where the old one was (the top-down search finds that gap).
  op ro = ops::mmap_anon(1, 1, 8 * kPage);
  ro.prot = prot_read;
  ASSERT_TRUE(k->mmap(ro).ok());
  EXPECT_FALSE(k->touch_pages(1, 1, {2}, true).ok());
  EXPECT_TRUE(k->touch_pages(1, 1, {2}, false).ok());
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(FindVmaCache, AVmaMergedAwayIsForgotten) {
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 4 * kPage)).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 1, 4 * kPage)).ok());  // just below map 0: the two merge
  ASSERT_EQ(mm_of(*k, 1).vmas.size(), 1u);
  ASSERT_TRUE(k->mprotect(1, 1, 0, 4 * kPage, prot_read).ok());  // apart again
  ASSERT_TRUE(k->touch_pages(1, 1, {1}, false).ok());            // the cache: map 1's VMA
  ASSERT_TRUE(k->mprotect(1, 1, 0, 4 * kPage, prot_read | prot_write).ok());  // merged again
  ASSERT_EQ(mm_of(*k, 1).vmas.size(), 1u);
  // Whichever of the two VMAs the merge erased, the cache holds none that is gone
  // (check_invariants), and both halves answer as one writable VMA.
  EXPECT_EQ(k->check_invariants(), "");
  EXPECT_TRUE(k->touch_pages(1, 1, {1}, true).ok());
  EXPECT_TRUE(k->touch_pages(1, 0, {1}, true).ok());
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(CheckInvariants, CatchesAnMmapCacheOnAnotherProcesssVma) {
  auto k = make("linux-6.18");
  for (uint32_t pid : {1u, 2u}) {
    ASSERT_TRUE(k->spawn(pid).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_anon(pid, 0, 4 * kPage)).ok());
  }
  ASSERT_EQ(k->check_invariants(), "");
  kernel& kk = sim_kernel_internals::of(*k);
  kk.mms.at(1)->mmap_cache = &kk.mms.at(2)->vmas.begin()->second;
  EXPECT_NE(k->check_invariants().find("pid 1's mmap_cache is none of its VMAs"), std::string::npos)
      << k->check_invariants();
}

}  // namespace
}  // namespace vmlab
