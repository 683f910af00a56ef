// ppc64 paging (issue 10): the 2.6.15 ppc64-4k format with its slab-allocated PMD and PUD
// tables, and today's hash-64K format whose PTE and PMD tables are fragments of 64 KiB
// pages. Expected values are derived here from the formats' fields: entries, spans, table
// and fragment sizes.
#include <gtest/gtest.h>

#include "model/profile.h"
#include "tests/model/model_util.h"
#include "vmlab/sim_kernel.h"
#include "vmlab/units.h"
#include "workload/op_rules.h"

namespace vmlab {
namespace {

using namespace vmlab::testing;

TEST(Ppc64, FourKFormatIsThe2_6_15Tables) {
  const paging_format* f = find_paging_format("ppc64-4k");
  ASSERT_NE(f, nullptr);
  // PTE_INDEX_SIZE 9, PMD_INDEX_SIZE 7, PUD_INDEX_SIZE 7, PGD_INDEX_SIZE 9 (pgtable-4k.h).
  EXPECT_EQ(f->at(0).entries, 512u);
  EXPECT_EQ(f->at(1).entries, 128u);
  EXPECT_EQ(f->at(2).entries, 128u);
  EXPECT_EQ(f->pte().entries, 512u);
  EXPECT_EQ(f->pte().table_span(), 2 * MiB);    // PMD_SHIFT 21
  EXPECT_EQ(f->at(1).span(), 256 * MiB);        // one PUD entry: one 256 MiB segment
  EXPECT_EQ(f->task_size, vaddr{1} << 44);      // TASK_SIZE_USER64: 16 TiB
  EXPECT_EQ(f->at(0).table_span(), f->task_size);
  // PMD and PUD tables are 1 KiB objects of "pud_pmd_cache": four to a page.
  EXPECT_EQ(f->at(1).alloc, table_alloc::slab);
  EXPECT_EQ(f->at(2).alloc, table_alloc::slab);
  EXPECT_EQ(f->tables_per_page(2), 4u);
  EXPECT_EQ(f->pte().alloc, table_alloc::page);
  EXPECT_EQ(f->pmd_huge_size(), 0u);  // 16 MiB pages are not a PMD entry's 2 MiB span
}

TEST(Ppc64, HashSixtyFourKFormatHasFragments) {
  const paging_format* f = find_paging_format("ppc64-hash-64k");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->page_size(), 64 * KiB);
  EXPECT_EQ(f->pte().entries, 256u);      // H_PTE_INDEX_SIZE 8
  EXPECT_EQ(f->at(2).entries, 1024u);     // H_PMD_INDEX_SIZE 10
  EXPECT_EQ(f->at(1).entries, 128u);      // H_PUD_INDEX_SIZE 7
  EXPECT_EQ(f->at(0).entries, 256u);      // H_PGD_INDEX_SIZE 8
  EXPECT_EQ(f->pte().table_bytes(), 2 * KiB);  // what VmPTE counts
  EXPECT_EQ(f->pte().alloc_size(), 4 * KiB);   // with the hidx half
  EXPECT_EQ(f->tables_per_page(3), 16u);       // H_PTE_FRAG_NR
  EXPECT_EQ(f->tables_per_page(2), 4u);        // H_PMD_FRAG_NR with hugetlb/THP
  EXPECT_EQ(f->pmd_huge_size(), 16 * MiB);     // one PMD entry maps 16 MiB
  EXPECT_EQ(f->leaf_index(16 * MiB), 2);
}

TEST(Ppc64, OneGiBOfASharedSegmentOn2_6_15) {
  auto k = make("linux-2.6.15-ppc64", {}, 0, {{"sga", object_kind::shm, 1 * GiB}});
  const kernel_profile& p = k->profile();
  const paging_format& f = p.paging;
  EXPECT_EQ(p.objs.slab.cache_line, 128u);  // L1_CACHE_SHIFT 7
  for (uint32_t pid : {1u, 2u}) {
    ASSERT_TRUE(k->spawn(pid).ok());
    ASSERT_TRUE(k->mmap(map_op(pid, 0, 1 * GiB, 0, true, 1 * GiB)).ok());
    ASSERT_TRUE(k->touch(pid, 0, 0, 1 * GiB, f.page_size(), false).ok());
  }
  const sample s = k->snapshot("");
  // Per process: 1 GiB / (512 x 4 KiB) PTE pages, 1 GiB / (128 x 2 MiB) PMD tables, one PUD.
  const uint64_t n_pte = GiB / f.pte().table_span(), n_pmd = GiB / f.at(2).table_span();
  EXPECT_EQ(n_pte, 512u);
  EXPECT_EQ(n_pmd, 4u);
  EXPECT_EQ(levels(s), "2,0,2," + std::to_string(2 * n_pmd) + "," + std::to_string(2 * n_pte));
  // 2.6.15 counts PTE pages only, in PageTables and VmPTE alike.
  EXPECT_EQ(s.page_tables, 2 * n_pte * f.page_size());
  EXPECT_EQ(proc(s, 1).vmpte, n_pte * f.page_size());
  EXPECT_EQ(proc(s, 1).rss_shmem, GiB / f.page_size());
  EXPECT_EQ(k->check_invariants(), "");  // recounts the slab-packed PMD/PUD pages too
  ASSERT_TRUE(k->exit(1).ok());
  ASSERT_TRUE(k->exit(2).ok());
  EXPECT_EQ(levels(k->snapshot("")), "0,0,0,0,0");
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(Ppc64, HugetlbOn2_6_15SaysWhyItIsMissing) {
  const kernel_profile p = find_profile("linux-2.6.15-ppc64").value();
  EXPECT_TRUE(hugetlb_page_sizes(p).empty());
  const auto e = check_object(p, {"sga", object_kind::hugetlb, 256 * MiB, 16 * MiB});
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->message.find("16 MiB ppc64 hugetlb pages are not modelled"), std::string::npos) << e->message;
}

// linux-6.18-ppc64: one process maps t PTE tables' worth (t x 16 MiB) of a shared segment.
// PageTables counts whole 64 KiB pages of fragments (16 PTE fragments or 4 PMD fragments
// to a page); VmPTE counts 2 KiB per PTE table, 8 KiB per PMD table, 1 KiB per PUD table.
TEST(Ppc64, FragmentAccountingForOneSixteenAndSeventeenPteTables) {
  for (uint64_t t : {1u, 16u, 17u}) {
    SCOPED_TRACE(t);
    auto k = make("linux-6.18-ppc64", {}, 0, {{"sga", object_kind::shm, 1 * GiB}});
    const paging_format& f = k->profile().paging;
    const int pte = f.nr_levels - 1, pmd = pte - 1, pud = pmd - 1;
    const bytes len = t * f.pte().table_span();
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->mmap(map_op(1, 0, len, 0, true, f.at(pmd).table_span())).ok());
    ASSERT_TRUE(k->touch(1, 0, 0, len, f.page_size(), true).ok());
    const sample s = k->snapshot("");
    EXPECT_EQ(pages(s, level::pte), t);
    EXPECT_EQ(pages(s, level::pmd), 1u);
    const uint64_t pte_pages = div_round_up(t, f.tables_per_page(pte));  // 1, 1, 2
    EXPECT_EQ(pte_pages, t > 16 ? 2u : 1u);
    const uint64_t pmd_pages = div_round_up(1, f.tables_per_page(pmd));
    // PTE and PMD fragment pages are counted (pagetable_*_ctor per page); the slab PUD and
    // PGD are not.
    EXPECT_EQ(s.page_tables, (pte_pages + pmd_pages) * f.page_size());
    EXPECT_EQ(proc(s, 1).vmpte, t * f.pte().table_bytes() + f.at(pmd).table_bytes() + f.at(pud).table_bytes());
    EXPECT_EQ(proc(s, 1).vmpte, t * 2 * KiB + 8 * KiB + 1 * KiB);
    EXPECT_EQ(k->check_invariants(), "");
    ASSERT_TRUE(k->exit(1).ok());
    EXPECT_EQ(k->snapshot("").page_tables, 0u);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

TEST(Ppc64, FragmentPagesServeOneMmEach) {
  auto k = make("linux-6.18-ppc64", {}, 0, {{"sga", object_kind::shm, 1 * GiB}});
  const paging_format& f = k->profile().paging;
  for (uint32_t pid : {1u, 2u}) {
    ASSERT_TRUE(k->spawn(pid).ok());
    ASSERT_TRUE(k->mmap(map_op(pid, 0, f.pte().table_span(), 0, true, f.pte().table_span())).ok());
    ASSERT_TRUE(k->touch(pid, 0, 0, f.page_size(), f.page_size(), false).ok());
  }
  // Two processes, one PTE table and one PMD table each: four pages, not two, because a
  // fragment page belongs to the mm whose pte_frag/pmd_frag cache handed it out.
  EXPECT_EQ(k->snapshot("").page_tables, 4 * f.page_size());
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(Ppc64, SixteenMiBHugetlbPagesAreOnePmdEntryOnHash64K) {
  machine_decl m;
  m.profile = "linux-6.18-ppc64";
  m.hugepages = {{16 * MiB, 32}};
  auto k = make(m, {{"sga", object_kind::hugetlb, 256 * MiB, 16 * MiB}});
  ASSERT_NE(k, nullptr);
  const paging_format& f = k->profile().paging;
  EXPECT_EQ(hugetlb_page_sizes(k->profile()), std::vector<bytes>{16 * MiB});
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(map_op(1, 0, 256 * MiB, 0, true, 16 * MiB)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 256 * MiB, 16 * MiB, true).ok());
  const sample s = k->snapshot("");
  // No PTE table: 16 leaves in one PMD fragment (1024 entries of 16 MiB).
  EXPECT_EQ(pages(s, level::pte), 0u);
  EXPECT_EQ(pages(s, level::pmd), 1u);
  EXPECT_EQ(s.page_tables, f.page_size());  // the PMD fragment's page
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(Ppc64, NoHugetlbPmdSharingWithFragmentPmds) {
  kernel_profile p = find_profile("linux-6.18-ppc64").value();
  EXPECT_FALSE(p.huge.pmd_share);
  EXPECT_FALSE(apply_override(p, "hugetlb_pmd_share", "true").ok());
  kernel_profile x = find_profile("linux-6.18").value();
  ASSERT_TRUE(apply_override(x, "paging", "ppc64-hash-64k").ok());
  EXPECT_FALSE(x.huge.pmd_share);
  EXPECT_EQ(x.objs.slab.page_size, 64 * KiB);
}

}  // namespace
}  // namespace vmlab
