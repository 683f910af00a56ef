// Huge pages: hugetlb PMD sharing, THP deposits, the hugetlb pools and their reservations,
// THP fallback on a fragmented machine, and hugetlb on i386 2-level (src/model/huge.h).
//
// Every expected figure is worked out here from the paging format, not read off a run:
//  * x86-64 4-level (linux-6.18): 4 KiB pages; a PTE table maps 512 x 4 KiB = 2 MiB (a PMD
//    leaf, a THP or a 2 MiB hugetlb page); a PMD table maps 512 x 2 MiB = 1 GiB (a PUD
//    leaf, a 1 GiB hugetlb page); a PUD table maps 512 GiB. Every table is 4 KiB but the
//    PGD, which PTI makes an order-1 allocation (8 KiB). linux-6.18 counts every level in
//    PageTables and PTE + PMD + PUD in VmPTE.
//  * i386 2-level (linux-2.5.43-mm2): a PTE table maps 1024 x 4 KiB = 4 MiB, which is also
//    the huge page (a PSE PGD entry); PageTables and the per-mm figure count PTE pages only.
// pt_pages are compared as "pgd,p4d,pud,pmd,pte" (tests/model/model_util.h).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "tests/model/model_util.h"
#include "vmlab/op_builder.h"
#include "vmlab/sim_kernel.h"
#include "vmlab/units.h"

namespace vmlab {
namespace {

using namespace vmlab::testing;

constexpr bytes kPage = 4 * KiB;
constexpr bytes kTable = 4 * KiB;  // a PUD, PMD or PTE table on x86-64
constexpr bytes kPgd = 8 * KiB;    // the PTI PGD of linux-6.18 (order 1)
constexpr bytes k2M = 2 * MiB;     // one PTE table's span = one PMD leaf
constexpr bytes k1G = 1 * GiB;     // one PMD table's span = one PUD leaf
constexpr uint64_t kPtes = k2M / kPage;  // 512 pages per PMD leaf

#define APPLY(k, o)                                          \
  do {                                                       \
    const status st_ = apply_op(*(k), (o));                  \
    ASSERT_TRUE(st_.ok()) << #o << ": " << st_.message();    \
  } while (0)

std::unique_ptr<sim_kernel> boot(const std::string& profile, std::vector<std::pair<std::string, std::string>> ov,
                                 std::vector<std::pair<bytes, uint64_t>> pool, std::vector<object_decl> objs,
                                 std::vector<std::pair<bytes, uint64_t>> overcommit = {}, bytes memory = 0,
                                 double fragmentation = 0) {
  machine_decl m;
  m.profile = profile;
  m.overrides = std::move(ov);
  m.hugepages = std::move(pool);
  m.overcommit_hugepages = std::move(overcommit);
  m.memory = memory;
  m.fragmentation = fragmentation;
  return testing::make(m, objs);
}

// The default hstate's pool as meminfo prints it.
std::string pool(const sim_kernel& k) {
  const meminfo mi = k.meminfo_now();
  return "total " + std::to_string(mi.hugepages_total) + " free " + std::to_string(mi.hugepages_free) + " rsvd " +
         std::to_string(mi.hugepages_rsvd) + " surp " + std::to_string(mi.hugepages_surp);
}

// Huge leaves of `size` that pid sees mapped (shared tables included).
uint64_t leaves(const sim_kernel& k, uint32_t pid, bytes size) {
  uint64_t n = 0;
  for (const pte_mapping& m : k.mappings())
    if (m.pid == pid && m.size == size) ++n;
  return n;
}

// ---------------------------------------------------------------------------------------
// a. hugetlb PMD sharing (linux-6.18)

// A hugetlb file of `size` bytes of 2 MiB pages; a pool of 1024 pages (2 GiB), so that a
// private mapping of 1 GiB can still reserve its 512 pages after pid 1 used 512.
std::unique_ptr<sim_kernel> share_box(bytes size = k1G, std::vector<std::pair<std::string, std::string>> ov = {}) {
  return boot("linux-6.18", std::move(ov), {{k2M, 1024}}, {{"seg", object_kind::hugetlb, size, k2M}});
}

// pid 1 maps the whole file shared at a 1 GiB boundary and writes every page; pid 2 exists.
void owner_writes(sim_kernel& k, bytes size) {
  ASSERT_TRUE(k.spawn(1).ok());
  ASSERT_TRUE(k.spawn(2).ok());
  APPLY(&k, ops::mmap_object(1, 0, 0, size).shared().align(k1G));
  APPLY(&k, ops::touch(1, 0, 0, size).write());
}

// pid maps the first `size` bytes of the file shared at a 1 GiB boundary and reads them.
void attaches(sim_kernel& k, uint32_t pid, bytes size) {
  APPLY(&k, ops::mmap_object(pid, 0, 0, size).shared().align(k1G));
  APPLY(&k, ops::touch(pid, 0, 0, size));
}

TEST(HugetlbShare, TwoProcessesShareOnePmdTable) {
  auto k = share_box();
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->spawn(2).ok());
  APPLY(k, ops::mmap_object(1, 0, 0, k1G).shared().align(k1G));
  // A shared mapping reserves the file's 512 pages at mmap (region_chg).
  EXPECT_EQ(pool(*k), "total 1024 free 1024 rsvd 512 surp 0");
  APPLY(k, ops::touch(1, 0, 0, k1G).write());
  EXPECT_EQ(pool(*k), "total 1024 free 512 rsvd 0 surp 0");
  APPLY(k, ops::mmap_object(2, 0, 0, k1G).shared().align(k1G));
  // Every page of the file is allocated: the second mapping reserves nothing.
  EXPECT_EQ(pool(*k), "total 1024 free 512 rsvd 0 surp 0");
  APPLY(k, ops::touch(2, 0, 0, k1G));
  const sample s = k->snapshot("");
  // Each process: a PGD and a PUD of its own; the one PMD table of the window is shared.
  EXPECT_EQ(levels(s), "2,0,2,1,0");
  // PageTables counts the shared table once: 2 x 8 KiB PGD + 2 x 4 KiB PUD + 1 x 4 KiB PMD.
  EXPECT_EQ(s.page_tables, 2 * kPgd + 2 * kTable + 1 * kTable);
  // VmPTE counts it in each sharer (mm_inc_nr_pmds): PUD + PMD.
  EXPECT_EQ(proc(s, 1).vmpte, 2 * kTable);
  EXPECT_EQ(proc(s, 2).vmpte, 2 * kTable);
  // pid 1 faulted 512 pages (1 GiB / 2 MiB) in; pid 2 took one fault, which found the
  // table populated: huge_pmd_share never calls hugetlb_count_add.
  EXPECT_EQ(proc(s, 1).hugetlb, k1G);
  EXPECT_EQ(proc(s, 2).hugetlb, 0u);
  EXPECT_EQ(proc(s, 1).min_flt, 512u);
  EXPECT_EQ(proc(s, 2).min_flt, 1u);
  EXPECT_EQ(k->faults(), 513u);
  // hugetlb pages are not in RSS on 6.x.
  EXPECT_EQ(proc(s, 1).rss_file + proc(s, 1).rss_shmem + proc(s, 2).rss_file + proc(s, 2).rss_shmem, 0u);
  // pid 2 sees all 512 leaves through the shared table.
  EXPECT_EQ(leaves(*k, 2, k2M), 512u);
  auto pi = k->page_at(2, 0, 300 * MiB);
  ASSERT_TRUE(pi.ok());
  EXPECT_TRUE(pi->present);
  EXPECT_EQ(pi->huge, k2M);
  EXPECT_EQ(k->check_invariants(), "");
}

// The figures of a pid 2 that could not share: its own PMD table, one fault and 2 MiB of
// HugetlbPages per page it touched; pid 1 (owner_writes) as in the baseline.
void expect_not_shared(const sim_kernel& k, uint64_t p2_pages, uint64_t pmd_tables = 2) {
  const sample s = k.snapshot("");
  EXPECT_EQ(levels(s), "2,0,2," + std::to_string(pmd_tables) + ",0");
  EXPECT_EQ(s.page_tables, 2 * kPgd + (2 + pmd_tables) * kTable);
  EXPECT_EQ(proc(s, 2).vmpte, 2 * kTable);  // its PUD and its own PMD
  EXPECT_EQ(proc(s, 2).min_flt, p2_pages);
  EXPECT_EQ(proc(s, 2).hugetlb, p2_pages * k2M);
  EXPECT_EQ(leaves(k, 2, k2M), p2_pages);
  EXPECT_EQ(k.check_invariants(), "");
}

TEST(HugetlbShare, PrivateMappingDoesNotShare) {
  auto k = share_box();
  ASSERT_NO_FATAL_FAILURE(owner_writes(*k, k1G));
  // want_pmd_share: no VM_MAYSHARE. A private mapping reserves its whole range for itself
  // (HPAGE_RESV_OWNER): 512 of the 512 free pages.
  APPLY(k, ops::mmap_object(2, 0, 0, k1G).align(k1G));
  EXPECT_EQ(pool(*k), "total 1024 free 512 rsvd 512 surp 0");
  APPLY(k, ops::touch(2, 0, 0, k1G));
  expect_not_shared(*k, 512);
  // A read maps the file's pages: no page taken, the reservation stays for a later write.
  EXPECT_EQ(pool(*k), "total 1024 free 512 rsvd 512 surp 0");
}

TEST(HugetlbShare, VmaNotCoveringTheWindowDoesNotShare) {
  // The sharer's VMA stops 2 MiB short of the window's end (range_in_vma fails).
  {
    auto k = share_box();
    ASSERT_NO_FATAL_FAILURE(owner_writes(*k, k1G));
    ASSERT_NO_FATAL_FAILURE(attaches(*k, 2, k1G - k2M));
    expect_not_shared(*k, 511);
  }
  // The owner's VMA does not cover its window: its table is not shareable, the second
  // process (which covers the window) gets one of its own and faults every page.
  {
    auto k = share_box();
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->spawn(2).ok());
    APPLY(k, ops::mmap_object(1, 0, 0, k1G - k2M).shared().align(k1G));
    APPLY(k, ops::touch(1, 0, 0, k1G - k2M).write());
    APPLY(k, ops::mmap_object(2, 0, 0, k1G).shared().align(k1G));
    APPLY(k, ops::touch(2, 0, 0, k1G).write());
    const sample s = k->snapshot("");
    EXPECT_EQ(levels(s), "2,0,2,2,0");
    EXPECT_EQ(proc(s, 2).min_flt, 512u);
    EXPECT_EQ(proc(s, 2).hugetlb, k1G);
    // The file's last page was allocated by pid 2's fault.
    EXPECT_EQ(pool(*k), "total 1024 free 512 rsvd 0 surp 0");
    EXPECT_EQ(k->check_invariants(), "");
  }
}

