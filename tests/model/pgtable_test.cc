// Structural tests of the page-table model: per-level page counts derived in the test from
// the paging format, alignment, folding, free_pgtables floor/ceiling, fork copying rules,
// PT_RECLAIM, COW and the accounting each profile reports.
#include <gtest/gtest.h>

#include "model/profile.h"
#include "tests/model/model_util.h"
#include "vmlab/sim_kernel.h"
#include "vmlab/units.h"

namespace vmlab {
namespace {

using namespace vmlab::testing;

TEST(Pgtable, OneGiBAlignedAnonTouchOnX86_64) {
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  auto a = k->mmap(ops::mmap_anon(1, 0, 1 * GiB).align(1 * GiB));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.value() % GiB, 0u);
  ASSERT_TRUE(k->touch(1, 0, 0, 1 * GiB, 4096, true).ok());
  const sample s = k->snapshot("t");
  // 1 GiB / 2 MiB = 512 PTE pages under one PMD page under one PUD page.
  EXPECT_EQ(levels(s), "1,0,1,1,512");
  EXPECT_EQ(proc(s, 1).vmpte, (512u + 1 + 1) * 4096);
  // linux-6.18 counts every level, the PGD as 8 KiB under PTI.
  EXPECT_EQ(s.page_tables, (512u + 1 + 1) * 4096 + 8192);
  EXPECT_EQ(proc(s, 1).rss_anon, GiB / 4096);
  EXPECT_EQ(k->faults(), GiB / 4096);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(Pgtable, SparseTouchCostsTheSamePageTables) {
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 1 * GiB).align(1 * GiB)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 1 * GiB, 2 * MiB, false).ok());
  const sample s = k->snapshot("t");
  EXPECT_EQ(levels(s), "1,0,1,1,512");
  EXPECT_EQ(k->faults(), 512u);
  EXPECT_EQ(proc(s, 1).rss_anon, 0u);  // reads map the zero page
}

TEST(Pgtable, StraddlingMappingsNeedAnExtraTable) {
  for (bytes phase : {bytes{0}, 1 * MiB}) {
    auto k = make("linux-6.18");
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 64 * MiB).align(2 * MiB, phase)).ok());
    ASSERT_TRUE(k->touch(1, 0, 0, 64 * MiB, 4096, true).ok());
    const uint64_t expect = 64 * MiB / (2 * MiB) + (phase ? 1 : 0);
    EXPECT_EQ(pages(k->snapshot(""), level::pte), expect) << "phase " << phase;
  }
  // Across a 1 GiB boundary: two PMD pages.
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 64 * MiB).align(1 * GiB, 1 * GiB - 32 * MiB)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 64 * MiB, 4096, false).ok());
  EXPECT_EQ(levels(k->snapshot("")), "1,0,1,2,32");
}

TEST(Pgtable, I386TwoLevelFoldsThePmd) {
  auto k = make("linux-2.5.26");
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 64 * MiB).align(4 * MiB)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 64 * MiB, 4096, true).ok());
  const sample s = k->snapshot("");
  // A PTE page maps 1024 x 4 KiB = 4 MiB; no PMD/PUD level exists.
  EXPECT_EQ(levels(s), "1,0,0,0,16");
  EXPECT_EQ(s.page_tables, 16u * 4096);  // PTE pages only
}

TEST(Pgtable, PaePreallocatesPmdsAndCountsOnlyPtes) {
  auto k = make("linux-2.6.15");
  ASSERT_TRUE(k->spawn(1).ok());
  sample s = k->snapshot("");
  EXPECT_EQ(levels(s), "1,0,0,3,0");  // 32-byte PGD + 3 user PMDs from pgd_alloc
  EXPECT_EQ(proc(s, 1).vmpte, 0u);
  EXPECT_EQ(s.page_tables, 0u);
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 64 * MiB).align(2 * MiB)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 64 * MiB, 4096, true).ok());
  s = k->snapshot("");
  EXPECT_EQ(levels(s), "1,0,0,3,32");
  EXPECT_EQ(proc(s, 1).vmpte, 32u * 4096);
  ASSERT_TRUE(k->munmap(1, 0, 0, 64 * MiB).ok());
  EXPECT_EQ(levels(k->snapshot("")), "1,0,0,3,0");  // PMDs stay until exit
  ASSERT_TRUE(k->exit(1).ok());
  EXPECT_EQ(levels(k->snapshot("")), "0,0,0,0,0");
}

