// mremap(2) and remap_file_pages(2) (src/model/mremap.cc): what a resize or a move does to
// the pages, the page tables and their peak on each kernel, the kernel's refusals word for
// word, PTSHARE's unsharing, and remap_file_pages on the kernels that have it.
//
// Expected values are derived here from the paging format: a PTE page maps 4 MiB on
// i386 2-level (2.4, 2.5.26) and 2 MiB on PAE and x86-64; a PMD page 1 GiB on x86-64.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/profile.h"
#include "model/ptshare.h"
#include "model_util.h"
#include "vmlab/op_builder.h"

namespace vmlab {
namespace {

using testing::make;
using testing::pages;
using testing::proc;

constexpr bytes kPage = 4 * KiB;
// Two addresses aligned to every table span used here (4 MiB PTE pages, 1 GiB PMD
// pages), below i386's 3 GiB TASK_SIZE.
constexpr vaddr kA = 1 * GiB, kB = 2 * GiB;

// What one PTE page maps under the kernel's paging format.
bytes pte_span(const sim_kernel& k) {
  const paging_format& f = k.profile().paging;
  return f.at(f.nr_levels - 1).table_span();
}

std::unique_ptr<sim_kernel> boot(const std::string& profile, std::vector<std::pair<std::string, std::string>> ov = {},
                                 std::vector<object_decl> objs = {}) {
  return make(profile, std::move(ov), 4 * GiB, std::move(objs));
}

std::string err(const result<vaddr>& r) { return r.ok() ? "ok" : r.error().message(); }
std::string err(const status& s) { return s.ok() ? "ok" : s.message(); }

// pid's PTEs, with addresses made relative to `base`.
std::vector<pte_mapping> ptes_of(const sim_kernel& k, uint32_t pid, vaddr base) {
  std::vector<pte_mapping> out;
  for (pte_mapping m : k.mappings())
    if (m.pid == pid) {
      m.addr -= base;
      out.push_back(m);
    }
  return out;
}

// A move hands every page to the new address with its identity and write bit, faults
// nothing, and leaves as many tables as before. Its peak differs: without move_normal_pmd
// (before 5.0) both copies of the PTE pages exist until the old range is unmapped.
TEST(Mremap, MoveKeepsEveryPageAndItsTablesOnEveryKernel) {
  struct kase {
    const char* profile;
    bool hands_over_pte_pages;
  };
  for (const kase& c : {kase{"linux-2.4", false}, kase{"linux-2.5.26", false}, kase{"linux-2.6.15", false},
                        kase{"linux-2.6.15-x86_64", false}, kase{"linux-6.18", true}}) {
    SCOPED_TRACE(c.profile);
    auto k = boot(c.profile, {}, {{"seg", object_kind::shm, 8 * MiB}});
    ASSERT_TRUE(k);
    const bytes len = 64 * MiB;
    const uint64_t n_pte = len / pte_span(*k);
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, len).at(kA)).ok());
    ASSERT_TRUE(k->touch(1, 0, 0, len, kPage, true).ok());
    ASSERT_TRUE(k->touch(1, 0, 0, len / 2, kPage, false).ok());
    // A forked child shares half of the pages (anon_id != 0) and COWs none.
    ASSERT_TRUE(k->fork(1, 2).ok());
    ASSERT_TRUE(k->touch(2, 0, len / 2, len / 2, kPage, true).ok());
    const sample before = k->snapshot("before");
    const uint64_t faults = k->faults();
    const std::vector<pte_mapping> m0 = ptes_of(*k, 1, kA);
    ASSERT_EQ(m0.size(), len / kPage);