TEST(HugetlbShare, OtherFileOffsetWithinTheWindowDoesNotShare) {
  // A 2 GiB file: pid 1 maps all of it (windows at file offsets 0 and 1 GiB); pid 2 maps
  // file [2 MiB, 1 GiB + 2 MiB) at a 1 GiB boundary: its window starts at file offset
  // 2 MiB, so pmd_index(addr) != pmd_index(saddr) for every page.
  auto k = share_box(2 * k1G);
  ASSERT_NO_FATAL_FAILURE(owner_writes(*k, 2 * k1G));
  APPLY(k, ops::mmap_object(2, 0, 0, k1G).shared().align(k1G).object_offset(k2M));
  APPLY(k, ops::touch(2, 0, 0, k1G));
  // pid 1: two PMD tables (2 GiB); pid 2: its own.
  expect_not_shared(*k, 512, 3);
}

TEST(HugetlbShare, SameFileOffsetAtAnotherAddressShares) {
  // Virtual addresses need not be equal: pid 2 maps file [1 GiB, 2 GiB) at 16 TiB, a
  // 1 GiB boundary far from pid 1's mapping (just below 64 TiB), and shares pid 1's second
  // window.
  auto k = share_box(2 * k1G);
  ASSERT_NO_FATAL_FAILURE(owner_writes(*k, 2 * k1G));
  const vaddr at = 16 * TiB;
  APPLY(k, ops::mmap_object(2, 0, 0, k1G).shared().at(at).object_offset(k1G));
  ASSERT_NE(k->map_addr(1, 0) + k1G, at);
  APPLY(k, ops::touch(2, 0, 0, k1G));
  const sample s = k->snapshot("");
  EXPECT_EQ(levels(s), "2,0,2,2,0");  // pid 1's two PMD tables, one of them shared
  EXPECT_EQ(proc(s, 2).vmpte, 2 * kTable);
  EXPECT_EQ(proc(s, 2).min_flt, 1u);
  EXPECT_EQ(proc(s, 2).hugetlb, 0u);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbShare, DifferentFlagsDoNotShare) {
  // PROT_READ against pid 1's PROT_READ|PROT_WRITE: vm_flags differ in VM_WRITE.
  {
    auto k = share_box();
    ASSERT_NO_FATAL_FAILURE(owner_writes(*k, k1G));
    APPLY(k, ops::mmap_object(2, 0, 0, k1G).shared().align(k1G).prot(prot_read));
    APPLY(k, ops::touch(2, 0, 0, k1G));
    expect_not_shared(*k, 512);
  }
  // MAP_NORESERVE: vm_flags differ in VM_NORESERVE.
  {
    auto k = share_box();
    ASSERT_NO_FATAL_FAILURE(owner_writes(*k, k1G));
    APPLY(k, ops::mmap_object(2, 0, 0, k1G).shared().align(k1G).noreserve());
    APPLY(k, ops::touch(2, 0, 0, k1G));
    expect_not_shared(*k, 512);
  }
}

