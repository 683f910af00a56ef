// Targeted invariant tests: COW chains across generations, many processes sharing one shm
// object, the 5-level and PAE formats, and the fault-around window at a VMA start that is
// not 64 KiB aligned. Expected figures are derived here from the paging format (pages per
// table, spans), not copied from the model.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "model/profile.h"
#include "tests/model/model_util.h"
#include "vmlab/sim_kernel.h"

namespace vmlab {
namespace {

using namespace vmlab::testing;

// "pgd,p4d,pud,pmd,pte" page counts as a compact string.

std::string levels_of(const level_counts& c) {
  std::string out;
  for (int i = 0; i < kLevels; ++i) out += (i ? "," : "") + std::to_string(c[i]);
  return out;
}

// ---------------------------------------------------------------------------------------
// COW chains. A reference of page identities per process predicts every COW copy:
// a write to a page that another process still maps copies it (cow_faults + 1), a write to
// a page mapped only here reuses it. check_invariants() then proves that the model's
// AnonPages equals the distinct pages still mapped (and every mapcount), i.e. that exits
// free anonymous pages exactly.

class cow_reference {
 public:
  explicit cow_reference(uint64_t pages) : pages_(pages) {}
  void first_write(uint32_t pid) {
    auto& v = procs_[pid];
    v.resize(pages_);
    for (auto& id : v) { id = next_++; ++mapcount_[id]; }
  }
  void fork(uint32_t parent, uint32_t child) {
    procs_[child] = procs_[parent];
    for (uint64_t id : procs_[child]) ++mapcount_[id];
  }
  void exit(uint32_t pid) {
    for (uint64_t id : procs_[pid]) drop(id);
    procs_.erase(pid);
  }
  // Writes pages [from, to); returns the COW copies this takes.
  uint64_t write(uint32_t pid, uint64_t from, uint64_t to) {
    uint64_t copies = 0;
    auto& v = procs_[pid];
    for (uint64_t i = from; i < to; ++i) {
      if (mapcount_[v[i]] == 1) continue;  // do_wp_page reuse
      drop(v[i]);
      v[i] = next_++;
      ++mapcount_[v[i]];
      ++copies;
    }
    return copies;
  }
  [[nodiscard]] uint64_t distinct() const { return mapcount_.size(); }