TEST(Pgtable, FreePgtablesKeepsTablesSharedWithANeighbour) {
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  op a = ops::mmap_anon(1, 0, 1 * MiB);
  a.fixed = true;
  a.addr = 0x200000000000ull;
  op b = ops::mmap_anon(1, 1, 1 * MiB);
  b.fixed = true;
  b.addr = 0x200000000000ull + 1 * MiB;
  b.prot = prot_read;  // different flags: no merge
  ASSERT_TRUE(k->mmap(a).ok());
  ASSERT_TRUE(k->mmap(b).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 1 * MiB, 4096, true).ok());
  ASSERT_TRUE(k->touch(1, 1, 0, 1 * MiB, 4096, false).ok());
  EXPECT_EQ(levels(k->snapshot("")), "1,0,1,1,1");
  ASSERT_TRUE(k->munmap(1, 0, 0, 1 * MiB).ok());
  EXPECT_EQ(levels(k->snapshot("")), "1,0,1,1,1");  // the neighbour still uses the PTE page
  ASSERT_TRUE(k->munmap(1, 1, 0, 1 * MiB).ok());
  EXPECT_EQ(levels(k->snapshot("")), "1,0,0,0,0");  // gap [0, top): everything goes
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(Pgtable, PartialMunmapFreesOnlyWholeSpans) {
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 64 * MiB).align(2 * MiB)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 64 * MiB, 4096, true).ok());
  // Unmap 8 MiB + 1 MiB from the middle, starting 1 MiB into a PTE page's span: the PTE
  // pages fully inside [start, end) go (4), the two partial ones stay.
  ASSERT_TRUE(k->munmap(1, 0, 17 * MiB, 9 * MiB).ok());
  EXPECT_EQ(pages(k->snapshot(""), level::pte), 32u - 4);
  EXPECT_EQ(k->check_invariants(), "");
}

// Top-down placement takes the highest hole that fits, however the holes came about: a
// run of mmaps that fills the space downwards remembers where the room began
// (mm_struct::topdown), and munmap, which makes a hole, must make it forget.
TEST(Mmap, TopDownTakesTheHighestHoleAfterAMunmap) {
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  // Four 4 KiB mappings, 8 KiB aligned: each goes below the last, a 4 KiB gap between.
  std::vector<vaddr> at;
  for (uint32_t m = 0; m < 4; ++m) {
    auto a = k->mmap(ops::mmap_anon(1, m, 4 * KiB).align(8 * KiB));
    ASSERT_TRUE(a.ok());
    at.push_back(*a);
  }
  for (size_t m = 1; m < at.size(); ++m) EXPECT_EQ(at[m], at[m - 1] - 8 * KiB);
  // The second one goes; the next mapping of its size takes its place, the highest fit.
  ASSERT_TRUE(k->munmap(1, 1, 0, 4 * KiB).ok());
  auto again = k->mmap(ops::mmap_anon(1, 4, 4 * KiB).align(8 * KiB));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, at[1]);
  // And the one after that goes below the lowest, where the run had got to.
  auto next = k->mmap(ops::mmap_anon(1, 5, 4 * KiB).align(8 * KiB));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, at[3] - 8 * KiB);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(Pgtable, OldKernelsFreeOnlyWholePgdEntries) {
  auto k = make("linux-2.5.26");
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 64 * MiB).align(4 * MiB)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 64 * MiB, 4096, true).ok());
  // 6 MiB from offset 2 MiB: only the PGD entry [4 MiB, 8 MiB) lies wholly inside.
  ASSERT_TRUE(k->munmap(1, 0, 2 * MiB, 6 * MiB).ok());
  EXPECT_EQ(pages(k->snapshot(""), level::pte), 15u);
}