TEST(HugetlbShare, MapLockedAloneStillShares) {
  // page_table_shareable() compares vm_flags & ~VM_LOCKED_MASK: "Allow segments to share
  // if only one is marked locked". MAP_LOCKED populates at mmap (read faults on a shared
  // mapping): pid 2's one fault is taken there, and its touch takes none.
  {
    auto k = share_box();
    ASSERT_NO_FATAL_FAILURE(owner_writes(*k, k1G));
    APPLY(k, ops::mmap_object(2, 0, 0, k1G).shared().align(k1G).locked());
    EXPECT_EQ(proc(k->snapshot(""), 2).min_flt, 1u);
    APPLY(k, ops::touch(2, 0, 0, k1G).write());
    const sample s = k->snapshot("");
    EXPECT_EQ(levels(s), "2,0,2,1,0");
    EXPECT_EQ(proc(s, 2).min_flt, 1u);
    EXPECT_EQ(proc(s, 2).hugetlb, 0u);
    EXPECT_EQ(k->check_invariants(), "");
  }
  // The other way round: the owner is locked (populated by its mmap), the sharer is not.
  {
    auto k = share_box();
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->spawn(2).ok());
    APPLY(k, ops::mmap_object(1, 0, 0, k1G).shared().align(k1G).locked());
    EXPECT_EQ(proc(k->snapshot(""), 1).min_flt, 512u);
    ASSERT_NO_FATAL_FAILURE(attaches(*k, 2, k1G));
    const sample s = k->snapshot("");
    EXPECT_EQ(levels(s), "2,0,2,1,0");
    EXPECT_EQ(proc(s, 2).min_flt, 1u);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

TEST(HugetlbShare, GigantPagesNeverShare) {
  // 1 GiB pages are PUD leaves: there is no PMD table to share (huge_pmd_unshare and
  // want_pmd_share only apply to PMD_SIZE pages). Each process: PGD + PUD, one leaf.
  auto k = boot("linux-6.18", {}, {{k1G, 1}}, {{"seg", object_kind::hugetlb, k1G, k1G}});
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->spawn(2).ok());
  APPLY(k, ops::mmap_object(1, 0, 0, k1G).shared());
  APPLY(k, ops::touch(1, 0, 0, k1G).write());
  APPLY(k, ops::mmap_object(2, 0, 0, k1G).shared());
  APPLY(k, ops::touch(2, 0, 0, k1G).write());
  const sample s = k->snapshot("");
  EXPECT_EQ(levels(s), "2,0,2,0,0");
  EXPECT_EQ(s.page_tables, 2 * kPgd + 2 * kTable);
  for (uint32_t pid : {1u, 2u}) {
    EXPECT_EQ(proc(s, pid).vmpte, kTable) << pid;  // the PUD table only
    EXPECT_EQ(proc(s, pid).min_flt, 1u) << pid;    // one 1 GiB page
    EXPECT_EQ(proc(s, pid).hugetlb, k1G) << pid;
    EXPECT_EQ(leaves(*k, pid, k1G), 1u) << pid;
  }
  // The one page of the file, in the 1 GiB pool (meminfo's HugePages_* are the default
  // 2 MiB hstate's; Hugetlb counts every pool).
  EXPECT_EQ(s.mi.hugetlb, k1G);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbShare, OverrideTurnsSharingOff) {
  auto k = share_box(k1G, {{"hugetlb_pmd_share", "false"}});
  ASSERT_NO_FATAL_FAILURE(owner_writes(*k, k1G));
  ASSERT_NO_FATAL_FAILURE(attaches(*k, 2, k1G));
  expect_not_shared(*k, 512);
}

TEST(HugetlbShare, AttachFaultsOncePerWindow) {
  // A 2 GiB file: two windows, two PMD tables, both shared by pid 2, which takes one fault
  // per window whatever it touches, and counts no HugetlbPages.
  auto k = share_box(2 * k1G);
  ASSERT_NO_FATAL_FAILURE(owner_writes(*k, 2 * k1G));
  APPLY(k, ops::mmap_object(2, 0, 0, 2 * k1G).shared().align(k1G));
  APPLY(k, ops::touch(2, 0, 0, 2 * k1G).write());
  const sample s = k->snapshot("");
  EXPECT_EQ(levels(s), "2,0,2,2,0");
  EXPECT_EQ(s.page_tables, 2 * kPgd + 2 * kTable + 2 * kTable);
  EXPECT_EQ(proc(s, 1).vmpte, 3 * kTable);  // PUD + 2 PMD
  EXPECT_EQ(proc(s, 2).vmpte, 3 * kTable);
  EXPECT_EQ(proc(s, 1).min_flt, 1024u);     // 2 GiB / 2 MiB
  EXPECT_EQ(proc(s, 2).min_flt, 2u);
  EXPECT_EQ(proc(s, 2).hugetlb, 0u);
  EXPECT_EQ(leaves(*k, 2, k2M), 1024u);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbShare, AttachToAPartlyFaultedTable) {
  // pid 1 writes the first 512 MiB (256 pages) of its window; pid 2 attaches and writes
  // the whole GiB: one fault that attaches (its page is there), then one per missing page
  // (256), each counted in pid 2's HugetlbPages. pid 1 sees them all without faulting.
  auto k = share_box();
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->spawn(2).ok());
  APPLY(k, ops::mmap_object(1, 0, 0, k1G).shared().align(k1G));
  APPLY(k, ops::touch(1, 0, 0, k1G / 2).write());
  EXPECT_EQ(pool(*k), "total 1024 free 768 rsvd 256 surp 0");
  APPLY(k, ops::mmap_object(2, 0, 0, k1G).shared().align(k1G));
  EXPECT_EQ(pool(*k), "total 1024 free 768 rsvd 256 surp 0");  // already reserved
  APPLY(k, ops::touch(2, 0, 0, k1G).write());
  const sample s = k->snapshot("");
  EXPECT_EQ(levels(s), "2,0,2,1,0");
  EXPECT_EQ(proc(s, 1).min_flt, 256u);
  EXPECT_EQ(proc(s, 2).min_flt, 1u + 256u);
  EXPECT_EQ(proc(s, 1).hugetlb, 256 * k2M);
  EXPECT_EQ(proc(s, 2).hugetlb, 256 * k2M);
  EXPECT_EQ(leaves(*k, 1, k2M), 512u);
  EXPECT_EQ(pool(*k), "total 1024 free 512 rsvd 0 surp 0");
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbShare, PartialMunmapUnsharesTheWindow) {
  auto k = share_box();
  ASSERT_NO_FATAL_FAILURE(owner_writes(*k, k1G));
  ASSERT_NO_FATAL_FAILURE(attaches(*k, 2, k1G));
  // Unmapping the first 2 MiB splits pid 2's VMA inside the window (hugetlb_split):
  // pid 2 unshares the whole window; the PMD table stays, pid 1's.
  APPLY(k, ops::munmap(2, 0, 0, k2M));
  sample s = k->snapshot("");
  EXPECT_EQ(levels(s), "2,0,2,1,0");
  EXPECT_EQ(proc(s, 2).vmpte, kTable);  // its PUD only
  EXPECT_EQ(proc(s, 2).hugetlb, 0u);
  EXPECT_EQ(leaves(*k, 2, k2M), 0u);
  EXPECT_EQ(proc(s, 1).vmpte, 2 * kTable);
  EXPECT_EQ(leaves(*k, 1, k2M), 512u);
  EXPECT_EQ(k->check_invariants(), "");
  // What is left of pid 2's VMA no longer covers the window: its own table, a fault per page.
  APPLY(k, ops::touch(2, 0, k2M, k1G - k2M));
  s = k->snapshot("");
  EXPECT_EQ(levels(s), "2,0,2,2,0");
  EXPECT_EQ(proc(s, 2).min_flt, 1u + 511u);
  EXPECT_EQ(proc(s, 2).hugetlb, 511 * k2M);
  // pid 1's table is still shareable: a third process attaches with one fault.
  ASSERT_TRUE(k->spawn(3).ok());
  ASSERT_NO_FATAL_FAILURE(attaches(*k, 3, k1G));
  s = k->snapshot("");
  EXPECT_EQ(levels(s), "3,0,3,2,0");
  EXPECT_EQ(proc(s, 3).min_flt, 1u);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbShare, MunmapOfOneWindowKeepsTheOtherShared) {
  // 2 GiB, both windows shared; pid 2 unmaps the second GiB. The split falls on the window
  // edge (no unshare there); the zap of the second window unshares it (huge_pmd_unshare).
  auto k = share_box(2 * k1G);
  ASSERT_NO_FATAL_FAILURE(owner_writes(*k, 2 * k1G));
  ASSERT_NO_FATAL_FAILURE(attaches(*k, 2, 2 * k1G));
  APPLY(k, ops::munmap(2, 0, k1G, k1G));
  const sample s = k->snapshot("");
  EXPECT_EQ(levels(s), "2,0,2,2,0");  // both tables are pid 1's; one is still pid 2's too
  EXPECT_EQ(proc(s, 2).vmpte, 2 * kTable);
  EXPECT_EQ(proc(s, 2).min_flt, 2u);
  EXPECT_EQ(leaves(*k, 2, k2M), 512u);
  EXPECT_EQ(leaves(*k, 1, k2M), 1024u);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbShare, MprotectUnshares) {
  auto k = share_box();
  ASSERT_NO_FATAL_FAILURE(owner_writes(*k, k1G));
  ASSERT_NO_FATAL_FAILURE(attaches(*k, 2, k1G));
  // hugetlb_change_protection unshares every shared PMD it meets.
  APPLY(k, ops::mprotect(2, 0, 0, k1G, prot_read));
  sample s = k->snapshot("");
  EXPECT_EQ(levels(s), "2,0,2,1,0");
  EXPECT_EQ(proc(s, 2).vmpte, kTable);
  EXPECT_EQ(leaves(*k, 2, k2M), 0u);
  // A read refaults every page into a table of its own (flags now differ from pid 1's).
  APPLY(k, ops::touch(2, 0, 0, k1G));
  s = k->snapshot("");
  EXPECT_EQ(levels(s), "2,0,2,2,0");
  EXPECT_EQ(proc(s, 2).min_flt, 1u + 512u);
  EXPECT_EQ(proc(s, 2).hugetlb, k1G);
  // pid 1 keeps its writable entries: a write takes no fault.
  APPLY(k, ops::touch(1, 0, 0, k1G).write());
  EXPECT_EQ(proc(k->snapshot(""), 1).min_flt, 512u);
  // A third process mapping it read-only shares pid 2's new table.
  ASSERT_TRUE(k->spawn(3).ok());
  APPLY(k, ops::mmap_object(3, 0, 0, k1G).shared().align(k1G).prot(prot_read));
  APPLY(k, ops::touch(3, 0, 0, k1G));
  s = k->snapshot("");
  EXPECT_EQ(levels(s), "3,0,3,2,0");
  EXPECT_EQ(proc(s, 3).min_flt, 1u);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbShare, ExitAndForkOfASharer) {
  auto k = share_box();
  ASSERT_NO_FATAL_FAILURE(owner_writes(*k, k1G));
  // fork of a shared hugetlb VMA copies no page tables (6.0 lazy copy): the child faults,
  // and attaches to the table with its one fault.
  APPLY(k, ops::fork(1, 3));
  sample s = k->snapshot("");
  EXPECT_EQ(levels(s), "3,0,1,1,0");  // pid 2 and the child have a PGD only
  EXPECT_EQ(proc(s, 3).vmpte, 0u);
  APPLY(k, ops::touch(3, 0, 0, k1G));
  s = k->snapshot("");
  EXPECT_EQ(levels(s), "3,0,2,1,0");
  EXPECT_EQ(proc(s, 3).min_flt, 1u);
  EXPECT_EQ(proc(s, 3).hugetlb, 0u);
  // The owner exits: it unshares, the child keeps the table.
  APPLY(k, ops::exit(1));
  s = k->snapshot("");
  EXPECT_EQ(levels(s), "2,0,1,1,0");
  EXPECT_EQ(s.page_tables, 2 * kPgd + 2 * kTable);
  EXPECT_EQ(leaves(*k, 3, k2M), 512u);
  APPLY(k, ops::exit(3));
  APPLY(k, ops::exit(2));
  s = k->snapshot("");
  EXPECT_EQ(levels(s), "0,0,0,0,0");
  EXPECT_EQ(s.page_tables, 0u);
  // The pages stay in the hugetlbfs file.
  EXPECT_EQ(pool(*k), "total 1024 free 512 rsvd 0 surp 0");
  EXPECT_EQ(k->check_invariants(), "");
}