    auto r = k->mremap(ops::mremap(1, 0, len).to(kB));
    ASSERT_EQ(err(r), "ok");
    EXPECT_EQ(r.value(), kB);
    EXPECT_EQ(k->map_addr(1, 0), kB);
    EXPECT_EQ(k->map_len(1, 0), len);
    EXPECT_EQ(k->check_invariants(), "");
    EXPECT_EQ(ptes_of(*k, 1, kB), m0) << "every page at the same offset from the new start, as it was";
    const sample after = k->snapshot("after");
    EXPECT_EQ(testing::levels(after), testing::levels(before));
    EXPECT_EQ(after.page_tables, before.page_tables);
    EXPECT_EQ(proc(after, 1).rss_anon, len / kPage);
    EXPECT_EQ(k->faults(), faults);
    // The child's pages (half its own since the COW) are where they were.
    EXPECT_EQ(proc(after, 2).rss_anon, len / kPage);
    EXPECT_EQ(k->map_addr(2, 0), kA);
    // Peak PTE pages: the parent's and the child's n_pte each, plus the parent's new copy
    // when the kernel moves entry by entry.
    EXPECT_EQ(k->peak().pt_pages[int(level::pte)], 2 * n_pte + (c.hands_over_pte_pages ? 0 : n_pte));
    // Reading the moved range again faults nothing: the pages are there. (A write would
    // fault on every page: fork write-protected them all.)
    ASSERT_TRUE(k->touch(1, 0, 0, len, kPage, false).ok());
    EXPECT_EQ(k->faults(), faults);
    for (uint32_t pid : {1u, 2u}) ASSERT_TRUE(k->exit(pid).ok());
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// 6.18: move_normal_pud hands a whole PMD page over when both ends are 1 GiB-aligned,
// move_normal_pmd a whole PTE page when they are 2 MiB-aligned; each is a policy of the
// profile (mremap_move_pud / mremap_move_pmd), and only the peak shows which ran.
TEST(Mremap, WholeTablesMoveWhenTheProfileHandsThemOver) {
  struct kase {
    bool pud, pmd;
    uint64_t peak_pmd, peak_pte;
  };
  const uint64_t n_pte = GiB / (2 * MiB);
  for (const kase& c : {kase{true, true, 1, n_pte}, kase{false, true, 2, n_pte}, kase{false, false, 2, 2 * n_pte}}) {
    SCOPED_TRACE(std::string("move_pud ") + (c.pud ? "on" : "off") + ", move_pmd " + (c.pmd ? "on" : "off"));
    auto k = boot("linux-6.18", {{"mremap_move_pud", c.pud ? "true" : "false"},
                                 {"mremap_move_pmd", c.pmd ? "true" : "false"}});
    ASSERT_TRUE(k);
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, GiB).at(kA)).ok());
    ASSERT_TRUE(k->touch(1, 0, 0, GiB, 2 * MiB, true).ok());  // one page per PTE page
    const sample before = k->snapshot("before");
    ASSERT_EQ(testing::levels(before), "1,0,1,1," + std::to_string(n_pte));
    ASSERT_EQ(err(k->mremap(ops::mremap(1, 0, GiB).to(kB))), "ok");
    EXPECT_EQ(k->check_invariants(), "");
    EXPECT_EQ(testing::levels(k->snapshot("after")), testing::levels(before));
    EXPECT_EQ(k->peak().pt_pages[int(level::pmd)], c.peak_pmd);
    EXPECT_EQ(k->peak().pt_pages[int(level::pte)], c.peak_pte);
    EXPECT_EQ(ptes_of(*k, 1, kB).size(), n_pte);
  }
}