TEST(Pgtable, ForkCopiesOnlyVmasWithAnonVma) {
  std::vector<object_decl> objs = {{"seg", object_kind::shm, 256 * MiB}};
  auto k = make("linux-6.18", {}, 0, objs);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, 0, 256 * MiB).shared().align(2 * MiB)).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 1, 64 * MiB).align(2 * MiB)).ok());
  op ro = ops::mmap_anon(1, 2, 64 * MiB).align(2 * MiB);
  ro.prot = prot_read;  // different flags, so vma_merge keeps it apart from map 1
  ASSERT_TRUE(k->mmap(ro).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 256 * MiB, 4096, true).ok());
  ASSERT_TRUE(k->touch(1, 1, 0, 64 * MiB, 4096, true).ok());   // anon_vma
  ASSERT_TRUE(k->touch(1, 2, 0, 64 * MiB, 4096, false).ok());  // zero page only: no anon_vma
  ASSERT_TRUE(k->fork(1, 2).ok());
  const sample s = k->snapshot("");
  // The child copies the written anonymous VMA (32 PTE + its PMD + PUD), nothing else.
  EXPECT_EQ(proc(s, 2).vmpte, (32u + 1 + 1) * 4096);
  EXPECT_EQ(proc(s, 2).rss_anon, 64 * MiB / 4096);
  EXPECT_EQ(proc(s, 2).rss_shmem, 0u);
  // Before 2.6.14 fork copied everything.
  auto old = make("linux-6.18", {{"fork_skips_shared", "false"}}, 0, objs);
  ASSERT_TRUE(old->spawn(1).ok());
  ASSERT_TRUE(old->mmap(ops::mmap_object(1, 0, 0, 256 * MiB).shared().align(2 * MiB)).ok());
  ASSERT_TRUE(old->touch(1, 0, 0, 256 * MiB, 4096, true).ok());
  ASSERT_TRUE(old->fork(1, 2).ok());
  EXPECT_EQ(proc(old->snapshot(""), 2).vmpte, (128u + 1 + 1) * 4096);
  EXPECT_EQ(proc(old->snapshot(""), 2).rss_shmem, 256 * MiB / 4096);
  EXPECT_EQ(old->check_invariants(), "");
}

TEST(Pgtable, CowAfterForkCopiesOnlyWhileShared) {
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 8 * MiB).align(2 * MiB)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 8 * MiB, 4096, true).ok());
  ASSERT_TRUE(k->fork(1, 2).ok());
  const uint64_t n = 8 * MiB / 4096;
  EXPECT_EQ(k->cow_faults(), 0u);
  ASSERT_TRUE(k->touch(2, 0, 0, 4 * MiB, 4096, true).ok());  // child writes half: copies
  EXPECT_EQ(k->cow_faults(), n / 2);
  ASSERT_TRUE(k->exit(2).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 8 * MiB, 4096, true).ok());  // parent alone again: reuses
  EXPECT_EQ(k->cow_faults(), n / 2);
  EXPECT_EQ(k->faults(), n + n / 2 + n);  // first touch, child's COW, parent's write-protect faults
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(Pgtable, MadvDontneedReclaimsWholeEmptyPtePagesOnlyWithPtReclaim) {
  for (bool reclaim : {true, false}) {
    auto k = make("linux-6.18", {{"pt_reclaim", reclaim ? "true" : "false"}});
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 64 * MiB).align(2 * MiB)).ok());
    ASSERT_TRUE(k->touch(1, 0, 0, 64 * MiB, 4096, true).ok());
    // [3 MiB, 11 MiB): covers the spans [4,6), [6,8), [8,10) wholly; [2,4) and [10,12) partly.
    ASSERT_TRUE(k->madvise_dontneed(1, 0, 3 * MiB, 8 * MiB).ok());
    const sample s = k->snapshot("");
    EXPECT_EQ(pages(s, level::pte), reclaim ? 29u : 32u);
    EXPECT_EQ(pages(s, level::pmd), 1u);  // the PMD page is never reclaimed
    EXPECT_EQ(proc(s, 1).rss_anon, (64 - 8) * MiB / 4096);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