// ---------------------------------------------------------------------------------------
// b. Anonymous THP deposits (linux-6.18, enabled=always)

std::unique_ptr<sim_kernel> thp_box(std::vector<std::pair<std::string, std::string>> ov = {{"thp_enabled", "always"}},
                                    std::vector<object_decl> objs = {}, bytes memory = 0, double fragmentation = 0) {
  return boot("linux-6.18", std::move(ov), {}, std::move(objs), {}, memory, fragmentation);
}

// pid 1 maps 8 MiB of private anonymous memory at a 2 MiB boundary (four aligned 2 MiB
// ranges under one PMD table) and writes all of it: four THPs.
void four_thps(sim_kernel& k) {
  ASSERT_TRUE(k.spawn(1).ok());
  APPLY(&k, ops::mmap_anon(1, 0, 8 * MiB).align(k2M));
  APPLY(&k, ops::touch(1, 0, 0, 8 * MiB).write());
}

TEST(HugeThpDeposit, EachThpKeepsADepositedPteTable) {
  auto k = thp_box();
  ASSERT_NO_FATAL_FAILURE(four_thps(*k));
  const sample s = k->snapshot("");
  // PUD + PMD + one deposited PTE table per THP.
  EXPECT_EQ(levels(s), "1,0,1,1,4");
  EXPECT_EQ(proc(s, 1).vmpte, (1 + 1 + 4) * kTable);
  EXPECT_EQ(s.page_tables, kPgd + (1 + 1 + 4) * kTable);
  EXPECT_EQ(s.mi.anon_huge, 8 * MiB);
  EXPECT_EQ(proc(s, 1).rss_anon, 4 * kPtes);
  EXPECT_EQ(k->faults(), 4u);  // one per THP
  auto pi = k->page_at(1, 0, 3 * MiB);
  ASSERT_TRUE(pi.ok());
  EXPECT_EQ(pi->huge, k2M);
  EXPECT_TRUE(pi->anon);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugeThpDeposit, HugeZeroPageHasADepositToo) {
  auto k = thp_box();
  ASSERT_TRUE(k->spawn(1).ok());
  APPLY(k, ops::mmap_anon(1, 0, 8 * MiB).align(k2M));
  APPLY(k, ops::touch(1, 0, 0, 8 * MiB));
  sample s = k->snapshot("");
  EXPECT_EQ(levels(s), "1,0,1,1,4");
  EXPECT_EQ(s.mi.anon_huge, 0u);
  EXPECT_EQ(proc(s, 1).rss_anon, 0u);
  EXPECT_EQ(k->faults(), 4u);
  auto pi = k->page_at(1, 0, 0);
  ASSERT_TRUE(pi.ok());
  EXPECT_TRUE(pi->zero_page);
  EXPECT_EQ(pi->huge, k2M);
  EXPECT_EQ(k->check_invariants(), "");
  // A write to the huge zero PMD allocates a THP in place (6.13+); the deposit stays.
  APPLY(k, ops::touch(1, 0, 0, 8 * MiB).write());
  s = k->snapshot("");
  EXPECT_EQ(levels(s), "1,0,1,1,4");
  EXPECT_EQ(s.mi.anon_huge, 8 * MiB);
  EXPECT_EQ(proc(s, 1).rss_anon, 4 * kPtes);
  EXPECT_EQ(k->faults(), 8u);
  EXPECT_EQ(k->check_invariants(), "");
}

