// Page reclaim (src/model/vmscan.h): the watermarks of each profile, the LRU's second
// chance, eviction through every rmap design (the walks counted), 2.4's swap_out, and what
// reclaim must leave alone (anonymous and shmem pages, mlocked mappings, page tables).
// Expected figures are derived here from the paging format and the profile's rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/kernel.h"
#include "model/phys.h"
#include "model_util.h"
#include "vmlab/op_builder.h"

namespace vmlab {
namespace {

using namespace vmlab::testing;

constexpr int32_t kFile = 0, kShm = 1;

std::unique_ptr<sim_kernel> boot(const std::string& profile, bytes memory, bytes file) {
  return make(profile, {}, memory, {{"data", object_kind::file, file}, {"pool", object_kind::shm, 64 * MiB}});
}

bytes page_size(const sim_kernel& k) { return k.profile().paging.page_size(); }

uint64_t isqrt(uint64_t x) {
  auto r = uint64_t(std::sqrt(double(x)));
  while (r * r > x) --r;
  while ((r + 1) * (r + 1) <= x) ++r;
  return r;
}

uint64_t slab_objs(const sim_kernel& k, const std::string& name) {
  for (const auto& r : k.slabinfo(false))
    if (r.name == name) return r.active_objs;
  return 0;
}

// 2.4 (free_area_init_core): each zone's pages_min = its size / zone_balance_ratio,
// clamped to [zone_balance_min, zone_balance_max]; low 2x, high 3x. linux-2.4's ratios
// are 2.4.1's {32, 128, 128} with min 10 and max 255. A 512 MiB i386 box: ZONE_DMA's
// 16 MiB gives 4096 / 32 = 128 pages, ZONE_NORMAL's ~496 MiB gives 126,976 / 128 = 992,
// clamped to 255.
TEST(Vmscan, Watermarks24ZoneBalanceRatio) {
  auto sk = make("linux-2.4", {}, 512 * MiB);
  ASSERT_TRUE(sk);
  const kernel& k = sim_kernel_internals::of(*sk);
  const uint64_t dma = k.pm.zone_pages(zone_type::dma), normal = k.pm.zone_pages(zone_type::normal);
  EXPECT_EQ(dma, 16 * MiB / page_size(*sk));
  const uint64_t dma_min = std::clamp<uint64_t>(dma / 32, 10, 255), normal_min = std::clamp<uint64_t>(normal / 128, 10, 255);
  EXPECT_EQ(dma_min, 128u);
  EXPECT_EQ(normal_min, 255u);
  EXPECT_EQ(sk->watermarks(), (std::array<uint64_t, 3>{dma_min + normal_min, 2 * (dma_min + normal_min), 3 * (dma_min + normal_min)}));
}

// 2.6.15 (setup_per_zone_pages_min): min_free_kbytes = sqrt(lowmem kB x 16) clamped to
// [128, 65536]; low = min + min/4, high = min + min/2.
TEST(Vmscan, Watermarks2615MinFreeKbytes) {
  for (bytes mem : {bytes{64 * MiB}, bytes{GiB}, bytes{16 * GiB}}) {
    SCOPED_TRACE(mem);
    auto sk = make("linux-2.6.15-x86_64", {}, mem);
    ASSERT_TRUE(sk);
    const kernel& k = sim_kernel_internals::of(*sk);
    const uint64_t page_kb = page_size(*sk) / KiB;
    const uint64_t mfk = std::clamp<uint64_t>(isqrt(k.pm.low_pages() * page_kb * 16), 128, 65536);
    const uint64_t mn = mfk / page_kb;
    EXPECT_EQ(sk->watermarks(), (std::array<uint64_t, 3>{mn, mn + mn / 4, mn + 2 * (mn / 4)}));
  }
}

// 6.18 with THP (set_recommended_min_free_kbytes): at least pageblock_nr_pages x zones x
// (2 + MIGRATE_PCPTYPES^2) = 512 x 3 x 11 pages = 67,584 kB, this host's min_free_kbytes
// (its 3 zones, THP "always"); low and high add max(min/4, managed x
// watermark_scale_factor(10) / 10000).
TEST(Vmscan, Watermarks618RecommendedForThp) {
  auto sk = make("linux-6.18", {}, 8 * GiB);
  ASSERT_TRUE(sk);
  const kernel& k = sim_kernel_internals::of(*sk);
  int zones = 0;
  for (zone_type z : {zone_type::dma, zone_type::dma32, zone_type::normal}) zones += k.pm.zone_present(z) ? 1 : 0;
  ASSERT_EQ(zones, 3);
  const uint64_t pageblock = k.prof.paging.pmd_huge_size() / page_size(*sk);
  const uint64_t mn = pageblock * zones * 11;
  EXPECT_EQ(mn * page_size(*sk) / KiB, 67584u);
  const uint64_t managed = sk->meminfo_now().mem_total / page_size(*sk);
  const uint64_t step = std::max(mn / 4, managed * 10 / 10000);
  EXPECT_EQ(sk->watermarks(), (std::array<uint64_t, 3>{mn, mn + step, mn + 2 * step}));
}

// A 64 MiB file mapped and read by one process: every page was faulted in, so every page
// is referenced. Reclaiming 16 MiB scans the whole list once (each page loses its bit and
// goes to the tail, a page_referenced walk each), then evicts the 16 MiB at the head, the
// oldest pages, with two walks each (folio_check_references, try_to_unmap). The PTE pages
// stay.
TEST(Vmscan, SecondChanceThenEvictOldest) {
  for (const char* profile : {"linux-6.18", "linux-2.6.15-x86_64", "linux-2.5.26"}) {
    SCOPED_TRACE(profile);
    auto k = boot(profile, 4 * GiB, 256 * MiB);
    ASSERT_TRUE(k);
    const bytes pg = page_size(*k);
    const bytes len = 64 * MiB, want = 16 * MiB;
    const uint64_t pages = len / pg, nr = want / pg;
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, kFile, len).shared()).ok());
    // MADV_RANDOM: the faults read no further than the mapping (6.x would read ahead
    // past its end: readahead_test.cc), so the list holds exactly these pages.
    ASSERT_TRUE(k->madvise(1, 0, 0, len, advice::random).ok());
    ASSERT_TRUE(k->touch(1, 0, 0, len, pg, false).ok());
    const meminfo before = k->meminfo_now();
    ASSERT_EQ(before.cached, len);
    ASSERT_EQ(before.mapped, len);
    const rmap_work walks_before = k->rmap_work_total();
    ASSERT_TRUE(k->reclaim(want).ok());
    const reclaim_stats& st = k->reclaim_counts();
    EXPECT_EQ(st.reclaimed, nr);
    EXPECT_EQ(st.rotated, pages);
    EXPECT_EQ(st.scanned, pages + nr);
    EXPECT_EQ(st.unmapped, nr);
    EXPECT_EQ(st.written, 0u);
    EXPECT_EQ(st.work.walks, pages + 2 * nr);
    EXPECT_EQ(st.work.unmapped, nr);
    EXPECT_EQ(k->rmap_work_total().walks - walks_before.walks, st.work.walks);
    const meminfo after = k->meminfo_now();
    EXPECT_EQ(after.cached, len - want);
    EXPECT_EQ(after.mapped, len - want);
    EXPECT_EQ(after.page_tables, before.page_tables);
    // The evicted pages are the first 16 MiB: no PTE maps them now; the rest still mapped.
    const vaddr base = k->map_addr(1, 0);
    uint64_t below = 0, above = 0;
    for (const pte_mapping& m : k->mappings()) {
      ASSERT_EQ(m.pgoff, (m.addr - base) / pg);
      (m.addr < base + want ? below : above)++;
    }
    EXPECT_EQ(below, 0u);
    EXPECT_EQ(above, pages - nr);
    EXPECT_EQ(k->check_invariants(), "");
    // The pages are faulted back in (read from the file again) and become the newest.
    ASSERT_TRUE(k->touch(1, 0, 0, want, pg, false).ok());
    EXPECT_EQ(k->meminfo_now().cached, len);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// What a walk costs per design, for a page mapped by N processes at one VMA each.
// Object-based (2.6+): each walk visits the N VMAs of i_mmap covering the page, with a
// page-table walk each. pte_chain (2.5): N chain entries in ceil(N / NRPTE) objects.
TEST(Vmscan, SharersEveryWalkCounted) {
  constexpr uint32_t kProcs = 8;
  for (const char* profile : {"linux-6.18", "linux-2.5.26"}) {
    SCOPED_TRACE(profile);
    auto k = boot(profile, 4 * GiB, 64 * MiB);
    ASSERT_TRUE(k);
    const bytes pg = page_size(*k), len = 4 * MiB;
    const uint64_t pages = len / pg;
    for (uint32_t p = 1; p <= kProcs; ++p) {
      ASSERT_TRUE(k->spawn(p).ok());
      ASSERT_TRUE(k->mmap(ops::mmap_object(p, 0, kFile, len).shared()).ok());
      ASSERT_TRUE(k->madvise(p, 0, 0, len, advice::random).ok());  // no readahead past the mapping
      ASSERT_TRUE(k->touch(p, 0, 0, len, pg, false).ok());
    }
    const meminfo before = k->meminfo_now();
    const bool chains = k->profile().rmap.scheme == rmap_scheme::pte_chain;
    if (chains) {
      EXPECT_GT(slab_objs(*k, "pte_chain"), 0u);
    }
    ASSERT_TRUE(k->reclaim(0).ok());
    const reclaim_stats& st = k->reclaim_counts();
    EXPECT_EQ(st.reclaimed, pages);
    EXPECT_EQ(st.rotated, pages);
    EXPECT_EQ(st.unmapped, pages * kProcs);
    const uint64_t walks = 3 * pages;  // page_referenced, then page_referenced + try_to_unmap
    EXPECT_EQ(st.work.walks, walks);
    if (chains) {
      const uint64_t nrpte = (k->profile().objs.slab.cache_line - k->profile().objs.slab.word_size) / k->profile().rmap.pte_addr_bytes;
      EXPECT_EQ(st.work.chain_entries, walks * kProcs);
      EXPECT_EQ(st.work.chain_objects, walks * ((kProcs + nrpte - 1) / nrpte));
      EXPECT_EQ(slab_objs(*k, "pte_chain"), 0u);  // every chain freed with its PTEs
    } else {
      EXPECT_EQ(st.work.vmas_visited, walks * kProcs);
      EXPECT_EQ(st.work.pt_walks, walks * kProcs);
    }
    const meminfo after = k->meminfo_now();
    EXPECT_EQ(after.cached, 0u);
    EXPECT_EQ(after.mapped, 0u);
    EXPECT_EQ(after.page_tables, before.page_tables);
    for (uint32_t p = 1; p <= kProcs; ++p) EXPECT_EQ(proc(k->snapshot("end"), p).rss_file, 0u);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// Dirty pages are written back before they go (pageout); anonymous COW copies of a
// private file mapping, and shmem, have nowhere to go without swap and stay.
TEST(Vmscan, DirtyWrittenAnonAndShmemKept) {
  auto k = boot("linux-6.18", 4 * GiB, 64 * MiB);
  ASSERT_TRUE(k);
  const bytes pg = page_size(*k), len = 2 * MiB;
  const uint64_t pages = len / pg;
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->file_io(ops::write(1, kFile, 0, len)).ok());  // dirty in the cache
  ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, kFile, len)).ok());  // private
  ASSERT_TRUE(k->touch(1, 0, 0, len, pg, false).ok());             // the file pages mapped
  ASSERT_TRUE(k->touch(1, 0, len / 2, len / 2, pg, true).ok());   // COW: anonymous copies
  ASSERT_TRUE(k->mmap(ops::mmap_object(1, 1, kShm, len).shared()).ok());
  ASSERT_TRUE(k->touch(1, 1, 0, len, pg, true).ok());
  const meminfo before = k->meminfo_now();
  ASSERT_EQ(before.dirty, len);
  ASSERT_TRUE(k->reclaim(0).ok());
  const reclaim_stats& st = k->reclaim_counts();
  EXPECT_EQ(st.reclaimed, pages);
  EXPECT_EQ(st.written, pages);
  // The private mapping's untouched half mapped file pages; its written half maps the
  // anonymous copies, which stay.
  EXPECT_EQ(st.unmapped, pages / 2);
  const meminfo after = k->meminfo_now();
  EXPECT_EQ(after.dirty, 0u);
  EXPECT_EQ(after.cached, before.cached - len);  // shmem stays Cached
  const sample end = k->snapshot("end");
  const proc_sample& p1 = proc(end, 1);
  EXPECT_EQ(p1.rss_file, 0u);  // the unwritten half's file pages went
  EXPECT_EQ(p1.rss_anon, pages / 2);
  EXPECT_EQ(p1.rss_shmem, pages);
  EXPECT_EQ(k->check_invariants(), "");
}