 private:
  void drop(uint64_t id) {
    if (--mapcount_[id] == 0) mapcount_.erase(id);
  }
  uint64_t pages_;
  uint64_t next_ = 1;
  std::map<uint32_t, std::vector<uint64_t>> procs_;
  std::map<uint64_t, uint32_t> mapcount_;
};

void cow_chain(const std::string& profile, int depth, uint64_t seed) {
  SCOPED_TRACE(profile + " depth " + std::to_string(depth) + " seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const uint64_t n = 1024;  // pages: 4 MiB, two PTE pages on x86-64, one on i386
  auto k = make(profile);
  const bytes page = k->profile().paging.page_size();  // 64 KiB on ppc64-hash-64k
  const bytes len = n * page;
  cow_reference ref(n);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, len).align(4 * MiB)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, len, page, true).ok());
  ref.first_write(1);
  uint64_t cow = 0;
  ASSERT_EQ(k->cow_faults(), 0u);
  // A chain: generation g forks generation g+1. After each fork both the new child and its
  // parent write a stripe of their own, so every generation owns some pages and shares
  // the rest with its ancestors.
  std::vector<uint32_t> alive = {1};
  for (int g = 1; g <= depth; ++g) {
    const uint32_t parent = uint32_t(g), child = uint32_t(g + 1);
    ASSERT_TRUE(k->fork(parent, child).ok());
    ref.fork(parent, child);
    alive.push_back(child);
    const uint64_t stripe = n / 8;
    const uint64_t c0 = (uint64_t(g) * stripe) % n, p0 = (uint64_t(g) * stripe + n / 2) % n;
    ASSERT_TRUE(k->touch(child, 0, c0 * page, stripe * page, page, true).ok());
    cow += ref.write(child, c0, c0 + stripe);
    ASSERT_TRUE(k->touch(parent, 0, p0 * page, stripe * page, page, true).ok());
    cow += ref.write(parent, p0, p0 + stripe);
    ASSERT_EQ(k->cow_faults(), cow) << "after fork " << g;
    ASSERT_EQ(k->check_invariants(), "") << "after fork " << g;
  }
  const sample s = k->snapshot("");
  for (uint32_t pid : alive) EXPECT_EQ(proc(s, pid).rss_anon, n) << "pid " << pid;
  // Exits in random order; after each one a survivor writes everything, reusing the pages
  // it now maps alone and copying the rest.
  std::shuffle(alive.begin(), alive.end(), rng);
  for (size_t i = 0; i < alive.size(); ++i) {
    ASSERT_TRUE(k->exit(alive[i]).ok());
    ref.exit(alive[i]);
    ASSERT_EQ(k->check_invariants(), "") << "after exit of " << alive[i];
    if (i + 1 < alive.size()) {
      const uint32_t w = alive[i + 1 + rng() % (alive.size() - i - 1)];
      ASSERT_TRUE(k->touch(w, 0, 0, len, page, true).ok());
      cow += ref.write(w, 0, n);
      ASSERT_EQ(k->cow_faults(), cow) << "write by " << w;
      ASSERT_EQ(k->check_invariants(), "");
      EXPECT_EQ(proc(k->snapshot(""), w).rss_anon, n);
    }
  }
  EXPECT_EQ(ref.distinct(), 0u);
  const sample end = k->snapshot("");
  EXPECT_EQ(levels(end), "0,0,0,0,0");
  EXPECT_EQ(end.page_tables, 0u);
  EXPECT_EQ(k->check_invariants(), "");  // AnonPages recounted against an empty system
}

TEST(Invariants, CowChainsFreeAnonPagesExactly) {
  for (const std::string& p : profile_names())
    for (int depth = 1; depth <= 5; ++depth)
      for (uint64_t seed : {1u, 2u, 3u}) cow_chain(p, depth, seed * 100 + uint64_t(depth));
}

// A simple exact case, computed by hand: 1 page, parent writes, fork, child writes (1 COW),
// parent writes (mapped once now: reuse, no COW). Both keep exactly one anonymous page.
TEST(Invariants, CowCopyKeepsRssAnonAtOnePage) {
  auto k = make("linux-6.18");
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 4096)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 4096, 4096, true).ok());
  ASSERT_TRUE(k->fork(1, 2).ok());
  ASSERT_TRUE(k->touch(2, 0, 0, 4096, 4096, true).ok());
  EXPECT_EQ(k->cow_faults(), 1u);
  ASSERT_TRUE(k->touch(1, 0, 0, 4096, 4096, true).ok());
  EXPECT_EQ(k->cow_faults(), 1u);
  const sample s = k->snapshot("");
  EXPECT_EQ(proc(s, 1).rss_anon, 1u);
  EXPECT_EQ(proc(s, 2).rss_anon, 1u);
  EXPECT_EQ(k->check_invariants(), "");
}