// Shrinking unmaps the tail (its pages and the PTE pages wholly inside it); growing takes
// the free space after the mapping; a mapping in the way needs MREMAP_MAYMOVE.
TEST(Mremap, ShrinkGrowInPlaceAndMove) {
  auto k = boot("linux-6.18");
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 64 * MiB).at(kA)).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 1, 8 * MiB).at(kA + 96 * MiB)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 64 * MiB, kPage, true).ok());

  auto r = k->mremap(ops::mremap(1, 0, 24 * MiB));
  ASSERT_EQ(err(r), "ok");
  EXPECT_EQ(r.value(), kA);
  EXPECT_EQ(k->map_len(1, 0), 24 * MiB);
  EXPECT_EQ(pages(k->snapshot(""), level::pte), 24 * MiB / (2 * MiB));
  EXPECT_EQ(proc(k->snapshot(""), 1).rss_anon, 24 * MiB / kPage);
  EXPECT_EQ(k->check_invariants(), "");

  // Up to the next mapping, in place: the new part faults as it is touched.
  r = k->mremap(ops::mremap(1, 0, 96 * MiB));
  ASSERT_EQ(err(r), "ok");
  EXPECT_EQ(r.value(), kA);
  const uint64_t faults = k->faults();
  ASSERT_TRUE(k->touch(1, 0, 0, 96 * MiB, kPage, true).ok());
  EXPECT_EQ(k->faults() - faults, 72 * MiB / kPage);
  EXPECT_EQ(k->check_invariants(), "");

  // One page more and map 1 is in the way.
  r = k->mremap(ops::mremap(1, 0, 96 * MiB + kPage));
  EXPECT_EQ(err(r), "ENOMEM: mremap cannot grow [0x40000000, +100663296) in place (the next mapping is in the way) "
                    "and MREMAP_MAYMOVE was not given");
  r = k->mremap(ops::mremap(1, 0, 128 * MiB).maymove());
  ASSERT_EQ(err(r), "ok");
  const vaddr moved = r.value();
  EXPECT_NE(moved, kA);
  EXPECT_EQ(k->map_addr(1, 0), moved);
  EXPECT_EQ(ptes_of(*k, 1, moved).size(), 96 * MiB / kPage);
  EXPECT_EQ(proc(k->snapshot(""), 1).rss_anon, 96 * MiB / kPage);
  EXPECT_EQ(k->check_invariants(), "");
  // The old place is free: a fixed mapping there succeeds.
  EXPECT_TRUE(k->mmap(ops::mmap_anon(1, 2, 96 * MiB).at(kA)).ok());
}