// After a split, the tables and PageTables are what four THPs had (the deposit became the
// PTE table), one THP fewer is counted, and `rss` pages stay mapped.
void expect_split_kept_tables(const sim_kernel& k, uint64_t rss) {
  const sample s = k.snapshot("");
  EXPECT_EQ(levels(s), "1,0,1,1,4");
  EXPECT_EQ(s.page_tables, kPgd + (1 + 1 + 4) * kTable);
  EXPECT_EQ(proc(s, 1).vmpte, (1 + 1 + 4) * kTable);
  EXPECT_EQ(s.mi.anon_huge, 6 * MiB);
  EXPECT_EQ(proc(s, 1).rss_anon, rss);
  EXPECT_EQ(k.check_invariants(), "");
}

TEST(HugeThpDeposit, PartialMunmapSplitsIntoTheDeposit) {
  auto k = thp_box();
  ASSERT_NO_FATAL_FAILURE(four_thps(*k));
  APPLY(k, ops::munmap(1, 0, 0, kPage));
  expect_split_kept_tables(*k, 4 * kPtes - 1);
  auto pi = k->page_at(1, 0, kPage);
  ASSERT_TRUE(pi.ok());
  EXPECT_EQ(pi->huge, 0u);  // now a PTE
  EXPECT_TRUE(pi->anon);
}

TEST(HugeThpDeposit, PartialDontneedSplitsIntoTheDeposit) {
  auto k = thp_box();
  ASSERT_NO_FATAL_FAILURE(four_thps(*k));
  // 1 MiB = 256 pages of the second THP go; the PTE table stays (not a whole span).
  APPLY(k, ops::madvise(1, 0, k2M, 1 * MiB, advice::dontneed));
  expect_split_kept_tables(*k, 4 * kPtes - 256);
}

TEST(HugeThpDeposit, PartialMprotectSplitsIntoTheDeposit) {
  auto k = thp_box();
  ASSERT_NO_FATAL_FAILURE(four_thps(*k));
  APPLY(k, ops::mprotect(1, 0, 2 * k2M, 1 * MiB, prot_read));
  expect_split_kept_tables(*k, 4 * kPtes);
}