// ENOMEM in the middle of a PTE page: the write that makes every entry present succeeds,
// then the COW copy of the next entry runs out of memory. The table is full and must use
// the shared all-ones bitmap (pgtable.h invariant 1) even though the fault failed.
TEST(Invariants, EnomemAfterATableFillsKeepsTheFullBitmapShared) {
  auto setup = [](sim_kernel& k) {
    EXPECT_TRUE(k.spawn(1).ok());
    EXPECT_TRUE(k.mmap(ops::mmap_anon(1, 0, 2 * MiB).align(2 * MiB)).ok());
    EXPECT_TRUE(k.touch(1, 0, 4096, 2 * MiB - 4096, 4096, true).ok());  // entries 1..511
    EXPECT_TRUE(k.fork(1, 2).ok());
  };
  // Size the machine so that exactly one page is free after the setup: the child's write
  // maps entry 0 (the table is now full), then the COW copy of entry 1 fails. mem_map
  // grows with the machine, so converge on the size in a few steps.
  bytes memory = 64 * MiB;
  std::unique_ptr<sim_kernel> k;
  for (int i = 0; i < 8; ++i) {
    k = make("linux-6.18", {}, memory);
    setup(*k);
    const bytes free = k->meminfo_now().mem_free;
    if (free == 4096) break;
    memory = memory - free + 4096;
  }
  ASSERT_EQ(k->meminfo_now().mem_free, 4096u);
  status st = k->touch(2, 0, 0, 2 * MiB, 4096, true);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("ENOMEM", 0), 0u) << st.message();
  EXPECT_EQ(k->check_invariants(), "");
}

// ---------------------------------------------------------------------------------------
// 64 processes x 256 MiB of one shm object, every page touched.

