// ppc64 paging (issue 10): the 2.6.15 ppc64-4k format with its slab-allocated PMD and PUD
// tables, and today's hash-64K format whose PTE and PMD tables are fragments of 64 KiB
// pages. Expected values are derived here from the formats' fields: entries, spans, table
// and fragment sizes.
#include <gtest/gtest.h>

#include "model/profile.h"
#include "tests/model/model_util.h"
#include "vmlab/op_builder.h"
#include "vmlab/sim_kernel.h"
#include "vmlab/units.h"
#include "workload/op_rules.h"

namespace vmlab {
namespace {

using namespace vmlab::testing;

// A kernel of `profile` with a pool of `pool` 16 MiB hugetlb pages and hugetlb objects of
// 16 MiB pages, named and sized by `objs`.
std::unique_ptr<sim_kernel> huge16(const std::string& profile, uint64_t pool,
                                   const std::vector<std::pair<std::string, bytes>>& objs) {
  machine_decl m;
  m.profile = profile;
  m.hugepages = {{16 * MiB, pool}};
  std::vector<object_decl> decls;
  for (const auto& [name, size] : objs) decls.push_back({name, object_kind::hugetlb, size, 16 * MiB});
  return make(m, decls);
}

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
  // 16 MiB huge pages (HPAGE_SHIFT 24) in the PMD level of 2 MiB entries: one entry per
  // page, eight apart (hugetlbpage.c: "On 4k pages, we put huge PTEs in the PMD page").
  EXPECT_EQ(f->pmd_huge_size(), 16 * MiB);
  EXPECT_EQ(f->leaf_index(16 * MiB), 2);
  EXPECT_EQ(f->leaf_index(2 * MiB), -1);
  EXPECT_EQ(f->at(2).leaf_stride(), 16 * MiB / f->at(2).span());
  EXPECT_EQ(f->at(2).leaf_stride(), 8u);
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
    ASSERT_TRUE(k->mmap(ops::mmap_object(pid, 0, 0, 1 * GiB).shared().align(1 * GiB)).ok());
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

// 2.6.15 ppc64-4k hugetlb: a 1 GiB SGA of 16 MiB pages in a 1 TiB huge-page area, mapped
// by two processes and a forked child. Each needs one PUD table, GiB / 256 MiB PMD tables
// (16 huge PTEs in each, every eighth entry) and no PTE page; 2.6.15 counts only PTE
// pages, so PageTables and VmPTE stay 0.
TEST(Ppc64, SixteenMiBHugetlbPagesOn2_6_15AreEveryEighthPmdEntry) {
  auto k = huge16("linux-2.6.15-ppc64", 80, {{"sga", 1 * GiB}});
  ASSERT_NE(k, nullptr);
  const paging_format& f = k->profile().paging;
  const int pmd = f.index_of(level::pmd);
  const bytes huge = f.at(pmd).leaf_size();
  EXPECT_EQ(hugetlb_page_sizes(k->profile()), std::vector<bytes>{huge});
  const vaddr area = vaddr{1} << 40;  // the second 1 TiB area (HTLB_AREA_SHIFT 40)
  for (uint32_t pid : {1u, 2u}) {
    ASSERT_TRUE(k->spawn(pid).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_object(pid, 0, 0, 1 * GiB).shared().hugetlb().at(area)).ok());
    // Every 4 KiB page: one fault per 16 MiB page whatever the stride.
    ASSERT_TRUE(k->touch(pid, 0, 0, 1 * GiB, f.page_size(), true).ok());
  }
  const uint64_t n_huge = GiB / huge, n_pmd = GiB / f.at(pmd).table_span();
  EXPECT_EQ(n_huge, 64u);
  EXPECT_EQ(n_pmd, 4u);
  EXPECT_EQ(k->faults(), 2 * n_huge);
  sample s = k->snapshot("");
  EXPECT_EQ(levels(s), "2,0,2," + std::to_string(2 * n_pmd) + ",0");
  EXPECT_EQ(s.page_tables, 0u);
  EXPECT_EQ(proc(s, 1).vmpte, 0u);
  EXPECT_EQ(proc(s, 1).rss_file, GiB / f.page_size());  // 2.6.15 hugetlb_no_page: file_rss
  uint64_t leaves = 0;
  for (const pte_mapping& pm : k->mappings()) {
    if (pm.pid != 1) continue;
    ++leaves;
    EXPECT_EQ(pm.size, huge);
    EXPECT_EQ(pm.addr % huge, 0u);
  }
  EXPECT_EQ(leaves, n_huge);
  EXPECT_EQ(k->check_invariants(), "");
  // An access inside a mapped 16 MiB page (not on its PMD entry's 2 MiB) takes no fault.
  ASSERT_TRUE(k->touch(1, 0, huge + 5 * f.at(pmd).span() + 3 * f.page_size(), f.page_size(), f.page_size(), true).ok());
  EXPECT_EQ(k->faults(), 2 * n_huge);
  // fork: 2.6.15's copy_hugetlb_page_range copies every huge PTE into the child's tables.
  ASSERT_TRUE(k->fork(1, 3).ok());
  EXPECT_EQ(levels(k->snapshot("")), "3,0,3," + std::to_string(3 * n_pmd) + ",0");
  // munmap of one huge page: its entry goes, the PMD table stays (others live in it).
  ASSERT_TRUE(k->munmap(1, 0, 2 * huge, huge).ok());
  EXPECT_EQ(levels(k->snapshot("")), "3,0,3," + std::to_string(3 * n_pmd) + ",0");
  EXPECT_EQ(proc(k->snapshot(""), 1).rss_file, (GiB - huge) / f.page_size());
  EXPECT_EQ(k->check_invariants(), "");
  // munmap of a whole 256 MiB segment of pid 2: its PMD table goes with it.
  ASSERT_TRUE(k->munmap(2, 0, 0, f.at(pmd).table_span()).ok());
  EXPECT_EQ(levels(k->snapshot("")), "3,0,3," + std::to_string(3 * n_pmd - 1) + ",0");
  EXPECT_EQ(k->check_invariants(), "");
  for (uint32_t pid : {1u, 2u, 3u}) ASSERT_TRUE(k->exit(pid).ok());
  EXPECT_EQ(levels(k->snapshot("")), "0,0,0,0,0");
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(Ppc64, HugetlbMappingOn2_6_15MustBeSixteenMiBAligned) {
  auto k = huge16("linux-2.6.15-ppc64", 16, {{"sga", 256 * MiB}});
  ASSERT_NE(k, nullptr);
  const paging_format& f = k->profile().paging;
  ASSERT_TRUE(k->spawn(1).ok());
  // A PMD entry's span (2 MiB) past a 16 MiB boundary: not a huge page boundary.
  const vaddr at = (vaddr{1} << 40) + f.at(f.index_of(level::pmd)).span();
  const auto r = k->mmap(ops::mmap_object(1, 0, 0, 256 * MiB).shared().hugetlb().at(at));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("16 MiB"), std::string::npos) << r.error().message();
}

// 2.6.15 ppc64 keeps huge pages in huge-page-only areas: a 1 TiB area above 4 GiB or a
// 256 MiB segment below, opened by the first hugetlb mmap in it (EBUSY if it holds any
// mapping), closed to every other mapping afterwards (EINVAL), inherited at fork.
TEST(Ppc64, HugetlbAreasOn2_6_15HoldHugePagesOnly) {
  auto k = huge16("linux-2.6.15-ppc64", 64, {{"sga", 256 * MiB}, {"seg", 256 * MiB}});
  ASSERT_NE(k, nullptr);
  const vaddr tib = vaddr{1} << 40, seg = vaddr{1} << 28;
  auto huge_at = [&](uint32_t pid, uint32_t map, int32_t obj, vaddr a) {
    return k->mmap(ops::mmap_object(pid, map, obj, 256 * MiB).shared().hugetlb().at(a));
  };
  auto small_at = [&](uint32_t pid, uint32_t map, vaddr a) { return k->mmap(ops::mmap_anon(pid, map, 2 * MiB).at(a)); };
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(small_at(1, 0, tib + 512 * GiB).ok());
  auto r = huge_at(1, 1, 0, tib);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().rfind("EBUSY: the 1 TiB area at 0x10000000000 holds other mappings", 0), 0u)
      << r.error().message();
  ASSERT_TRUE(k->spawn(2).ok());
  ASSERT_TRUE(huge_at(2, 0, 0, tib).ok());
  r = small_at(2, 1, tib + 512 * GiB);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("lies in a huge-page-only area"), std::string::npos) << r.error().message();
  EXPECT_TRUE(small_at(2, 1, 2 * tib).ok());  // the next area is not a huge-page one
  // A low segment: only the 256 MiB segments the mapping covers become huge-page ones.
  ASSERT_TRUE(huge_at(2, 2, 1, seg).ok());
  EXPECT_FALSE(small_at(2, 3, seg + 128 * MiB).ok());
  EXPECT_TRUE(small_at(2, 3, 2 * seg).ok());
  // fork: the child has the parent's areas (dup_mm copies mm->context).
  ASSERT_TRUE(k->fork(2, 3).ok());
  EXPECT_FALSE(small_at(3, 4, tib + 512 * GiB).ok());
  EXPECT_EQ(k->check_invariants(), "");
  // Without an address: a hugetlb mapping opens the highest 1 TiB area that holds no
  // mapping, at its bottom, and the next one goes into that open area; another mapping
  // goes on below an open area (hugetlb_get_unmapped_area, arch_get_unmapped_area_topdown).
  const vaddr top = k->profile().paging.task_size;
  ASSERT_TRUE(k->spawn(4).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(4, 0, 2 * MiB)).ok());  // under mmap_base: the top area
  ASSERT_TRUE(k->mmap(ops::mmap_object(4, 1, 0, 256 * MiB).shared().hugetlb()).ok());
  EXPECT_EQ(k->map_addr(4, 1), top - 2 * tib);
  ASSERT_TRUE(k->mmap(ops::mmap_object(4, 2, 1, 256 * MiB).shared().hugetlb()).ok());
  EXPECT_EQ(k->map_addr(4, 2), top - 2 * tib + 256 * MiB);
  ASSERT_TRUE(k->spawn(5).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_object(5, 0, 0, 256 * MiB).shared().hugetlb()).ok());
  EXPECT_EQ(k->map_addr(5, 0), top - tib);  // the top area was empty
  ASSERT_TRUE(k->mmap(ops::mmap_anon(5, 1, 2 * MiB)).ok());
  EXPECT_EQ(k->map_addr(5, 1), top - tib - 2 * MiB);  // just below the open area
  EXPECT_EQ(k->check_invariants(), "");
}

