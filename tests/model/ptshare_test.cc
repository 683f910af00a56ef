// Shared page tables (PTSHARE, src/model/ptshare.h): when pages are shared, what each
// broken condition prevents, what unsharing does, and a differential run against the
// same kernel without sharing.
//
// Expected values are derived here from the paging format: a PTE page maps 2 MiB, a PMD
// page 1 GiB, a PUD table (an mshare region) 512 GiB, on x86-64 4-level.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <random>
#include <sstream>

#include <fmt/format.h>

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
constexpr bytes kPteSpan = 2 * MiB;  // what one PTE page maps
constexpr vaddr kBase = vaddr{1} << 44;  // 16 TiB: 512 GiB-aligned (P4D_SIZE), below mmap_base
constexpr const char* kShare = "linux-2.6.15-ptshare";
constexpr const char* kNoShare = "linux-2.6.15-x86_64";

// One mapping of object 0 (or anonymous with object -1) at a fixed address.
op at(uint32_t pid, vaddr addr, bytes len, int32_t object = 0, bool shared = true, uint8_t prot = prot_read | prot_write,
      bytes obj_off = 0) {
  return ops::mmap_object(pid, 0, object, len).shared(shared).at(addr).prot(prot).object_offset(obj_off);
}

struct world {
  std::unique_ptr<sim_kernel> k;
  explicit world(const std::string& profile, bytes seg = 2 * GiB, object_kind kind = object_kind::shm,
                 std::vector<std::pair<std::string, std::string>> ov = {})
      : k(make(profile, std::move(ov), 16 * GiB, {{"seg", kind, seg, 0}})) {}
  void attach(const op& o, bool write = false) {
    ASSERT_TRUE(k->spawn(o.pid).ok());
    auto r = k->mmap(o);
    ASSERT_TRUE(r.ok()) << r.error().message();
    ASSERT_TRUE(k->touch(o.pid, 0, 0, o.len, kPage, write).ok());
    ASSERT_EQ(k->check_invariants(), "");
  }
  [[nodiscard]] uint64_t pte_pages() const { return pages(k->snapshot("x"), level::pte); }
  [[nodiscard]] uint64_t pmd_pages() const { return pages(k->snapshot("x"), level::pmd); }
};

// Eight processes attach a 2 GiB segment at one 1 GiB-aligned address and read all of
// it: PTSHARE_PMD shares the two PMD pages and so the 1,024 PTE pages under them.
TEST(Ptshare, PmdPagesAreSharedWhereTheVmaCoversWholePudSpans) {
#ifdef VMLAB_SANITIZED
  constexpr uint32_t kProcs = 3;  // the unshared kernel's recount of 2 GiB per process is the cost
#else
  constexpr uint32_t kProcs = 8;
#endif
  constexpr bytes kSeg = 2 * GiB;
  const uint64_t ptes = kSeg / kPteSpan, pmds = kSeg / GiB;
  world shared(kShare, kSeg), alone(kNoShare, kSeg);
  for (uint32_t pid = 1; pid <= kProcs; ++pid) {
    shared.attach(at(pid, kBase, kSeg));
    alone.attach(at(pid, kBase, kSeg));
  }
  EXPECT_EQ(alone.pte_pages(), kProcs * ptes);
  EXPECT_EQ(alone.pmd_pages(), kProcs * pmds);
  EXPECT_EQ(shared.pte_pages(), ptes);
  EXPECT_EQ(shared.pmd_pages(), pmds);
  const sample s = shared.k->snapshot("x");
  EXPECT_EQ(s.page_tables, ptes * kPage);  // 2.6.15 counts PTE pages only
  for (uint32_t pid = 1; pid <= kProcs; ++pid) {
    // 2.6.15's VmPTE is nr_ptes: an mm holding shared PMD pages owns no PTE page, so
    // Hugh Dickins's "VmPTE will always be '0 kB'?" is the answer under PMD sharing.
    EXPECT_EQ(proc(s, pid).vmpte, 0u);
    EXPECT_EQ(proc(s, pid).rss_shmem, kSeg / kPage) << "a shared subtree's entries are in every sharer's RSS";
  }
  // Only the first process faulted: the others found every entry in place.
  EXPECT_EQ(shared.k->faults(), kSeg / kPage);
  EXPECT_EQ(proc(s, 2).min_flt, 0u);
}

// A 256 MiB segment covers PMD spans only: its PTE pages are shared, and each sharer's
// VmPTE counts the PTE pages it points at.
TEST(Ptshare, PtePagesAreSharedWhereTheVmaCoversWholePmdSpans) {
  constexpr bytes kSeg = 256 * MiB;
  world w(kShare, kSeg);
  for (uint32_t pid = 1; pid <= 4; ++pid) w.attach(at(pid, kBase, kSeg));
  const uint64_t ptes = kSeg / kPteSpan;
  EXPECT_EQ(w.pte_pages(), ptes);
  EXPECT_EQ(w.pmd_pages(), 4u);  // each process its own PMD page
  const sample s = w.k->snapshot("x");
  for (uint32_t pid = 1; pid <= 4; ++pid) EXPECT_EQ(proc(s, pid).vmpte, ptes * kPage);
}