TEST(Invariants, SixtyFourProcessesShareOneShmObject) {
  constexpr uint32_t kProcs = 64;
  constexpr bytes kLen = 256 * MiB;
  for (const std::string& name : profile_names()) {
    SCOPED_TRACE(name);
    // Every process its own tables: sharing profiles with sharing off (ptshare_test.cc
    // checks them with it on).
    std::vector<std::pair<std::string, std::string>> ov;
    if (find_profile(name).value().ptshare.any()) ov = {{"ptshare_pte", "false"}, {"ptshare_pmd", "false"}};
    auto k = make(name, ov, 0, {{"seg", object_kind::shm, kLen}});
    const kernel_profile& prof = k->profile();
    const paging_format& f = prof.paging;
    // Aligned to what one table two levels above the PTE level maps (1 GiB on x86-64 and
    // PAE), or to a PGD entry on i386 2-level (4 MiB), so that no table straddles.
    const bytes align = std::min<bytes>(1 * GiB, f.at(std::max(0, f.nr_levels - 3)).span());
    for (uint32_t pid = 1; pid <= kProcs; ++pid) {
      ASSERT_TRUE(k->spawn(pid).ok());
      auto a = k->mmap(ops::mmap_object(pid, 0, 0, kLen).shared().align(align));
      ASSERT_TRUE(a.ok()) << a.error().message();
      ASSERT_EQ(a.value() % align, 0u);
      ASSERT_TRUE(k->touch(pid, 0, 0, kLen, f.page_size(), pid % 2 == 0).ok());
    }
    // Per process, level by level from the format: the mapping needs
    // ceil(len / table_span(i)) tables at level i (it is aligned, so no straddling), the
    // PGD is one, and PAE's PGD comes with its preallocated user PMDs.
    level_counts per{};
    per[static_cast<int>(f.at(0).lvl)] = 1;
    for (int i = 1; i < f.nr_levels; ++i)
      per[static_cast<int>(f.at(i).lvl)] = div_round_up(kLen, f.at(i).table_span());
    if (f.preallocated_pmds) per[static_cast<int>(level::pmd)] = std::max<uint64_t>(per[static_cast<int>(level::pmd)], f.preallocated_pmds);
    level_counts all{};
    for (int l = 0; l < kLevels; ++l) all[l] = per[l] * kProcs;
    const sample s = k->snapshot("");
    EXPECT_EQ(levels(s), levels_of(all));
    // x86-64 4-level: 256 MiB / 2 MiB = 128 PTE pages, one PMD, one PUD, one PGD each.
    if (f.name == "x86-64-4level") { EXPECT_EQ(levels(s), "64,0,64,64,8192"); }
    if (f.name == "i386-2level") { EXPECT_EQ(levels(s), "64,0,0,0,4096"); }  // 4 MiB per PTE page
    if (f.name == "i386-pae") { EXPECT_EQ(levels(s), "64,0,0,192,8192"); }
    // VmPTE and PageTables from the levels each counts. PageTables counts whole pages: a
    // process's fragments (ppc64-hash-64k) fill whole pages of its own; slab tables
    // (powerpc PUDs, slab PGDs) are never counted.
    bytes vmpte = 0, pt = 0;
    for (int i = 0; i < f.nr_levels; ++i) {
      const level l = f.at(i).lvl;
      const uint64_t n = per[static_cast<int>(l)];
      if (i > 0 && prof.counts_in_vmpte(l)) vmpte += n * f.at(i).table_bytes();
      const bytes each = i == 0 ? (f.pgd_from_slab ? 0 : prof.pgd_bytes()) : f.at(i).table_bytes();
      if (!prof.counts_in_page_tables(l) || f.at(i).alloc == table_alloc::slab) continue;
      pt += f.at(i).alloc == table_alloc::mm_fragment ? div_round_up(n, f.tables_per_page(i)) * f.page_size() : n * each;
    }
    EXPECT_EQ(s.page_tables, pt * kProcs);
    if (name == "linux-6.18") { EXPECT_EQ(s.page_tables, kProcs * ((128u + 1 + 1) * 4096 + 8192)); }
    for (const proc_sample& p : s.procs) {
      EXPECT_EQ(p.vmpte, vmpte) << "pid " << p.pid;
      EXPECT_EQ(p.rss_shmem, kLen / f.page_size()) << "pid " << p.pid;
      EXPECT_EQ(p.rss_anon, 0u);
    }
    EXPECT_EQ(k->check_invariants(), "");
    // Faults: the first process fills the page cache a page at a time; later readers map
    // fault_around_bytes per fault, writers (shm: no write-notify) map a page per fault.
    const uint64_t pages = kLen / f.page_size();
    const uint64_t fa = prof.fault_around_bytes > f.page_size() ? prof.fault_around_bytes / f.page_size() : 1;
    uint64_t expect_faults = 0;
    for (uint32_t pid = 1; pid <= kProcs; ++pid)
      expect_faults += pid == 1 || pid % 2 == 0 ? pages : pages / fa;
    EXPECT_EQ(k->faults(), expect_faults);
    for (uint32_t pid = 1; pid <= kProcs; ++pid) ASSERT_TRUE(k->exit(pid).ok());
    EXPECT_EQ(levels(k->snapshot("")), "0,0,0,0,0");
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// ---------------------------------------------------------------------------------------
// Five-level paging: one extra P4D level between the PGD and the PUD.

TEST(Invariants, FiveLevelPagingAddsAP4dPage) {
  auto k = make("linux-6.18", {{"paging", "x86-64-5level"}});
  const paging_format& f = k->profile().paging;
  ASSERT_EQ(f.nr_levels, 5);
  ASSERT_TRUE(k->spawn(1).ok());
  EXPECT_EQ(levels(k->snapshot("")), "1,0,0,0,0");
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 1 * GiB).align(1 * GiB)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 1 * GiB, 4096, true).ok());
  const uint64_t ptes = 1 * GiB / f.pte().table_span();  // 512
  sample s = k->snapshot("");
  EXPECT_EQ(levels(s), "1,1,1,1," + std::to_string(ptes));
  // VmPTE (pgtables_bytes) counts PTE, PMD and PUD pages: the P4D is not in it.
  EXPECT_EQ(proc(s, 1).vmpte, (ptes + 1 + 1) * 4096);
  // PageTables counts every level on 6.18: + P4D + the 8 KiB PTI PGD.
  EXPECT_EQ(s.page_tables, (ptes + 1 + 1 + 1) * 4096 + 8192);
  // A second mapping under another PGD entry (each maps 2^48 bytes) needs its own P4D,
  // PUD, PMD and PTE pages.
  op far = ops::mmap_anon(1, 1, 4096);
  far.fixed = true;
  far.addr = vaddr{1} << 50;
  ASSERT_TRUE(k->mmap(far).ok());
  ASSERT_TRUE(k->touch(1, 1, 0, 4096, 4096, true).ok());
  s = k->snapshot("");
  EXPECT_EQ(levels(s), "1,2,2,2," + std::to_string(ptes + 1));
  EXPECT_EQ(k->check_invariants(), "");
  ASSERT_TRUE(k->munmap(1, 1, 0, 4096).ok());
  EXPECT_EQ(levels(k->snapshot("")), "1,1,1,1," + std::to_string(ptes));  // floor/ceiling frees the far branch
  ASSERT_TRUE(k->fork(1, 2).ok());
  EXPECT_EQ(levels(k->snapshot("")), "2,2,2,2," + std::to_string(2 * ptes));
  ASSERT_TRUE(k->exit(1).ok());
  ASSERT_TRUE(k->exit(2).ok());
  EXPECT_EQ(levels(k->snapshot("")), "0,0,0,0,0");
  EXPECT_EQ(k->check_invariants(), "");
}