TEST(Pgtable, MprotectSplitsAndMergesWithoutTouchingTables) {
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 16 * MiB).align(2 * MiB)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 16 * MiB, 4096, true).ok());
  ASSERT_TRUE(k->mprotect(1, 0, 4 * MiB, 4 * MiB, prot_read).ok());
  EXPECT_FALSE(k->touch(1, 0, 4 * MiB, 4096, 4096, true).ok());  // SIGSEGV on a read-only page
  EXPECT_TRUE(k->touch(1, 0, 4 * MiB, 4096, 4096, false).ok());
  ASSERT_TRUE(k->mprotect(1, 0, 4 * MiB, 4 * MiB, prot_read | prot_write).ok());
  EXPECT_EQ(pages(k->snapshot(""), level::pte), 8u);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(Pgtable, FaultAroundMapsCachedNeighbours) {
  std::vector<object_decl> objs = {{"seg", object_kind::shm, 2 * MiB}};
  auto k = make("linux-6.18", {}, 0, objs);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->spawn(2).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, 0, 2 * MiB).shared().align(2 * MiB)).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_object(2, 0, 0, 2 * MiB).shared().align(2 * MiB)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 2 * MiB, 4096, false).ok());  // populates the cache: 512 faults
  EXPECT_EQ(k->faults(), 512u);
  ASSERT_TRUE(k->touch(2, 0, 0, 2 * MiB, 4096, false).ok());  // 64 KiB windows: 32 faults
  EXPECT_EQ(k->faults(), 512u + 32);
  EXPECT_EQ(proc(k->snapshot(""), 2).rss_shmem, 512u);
}

TEST(Pgtable, ExhaustedMemoryFailsTheFaultAsENOMEM) {
  auto k = make("linux-6.18", {}, 64 * MiB);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 128 * MiB).align(2 * MiB)).ok());
  status s = k->touch(1, 0, 0, 128 * MiB, 4096, true);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("ENOMEM: out of memory allocating an anonymous page", 0), 0u) << s.message();
  EXPECT_EQ(k->check_invariants(), "");
  ASSERT_TRUE(k->exit(1).ok());
  EXPECT_EQ(levels(k->snapshot("")), "0,0,0,0,0");
}

TEST(Pgtable, FixedOverlapIsEEXIST) {
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  op a = ops::mmap_anon(1, 0, 4 * MiB);
  a.fixed = true;
  a.addr = 0x200000000000ull;
  ASSERT_TRUE(k->mmap(a).ok());
  a.map = 1;
  a.addr += 2 * MiB;
  auto r = k->mmap(a);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "EEXIST: fixed mapping overlaps an existing mapping");
}

TEST(Pgtable, AdjacentAnonMappingsMergeAndForkCopiesTheMergedVma) {
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 64 * MiB).align(2 * MiB)).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 1, 64 * MiB)).ok());  // directly below: same flags, merges
  ASSERT_TRUE(k->touch(1, 0, 0, 64 * MiB, 4096, true).ok());
  ASSERT_TRUE(k->touch(1, 1, 0, 64 * MiB, 4096, false).ok());
  ASSERT_TRUE(k->fork(1, 2).ok());
  // One VMA with an anon_vma: both halves are copied, zero-page entries included.
  EXPECT_EQ(proc(k->snapshot(""), 2).vmpte, (64u + 1 + 1) * 4096);
}

TEST(Pgtable, TopDownPlacementIsDeterministicAndAdjacent) {
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  auto a = k->mmap(ops::mmap_anon(1, 0, 4 * MiB));
  auto b = k->mmap(ops::mmap_anon(1, 1, 4 * MiB));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.value(), k->profile().mmap_base - 4 * MiB);
  EXPECT_EQ(b.value(), a.value() - 4 * MiB);
}

TEST(Pgtable, TopDownFallsBackToBottomUpForHugeMappings) {
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  // 64 TiB does not fit below mmap_base (64 TiB, minus mmap_min_addr): the kernel retries
  // bottom-up from TASK_UNMAPPED_BASE = TASK_SIZE / 3.
  auto a = k->mmap(ops::mmap_anon(1, 0, 64 * TiB));
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  EXPECT_EQ(a.value(), round_up(k->profile().paging.task_size / 3, 4096));
}

}  // namespace
}  // namespace vmlab