// MREMAP_FIXED unmaps what lies at the target; the kernel's refusals, with its errno (and
// vmlab's EINVAL for lengths that are not page multiples, which the kernel rounds up).
TEST(Mremap, FixedTargetsAndRefusals) {
  auto k = boot("linux-6.18", {}, {{"seg", object_kind::shm, 16 * MiB}});
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 16 * MiB).at(kA)).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 1, 16 * MiB).at(kB)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 16 * MiB, kPage, true).ok());
  ASSERT_TRUE(k->touch(1, 1, 0, 16 * MiB, kPage, true).ok());
  ASSERT_EQ(err(k->mremap(ops::mremap(1, 0, 16 * MiB).to(kB + 8 * MiB))), "ok");
  // map 1 lost its second half to map 0.
  EXPECT_EQ(proc(k->snapshot(""), 1).rss_anon, (16 + 8) * MiB / kPage);
  EXPECT_EQ(ptes_of(*k, 1, kB).front().addr, 0u);
  EXPECT_EQ(k->check_invariants(), "");

  EXPECT_EQ(err(k->mremap(ops::mremap(1, 0, 16 * MiB).to(kB + 12 * MiB))), "EINVAL: mremap target overlaps the old range");
  op no_move = ops::mremap(1, 0, 16 * MiB).to(kA);
  no_move.maymove = false;
  EXPECT_EQ(err(k->mremap(no_move)), "EINVAL: MREMAP_FIXED needs MREMAP_MAYMOVE");
  EXPECT_EQ(err(k->mremap(ops::mremap(1, 0, 16 * MiB + 1))),
            "EINVAL: mremap lengths must be non-zero multiples of the page size");
  EXPECT_EQ(err(k->mremap(ops::mremap(1, 0, 16 * MiB).to(vaddr{1} << 47))),
            "EINVAL: mremap target [0x800000000000, +16777216) lies outside user space");
  EXPECT_EQ(err(k->mremap(ops::mremap(1, 0, 16 * MiB).to(kPage))),
            "EPERM: mremap target 0x1000 is below vm.mmap_min_addr");

  // A mapping split by mprotect is two VMAs: a grow or a move must lie in one
  // (vma_to_resize); a shrink unmaps the tail, whatever VMAs it spans.
  ASSERT_TRUE(k->mprotect(1, 1, 0, 4 * MiB, prot_read).ok());
  EXPECT_EQ(err(k->mremap(ops::mremap(1, 1, 32 * MiB).maymove())),
            "EFAULT: mremap of [0x80000000, 0x81000000) spans more than one VMA (vma_to_resize)");
  const vaddr kC = kB + 64 * MiB;
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 2, 8 * MiB).at(kC)).ok());
  ASSERT_TRUE(k->touch(1, 2, 0, 8 * MiB, kPage, true).ok());
  ASSERT_TRUE(k->mprotect(1, 2, 0, 2 * MiB, prot_read).ok());
  const uint64_t rss = proc(k->snapshot(""), 1).rss_anon;
  EXPECT_EQ(err(k->mremap(ops::mremap(1, 2, 4 * MiB))), "ok");
  EXPECT_EQ(proc(k->snapshot(""), 1).rss_anon, rss - 4 * MiB / kPage);
  EXPECT_EQ(k->map_len(1, 2), 4 * MiB);
  EXPECT_EQ(k->check_invariants(), "");

  // An object mapping grows no further than the object.
  ASSERT_TRUE(k->mmap(ops::mmap_object(1, 3, 0, 8 * MiB).shared().object_offset(4 * MiB)).ok());
  EXPECT_EQ(err(k->mremap(ops::mremap(1, 3, 12 * MiB + kPage).maymove())),
            "EINVAL: mremap to 12587008 bytes would map past the end of its object (vmlab models no pages beyond an "
            "object's end)");
  EXPECT_EQ(err(k->mremap(ops::mremap(1, 3, 12 * MiB).maymove())), "ok");
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(Mremap, HugetlbAndMshareMappingsAreRefused) {
  machine_decl m;
  m.profile = "linux-6.18";
  m.memory = 4 * GiB;
  m.hugepages = {{2 * MiB, 8}};
  auto k = make(m, {{"huge", object_kind::hugetlb, 16 * MiB, 2 * MiB}});
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, 0, 16 * MiB).shared()).ok());
  EXPECT_EQ(err(k->mremap(ops::mremap(1, 0, 8 * MiB))),
            "EINVAL: mremap of a hugetlb mapping (vmlab follows the kernels before 5.17, which refused it; see "
            "docs/decisions.md)");

  const auto prof = find_profile("linux-6.18-mshare");
  ASSERT_TRUE(prof.ok());
  const bytes region = mshare_align(prof.value().paging);
  auto ms = make("linux-6.18-mshare", {}, 4 * GiB, {{"sga", object_kind::shm, region, 0, true}});
  ASSERT_TRUE(ms);
  ASSERT_TRUE(ms->spawn(1).ok());
  ASSERT_TRUE(ms->mmap(ops::mmap_object(1, 0, 0, region).shared()).ok());
  EXPECT_EQ(err(ms->mremap(ops::mremap(1, 0, region).to(ms->map_addr(1, 0) + 2 * region))),
            "EINVAL: mremap of an mshare region: its VMA cannot be split or moved (mshare v3)");
  EXPECT_EQ(err(ms->remap_file_pages(ops::remap_file_pages(1, 0, 0, MiB, MiB))),
            "EINVAL: remap_file_pages of an mshare region: its VMA cannot be split (mshare v3)");
}

// A VM_LOCKED mapping that grows has the new part faulted in at once (mremap_to /
// vma_expandable then mm_populate).
TEST(Mremap, LockedMappingsArePopulatedAsTheyGrow) {
  auto k = boot("linux-6.18");
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 8 * MiB).at(kA).locked()).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 1, 8 * MiB).at(kA + 16 * MiB)).ok());
  const uint64_t rss = proc(k->snapshot(""), 1).rss_anon;
  ASSERT_EQ(err(k->mremap(ops::mremap(1, 0, 16 * MiB))), "ok");  // in place
  EXPECT_EQ(proc(k->snapshot(""), 1).rss_anon, rss + 8 * MiB / kPage);
  ASSERT_EQ(err(k->mremap(ops::mremap(1, 0, 32 * MiB).maymove())), "ok");  // moved
  EXPECT_EQ(proc(k->snapshot(""), 1).rss_anon, rss + 24 * MiB / kPage);
  ASSERT_EQ(err(k->mremap(ops::mremap(1, 0, 40 * MiB).to(kB))), "ok");  // MREMAP_FIXED, grown
  EXPECT_EQ(k->map_addr(1, 0), kB);
  EXPECT_EQ(proc(k->snapshot(""), 1).rss_anon, rss + 32 * MiB / kPage);
  EXPECT_EQ(k->check_invariants(), "");
}