// Each condition of pt_shareable_vma() and of the partner search, broken on its own by
// the second process, keeps the two apart; the control case shares.
TEST(Ptshare, EachBrokenConditionPreventsSharing) {
  constexpr bytes kSeg = 64 * MiB;
  const uint64_t ptes = kSeg / kPteSpan;
  struct variant {
    const char* what;
    op second;
    object_kind kind = object_kind::shm;
    bool shares = false;
  };
  const variant variants[] = {
      {"the same mapping (control)", at(2, kBase, kSeg), object_kind::shm, true},
      {"another address", at(2, kBase + GiB, kSeg)},
      {"another length (vm_end)", at(2, kBase, kSeg - kPteSpan)},
      {"another file offset (vm_pgoff)", at(2, kBase, kSeg, 0, true, prot_read | prot_write, kPteSpan)},
      {"other permissions", at(2, kBase, kSeg, 0, true, prot_read)},
  };
  for (const variant& v : variants) {
    SCOPED_TRACE(v.what);
    world w(kShare, 2 * kSeg, v.kind);
    w.attach(at(1, kBase, kSeg));
    w.attach(v.second);
    const uint64_t second = (v.second.len + kPteSpan - 1) / kPteSpan + ((v.second.addr % kPteSpan) ? 1 : 0);
    EXPECT_EQ(w.pte_pages(), v.shares ? ptes : ptes + second);
  }
  // Mappings that are never shareable, however alike: private writable, anonymous, and
  // shorter than PMD_SIZE.
  struct lone {
    const char* what;
    int32_t object;
    bool shared;
    uint8_t prot;
    bytes len;
    object_kind kind;
    bool shares;
  };
  const lone lones[] = {
      {"private read-only file (control)", 0, false, prot_read, kSeg, object_kind::file, true},
      {"private writable file", 0, false, prot_read | prot_write, kSeg, object_kind::file, false},
      {"anonymous", -1, false, prot_read | prot_write, kSeg, object_kind::shm, false},
      {"shorter than PMD_SIZE", 0, true, prot_read | prot_write, kPteSpan - kPage, object_kind::shm, false},
  };
  for (const lone& l : lones) {
    SCOPED_TRACE(l.what);
    world w(kShare, kSeg, l.kind);
    w.attach(at(1, kBase, l.len, l.object, l.shared, l.prot));
    w.attach(at(2, kBase, l.len, l.object, l.shared, l.prot));
    const uint64_t each = (l.len + kPteSpan - 1) / kPteSpan;
    EXPECT_EQ(w.pte_pages(), l.shares ? each : 2 * each);
  }
}

// Unsharing: on each trigger the process lets go of the shared pages (nothing is
// copied), the other keeps every entry, and a later touch refills a table of its own.
TEST(Ptshare, EachTriggerUnsharesWithoutDisturbingThePartner) {
  constexpr bytes kSeg = 64 * MiB;
  const uint64_t ptes = kSeg / kPteSpan;
  struct trigger {
    const char* what;
    std::function<status(sim_kernel&)> act;
    bool reshapes;  // the VMA changes shape: no partner has its new key
  };
  const trigger triggers[] = {
      {"mprotect of one page", [](sim_kernel& k) { return k.mprotect(2, 0, 0, kPage, prot_read); }, true},
      {"munmap of one page", [](sim_kernel& k) { return k.munmap(2, 0, 0, kPage); }, true},
      {"MADV_DONTNEED of one page", [](sim_kernel& k) { return k.madvise_dontneed(2, 0, 0, kPage); }, false},
      {"exit", [](sim_kernel& k) { return k.exit(2); }, true},
  };
  for (const trigger& t : triggers) {
    SCOPED_TRACE(t.what);
    world w(kShare, kSeg);
    w.attach(at(1, kBase, kSeg));
    w.attach(at(2, kBase, kSeg));
    ASSERT_EQ(w.pte_pages(), ptes);
    const uint64_t attaches = w.k->ptshare_counts()[0];
    EXPECT_EQ(attaches, ptes) << "process 2 took every PTE page from process 1";
    ASSERT_TRUE(t.act(*w.k).ok());
    ASSERT_EQ(w.k->check_invariants(), "");
    // One reference dropped per shared page under the change (exit: all of them), each a
    // flush_tlb_all.
    const uint64_t dropped = w.k->has_process(2) ? 1 : ptes;
    EXPECT_EQ(w.k->ptshare_counts()[1], dropped);
    EXPECT_EQ(w.k->ptshare_counts()[2], dropped);
    // Process 1 still maps every page, through the same tables.
    EXPECT_EQ(w.pte_pages(), ptes);
    EXPECT_EQ(proc(w.k->snapshot("x"), 1).rss_shmem, kSeg / kPage);
    if (!w.k->has_process(2)) continue;
    // Process 2 let go of the one PTE page under the changed page and keeps the others:
    // it maps the segment less that page's 2 MiB until it faults them back.
    EXPECT_EQ(proc(w.k->snapshot("x"), 2).rss_shmem, (kSeg - kPteSpan) / kPage);
    EXPECT_EQ(proc(w.k->snapshot("x"), 2).vmpte, (ptes - 1) * kPage);
    // Faulting the rest back (the touch starts after the changed page) takes the
    // partner's page again where the VMA kept its shape (MADV_DONTNEED), and gives
    // process 2 a page of its own where it did not (its new key has no partner).
    ASSERT_TRUE(w.k->touch(2, 0, kPage, kPteSpan - kPage, kPage, false).ok());
    ASSERT_EQ(w.k->check_invariants(), "");
    EXPECT_EQ(w.pte_pages(), ptes + (t.reshapes ? 1 : 0));
    EXPECT_EQ(proc(w.k->snapshot("x"), 2).rss_shmem, (t.reshapes ? kSeg - kPage : kSeg) / kPage);
  }
}