// An mlocked mapping's pages are not evicted (the unevictable list); the rest are.
TEST(Vmscan, MlockedPagesKept) {
  auto k = boot("linux-6.18", 4 * GiB, 64 * MiB);
  ASSERT_TRUE(k);
  const bytes pg = page_size(*k), len = 2 * MiB;
  const uint64_t pages = len / pg;
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, kFile, len).shared().locked()).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, len, pg, false).ok());
  ASSERT_TRUE(k->file_io(ops::read(1, kFile, len, len)).ok());  // cached, not mapped
  ASSERT_TRUE(k->reclaim(0).ok());
  const reclaim_stats& st = k->reclaim_counts();
  EXPECT_EQ(st.reclaimed, pages);
  EXPECT_GE(st.kept, pages);
  EXPECT_EQ(k->meminfo_now().cached, len);
  EXPECT_EQ(proc(k->snapshot("end"), 1).rss_file, pages);
  EXPECT_EQ(k->check_invariants(), "");
}

// 2.4 has no reverse map: a mapped page at the list's head waits for swap_out(), which
// scans the processes' page tables (every entry it looks at counted), clears the young
// bit of referenced pages and drops the PTEs of the others; then the page is reclaimed.
TEST(Vmscan, SwapOutScansPageTables24) {
  auto k = boot("linux-2.4", 512 * MiB, 64 * MiB);
  ASSERT_TRUE(k);
  const bytes pg = page_size(*k), len = 4 * MiB;
  const uint64_t pages = len / pg;
  for (uint32_t p = 1; p <= 2; ++p) {
    ASSERT_TRUE(k->spawn(p).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_object(p, 0, kFile, len).shared()).ok());
    ASSERT_TRUE(k->touch(p, 0, 0, len, pg, false).ok());
  }
  const meminfo before = k->meminfo_now();
  ASSERT_TRUE(k->reclaim(0).ok());
  const reclaim_stats& st = k->reclaim_counts();
  EXPECT_EQ(st.reclaimed, pages);
  EXPECT_EQ(st.unmapped, 2 * pages);
  EXPECT_GT(st.swap_out_calls, 0u);
  EXPECT_EQ(st.work.walks, 0u);  // no rmap walk in 2.4
  // The list's first pass took the referenced bits (one per page, simplified: vmscan.h);
  // swap_out then saw every PTE at least once to drop it.
  EXPECT_GE(st.work.ptes_scanned, 2 * pages);
  EXPECT_EQ(k->meminfo_now().cached, 0u);
  EXPECT_EQ(k->meminfo_now().page_tables, before.page_tables);
  EXPECT_EQ(k->check_invariants(), "");
}