// Where the destination's PTE pages come from: 2.5 allocates one as the first present
// entry of its span moves, so tables emptied by MADV_DONTNEED (kept: no kernel here frees
// them) move into nothing; 2.6.14+ allocates the destination table of every extent whose
// source table exists, entries or not (alloc_new_pmd), two for a source table the new
// range straddles.
TEST(Mremap, EmptyTablesMoveAsEachKernelMovedThem) {
  struct kase {
    const char* profile;
    bool per_extent;
  };
  for (const kase& c : {kase{"linux-2.5.26", false}, kase{"linux-2.6.15", true}, kase{"linux-2.6.15-x86_64", true}}) {
    for (const bytes shift : {bytes{0}, kPage}) {
      SCOPED_TRACE(std::string(c.profile) + (shift ? ", new range one page off the table grid" : ", aligned"));
      auto k = boot(c.profile);
      ASSERT_TRUE(k);
      const bytes span = pte_span(*k), len = 8 * span;
      ASSERT_TRUE(k->spawn(1).ok());
      ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, len).at(kA)).ok());
      ASSERT_TRUE(k->touch(1, 0, 0, len, kPage, true).ok());
      ASSERT_TRUE(k->madvise(1, 0, 0, len, advice::dontneed).ok());
      ASSERT_EQ(pages(k->snapshot(""), level::pte), len / span) << "emptied, not freed";
      ASSERT_EQ(err(k->mremap(ops::mremap(1, 0, len).to(kB + shift))), "ok");
      const uint64_t dest = c.per_extent ? len / span + (shift ? 1 : 0) : 0;
      EXPECT_EQ(pages(k->snapshot(""), level::pte), dest);
      EXPECT_EQ(k->check_invariants(), "");
    }
  }
}

// 2.5's pte_chains: each moved PTE is added to its page's chain before the old one is
// removed, so a page mapped by two processes keeps its one chain object, and the cache
// ends as it began.
TEST(Mremap, PteChainsFollowTheMovedPtes) {
  auto k = boot("linux-2.5.26", {}, {{"seg", object_kind::shm, 8 * MiB}});
  ASSERT_TRUE(k);
  auto chains = [&] {
    for (const slab_row& r : k->slabinfo(false))
      if (r.name == "pte_chain") return r.active_objs;
    return uint64_t{0};
  };
  for (uint32_t pid : {1u, 2u}) {
    ASSERT_TRUE(k->spawn(pid).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_object(pid, 0, 0, 8 * MiB).shared().at(kA)).ok());
    ASSERT_TRUE(k->touch(pid, 0, 0, 8 * MiB, kPage, false).ok());
  }
  const uint64_t before = chains();
  ASSERT_GE(before, 8 * MiB / kPage) << "every page is mapped twice: at least one chain object each";
  const uint64_t rmaps = k->meminfo_now().reverse_maps;
  ASSERT_EQ(err(k->mremap(ops::mremap(1, 0, 8 * MiB).to(kB))), "ok");
  EXPECT_EQ(chains(), before);
  EXPECT_EQ(k->meminfo_now().reverse_maps, rmaps);
  auto pi = k->page_at(1, 0, 0);
  ASSERT_TRUE(pi.ok());
  EXPECT_EQ(pi->mapcount, 2u);
  EXPECT_EQ(k->check_invariants(), "");
  // Shrinking frees the chains of the pages now mapped once.
  ASSERT_EQ(err(k->mremap(ops::mremap(1, 0, 4 * MiB))), "ok");
  EXPECT_EQ(k->meminfo_now().reverse_maps, rmaps - 4 * MiB / kPage);
  EXPECT_EQ(k->check_invariants(), "");
}