// mshare's unit, P4D_SIZE (mshare_align): what one entry above the PUD tables maps,
// from the profile's paging format (one PGD entry, 512 GiB, on x86-64 4-level).
bytes mshare_unit() {
  const auto p = find_profile("linux-6.18-mshare");
  return p.ok() ? mshare_align(p.value().paging) : 0;
}

// mshare: processes map one region at different P4D_SIZE-aligned addresses and link the
// host's PUD table from their PGD entry (mm/mshare.c find_shared_vma, set_p4d): the PUD,
// PMD and PTE pages are the host mm's, PageTables counts them once, no process's VmPTE
// counts them, and the last unmap frees them.
TEST(Mshare, ProcessesShareTheRegionsPudTableAtAnyAddress) {
  const bytes kRegion = mshare_unit();
  ASSERT_EQ(kRegion, 512 * GiB) << "x86-64 4-level: one PGD entry";
  constexpr bytes kTouched = 2 * GiB;  // what the processes touch of the region
  const uint64_t ptes = kTouched / kPteSpan, pmds = kTouched / GiB;
  auto k = make("linux-6.18-mshare", {}, 16 * GiB, {{"sga", object_kind::shm, kRegion, 0, true}});
  ASSERT_TRUE(k);
  for (uint32_t pid = 1; pid <= 4; ++pid) {
    ASSERT_TRUE(k->spawn(pid).ok());
    ASSERT_TRUE(k->mmap(at(pid, kBase + pid * 2 * kRegion, kRegion)).ok());  // a different address each
    ASSERT_TRUE(k->touch(pid, 0, 0, kTouched, kPage, pid % 2 == 0).ok());
    ASSERT_EQ(k->check_invariants(), "");
  }
  const sample s = k->snapshot("x");
  EXPECT_EQ(pages(s, level::pte), ptes);
  EXPECT_EQ(pages(s, level::pmd), pmds);
  EXPECT_EQ(pages(s, level::pud), 1u) << "the host's PUD table, no process's own";
  // 6.18 counts every level in PageTables: 4 PGDs (8 KiB with PTI), the region's PUD,
  // PMD and PTE pages once.
  EXPECT_EQ(s.page_tables, 4 * 8 * KiB + (1 + pmds + ptes) * kPage);
  for (uint32_t pid = 1; pid <= 4; ++pid) {
    EXPECT_EQ(proc(s, pid).vmpte, 0u) << "VmPTE: no table of the region is the process's";
    EXPECT_EQ(proc(s, pid).rss_shmem, kTouched / kPage);
  }
  // A whole-region mprotect is the region's protection changed in the host mm: a write
  // now fails everywhere.
  ASSERT_TRUE(k->mprotect(1, 0, 0, kRegion, prot_read).ok());
  for (uint32_t pid = 1; pid <= 4; ++pid) EXPECT_FALSE(k->touch(pid, 0, 0, kPage, kPage, true).ok()) << pid;
  ASSERT_EQ(k->check_invariants(), "");
  // Part of a region is not unmapped, protected or zapped alone; the whole of it is.
  EXPECT_EQ(k->munmap(1, 0, 0, kPage).message(),
            "EINVAL: munmap of part of an mshare region: its VMA cannot be split (mshare v3's msharefs_vm_ops.may_split "
            "returns -EINVAL, \"Disallow partial unmaps of an mshare region for now\")");
  const status partial = k->mprotect(1, 0, GiB, GiB, prot_read | prot_write);
  EXPECT_NE(partial.message().find("mshare_vm_op_mprotect"), std::string::npos) << partial.message();
  // MADV_DONTNEED of one page unlinks this process's PGD entry for the region (the
  // patches' unmap_page_range op): the whole PUD table, and frees nothing; a touch links
  // it again.
  const uint64_t faults = k->faults();
  ASSERT_TRUE(k->madvise_dontneed(2, 0, GiB + kPage, kPage).ok());
  sample u = k->snapshot("x");
  EXPECT_EQ(pages(u, level::pte), ptes);
  EXPECT_EQ(pages(u, level::pmd), pmds);
  EXPECT_EQ(pages(u, level::pud), 1u);
  EXPECT_EQ(proc(u, 2).rss_shmem, 0u) << "process 2 no longer reaches any of the region";
  EXPECT_EQ(proc(u, 3).rss_shmem, kTouched / kPage);
  ASSERT_EQ(k->check_invariants(), "");
  ASSERT_TRUE(k->touch(2, 0, GiB, kPage, kPage, false).ok());
  // The table comes back with every entry in it; vmlab counts no fault for taking a
  // partner's page (ptshare.h: faults only for entries nobody has filled).
  EXPECT_EQ(k->faults(), faults);
  EXPECT_EQ(proc(k->snapshot("x"), 2).rss_shmem, kTouched / kPage);
  ASSERT_EQ(k->check_invariants(), "");
  for (uint32_t pid = 1; pid <= 3; ++pid) {
    ASSERT_TRUE(pid == 1 ? k->munmap(pid, 0, 0, kRegion).ok() : k->exit(pid).ok());
    ASSERT_EQ(k->check_invariants(), "");
    EXPECT_EQ(pages(k->snapshot("x"), level::pte), ptes) << "the region's tables stay while a process maps it";
  }
  ASSERT_TRUE(k->exit(4).ok());
  ASSERT_EQ(k->check_invariants(), "");
  EXPECT_EQ(testing::levels(k->snapshot("end")), "1,0,0,0,0") << "process 1 unmapped the region and lives on";
}