TEST(HugeThpDeposit, WholeZapFreesTheDeposit) {
  {
    auto k = thp_box();
    ASSERT_NO_FATAL_FAILURE(four_thps(*k));
    APPLY(k, ops::munmap(1, 0, 3 * k2M, k2M));  // the last THP
    const sample s = k->snapshot("");
    EXPECT_EQ(levels(s), "1,0,1,1,3");
    EXPECT_EQ(s.page_tables, kPgd + (1 + 1 + 3) * kTable);
    EXPECT_EQ(proc(s, 1).vmpte, (1 + 1 + 3) * kTable);
    EXPECT_EQ(s.mi.anon_huge, 6 * MiB);
    EXPECT_EQ(proc(s, 1).rss_anon, 3 * kPtes);
    EXPECT_EQ(k->check_invariants(), "");
  }
  {
    auto k = thp_box();
    ASSERT_NO_FATAL_FAILURE(four_thps(*k));
    APPLY(k, ops::madvise(1, 0, 0, k2M, advice::dontneed));  // the first THP, whole
    const sample s = k->snapshot("");
    EXPECT_EQ(levels(s), "1,0,1,1,3");
    EXPECT_EQ(s.mi.anon_huge, 6 * MiB);
    EXPECT_EQ(proc(s, 1).rss_anon, 3 * kPtes);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

TEST(HugeThpDeposit, ForkDepositsForTheChild) {
  auto k = thp_box();
  ASSERT_NO_FATAL_FAILURE(four_thps(*k));
  APPLY(k, ops::fork(1, 2));
  sample s = k->snapshot("");
  // The child: PGD, PUD, PMD and a deposit per THP it maps (copy_huge_pmd).
  EXPECT_EQ(levels(s), "2,0,2,2,8");
  EXPECT_EQ(proc(s, 2).vmpte, (1 + 1 + 4) * kTable);
  EXPECT_EQ(s.page_tables, 2 * kPgd + 2 * (1 + 1 + 4) * kTable);
  EXPECT_EQ(s.mi.anon_huge, 8 * MiB);  // the same four THPs, mapped twice
  EXPECT_EQ(proc(s, 2).rss_anon, 4 * kPtes);
  EXPECT_EQ(k->check_invariants(), "");
  // The child writes one page of a THP both map: its PMD splits into its deposit, and the
  // page is copied. No table is allocated.
  APPLY(k, ops::touch(2, 0, 0, kPage).write());
  s = k->snapshot("");
  EXPECT_EQ(levels(s), "2,0,2,2,8");
  EXPECT_EQ(k->cow_faults(), 1u);
  EXPECT_EQ(proc(s, 2).rss_anon, 4 * kPtes);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugeThpDeposit, MadviseModeNeedsTheHint) {
  // linux-6.18's default enabled=madvise: THPs only with MADV_HUGEPAGE.
  auto k = thp_box({});
  ASSERT_TRUE(k->spawn(1).ok());
  APPLY(k, ops::mmap_anon(1, 0, 8 * MiB).align(k2M).hint(advice::hugepage));
  APPLY(k, ops::mmap_anon(1, 1, 8 * MiB).align(k2M));
  APPLY(k, ops::touch(1, 0, 0, 8 * MiB).write());
  APPLY(k, ops::touch(1, 1, 0, 8 * MiB).write());
  const sample s = k->snapshot("");
  // 4 deposits + 4 ordinary PTE tables, both mappings under one PMD table.
  EXPECT_EQ(pages(s, level::pte), 8u);
  EXPECT_EQ(s.mi.anon_huge, 8 * MiB);
  EXPECT_EQ(proc(s, 1).rss_anon, 8 * kPtes);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugeThpDeposit, ShmemThpHasNoDeposit) {
  // x86: arch_needs_pgtable_deposit() is false, so do_set_pmd deposits nothing.
  std::vector<object_decl> objs = {{"shm", object_kind::shm, 8 * MiB}};
  for (const char* mode : {"always", "advise"}) {
    auto k = thp_box({{"shmem_enabled", mode}}, objs);
    ASSERT_TRUE(k->spawn(1).ok());
    APPLY(k, ops::mmap_object(1, 0, 0, 8 * MiB).shared().align(k2M).hint(advice::hugepage));
    APPLY(k, ops::touch(1, 0, 0, 8 * MiB));
    const sample s = k->snapshot("");
    EXPECT_EQ(levels(s), "1,0,1,1,0") << mode;
    EXPECT_EQ(proc(s, 1).vmpte, 2 * kTable) << mode;
    EXPECT_EQ(s.mi.shmem_huge, 8 * MiB) << mode;
    EXPECT_EQ(s.mi.shmem_pmd_mapped, 8 * MiB) << mode;
    EXPECT_EQ(s.mi.anon_huge, 0u) << mode;
    EXPECT_EQ(proc(s, 1).rss_shmem, 4 * kPtes) << mode;
    EXPECT_EQ(k->faults(), 4u) << mode;
    EXPECT_EQ(k->check_invariants(), "") << mode;
  }
  // advise without the hint: 4 KiB pages, four PTE tables.
  auto k = thp_box({{"shmem_enabled", "advise"}}, objs);
  ASSERT_TRUE(k->spawn(1).ok());
  APPLY(k, ops::mmap_object(1, 0, 0, 8 * MiB).shared().align(k2M));
  APPLY(k, ops::touch(1, 0, 0, 8 * MiB));
  const sample s = k->snapshot("");
  EXPECT_EQ(levels(s), "1,0,1,1,4");
  EXPECT_EQ(s.mi.shmem_huge, 0u);
  EXPECT_EQ(proc(s, 1).rss_shmem, 4 * kPtes);
  EXPECT_EQ(k->check_invariants(), "");
}

// ---------------------------------------------------------------------------------------
// c. Pool exhaustion and reservations

// A pool of 8 pages of 2 MiB and a 32 MiB file (16 pages).
std::unique_ptr<sim_kernel> small_pool(std::vector<std::pair<bytes, uint64_t>> overcommit = {}) {
  auto k = boot("linux-6.18", {}, {{k2M, 8}}, {{"seg", object_kind::hugetlb, 32 * MiB, k2M}}, std::move(overcommit));
  if (k) {
    EXPECT_TRUE(k->spawn(1).ok());
  }
  return k;
}

TEST(HugetlbPool, SharedMmapBeyondThePoolIsEnomem) {
  auto k = small_pool();
  EXPECT_EQ(pool(*k), "total 8 free 8 rsvd 0 surp 0");
  const status st = apply_op(*k, ops::mmap_object(1, 0, 0, 32 * MiB).shared());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), status_code::refused);
  EXPECT_EQ(st.message().rfind("ENOMEM", 0), 0u) << st.message();
  // The message names what was needed and what the pool had.
  EXPECT_NE(st.message().find("reserve 16 more"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("8 free"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("HugePages_Total 8"), std::string::npos) << st.message();
  EXPECT_EQ(k->map_addr(1, 0), 0u);
  EXPECT_EQ(pool(*k), "total 8 free 8 rsvd 0 surp 0");
  EXPECT_EQ(levels(k->snapshot("")), "1,0,0,0,0");
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbPool, NoreserveFaultsUntilThePoolIsEmptyThenSigbus) {
  auto k = small_pool();
  APPLY(k, ops::mmap_object(1, 0, 0, 32 * MiB).shared().noreserve());
  EXPECT_EQ(pool(*k), "total 8 free 8 rsvd 0 surp 0");
  const status st = apply_op(*k, ops::touch(1, 0, 0, 32 * MiB).write());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("SIGBUS", 0), 0u) << st.message();
  // Pages 0-7 got the pool's 8 pages; the fault on page 8 found none.
  const sample s = k->snapshot("");
  EXPECT_EQ(leaves(*k, 1, k2M), 8u);
  EXPECT_EQ(proc(s, 1).hugetlb, 8 * k2M);
  EXPECT_EQ(pool(*k), "total 8 free 0 rsvd 0 surp 0");
  // PGFAULT counts the failed fault too; min_flt does not (mm_account_fault returns
  // before it on VM_FAULT_ERROR).
  EXPECT_EQ(k->faults(), 9u);
  EXPECT_EQ(proc(s, 1).min_flt, 8u);
  EXPECT_EQ(levels(s), "1,0,1,1,0");
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbPool, SurplusPagesLetTheReservationSucceed) {
  // nr_overcommit_hugepages 8: gather_surplus_pages adds the 8 missing pages to the pool.
  auto k = small_pool({{k2M, 8}});
  APPLY(k, ops::mmap_object(1, 0, 0, 32 * MiB).shared());
  EXPECT_EQ(pool(*k), "total 16 free 16 rsvd 16 surp 8");
  APPLY(k, ops::touch(1, 0, 0, 32 * MiB).write());
  EXPECT_EQ(pool(*k), "total 16 free 0 rsvd 0 surp 8");
  EXPECT_EQ(proc(k->snapshot(""), 1).hugetlb, 32 * MiB);
  EXPECT_EQ(k->snapshot("").mi.hugetlb, 16 * k2M);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbPool, TooFewSurplusPagesGiveBackWhatWasGathered) {
  // Overcommit 4 cannot cover the 8 missing pages: gather_surplus_pages frees the surplus
  // pages it had allocated ("we free what we've allocated so far") and the pool is as before.
  auto k = small_pool({{k2M, 4}});
  const status st = apply_op(*k, ops::mmap_object(1, 0, 0, 32 * MiB).shared());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("ENOMEM", 0), 0u) << st.message();
  EXPECT_NE(st.message().find("HugePages_Total 8"), std::string::npos) << st.message();
  EXPECT_EQ(pool(*k), "total 8 free 8 rsvd 0 surp 0");
  EXPECT_EQ(k->snapshot("").mi.hugetlb, 8 * k2M);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbPool, NoreserveFaultsTakeSurplusPages) {
  // Without a reservation a fault that finds no free page allocates a surplus one
  // (alloc_buddy_hugetlb_folio_with_mpol) while overcommit allows: 8 + 4 pages, then SIGBUS.
  auto k = small_pool({{k2M, 4}});
  APPLY(k, ops::mmap_object(1, 0, 0, 32 * MiB).shared().noreserve());
  const status st = apply_op(*k, ops::touch(1, 0, 0, 32 * MiB).write());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("SIGBUS", 0), 0u) << st.message();
  EXPECT_EQ(leaves(*k, 1, k2M), 12u);
  EXPECT_EQ(pool(*k), "total 12 free 0 rsvd 0 surp 4");
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbPool, GigantPagesHaveNoSurplus) {
  // alloc_surplus_hugetlb_folio() refuses gigantic hstates: overcommit does not help a
  // 1 GiB mapping past an empty 1 GiB pool.
  auto k = boot("linux-6.18", {}, {}, {{"seg", object_kind::hugetlb, k1G, k1G}}, {{k1G, 2}});
  ASSERT_TRUE(k->spawn(1).ok());
  const status st = apply_op(*k, ops::mmap_object(1, 0, 0, k1G).shared());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("ENOMEM", 0), 0u) << st.message();
  APPLY(k, ops::mmap_object(1, 1, 0, k1G).shared().noreserve());
  const status t = apply_op(*k, ops::touch(1, 1, 0, k1G).write());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.message().rfind("SIGBUS", 0), 0u) << t.message();
  EXPECT_EQ(k->snapshot("").mi.hugetlb, 0u);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbPool, PrivateMappingReservesAtMmap) {
  auto k = small_pool();
  // A private mapping of 8 MiB reserves its 4 pages for itself.
  APPLY(k, ops::mmap_object(1, 0, 0, 8 * MiB));
  EXPECT_EQ(pool(*k), "total 8 free 8 rsvd 4 surp 0");
  // Two written pages consume two reservations.
  APPLY(k, ops::touch(1, 0, 0, 4 * MiB).write());
  EXPECT_EQ(pool(*k), "total 8 free 6 rsvd 2 surp 0");
  EXPECT_EQ(proc(k->snapshot(""), 1).hugetlb, 4 * MiB);
  // A second private mapping (MAP_HUGETLB) of 6 pages: free 6 - reserved 2 = 4 < 6.
  const status st = apply_op(*k, ops::mmap_anon(1, 1, 12 * MiB).hugetlb());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("ENOMEM", 0), 0u) << st.message();
  EXPECT_EQ(pool(*k), "total 8 free 6 rsvd 2 surp 0");
  // 4 pages fit.
  APPLY(k, ops::mmap_anon(1, 2, 8 * MiB).hugetlb());
  EXPECT_EQ(pool(*k), "total 8 free 6 rsvd 6 surp 0");
  // munmap: the private pages go back to the pool, the unused reservations are dropped.
  APPLY(k, ops::munmap(1, 0, 0, 8 * MiB));
  EXPECT_EQ(pool(*k), "total 8 free 8 rsvd 4 surp 0");
  APPLY(k, ops::munmap(1, 2, 0, 8 * MiB));
  EXPECT_EQ(pool(*k), "total 8 free 8 rsvd 0 surp 0");
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbPool, EachPieceOfASplitPrivateMappingGivesBackItsReservations) {
  // hugetlb_vm_op_close() per piece: "reserve = (end - start) - region_count(resv, start,
  // end)", the pages of its range no fault consumed. 8 pages reserved; pages 0 and 7
  // written (2 consumed); unmapping pages 1-6 gives their 6 back at once, and exit the rest.
  auto k = boot("linux-6.18", {}, {{k2M, 8}}, {{"seg", object_kind::hugetlb, 16 * MiB, k2M}});
  ASSERT_TRUE(k->spawn(1).ok());
  APPLY(k, ops::mmap_object(1, 0, 0, 16 * MiB));
  EXPECT_EQ(pool(*k), "total 8 free 8 rsvd 8 surp 0");
  APPLY(k, ops::touch(1, 0, 0, k2M).write());
  APPLY(k, ops::touch(1, 0, 7 * k2M, k2M).write());
  EXPECT_EQ(pool(*k), "total 8 free 6 rsvd 6 surp 0");
  APPLY(k, ops::munmap(1, 0, k2M, 6 * k2M));
  EXPECT_EQ(pool(*k), "total 8 free 6 rsvd 0 surp 0");
  EXPECT_EQ(k->check_invariants(), "");
  // The two pieces left share the resv_map; a split by mprotect adds a third.
  APPLY(k, ops::mprotect(1, 0, 0, k2M, prot_read));
  EXPECT_EQ(k->check_invariants(), "");
  APPLY(k, ops::exit(1));
  EXPECT_EQ(pool(*k), "total 8 free 8 rsvd 0 surp 0");
  EXPECT_EQ(k->check_invariants(), "");
  // Unmapping a piece that still holds reservations while another piece lives on.
  ASSERT_TRUE(k->spawn(2).ok());
  APPLY(k, ops::mmap_object(2, 0, 0, 16 * MiB));
  APPLY(k, ops::touch(2, 0, 0, k2M).write());
  EXPECT_EQ(pool(*k), "total 8 free 7 rsvd 7 surp 0");
  APPLY(k, ops::munmap(2, 0, 4 * k2M, 4 * k2M));  // pages 4-7: 4 unconsumed reservations
  EXPECT_EQ(pool(*k), "total 8 free 7 rsvd 3 surp 0");
  APPLY(k, ops::munmap(2, 0, 0, 4 * k2M));  // pages 0-3: page 0 back to the pool, 3 reservations
  EXPECT_EQ(pool(*k), "total 8 free 8 rsvd 0 surp 0");
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbPool, UnalignedHugetlbAddressIsEinval) {
  // A hugetlb mapping starts on a huge page boundary (prepare_hugepage_range): an
  // alignment phase that is not a multiple of 2 MiB cannot be honoured.
  auto k = small_pool();
  const status st = apply_op(*k, ops::mmap_object(1, 0, 0, 4 * MiB).shared().align(k2M, 1 * MiB));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("EINVAL", 0), 0u) << st.message();
  EXPECT_EQ(k->map_addr(1, 0), 0u);
  EXPECT_EQ(pool(*k), "total 8 free 8 rsvd 0 surp 0");
  // A phase that is a multiple of the huge page is kept.
  APPLY(k, ops::mmap_object(1, 1, 0, 4 * MiB).shared().align(8 * MiB, k2M));
  EXPECT_EQ(k->map_addr(1, 1) % (8 * MiB), k2M);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugetlbPool, SharedFileIsReservedOnce) {
  // Two shared mappings of the same 16 MiB (8 pages) over a pool of 8: the second
  // reserves nothing more (region_chg), so it does not fail.
  auto k = boot("linux-6.18", {}, {{k2M, 8}}, {{"seg", object_kind::hugetlb, 16 * MiB, k2M}});
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->spawn(2).ok());
  APPLY(k, ops::mmap_object(1, 0, 0, 16 * MiB).shared());
  EXPECT_EQ(pool(*k), "total 8 free 8 rsvd 8 surp 0");
  APPLY(k, ops::mmap_object(2, 0, 0, 16 * MiB).shared());
  EXPECT_EQ(pool(*k), "total 8 free 8 rsvd 8 surp 0");
  APPLY(k, ops::touch(1, 0, 0, 16 * MiB).write());
  EXPECT_EQ(pool(*k), "total 8 free 0 rsvd 0 surp 0");
  // pid 2 maps the file's pages (16 MiB covers no 1 GiB window: no sharing).
  APPLY(k, ops::touch(2, 0, 0, 16 * MiB).write());
  const sample s = k->snapshot("");
  EXPECT_EQ(pool(*k), "total 8 free 0 rsvd 0 surp 0");
  EXPECT_EQ(proc(s, 2).min_flt, 8u);
  EXPECT_EQ(proc(s, 2).hugetlb, 16 * MiB);
  EXPECT_EQ(levels(s), "2,0,2,2,0");
  EXPECT_EQ(k->check_invariants(), "");
}