// 6.18 with THP: a huge PMD moves whole to a 2 MiB-aligned target (move_huge_pmd); to any
// other target it is split and its 512 PTEs move.
TEST(Mremap, HugePmdsMoveWholeOrAreSplit) {
  const uint64_t n = 32 * MiB / (2 * MiB);
  for (const vaddr to : {kB, kB + kPage}) {
    SCOPED_TRACE(to == kB ? "aligned" : "unaligned");
    auto k = boot("linux-6.18", {{"thp_enabled", "always"}});
    ASSERT_TRUE(k);
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 32 * MiB).at(kA)).ok());
    ASSERT_TRUE(k->touch(1, 0, 0, 32 * MiB, kPage, true).ok());
    auto huge_leaves = [&] {
      uint64_t c = 0;
      for (const pte_mapping& m : k->mappings()) c += m.size == 2 * MiB;
      return c;
    };
    ASSERT_EQ(huge_leaves(), n);
    ASSERT_EQ(pages(k->snapshot(""), level::pte), n) << "a deposited PTE page per huge PMD (pgtable_trans_huge_deposit)";
    ASSERT_EQ(err(k->mremap(ops::mremap(1, 0, 32 * MiB).to(to))), "ok");
    EXPECT_EQ(k->check_invariants(), "");
    EXPECT_EQ(proc(k->snapshot(""), 1).rss_anon, 32 * MiB / kPage);
    if (to == kB) {
      EXPECT_EQ(huge_leaves(), n);
      EXPECT_EQ(pages(k->snapshot(""), level::pte), n) << "the deposits moved with their PMDs";
      EXPECT_EQ(k->peak().pt_pages[int(level::pte)], n);
    } else {
      EXPECT_EQ(huge_leaves(), 0u);
      // The deposits became the PTE pages of the split (at the old place, freed with it);
      // 32 MiB starting one page past a 2 MiB boundary straddles n + 1 PTE pages.
      EXPECT_EQ(pages(k->snapshot(""), level::pte), n + 1);
      EXPECT_EQ(ptes_of(*k, 1, to).size(), 32 * MiB / kPage);
    }
  }
}

// PTSHARE: the moved range's shared PTE pages are let go first (they stay with the other
// process); at its new address nobody shares it, so its pages are faulted into tables of
// its own. A shrink unshares only the PTE page it cuts; growing in place unshares nothing.
TEST(Mremap, PtshareUnsharesWhatMoves) {
  constexpr vaddr kBase = vaddr{1} << 44;
  const bytes len = 64 * MiB;
  const uint64_t n = len / (2 * MiB);
  auto k = boot("linux-2.6.15-ptshare", {}, {{"seg", object_kind::shm, 2 * len}});
  ASSERT_TRUE(k);
  for (uint32_t pid : {1u, 2u}) {
    ASSERT_TRUE(k->spawn(pid).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_object(pid, 0, 0, len).shared().at(kBase)).ok());
    ASSERT_TRUE(k->touch(pid, 0, 0, len, kPage, false).ok());
  }
  ASSERT_EQ(pages(k->snapshot(""), level::pte), n) << "shared";
  const auto c0 = k->ptshare_counts();
  ASSERT_EQ(err(k->mremap(ops::mremap(2, 0, len).to(kBase + 4 * GiB))), "ok");
  EXPECT_EQ(k->ptshare_counts()[1] - c0[1], n);
  EXPECT_EQ(pages(k->snapshot(""), level::pte), n) << "pid 1's, now its alone";
  EXPECT_EQ(ptes_of(*k, 2, kBase + 4 * GiB).size(), 0u);
  EXPECT_EQ(k->check_invariants(), "");
  ASSERT_TRUE(k->touch(2, 0, 0, len, kPage, false).ok());
  EXPECT_EQ(pages(k->snapshot(""), level::pte), 2 * n);

  // pid 3 shares pid 1's tables again; shrinking by 1 MiB cuts one shared PTE page.
  ASSERT_TRUE(k->spawn(3).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_object(3, 0, 0, len).shared().at(kBase)).ok());
  ASSERT_TRUE(k->touch(3, 0, 0, len, kPage, false).ok());
  const auto c1 = k->ptshare_counts();
  ASSERT_EQ(err(k->mremap(ops::mremap(3, 0, len - MiB))), "ok");
  EXPECT_EQ(k->ptshare_counts()[1] - c1[1], 1u);
  EXPECT_EQ(k->check_invariants(), "");
  // Growing it back in place changes only the VMA's end.
  const auto c2 = k->ptshare_counts();
  ASSERT_EQ(err(k->mremap(ops::mremap(3, 0, len))), "ok");
  EXPECT_EQ(k->ptshare_counts()[1], c2[1]);
  EXPECT_EQ(k->check_invariants(), "");
}