// A file region: writes set the shared entries' write bits (write-notify), which every
// process then sees, and mprotect(PROT_READ) clears them for every process at once, in
// every part of the region, including parts the process that calls it never touched.
TEST(Mshare, FileRegionWriteBitsAreTheRegions) {
  const bytes kRegion = mshare_unit();
  auto k = make("linux-6.18-mshare", {}, 16 * GiB, {{"data", object_kind::file, kRegion, 0, true}});
  ASSERT_TRUE(k);
  for (uint32_t pid = 1; pid <= 2; ++pid) {
    ASSERT_TRUE(k->spawn(pid).ok());
    ASSERT_TRUE(k->mmap(at(pid, kBase + pid * 2 * kRegion, kRegion)).ok());
  }
  // Process 1 writes 8 MiB in each of the region's first two GiB.
  ASSERT_TRUE(k->touch(1, 0, 0, 4 * kPteSpan, kPage, true).ok());
  ASSERT_TRUE(k->touch(1, 0, GiB, 4 * kPteSpan, kPage, true).ok());
  ASSERT_EQ(k->check_invariants(), "");
  auto writable = [&](uint32_t pid) {
    uint64_t n = 0;
    for (const pte_mapping& m : k->mappings()) n += m.pid == pid && m.writable;
    return n;
  };
  const uint64_t written = 8 * kPteSpan / kPage;
  EXPECT_EQ(writable(1), written);
  // Process 2's first access links it to the region's PUD table: every entry process 1
  // wrote, in both GiB, is in place and writable, and nothing is left to fault.
  const uint64_t faults = k->faults();
  ASSERT_TRUE(k->touch(2, 0, 0, kPage, kPage, false).ok());
  EXPECT_EQ(writable(2), written) << "process 2 sees process 1's writes through the region's tables";
  ASSERT_TRUE(k->touch(2, 0, 0, 4 * kPteSpan, kPage, true).ok());
  EXPECT_EQ(k->faults(), faults);
  // Process 2's mprotect takes write permission from the whole region, for both.
  ASSERT_TRUE(k->mprotect(2, 0, 0, kRegion, prot_read).ok());
  ASSERT_EQ(k->check_invariants(), "");
  EXPECT_EQ(writable(1), 0u);
  EXPECT_EQ(writable(2), 0u);
  EXPECT_EQ(proc(k->snapshot("x"), 1).rss_file, written);
}

// Without an address the region lands on a P4D_SIZE boundary (msharefs_get_unmapped_area:
// vm_unmapped_area with align_mask = mshare_align - 1); MAP_FIXED elsewhere is EINVAL.
TEST(Mshare, MappingsWithoutAnAddressAreAlignedToTheUnit) {
  const bytes kRegion = mshare_unit();
  auto k = make("linux-6.18-mshare", {}, 16 * GiB, {{"sga", object_kind::shm, kRegion, 0, true}});
  ASSERT_TRUE(k);
  for (uint32_t pid = 1; pid <= 2; ++pid) {
    ASSERT_TRUE(k->spawn(pid).ok());
    const auto a = k->mmap(ops::mmap_object(pid, 0, 0, kRegion).shared(true));
    ASSERT_TRUE(a.ok()) << a.error().message();
    EXPECT_EQ(a.value() % kRegion, 0u) << pid;
  }
  EXPECT_FALSE(k->mmap(at(1, kBase + GiB, kRegion)).ok()) << "1 GiB-aligned, not P4D_SIZE-aligned";
  ASSERT_EQ(k->check_invariants(), "");
}