// Pressure: processes stream a file three times the machine's memory through their
// mappings; the page cache never lets free memory fall under the min watermark, no op
// fails, and every profile's design did the unmapping.
TEST(Vmscan, StreamingPastMemoryCompletes) {
  for (const char* profile : {"linux-6.18", "linux-2.6.15-x86_64", "linux-2.5.26", "linux-2.4"}) {
    SCOPED_TRACE(profile);
    const bytes mem = 256 * MiB;
    auto k = boot(profile, mem, 768 * MiB);
    ASSERT_TRUE(k);
    const bytes pg = page_size(*k);
    for (uint32_t p = 1; p <= 2; ++p) {
      ASSERT_TRUE(k->spawn(p).ok());
      ASSERT_TRUE(k->mmap(ops::mmap_object(p, 0, kFile, 768 * MiB).shared()).ok());
    }
    for (uint32_t p = 1; p <= 2; ++p) ASSERT_TRUE(k->touch(p, 0, 0, 768 * MiB, pg, false).ok());
    const meminfo m = k->meminfo_now();
    EXPECT_GE(m.mem_free / pg, k->watermarks()[0]);
    EXPECT_LT(m.cached, mem);
    EXPECT_GT(k->reclaim_counts().reclaimed, 0u);
    EXPECT_GT(k->reclaim_counts().unmapped, 0u);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

}  // namespace
}  // namespace vmlab