// The first high area is [4 GiB, 1 TiB): 2.6.15's prepare_high_area_for_htlb starts area
// 0 at 4 GiB ("so that each address is controlled by exactly one of the high or low area
// bitmaps"). With every higher area taken, a hugetlb mapping opens area 0 there.
TEST(Ppc64, HugetlbAreaZeroStartsAtFourGiB) {
  auto k = huge16("linux-2.6.15-ppc64", 16, {{"sga", 256 * MiB}});
  ASSERT_NE(k, nullptr);
  const vaddr tib = vaddr{1} << 40;
  ASSERT_EQ(k->profile().paging.task_size, 16 * tib);  // areas 0-15
  ASSERT_TRUE(k->spawn(1).ok());
  for (uint32_t i = 1; i < 16; ++i)
    ASSERT_TRUE(k->mmap(ops::mmap_anon(1, i, 2 * MiB).at(vaddr(i) * tib + 512 * GiB)).ok()) << i;
  const auto r = k->mmap(ops::mmap_object(1, 0, 0, 256 * MiB).shared().hugetlb());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(k->map_addr(1, 0), vaddr{4} * GiB);
  EXPECT_EQ(k->check_invariants(), "");
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
    ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, 0, len).shared().align(f.at(pmd).table_span())).ok());
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
    ASSERT_TRUE(k->mmap(ops::mmap_object(pid, 0, 0, f.pte().table_span()).shared().align(f.pte().table_span())).ok());
    ASSERT_TRUE(k->touch(pid, 0, 0, f.page_size(), f.page_size(), false).ok());
  }
  // Two processes, one PTE table and one PMD table each: four pages, not two, because a
  // fragment page belongs to the mm whose pte_frag/pmd_frag cache handed it out.
  EXPECT_EQ(k->snapshot("").page_tables, 4 * f.page_size());
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(Ppc64, SixteenMiBHugetlbPagesAreOnePmdEntryOnHash64K) {
  auto k = huge16("linux-6.18-ppc64", 32, {{"sga", 256 * MiB}});
  ASSERT_NE(k, nullptr);
  const paging_format& f = k->profile().paging;
  EXPECT_EQ(hugetlb_page_sizes(k->profile()), std::vector<bytes>{16 * MiB});
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, 0, 256 * MiB).shared().align(16 * MiB)).ok());
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