// A fork shares the region with the child at once (no page-table copy, no fault).
TEST(Mshare, ForkSharesTheRegion) {
  const bytes kRegion = mshare_unit();
  auto k = make("linux-6.18-mshare", {{"fork_skips_shared", "false"}}, 16 * GiB, {{"sga", object_kind::shm, kRegion, 0, true}});
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(at(1, kBase, kRegion)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, GiB, kPage, false).ok());
  const uint64_t faults = k->faults();
  ASSERT_TRUE(k->fork(1, 2).ok());
  ASSERT_EQ(k->check_invariants(), "");
  const sample s = k->snapshot("x");
  EXPECT_EQ(pages(s, level::pte), GiB / kPteSpan);
  EXPECT_EQ(pages(s, level::pud), 1u);
  EXPECT_EQ(proc(s, 2).rss_shmem, GiB / kPage);
  EXPECT_EQ(proc(s, 2).vmpte, 0u);
  EXPECT_EQ(k->faults(), faults);
}

// A hugetlb mshare region (v3 20/22: msharefs_create_mapping with MAP_HUGETLB sets up an
// anonymous hugetlb file the host mm maps). `pool` 2 MiB pages at boot.
std::unique_ptr<sim_kernel> hugetlb_region(bytes region, bytes page_size, uint64_t pool, bytes memory = 16 * GiB) {
  machine_decl m;
  m.profile = "linux-6.18-mshare";
  m.memory = memory;
  m.hugepages = {{page_size, pool}};
  return make(m, {{"sga", object_kind::hugetlb, region, page_size, true}});
}

// Processes map a hugetlb region at different addresses: the 2 MiB leaves are in the
// host's PMD pages, under the host's PUD table that every PGD entry links. The first
// fault of a page fills the host's table; later processes find it there (no fault, no
// table). PageTables counts the PUD page and one PMD page per GiB touched, once; no
// process's VmPTE or HugetlbPages counts any of it (the host mm's hugetlb_count_add).
// The pool accounts as for any shared hugetlb mapping: one page per page faulted.
TEST(Mshare, HugetlbRegionLeavesAreInTheHostsPmdPages) {
  const bytes kRegion = mshare_unit();
  constexpr bytes kHuge = 2 * MiB;
  constexpr bytes kTouched = 3 * GiB;
  const uint64_t pmds = kTouched / GiB, leaves = kTouched / kHuge, pool = 2048;
  auto k = hugetlb_region(kRegion, kHuge, pool);
  ASSERT_TRUE(k);
  // A reserving mapping must reserve the whole region (hugetlb_reserve_pages in the host's
  // __do_mmap): the pool is short; MAP_NORESERVE takes pages at fault.
  ASSERT_TRUE(k->spawn(1).ok());
  EXPECT_EQ(k->mmap(at(1, kBase, kRegion)).error().message(),
            fmt::format("ENOMEM: the hugetlb pool of 2 MiB pages is short: this mapping must reserve {} more, the pool "
                        "has {} free of which 0 are reserved (HugePages_Total {}, nr_overcommit_hugepages 0, "
                        "HugePages_Surp 0)",
                        kRegion / kHuge, pool, pool));
  constexpr uint32_t kProcs = 4;
  for (uint32_t pid = 1; pid <= kProcs; ++pid) {
    if (pid > 1) {
      ASSERT_TRUE(k->spawn(pid).ok());
    }
    op m = at(pid, kBase + pid * 2 * kRegion, kRegion);
    m.noreserve = true;
    ASSERT_TRUE(k->mmap(m).ok());
    const uint64_t faults = k->faults();
    ASSERT_TRUE(k->touch(pid, 0, 0, kTouched, kPage, pid % 2 == 0).ok());
    EXPECT_EQ(k->faults() - faults, pid == 1 ? leaves : 0u) << "only the first process faults the region's pages";
    ASSERT_EQ(k->check_invariants(), "");
  }
  const sample s = k->snapshot("x");
  EXPECT_EQ(testing::levels(s), fmt::format("{},0,1,{},0", kProcs, pmds)) << "PGDs, the host's PUD and PMD pages";
  EXPECT_EQ(s.page_tables, kProcs * 8 * KiB + (1 + pmds) * kPage);
  EXPECT_EQ(s.mi.hugepages_total, pool);
  EXPECT_EQ(s.mi.hugepages_free, pool - leaves);
  EXPECT_EQ(s.mi.hugepages_rsvd, 0u);
  for (uint32_t pid = 1; pid <= kProcs; ++pid) {
    EXPECT_EQ(proc(s, pid).vmpte, 0u) << pid;
    EXPECT_EQ(proc(s, pid).hugetlb, 0u) << "the host mm's HugetlbPages, not the process's";
  }
  // Every process maps the same pages at its own address.
  uint64_t mapped = 0;
  for (const pte_mapping& m : k->mappings()) {
    EXPECT_EQ(m.size, kHuge);
    EXPECT_EQ(m.pgoff, (m.addr - kBase - m.pid * 2 * kRegion) / kPage);
    ++mapped;
  }
  EXPECT_EQ(mapped, kProcs * leaves);
  // A whole-region mprotect changes the host's leaves, for every process.
  ASSERT_TRUE(k->mprotect(3, 0, 0, kRegion, prot_read).ok());
  for (const pte_mapping& m : k->mappings()) EXPECT_FALSE(m.writable) << m.pid;
  ASSERT_TRUE(k->mprotect(3, 0, 0, kRegion, prot_read | prot_write).ok());
  for (const pte_mapping& m : k->mappings()) EXPECT_TRUE(m.writable) << m.pid;
  ASSERT_EQ(k->check_invariants(), "");
  // munmap unlinks this process's PGD entry only; the last unmap frees the host's tables,
  // and the pages stay in the region's hugetlb file.
  for (uint32_t pid = 1; pid <= kProcs; ++pid) {
    ASSERT_TRUE(pid % 2 ? k->munmap(pid, 0, 0, kRegion).ok() : k->exit(pid).ok());
    ASSERT_EQ(k->check_invariants(), "");
    const sample u = k->snapshot("x");
    if (pid < kProcs) {
      EXPECT_EQ(pages(u, level::pmd), pmds) << "the region's tables stay while a process maps it";
    }
    EXPECT_EQ(u.mi.hugepages_free, pool - leaves);
  }
  EXPECT_EQ(testing::levels(k->snapshot("end")), "2,0,0,0,0") << "processes 1 and 3 unmapped the region and live on";
}