// ---------------------------------------------------------------------------------------
// i386 PAE: 4-entry 32-byte PGD from a slab, three user PMDs preallocated with it,
// 512-entry PTE pages mapping 2 MiB each.

TEST(Invariants, PaeCountsAndLifecycle) {
  for (const std::string& name : {std::string("linux-2.6.15"), std::string("linux-6.18")}) {
    SCOPED_TRACE(name);
    auto k = make(name, {{"paging", "i386-pae"}});
    const kernel_profile& prof = k->profile();
    const paging_format& f = prof.paging;
    ASSERT_EQ(f.name, "i386-pae");
    const uint64_t pmds = f.preallocated_pmds;  // 3: user space is 3 GiB, one PMD per GiB
    ASSERT_EQ(pmds, 3u);
    EXPECT_EQ(prof.pgd_bytes(), 32u);
    ASSERT_TRUE(k->spawn(1).ok());
    EXPECT_EQ(levels(k->snapshot("")), "1,0,0,3,0");
    const bytes len = 512 * MiB;
    auto a = k->mmap(ops::mmap_anon(1, 0, len).align(1 * GiB));
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE(k->touch(1, 0, 0, len, 4096, true).ok());
    const uint64_t ptes = len / f.pte().table_span();  // 512 MiB / 2 MiB = 256
    sample s = k->snapshot("");
    EXPECT_EQ(levels(s), "1,0,0,3," + std::to_string(ptes));
    // PageTables: 2.6.15 counts PTE pages; 6.18 counts every page-sized level (the slab
    // PGD is not a page). VmPTE: 2.6.15 PTE pages; 6.18 PTE+PMD (+PUD, folded).
    const bool all = prof.counts_in_page_tables(level::pmd);
    EXPECT_EQ(s.page_tables, (ptes + (all ? pmds : 0)) * 4096);
    EXPECT_EQ(proc(s, 1).vmpte, (ptes + (prof.counts_in_vmpte(level::pmd) ? pmds : 0)) * 4096);
    // Fork copies the written anonymous VMA: the child has its own PGD + 3 PMDs + 256 PTEs.
    ASSERT_TRUE(k->fork(1, 2).ok());
    s = k->snapshot("");
    EXPECT_EQ(levels(s), "2,0,0,6," + std::to_string(2 * ptes));
    EXPECT_EQ(proc(s, 2).rss_anon, len / 4096);
    EXPECT_EQ(k->check_invariants(), "");
    // munmap frees the PTE pages but never a preallocated PMD.
    ASSERT_TRUE(k->munmap(1, 0, 0, len).ok());
    EXPECT_EQ(levels(k->snapshot("")), "2,0,0,6," + std::to_string(ptes));
    ASSERT_TRUE(k->exit(2).ok());
    EXPECT_EQ(levels(k->snapshot("")), "1,0,0,3,0");
    ASSERT_TRUE(k->exit(1).ok());
    s = k->snapshot("");
    EXPECT_EQ(levels(s), "0,0,0,0,0");
    EXPECT_EQ(s.page_tables, 0u);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// ---------------------------------------------------------------------------------------
// Fault-around (do_fault_around, 64 KiB = 16 pages on linux-6.18): the window is
// ALIGN_DOWN(pte_off, 16) clipped up to the VMA start, and then extends 16 pages from
// wherever it starts (to_pte = from_pte + nr_pages), clipped to the VMA end and the PTE page.

// Reads every page of a 2 MiB shm object once in process 1 (so the whole object is in the
// page cache), then maps [obj_off, +len) in process 2 at 2 MiB-aligned + `phase` and reads
// every page in address order. Returns process 2's faults.
uint64_t fault_around_faults(bytes phase, bytes len) {
  auto k = make("linux-6.18", {}, 0, {{"seg", object_kind::shm, 4 * MiB}});
  EXPECT_EQ(k->profile().fault_around_bytes, 64 * KiB);
  EXPECT_TRUE(k->spawn(1).ok());
  EXPECT_TRUE(k->mmap(ops::mmap_object(1, 0, 0, 4 * MiB).shared().align(2 * MiB)).ok());
  EXPECT_TRUE(k->touch(1, 0, 0, 4 * MiB, 4096, false).ok());
  EXPECT_EQ(k->faults(), 1024u);  // nothing cached yet: one fault per page
  EXPECT_TRUE(k->spawn(2).ok());
  auto a = k->mmap(ops::mmap_object(2, 0, 0, len).shared().align(2 * MiB, phase));
  EXPECT_TRUE(a.ok());
  EXPECT_EQ(a.value() % (2 * MiB), phase);
  const uint64_t before = k->faults();
  EXPECT_TRUE(k->touch(2, 0, 0, len, 4096, false).ok());
  EXPECT_EQ(proc(k->snapshot(""), 2).rss_shmem, len / 4096);  // every page mapped
  EXPECT_EQ(k->check_invariants(), "");
  return k->faults() - before;
}

TEST(Invariants, FaultAroundClipsAtAnUnalignedVmaStart) {
  // VMA at entry 5 (20 KiB into the PTE page), 16 pages [5, 21):
  //   fault at 5: from = max(ALIGN_DOWN(5, 16) = 0, 5) = 5, to = 5 + 16 = 21 -> all 16.
  // One fault. (Clipping an aligned [0, 16) window would have needed two.)
  EXPECT_EQ(fault_around_faults(20 * KiB, 16 * 4096), 1u);
  // 60 pages [5, 65): 5 -> [5, 21); 21 -> [16, 32) maps 21..31; 32 -> [32, 48);
  // 48 -> [48, 64); 64 -> [64, 65). Five faults.
  EXPECT_EQ(fault_around_faults(20 * KiB, 60 * 4096), 5u);
  // 27 pages [5, 32): 5 -> [5, 21); 21 -> [16, 32) maps 21..31. Two faults.
  EXPECT_EQ(fault_around_faults(20 * KiB, 27 * 4096), 2u);
  // A 64 KiB-aligned start for comparison: 64 pages [16, 80) -> four windows.
  EXPECT_EQ(fault_around_faults(64 * KiB, 64 * 4096), 4u);
}

TEST(Invariants, FaultAroundStopsAtThePteTableEnd) {
  // VMA at entry 500 of a PTE page, 40 pages: [500, 512) in the first table, [0, 28) in
  // the next. 500 -> from = max(496, 500) = 500, to = min(516, 512) = 512 (12 pages);
  // next table: 0 -> [0, 16); 16 -> [16, 28) clipped at the VMA end. Three faults.
  EXPECT_EQ(fault_around_faults(500 * 4096, 40 * 4096), 3u);
}

}  // namespace
}  // namespace vmlab