// remap_file_pages: none before 2.5.46; 2.6's nonlinear VMA keeps the tables and replaces
// the PTEs; 4.0+'s emulation unmaps the range and maps it again at the new offset. Either
// way the range then maps the object's pages from the new offset.
TEST(RemapFilePages, EachKernelsImplementation) {
  for (const char* p : {"linux-2.4", "linux-2.5.26"}) {
    auto k = boot(p, {}, {{"seg", object_kind::shm, 16 * MiB}});
    ASSERT_TRUE(k);
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, 0, 16 * MiB).shared().at(kA)).ok());
    EXPECT_EQ(err(k->remap_file_pages(ops::remap_file_pages(1, 0, 0, MiB, 8 * MiB))),
              std::string("ENOSYS: ") + p + " has no remap_file_pages (it came with 2.5.46)");
  }
  for (const char* p : {"linux-2.6.15", "linux-6.18"}) {
    SCOPED_TRACE(p);
    auto k = boot(p, {}, {{"seg", object_kind::shm, 16 * MiB}});
    ASSERT_TRUE(k);
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, 0, 16 * MiB).shared().at(kA)).ok());
    ASSERT_TRUE(k->touch(1, 0, 0, 16 * MiB, kPage, false).ok());
    const sample before = k->snapshot("");
    // [1 MiB, 3 MiB) of the mapping now shows the object from 8 MiB; a whole PTE page
    // [2 MiB, 4 MiB) is inside it only in part.
    ASSERT_EQ(err(k->remap_file_pages(ops::remap_file_pages(1, 0, MiB, 2 * MiB, 8 * MiB))), "ok");
    EXPECT_EQ(k->check_invariants(), "");
    const std::vector<pte_mapping> m = ptes_of(*k, 1, kA);
    ASSERT_EQ(m.size(), 16 * MiB / kPage);
    for (const pte_mapping& x : m) {
      const uint64_t pg = x.addr / kPage;
      const uint64_t want = x.addr >= MiB && x.addr < 3 * MiB ? pg - MiB / kPage + 8 * MiB / kPage : pg;
      ASSERT_EQ(x.pgoff, want) << "at +0x" << std::hex << x.addr;
    }
    const sample after = k->snapshot("");
    EXPECT_EQ(testing::levels(after), testing::levels(before));
    EXPECT_EQ(proc(after, 1).rss_shmem, proc(before, 1).rss_shmem);
    // Remapping it back is linear again: the whole mapping is as before.
    ASSERT_EQ(err(k->remap_file_pages(ops::remap_file_pages(1, 0, MiB, 2 * MiB, MiB))), "ok");
    for (const pte_mapping& x : ptes_of(*k, 1, kA)) ASSERT_EQ(x.pgoff, x.addr / kPage);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

TEST(RemapFilePages, NeedsASharedFileMapping) {
  for (const char* p : {"linux-2.6.15", "linux-6.18"}) {
    SCOPED_TRACE(p);
    auto k = boot(p, {}, {{"seg", object_kind::shm, 16 * MiB}});
    ASSERT_TRUE(k);
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, 0, 16 * MiB).at(kA)).ok());  // private
    ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 1, 16 * MiB).at(kB)).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_object(1, 2, 0, 16 * MiB).shared().at(kA + 512 * MiB)).ok());
    EXPECT_EQ(err(k->remap_file_pages(ops::remap_file_pages(1, 0, 0, MiB, MiB))),
              "EINVAL: remap_file_pages needs a MAP_SHARED mapping of a file at 0x40000000");
    EXPECT_EQ(err(k->remap_file_pages(ops::remap_file_pages(1, 1, 0, MiB, MiB))),
              "EINVAL: remap_file_pages needs a MAP_SHARED mapping of a file at 0x80000000");
    EXPECT_EQ(err(k->remap_file_pages(ops::remap_file_pages(1, 2, 0, MiB, 16 * MiB))),
              "EINVAL: remap_file_pages of pages past the end of the object (vmlab models none)");
  }
}

}  // namespace
}  // namespace vmlab