// mshare's case with hugetlb inside: N clients x a 512 GiB region touched over its first
// 300 GiB with 2 MiB pages, on a 512 GiB machine. The host's tables, derived from the
// format: one PMD page per PMD table span touched and the one PUD table; no PTE page and
// nothing per process but its PGD. The first client faults every page, the others none.
TEST(Mshare, HugetlbSgaNeedsOnlyTheHostsPmdPages) {
  const auto prof = find_profile("linux-6.18-mshare");
  ASSERT_TRUE(prof.ok());
  const paging_format& f = prof.value().paging;
  const bytes kRegion = mshare_unit(), kHuge = 2 * MiB, kTouched = 300 * GiB;
  const uint64_t pmd_pages = kTouched / f.at(f.index_of(level::pmd)).table_span(), leaves = kTouched / kHuge;
  ASSERT_EQ(pmd_pages, 300u);
  constexpr uint32_t kClients = 8;
  auto k = hugetlb_region(kRegion, kHuge, leaves, 512 * GiB);
  ASSERT_TRUE(k);
  for (uint32_t pid = 1; pid <= kClients; ++pid) {
    ASSERT_TRUE(k->spawn(pid).ok());
    op m = at(pid, kBase + pid * 2 * kRegion, kRegion);
    m.noreserve = true;
    ASSERT_TRUE(k->mmap(m).ok());
    ASSERT_TRUE(k->touch(pid, 0, 0, kTouched, kPage, false).ok());
  }
  ASSERT_EQ(k->check_invariants(), "");
  const sample s = k->snapshot("x");
  EXPECT_EQ(testing::levels(s), fmt::format("{},0,1,{},0", kClients, pmd_pages));
  EXPECT_EQ(s.page_tables, kClients * 8 * KiB + (1 + pmd_pages) * kPage);
  EXPECT_EQ(k->faults(), leaves);
  EXPECT_EQ(s.mi.hugepages_free, 0u);
  for (uint32_t pid = 1; pid <= kClients; ++pid) EXPECT_EQ(proc(s, pid).vmpte, 0u) << pid;
}