// ---------------------------------------------------------------------------------------
// d. THP fallback

TEST(HugeThpFallback, RangesTheVmaDoesNotCoverUse4KiBPages) {
  auto k = thp_box();
  ASSERT_TRUE(k->spawn(1).ok());
  // 4 MiB starting 1 MiB past a 2 MiB boundary X: [X+1M, X+5M). Only [X+2M, X+4M) is an
  // aligned 2 MiB range inside it: one THP; [X+1M, X+2M) and [X+4M, X+5M) take 4 KiB pages
  // in two ordinary PTE tables.
  APPLY(k, ops::mmap_anon(1, 0, 4 * MiB).align(k2M, 1 * MiB));
  APPLY(k, ops::touch(1, 0, 0, 4 * MiB).write());
  const sample s = k->snapshot("");
  EXPECT_EQ(levels(s), "1,0,1,1,3");  // 2 PTE tables + 1 deposit
  EXPECT_EQ(s.mi.anon_huge, k2M);
  EXPECT_EQ(proc(s, 1).rss_anon, 4 * MiB / kPage);
  EXPECT_EQ(k->faults(), 256u + 1u + 256u);
  EXPECT_EQ(k->page_at(1, 0, 0)->huge, 0u);
  EXPECT_EQ(k->page_at(1, 0, 1 * MiB)->huge, k2M);
  EXPECT_EQ(k->page_at(1, 0, 3 * MiB)->huge, 0u);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugeThpFallback, NoFreePageblockMeansNoThp) {
  for (double f : {0.0, 1.0}) {
    auto k = thp_box({{"thp_enabled", "always"}}, {}, 0, f);
    ASSERT_NO_FATAL_FAILURE(four_thps(*k));
    const sample s = k->snapshot("");
    if (f == 0.0) {
      EXPECT_EQ(s.mi.anon_huge, 8 * MiB);
      EXPECT_EQ(k->faults(), 4u);
    } else {
      // Every pageblock holds a pinned page: every THP fault falls back, 512 faults each.
      EXPECT_EQ(s.mi.anon_huge, 0u);
      EXPECT_EQ(k->faults(), 4 * kPtes);
    }
    // Four PTE tables either way: deposits, or tables of 4 KiB pages.
    EXPECT_EQ(levels(s), "1,0,1,1,4");
    EXPECT_EQ(proc(s, 1).rss_anon, 4 * kPtes);
    EXPECT_EQ(k->check_invariants(), "");
  }
  // Nor can the hugetlb pool be had.
  auto k = boot("linux-6.18", {}, {{k2M, 4}}, {}, {}, 0, 1.0);
  EXPECT_EQ(pool(*k), "total 0 free 0 rsvd 0 surp 0");
}