// 1 GiB pages: the leaves are in the host's PUD table itself, the page every process
// links; no PMD page at all, and a process that links the table later finds every leaf.
TEST(Mshare, HugetlbRegionOf1GiBPagesLeavesInTheSharedPudTable) {
  const bytes kRegion = mshare_unit();
  constexpr uint64_t kTouched = 4;  // GiB pages
  auto k = hugetlb_region(kRegion, GiB, 8);
  ASSERT_TRUE(k);
  for (uint32_t pid = 1; pid <= 3; ++pid) {
    ASSERT_TRUE(k->spawn(pid).ok());
    op m = at(pid, kBase + pid * 2 * kRegion, kRegion);
    m.noreserve = true;
    ASSERT_TRUE(k->mmap(m).ok());
    const uint64_t faults = k->faults();
    ASSERT_TRUE(k->touch(pid, 0, 0, kTouched * GiB, kPage, true).ok());
    EXPECT_EQ(k->faults() - faults, pid == 1 ? kTouched : 0u);
    ASSERT_EQ(k->check_invariants(), "");
  }
  const sample s = k->snapshot("x");
  EXPECT_EQ(testing::levels(s), "3,0,1,0,0");
  EXPECT_EQ(s.page_tables, 3 * 8 * KiB + kPage);
  EXPECT_EQ(proc(s, 2).vmpte, 0u);
  uint64_t leaves = 0;
  for (const pte_mapping& m : k->mappings()) leaves += m.size == GiB;
  EXPECT_EQ(leaves, 3 * kTouched);
  for (uint32_t pid = 1; pid <= 3; ++pid) ASSERT_TRUE(k->exit(pid).ok());
  ASSERT_EQ(k->check_invariants(), "");
  EXPECT_EQ(testing::levels(k->snapshot("end")), "0,0,0,0,0");
}

// Differential: one design (`sharing` with `ov`) and its unshared kernel (`plain`) run
// the same random ops. After every op the sharing kernel recounts itself from scratch
// (refcounts, per-mm VmPTE, RSS, the partner map), and every page a process maps in both
// kernels is the same page. With `mshare`, map 0 is an mshare region, changed whole or
// not at all.
void differential(const char* sharing, const std::vector<std::pair<std::string, std::string>>& ov, const char* plain,
                  bytes seg, bool mshare, object_kind region_kind = object_kind::shm) {
  // An mshare region is a whole P4D_SIZE (512 GiB): random ops go to its first `window`
  // bytes (the file, map 1, is that big), touched whole never, unmapped whole sometimes.
  const bytes region = mshare ? mshare_unit() : seg;
  if (mshare) {
    ASSERT_GT(region, seg);
  }
#ifdef VMLAB_SANITIZED
  // Every op is followed by a recount of every entry: a minute and a half under ASan at
  // 2 x 40 steps, so the sanitizer build checks one short sequence per design.
  constexpr int kSteps = 20;
  constexpr uint32_t kSeeds = 1;
#else
  constexpr int kSteps = 60;
  constexpr uint32_t kSeeds = 3;
#endif
  for (uint32_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE(std::string(sharing) + " seed " + std::to_string(seed) + (ov.empty() ? "" : " " + ov[0].first + "=" + ov[0].second));
    // A hugetlb segment (2 MiB pages) is mapped MAP_NORESERVE (a 512 GiB region could not
    // be reserved) from a pool that holds every page of the window.
    const bool huge = region_kind == object_kind::hugetlb;
    const bytes hpage = huge ? 2 * MiB : kPage;
    const std::vector<object_decl> objs = {{"seg", region_kind, region, 0, mshare}, {"file", object_kind::file, seg, 0}};
    auto build = [&](const char* profile, const std::vector<std::pair<std::string, std::string>>& o) {
      machine_decl m;
      m.profile = profile;
      m.overrides = o;
      m.memory = 16 * GiB;
      if (huge) m.hugepages = {{hpage, seg / hpage}};
      return make(m, objs);
    };
    auto a = build(sharing, ov);
    auto b = build(plain, {});
    std::mt19937_64 rng(seed);
    auto rnd = [&](uint64_t n) { return n ? rng() % n : 0; };
    std::map<uint32_t, bool> live;
    uint32_t next = 1;
    for (int step = 0; step < kSteps && !::testing::Test::HasFatalFailure(); ++step) {
      std::ostringstream d;
      const uint64_t r = rnd(100);
      status sa, sb;
      if (live.empty() || r < 12) {
        const uint32_t pid = next++;
        // Two shapes: the shm segment at one address (read-write, shared), and the file
        // read-only and private; every process maps both, so partners abound.
        op m1 = at(pid, kBase, region, 0, true);
        m1.noreserve = huge;
        op m2 = at(pid, kBase + region + 4 * GiB, seg, 1, false, prot_read);
        m2.map = 1;
        d << "spawn " << pid;
        sa = a->spawn(pid);
        sb = b->spawn(pid);
        if (sa.ok()) {
          ASSERT_TRUE(a->mmap(m1).ok() && a->mmap(m2).ok());
          ASSERT_TRUE(b->mmap(m1).ok() && b->mmap(m2).ok());
        }
        live[pid] = true;
      } else {
        auto it = live.begin();
        std::advance(it, long(rnd(live.size())));
        const uint32_t pid = it->first;
        const uint32_t map = uint32_t(rnd(2));
        bytes off = rnd(seg / kPage) * kPage, len = (1 + rnd(1024)) * kPage;
        if (rnd(8) == 0) { off = 0; len = seg; }
        if (huge && map == 0) {  // whole huge pages (MADV_DONTNEED of part of one is EINVAL)
          off &= ~(hpage - 1);
          len = round_up(len, hpage);
        }
        len = std::min(len, seg - off);
        const bool in_region = mshare && map == 0;
        // A region is unmapped whole; its mprotect reaches every process (Mshare tests
        // check that: the unshared kernel has no such thing). MADV_DONTNEED of it unlinks
        // whole shared tables, more than the range: the process then maps a subset of
        // what the unshared kernel maps, which the comparison below allows.
        if (in_region && r >= 78 && r < 84) { off = 0; len = region; }
        if (in_region && r >= 60 && r < 70) continue;
        d << "pid " << pid << " map " << map << " off " << off << " len " << len << ": ";
        if (r < 60) {
          const bool write = map == 0 && rnd(2);
          d << "touch" << (write ? " write" : "");
          sa = a->touch(pid, map, off, len, kPage, write);
          sb = b->touch(pid, map, off, len, kPage, write);
        } else if (r < 70) {
          d << "mprotect read-only";
          sa = a->mprotect(pid, map, off, len, prot_read);
          sb = b->mprotect(pid, map, off, len, prot_read);
        } else if (r < 78) {
          d << "madvise_dontneed";
          sa = a->madvise_dontneed(pid, map, off, len);
          sb = b->madvise_dontneed(pid, map, off, len);
        } else if (r < 84) {
          d << "munmap";
          sa = a->munmap(pid, map, off, len);
          sb = b->munmap(pid, map, off, len);
        } else if (r < 87 && !in_region && (map == 1 || !huge)) {
          // mremap of the whole mapping (PTSHARE unshares what moves) or, on the shared
          // segment, remap_file_pages of the range (2.6: nonlinear; 6.x: emulated).
          if (map == 0 && rnd(2)) {
            const bytes pg = rnd(seg / kPage - len / kPage + 1);
            d << "remap_file_pages to pgoff " << pg;
            op o = ops::remap_file_pages(pid, map, off, len, pg * kPage);
            sa = a->remap_file_pages(o);
            sb = b->remap_file_pages(o);
          } else {
            op o = ops::mremap(pid, map, (1 + rnd(seg / kPage)) * kPage).maymove(rnd(4) != 0);
            d << "mremap to " << o.len << (o.maymove ? " maymove" : "");
            auto ra = a->mremap(o), rb = b->mremap(o);
            sa = ra.ok() ? status{} : ra.error();
            sb = rb.ok() ? status{} : rb.error();
            if (ra.ok() && rb.ok()) {
              ASSERT_EQ(ra.value(), rb.value());
            }
          }
        } else if (r < 92 && live.size() < 6) {
          const uint32_t child = next++;
          d << "fork " << child;
          sa = a->fork(pid, child);
          sb = b->fork(pid, child);
          live[child] = true;
        } else {
          d << "exit";
          sa = a->exit(pid);
          sb = b->exit(pid);
          live.erase(pid);
        }
      }
      SCOPED_TRACE(d.str());
      ASSERT_EQ(sa.ok(), sb.ok()) << sa.message() << " / " << sb.message();
      ASSERT_EQ(a->check_invariants(), "");
      // Every (process, address) both kernels map holds the same page (every few ops:
      // listing every PTE is the slow part).
      if (step % 10 != 9) continue;
      std::map<std::pair<uint32_t, vaddr>, std::pair<int32_t, uint64_t>> in_b;
      for (const pte_mapping& m : b->mappings()) in_b[{m.pid, m.addr}] = {m.object_index, m.pgoff};
      for (const pte_mapping& m : a->mappings()) {
        auto it = in_b.find({m.pid, m.addr});
        if (it == in_b.end()) continue;
        ASSERT_EQ(it->second, std::make_pair(m.object_index, m.pgoff)) << "pid " << m.pid << " at " << m.addr;
      }
    }
    for (const auto& [pid, alive] : live) ASSERT_TRUE(a->exit(pid).ok());
    ASSERT_EQ(a->check_invariants(), "");
    EXPECT_EQ(testing::levels(a->snapshot("end")), "0,0,0,0,0");
  }
}

TEST(Ptshare, DifferentialAgainstTheUnsharedKernel) {
  differential(kShare, {}, kNoShare, 1 * GiB + 8 * MiB, false);
  differential(kShare, {{"ptshare_pmd", "false"}}, kNoShare, 1 * GiB + 8 * MiB, false);
}

TEST(Mshare, DifferentialAgainstTheUnsharedKernel) { differential("linux-6.18-mshare", {}, "linux-6.18", 1 * GiB, true); }

// The same with a hugetlb region against 6.18's shared hugetlb mapping (with its PMD
// sharing): the region's leaves are the host's, every process maps the same pages.
TEST(Mshare, HugetlbDifferentialAgainstTheUnsharedKernel) {
  differential("linux-6.18-mshare", {}, "linux-6.18", 1 * GiB, true, object_kind::hugetlb);
}

}  // namespace
}  // namespace vmlab