// A 1 GiB machine on linux-6.18, fragmentation 0.5 (phys.h). Zones: DMA 16 MiB = 4096
// pages = 8 pageblocks of 512 pages; DMA32 the other 1008 MiB = 258048 pages = 504
// blocks; no Normal. Boot reserves mem_map (262144 pages x 64 B = 4096 pages) and the
// 32 MiB image (8192 pages) from DMA32: 12288 pages. Pinned blocks: round(8 x 0.5) = 4 in
// DMA and round(504 x 0.5) = 252 in DMA32. Small pages fill the pinned blocks first:
// 252 x 512 = 129024 pages of room, far above the ~12.6k small pages in DMA32 before the
// THPs, so no clean block is spilled into: 4 + 252 = 256 free pageblocks, 256 THPs.
constexpr uint64_t kHalfFragmentedBlocks = 256;

TEST(HugeThpFallback, PartialFragmentationGivesAsManyThpsAsFreePageblocks) {
  auto k = thp_box({{"thp_enabled", "always"}}, {}, 1 * GiB, 0.5);
  ASSERT_TRUE(k->spawn(1).ok());
  // 768 MiB = 384 aligned 2 MiB ranges, under one PMD table.
  APPLY(k, ops::mmap_anon(1, 0, 768 * MiB).align(k1G));
  APPLY(k, ops::touch(1, 0, 0, 768 * MiB).write());
  const sample s = k->snapshot("");
  const uint64_t thps = kHalfFragmentedBlocks, small = 384 - kHalfFragmentedBlocks;
  EXPECT_EQ(s.mi.anon_huge, thps * k2M);
  // One PTE table per range: a deposit or a table of 4 KiB pages.
  EXPECT_EQ(levels(s), "1,0,1,1,384");
  EXPECT_EQ(proc(s, 1).rss_anon, 768 * MiB / kPage);
  EXPECT_EQ(k->faults(), thps + small * kPtes);
  EXPECT_EQ(k->check_invariants(), "");
}

TEST(HugeThpFallback, TheBootPoolTakesTheSameFreePageblocks) {
  // The same machine asked for 300 pages of 2 MiB gets the 256 free pageblocks.
  auto k = boot("linux-6.18", {}, {{k2M, 300}}, {}, {}, 1 * GiB, 0.5);
  EXPECT_EQ(pool(*k), "total " + std::to_string(kHalfFragmentedBlocks) + " free " +
                          std::to_string(kHalfFragmentedBlocks) + " rsvd 0 surp 0");
  // A 1 GiB page needs 512 clean blocks in a row: none once any block is pinned.
  auto g = boot("linux-6.18", {}, {{k1G, 1}}, {}, {}, 0, 0.01);
  EXPECT_EQ(g->snapshot("").mi.hugetlb, 0u);
  auto clean = boot("linux-6.18", {}, {{k1G, 1}}, {}, {}, 0, 0);
  EXPECT_EQ(clean->snapshot("").mi.hugetlb, k1G);
}

// ---------------------------------------------------------------------------------------
// e. i386 2-level: 4 MiB hugetlb pages are PGD leaves (linux-2.5.43-mm2)

TEST(HugetlbI386, FourMiBPagesArePgdLeavesWithoutPteChains) {
  constexpr bytes k4M = 4 * MiB;
  auto k = boot("linux-2.5.43-mm2", {}, {{k4M, 8}},
                {{"seg", object_kind::hugetlb, 16 * MiB, 0}, {"shm", object_kind::shm, k4M}});
  EXPECT_EQ(k->meminfo_now().hugepagesize, k4M);
  for (uint32_t pid : {1u, 2u}) {
    ASSERT_TRUE(k->spawn(pid).ok());
    APPLY(k, ops::mmap_object(pid, 0, 0, 16 * MiB).shared());
    APPLY(k, ops::touch(pid, 0, 0, 16 * MiB).write());
  }
  sample s = k->snapshot("");
  // No PTE page under a PSE PGD entry: each process has its PGD and nothing else.
  EXPECT_EQ(levels(s), "2,0,0,0,0");
  EXPECT_EQ(s.page_tables, 0u);  // PTE pages only
  for (uint32_t pid : {1u, 2u}) {
    EXPECT_EQ(proc(s, pid).vmpte, 0u) << pid;
    EXPECT_EQ(proc(s, pid).min_flt, 4u) << pid;  // 16 MiB / 4 MiB
    EXPECT_EQ(leaves(*k, pid, k4M), 4u) << pid;
    // set_huge_pte adds the page to mm->rss: 4 x 1024 pages.
    EXPECT_EQ(proc(s, pid).rss_file, 4u * 1024u) << pid;
  }
  // Nor any rmap: page_add_rmap is never called for them.
  EXPECT_EQ(s.mi.reverse_maps, 0u);
  EXPECT_EQ(s.mi.mapped, 0u);
  auto pi = k->page_at(2, 0, 5 * MiB);
  ASSERT_TRUE(pi.ok());
  EXPECT_EQ(pi->huge, k4M);
  EXPECT_EQ(pi->chain_objects, 0u);
  auto pte_chains = [&] {
    for (const slab_row& r : k->slabinfo(false))
      if (r.name == "pte_chain") return r.active_objs;
    return uint64_t{~0ull};
  };
  EXPECT_EQ(pte_chains(), 0u);
  EXPECT_EQ(k->check_invariants(), "");
  // The same two processes on a 4 MiB shm segment of small pages: one PTE page each,
  // 1024 pages x 2 mappings = 2048 reverse maps, and a pte_chain per page mapped twice
  // (N = 2 <= NRPTE = 7: one chain object).
  for (uint32_t pid : {1u, 2u}) {
    APPLY(k, ops::mmap_object(pid, 1, 1, k4M).shared().align(k4M));
    APPLY(k, ops::touch(pid, 1, 0, k4M));
  }
  s = k->snapshot("");
  EXPECT_EQ(levels(s), "2,0,0,0,2");
  EXPECT_EQ(s.mi.reverse_maps, 2u * 1024u);
  EXPECT_EQ(pte_chains(), 1024u);
  EXPECT_EQ(k->page_at(1, 1, 0)->chain_objects, 1u);
  EXPECT_EQ(k->check_invariants(), "");
}

}  // namespace
}  // namespace vmlab
