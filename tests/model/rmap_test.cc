// Reverse-mapping schemes against hand-computed cases: pte_chain (both generations),
// anon_vma (2.6.7), anon_vma_chain (2.6.34+, with and without the 3.19 reuse rule), the
// work try_to_unmap does under each scheme (including 2.4's page-table scan), and the
// i386 low-memory exhaustion that pte_chains caused.
//
// Every expected figure is derived in a comment next to it from the kernel's rules as
// /work/shared/reference/linux-vm-internals.md states them (sections 1.3-1.5 and 2.2-2.4)
// and the slab geometry of the profile (cache_estimate() for 2.5 SLAB), never read back
// from the model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/model/model_util.h"
#include "vmlab/sim_kernel.h"

namespace vmlab {
namespace {

using namespace vmlab::testing;

using overrides = std::vector<std::pair<std::string, std::string>>;

constexpr bytes kPage = 4096;

// A kernel on a machine with an explicit L1 cache line (NRPTE depends on it).
std::unique_ptr<sim_kernel> boot(const std::string& profile, overrides ov = {}, bytes memory = 0,
                                 std::vector<object_decl> objs = {}, uint32_t cache_line = 0) {
  machine_decl m;
  m.profile = profile;
  m.overrides = std::move(ov);
  m.memory = memory;
  m.cache_line = cache_line;
  return testing::make(m, objs);
}

std::vector<object_decl> one_shm(bytes size = 4 * MiB) { return {{"shm0", object_kind::shm, size}}; }

// The slabinfo row of cache `name` (now); a row with name "" when the kernel has none.
slab_row slab(const sim_kernel& k, const std::string& name) {
  for (const slab_row& r : k.slabinfo(false))
    if (r.name == name) return r;
  return {};
}
bool has_cache(const sim_kernel& k, const std::string& name) { return !slab(k, name).name.empty(); }
uint64_t active(const sim_kernel& k, const std::string& name) {
  const slab_row r = slab(k, name);
  EXPECT_FALSE(r.name.empty()) << "no slab cache " << name;
  return r.active_objs;
}

page_info page(const sim_kernel& k, uint32_t pid, uint32_t map, uint64_t pg) {
  auto r = k.page_at(pid, map, pg * kPage);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? r.value() : page_info{};
}

// Spawns pids [first, last]; each maps object 0 shared as map 0 (`pages` pages from
// offset 0) and reads page `pg` of it.
void attach_shm(sim_kernel& k, uint32_t first, uint32_t last, uint64_t pages, uint64_t pg, bool write = false) {
  for (uint32_t pid = first; pid <= last; ++pid) {
    ASSERT_TRUE(k.spawn(pid).ok());
    ASSERT_TRUE(k.mmap(ops::mmap_object(pid, 0, 0, pages * kPage).shared()).ok());
    ASSERT_TRUE(k.touch(pid, 0, pg * kPage, kPage, kPage, write).ok()) << "pid " << pid;
  }
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// ======================================================================================
// 1. pte_chain, 2.5.35+ generation: objects per page and the slab row.

// linux-2.5.26 on a Pentium III: L1_CACHE_BYTES 32, pte_addr_t 4 bytes (no HIGHPTE), so
// NRPTE = (32 - sizeof(long)) / sizeof(pte_addr_t) = (32 - 4) / 4 = 7 and one pte_chain is
// a 32-byte object. 2.5 SLAB cache_estimate: 113 * 32 + L1_CACHE_ALIGN(24 + 113 * 4) =
// 3616 + 480 = 4096, so 113 objects per one-page slab (114 would need 3648 + 480 > 4096).
TEST(RmapPteChain, ShmPageMappedByNProcessesOn32ByteLines) {
  auto k = boot("linux-2.5.26", {}, 0, one_shm(), 32);
  ASSERT_TRUE(k);
  const slab_row r0 = slab(*k, "pte_chain");
  EXPECT_EQ(r0.objsize, 32u);     // sizeof(struct pte_chain) == L1_CACHE_BYTES
  EXPECT_EQ(r0.objperslab, 113u);  // see above
  EXPECT_EQ(r0.active_objs, 0u);
  // N -> chain objects: N = 1 is PageDirect (0); N >= 2 needs ceil(N / 7) (section 1.5):
  // 2 -> 1, 7 -> 1, 8 -> 2, 1000 -> ceil(1000 / 7) = 143 (142 * 7 = 994 < 1000 <= 1001).
  struct row {
    uint32_t n;
    uint64_t objects;
    bool direct;
  };
  const row rows[] = {{1, 0, true}, {2, 1, false}, {7, 1, false}, {8, 2, false}, {1000, 143, false}};
  uint32_t spawned = 0;
  for (const row& w : rows) {
    SCOPED_TRACE("N = " + std::to_string(w.n));
    attach_shm(*k, spawned + 1, w.n, 16, 5);  // every process reads page 5 of the segment
    spawned = w.n;
    // Every process sees the same struct page.
    for (uint32_t pid : {1u, w.n}) {
      const page_info pi = page(*k, pid, 0, 5);
      EXPECT_TRUE(pi.present);
      EXPECT_FALSE(pi.anon);
      EXPECT_EQ(pi.mapcount, w.n);
      EXPECT_EQ(pi.direct, w.direct);
      EXPECT_EQ(pi.chain_objects, w.objects);
    }
    // That page is the only chained page, so the cache holds exactly its chain: 113 per
    // slab, so N = 1000's 143 objects take ceil(143 / 113) = 2 slabs = 226 objects.
    const slab_row r = slab(*k, "pte_chain");
    EXPECT_EQ(r.active_objs, w.objects);
    EXPECT_EQ(r.num_objs, 113 * ceil_div(w.objects, 113));
    // ReverseMaps counts PTEs (PageDirect included): one per process, nothing else mapped.
    const meminfo mi = k->meminfo_now();
    EXPECT_EQ(mi.reverse_maps, w.n);
    EXPECT_TRUE(mi.has_reverse_maps);  // 2.5.30 - 2.5.67
    EXPECT_FALSE(mi.has_mapped);       // Mapped: only from 2.5.36
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// The same on an Athlon (64-byte line): NRPTE = (64 - 4) / 4 = 15; 64-byte objects, 59 per
// slab (59 * 64 + L1_CACHE_ALIGN(24 + 59 * 4 = 260 -> 320) = 3776 + 320 = 4096; 60 would
// need 3840 + 320 = 4160). And a Pentium 4 (128-byte line): NRPTE = (128 - 4) / 4 = 31;
// 30 per slab (30 * 128 + L1_CACHE_ALIGN(24 + 120 = 144 -> 256) = 3840 + 256 = 4096).
TEST(RmapPteChain, ShmPageOnWiderCacheLines) {
  struct line {
    uint32_t bytes, nrpte, per_slab;
  };
  for (const line& l : {line{64, 15, 59}, line{128, 31, 30}}) {
    SCOPED_TRACE("cache line " + std::to_string(l.bytes));
    auto k = boot("linux-2.5.26", {}, 0, one_shm(), l.bytes);
    ASSERT_TRUE(k);
    EXPECT_EQ(slab(*k, "pte_chain").objsize, l.bytes);
    EXPECT_EQ(slab(*k, "pte_chain").objperslab, l.per_slab);
    // NRPTE mappings fit one object; one more needs a second (ceil((NRPTE + 1) / NRPTE) = 2).
    attach_shm(*k, 1, l.nrpte, 16, 0);
    EXPECT_EQ(page(*k, 1, 0, 0).chain_objects, 1u);
    EXPECT_EQ(active(*k, "pte_chain"), 1u);
    attach_shm(*k, l.nrpte + 1, l.nrpte + 1, 16, 0);
    EXPECT_EQ(page(*k, 1, 0, 0).mapcount, l.nrpte + 1);
    EXPECT_EQ(page(*k, 1, 0, 0).chain_objects, 2u);
    EXPECT_EQ(active(*k, "pte_chain"), 2u);
    EXPECT_EQ(k->meminfo_now().reverse_maps, l.nrpte + 1);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// "N counts ptes, not processes. A process that maps the same page twice contributes 2"
// (section 1.5): two VMAs of one process on the same page make it a chained page.
TEST(RmapPteChain, OneProcessMappingAPageTwiceNeedsAChain) {
  auto k = boot("linux-2.5.26", {}, 0, one_shm(), 32);
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, 0, 16 * kPage).shared()).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_object(1, 1, 0, 16 * kPage).shared()).ok());
  ASSERT_TRUE(k->touch(1, 0, 3 * kPage, kPage, kPage, false).ok());
  EXPECT_TRUE(page(*k, 1, 0, 3).direct);
  ASSERT_TRUE(k->touch(1, 1, 3 * kPage, kPage, kPage, false).ok());
  // Two PTEs -> one chain object (ceil(2 / 7) = 1), ReverseMaps 2.
  EXPECT_EQ(page(*k, 1, 1, 3).mapcount, 2u);
  EXPECT_EQ(page(*k, 1, 1, 3).chain_objects, 1u);
  EXPECT_EQ(active(*k, "pte_chain"), 1u);
  EXPECT_EQ(k->meminfo_now().reverse_maps, 2u);
  EXPECT_EQ(k->check_invariants(), "");
}

// sizeof(pte_addr_t) decides NRPTE (section 1.2, 2.6.0 include/asm-i386/pgtable.h):
//   CONFIG_HIGHPTE && CONFIG_HIGHMEM4G  -> u32      (4 B)
//   CONFIG_HIGHPTE && CONFIG_HIGHMEM64G -> u64      (8 B)
//   !CONFIG_HIGHPTE                     -> pte_t *  (4 B on i386)
// With a 32-byte line: NRPTE = (32 - 4) / 4 = 7, or (32 - 4) / 8 = 3 with the u64 (the
// "i386 PIII, HIGHPTE + HIGHMEM64G" row of section 1.3). A shm page mapped by 4 processes
// needs ceil(4 / 7) = 1 object, or ceil(4 / 3) = 2. These configurations the model gets
// right from the start:
TEST(RmapPteChain, PteAddrSizeFromHighpteAndPae) {
  struct cfg {
    std::string profile;
    overrides ov;
    uint64_t objects;  // for 4 mappings
  };
  const cfg cfgs[] = {
      {"linux-2.5.26", {}, 1},                                       // no HIGHPTE: 7 slots
      {"linux-2.5.26", {{"highpte", "true"}}, 1},                   // HIGHMEM4G: u32, 7
      {"linux-2.6.15", {{"rmap", "pte_chain"}}, 2},                 // PAE + HIGHPTE: u64, 3
      {"linux-2.6.15", {{"highpte", "false"}, {"rmap", "pte_chain"}}, 1},  // pte_t *: 7
  };
  for (const cfg& c : cfgs) {
    SCOPED_TRACE(c.profile + " " + std::to_string(c.ov.size()) + " overrides");
    auto k = boot(c.profile, c.ov, 0, one_shm(), 32);
    ASSERT_TRUE(k);
    attach_shm(*k, 1, 4, 16, 0);
    EXPECT_EQ(page(*k, 1, 0, 0).chain_objects, c.objects);
    EXPECT_EQ(active(*k, "pte_chain"), c.objects);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// The size must come from the final configuration, whatever the order of the overrides.
// (MODEL BUG found by this test, fixed in c4c1115: pte_addr_bytes was fixed by the
// linux-2.5.26 preset (4) or when the `rmap` override was applied, and later `highpte` /
// `paging` overrides did not change it - 2.6.15 + {rmap=pte_chain, highpte=false} kept
// the u64 and NRPTE 3, and 2.5.26 + {paging=i386-pae, highpte=true} kept 4 B and NRPTE 7.)
//  * linux-2.6.15 + {rmap=pte_chain, highpte=false}: no HIGHPTE -> pte_t * (4 B) ->
//    NRPTE 7 -> 4 mappings in 1 object (as with the reverse order above).
//  * linux-2.5.26 + {paging=i386-pae, highpte=true}: HIGHPTE + HIGHMEM64G -> u64 ->
//    NRPTE 3 -> 2 objects.
TEST(RmapPteChain, PteAddrSizeDoesNotDependOnTheOverrideOrder) {
  {
    auto k = boot("linux-2.6.15", {{"rmap", "pte_chain"}, {"highpte", "false"}}, 0, one_shm(), 32);
    ASSERT_TRUE(k);
    attach_shm(*k, 1, 4, 16, 0);
    EXPECT_EQ(page(*k, 1, 0, 0).chain_objects, 1u) << "NRPTE depends on the override order";
    EXPECT_EQ(k->check_invariants(), "");
  }
  {
    auto k = boot("linux-2.5.26", {{"paging", "i386-pae"}, {"highpte", "true"}}, 0, one_shm(), 32);
    ASSERT_TRUE(k);
    attach_shm(*k, 1, 4, 16, 0);
    EXPECT_EQ(page(*k, 1, 0, 0).chain_objects, 2u) << "PAE + HIGHPTE needs a u64 pte_addr_t";
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// ======================================================================================
// 2. Removal: the chain shrinks to ceil(n / 7) objects, never back to PageDirect by itself.

// 2.6.0 page_remove_rmap(): "moves the head pte of the head member onto the victim pte and
// frees the head member if it became empty" - so n PTEs keep ceil(n / 7) objects while
// n >= 1; at n == 1 the chain stays (1 object, not PageDirect); only page_referenced()
// turns a one-entry chain back into PageDirect (the 2.5.35 changelog: "if a page was
// previously shared then it may become shared again, so leave the pte_chain structure in
// place").
TEST(RmapPteChain, RemovalKeepsCeilNOver7AndNeverCollapses) {
  const std::vector<std::vector<uint32_t>> orders = {
      {1, 2, 3, 4, 5, 6, 7}, {8, 7, 6, 5, 4, 3, 2}, {4, 1, 8, 2, 7, 3, 6}};
  for (const auto& order : orders) {
    auto k = boot("linux-2.5.26", {}, 0, one_shm(), 32);
    ASSERT_TRUE(k);
    attach_shm(*k, 1, 8, 16, 2);
    // 8 PTEs: ceil(8 / 7) = 2 objects (a head with 1 entry, a full one behind it).
    ASSERT_EQ(page(*k, 1, 0, 2).chain_objects, 2u);
    ASSERT_EQ(active(*k, "pte_chain"), 2u);
    std::vector<uint32_t> alive = {1, 2, 3, 4, 5, 6, 7, 8};
    for (uint32_t pid : order) {
      ASSERT_TRUE(k->exit(pid).ok());
      alive.erase(std::find(alive.begin(), alive.end(), pid));
      const uint64_t n = alive.size();
      SCOPED_TRACE("after exit of " + std::to_string(pid) + ", n = " + std::to_string(n));
      // n = 7..2 -> ceil(n / 7) = 1; n = 1 -> the chain stays: still 1 object.
      const uint64_t want = n >= 2 ? ceil_div(n, 7) : 1;
      const page_info pi = page(*k, alive.front(), 0, 2);
      EXPECT_EQ(pi.mapcount, n);
      EXPECT_EQ(pi.chain_objects, want);
      EXPECT_FALSE(pi.direct);
      EXPECT_EQ(active(*k, "pte_chain"), want);
      EXPECT_EQ(k->meminfo_now().reverse_maps, n);
      EXPECT_EQ(k->check_invariants(), "");
    }
    const uint32_t last = alive.front();
    // page_referenced() finds the one PTE and collapses the chain: PageDirect, and the
    // pte_chain cache drops from 1 active object to 0.
    auto ref = k->page_referenced(last, 0, 2 * kPage);
    ASSERT_TRUE(ref.ok());
    EXPECT_EQ(ref.value(), 1u);
    EXPECT_TRUE(page(*k, last, 0, 2).direct);
    EXPECT_EQ(page(*k, last, 0, 2).chain_objects, 0u);
    EXPECT_EQ(active(*k, "pte_chain"), 0u);
    // A second walk changes nothing.
    EXPECT_EQ(k->page_referenced(last, 0, 2 * kPage).value(), 1u);
    EXPECT_TRUE(page(*k, last, 0, 2).direct);
    ASSERT_TRUE(k->exit(last).ok());
    EXPECT_EQ(active(*k, "pte_chain"), 0u);
    EXPECT_EQ(k->meminfo_now().reverse_maps, 0u);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

TEST(RmapPteChain, PageReferencedOnASharedPageChangesNothing) {
  auto k = boot("linux-2.5.26", {}, 0, one_shm(), 32);
  ASSERT_TRUE(k);
  attach_shm(*k, 1, 9, 16, 0);
  // 9 PTEs: ceil(9 / 7) = 2 objects.
  ASSERT_EQ(active(*k, "pte_chain"), 2u);
  auto ref = k->page_referenced(4, 0, 0);
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref.value(), 9u);  // every PTE found
  EXPECT_EQ(page(*k, 4, 0, 0).chain_objects, 2u);
  EXPECT_FALSE(page(*k, 4, 0, 0).direct);
  EXPECT_EQ(active(*k, "pte_chain"), 2u);
  // Down to 2 mappings: 1 object; page_referenced still does not collapse (mapcount 2).
  for (uint32_t pid = 3; pid <= 9; ++pid) ASSERT_TRUE(k->exit(pid).ok());
  EXPECT_EQ(k->page_referenced(1, 0, 0).value(), 2u);
  EXPECT_EQ(page(*k, 1, 0, 0).chain_objects, 1u);
  EXPECT_EQ(active(*k, "pte_chain"), 1u);
  // Without page_referenced, the last exit frees the one-entry chain.
  ASSERT_TRUE(k->exit(2).ok());
  EXPECT_EQ(active(*k, "pte_chain"), 1u);  // n = 1: the chain stays
  ASSERT_TRUE(k->exit(1).ok());
  EXPECT_EQ(active(*k, "pte_chain"), 0u);
  EXPECT_EQ(k->check_invariants(), "");
}

// A one-entry chain that gains a mapping again reuses its head (only the head has free
// slots): n 1 -> 2 needs no new object.
TEST(RmapPteChain, OneEntryChainIsReusedWhenThePageIsSharedAgain) {
  auto k = boot("linux-2.5.26", {}, 0, one_shm(), 32);
  ASSERT_TRUE(k);
  attach_shm(*k, 1, 2, 16, 0);
  ASSERT_TRUE(k->exit(2).ok());
  ASSERT_EQ(page(*k, 1, 0, 0).chain_objects, 1u);  // left in place
  attach_shm(*k, 3, 3, 16, 0);
  EXPECT_EQ(page(*k, 1, 0, 0).mapcount, 2u);
  EXPECT_EQ(page(*k, 1, 0, 0).chain_objects, 1u);
  EXPECT_EQ(active(*k, "pte_chain"), 1u);
  EXPECT_EQ(k->check_invariants(), "");
}

// ======================================================================================
// 3. The 2.5.28 - 2.5.34 generation: one {next, ptep} object per mapping.

// Section 1.5: "N = 1 -> 0 objects; N >= 2 -> N objects" (both the old direct pte and the
// new one are converted into chain objects), and page_remove_rmap turned a chain left
// with one entry back into PageDirect at once.
TEST(RmapPteChain, TwoPointerGenerationOneObjectPerMapping) {
  auto k = boot("linux-2.5.26", {{"pte_chain_slots", "1"}}, 0, one_shm(), 32);
  ASSERT_TRUE(k);
  attach_shm(*k, 1, 1, 16, 1);
  EXPECT_TRUE(page(*k, 1, 0, 1).direct);
  EXPECT_EQ(active(*k, "pte_chain"), 0u);
  attach_shm(*k, 2, 2, 16, 1);
  // 2 mappings -> 2 objects (the direct pte moved into one, the new pte into another).
  EXPECT_EQ(page(*k, 1, 0, 1).chain_objects, 2u);
  EXPECT_EQ(active(*k, "pte_chain"), 2u);
  attach_shm(*k, 3, 7, 16, 1);
  // 7 mappings -> 7 objects.
  EXPECT_EQ(page(*k, 1, 0, 1).chain_objects, 7u);
  EXPECT_EQ(active(*k, "pte_chain"), 7u);
  EXPECT_EQ(k->meminfo_now().reverse_maps, 7u);
  EXPECT_EQ(k->check_invariants(), "");
  // Removal: n objects for n >= 2, then PageDirect as soon as one mapping is left.
  for (uint32_t pid = 7; pid >= 2; --pid) {
    ASSERT_TRUE(k->exit(pid).ok());
    const uint64_t n = pid - 1;
    SCOPED_TRACE("n = " + std::to_string(n));
    EXPECT_EQ(page(*k, 1, 0, 1).mapcount, n);
    EXPECT_EQ(page(*k, 1, 0, 1).chain_objects, n >= 2 ? n : 0);
    EXPECT_EQ(page(*k, 1, 0, 1).direct, n == 1);
    EXPECT_EQ(active(*k, "pte_chain"), n >= 2 ? n : 0);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// ======================================================================================
// 4. Anonymous pages under pte_chain (mainline 2.5.28 - 2.6.6 chained anon pages too).

TEST(RmapPteChain, AnonymousPageSharedByForkThenCow) {
  auto k = boot("linux-2.5.26", {}, 0, {}, 32);
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 4 * kPage)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, kPage, kPage, true).ok());
  // A freshly written anonymous page: mapped once, PageDirect.
  EXPECT_TRUE(page(*k, 1, 0, 0).anon);
  EXPECT_TRUE(page(*k, 1, 0, 0).direct);
  EXPECT_EQ(active(*k, "pte_chain"), 0u);
  ASSERT_TRUE(k->fork(1, 2).ok());
  // copy_page_range -> page_dup_rmap: 2 PTEs -> one chain object, in both processes' view.
  for (uint32_t pid : {1u, 2u}) {
    const page_info pi = page(*k, pid, 0, 0);
    EXPECT_TRUE(pi.anon);
    EXPECT_EQ(pi.mapcount, 2u);
    EXPECT_FALSE(pi.direct);
    EXPECT_EQ(pi.chain_objects, 1u);
  }
  EXPECT_EQ(active(*k, "pte_chain"), 1u);
  EXPECT_EQ(k->meminfo_now().reverse_maps, 2u);
  // The child writes: do_wp_page copies. The child's new page is mapped once (PageDirect);
  // page_remove_rmap leaves the parent's page with its one-entry chain.
  ASSERT_TRUE(k->touch(2, 0, 0, kPage, kPage, true).ok());
  EXPECT_EQ(k->cow_faults(), 1u);
  const page_info child = page(*k, 2, 0, 0);
  EXPECT_TRUE(child.direct);
  EXPECT_EQ(child.mapcount, 1u);
  EXPECT_EQ(child.chain_objects, 0u);
  const page_info parent = page(*k, 1, 0, 0);
  EXPECT_EQ(parent.mapcount, 1u);
  EXPECT_FALSE(parent.direct);
  EXPECT_EQ(parent.chain_objects, 1u);
  EXPECT_EQ(active(*k, "pte_chain"), 1u);
  EXPECT_EQ(k->meminfo_now().reverse_maps, 2u);  // one PTE each
  EXPECT_EQ(k->check_invariants(), "");
  // page_referenced on the parent's page makes it PageDirect again.
  EXPECT_EQ(k->page_referenced(1, 0, 0).value(), 1u);
  EXPECT_TRUE(page(*k, 1, 0, 0).direct);
  EXPECT_EQ(page(*k, 1, 0, 0).chain_objects, 0u);
  EXPECT_EQ(active(*k, "pte_chain"), 0u);
  EXPECT_EQ(k->check_invariants(), "");
}

// ======================================================================================
// 5. anon_vma (2.6.7) and anon_vma_chain (2.6.34+): objects per VMA, never per page.

struct rmap_objects {
  uint64_t vmas = 0, anon_vmas = 0, avcs = 0;
};
rmap_objects objects_of(const sim_kernel& k) {
  rmap_objects o;
  o.vmas = active(k, "vm_area_struct");
  o.anon_vmas = active(k, "anon_vma");
  o.avcs = has_cache(k, "anon_vma_chain") ? active(k, "anon_vma_chain") : 0;
  return o;
}
#define EXPECT_OBJECTS(k, v, a, c)                 \
  do {                                             \
    const rmap_objects o_ = objects_of(k);         \
    EXPECT_EQ(o_.vmas, uint64_t(v)) << "VMAs";     \
    EXPECT_EQ(o_.anon_vmas, uint64_t(a)) << "anon_vmas"; \
    EXPECT_EQ(o_.avcs, uint64_t(c)) << "AVCs";     \
  } while (0)

TEST(RmapAnonVma, NoPerPageCostAndNoPteChainCache) {
  for (const std::string profile : {"linux-2.6.15", "linux-6.18"}) {
    SCOPED_TRACE(profile);
    auto k = boot(profile, {}, 0, one_shm());
    ASSERT_TRUE(k);
    EXPECT_FALSE(has_cache(*k, "pte_chain"));
    EXPECT_EQ(has_cache(*k, "anon_vma_chain"), profile == "linux-6.18");
    // One process, one private anonymous VMA: one page written, then 511 more. The first
    // write (anon_vma_prepare) costs 1 anon_vma (+ 1 AVC on 6.18); the rest nothing.
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 512 * kPage)).ok());
    EXPECT_OBJECTS(*k, 1, 0, 0);  // mmap alone: just the VMA
    ASSERT_TRUE(k->touch(1, 0, 0, kPage, kPage, true).ok());
    const uint64_t avc = profile == "linux-6.18" ? 1 : 0;
    EXPECT_OBJECTS(*k, 1, 1, avc);
    ASSERT_TRUE(k->touch(1, 0, 0, 512 * kPage, kPage, true).ok());
    EXPECT_OBJECTS(*k, 1, 1, avc);
    // A shm page mapped by 100 processes: no rmap object at all (file pages go through
    // i_mmap; the interval-tree node is inside the VMA).
    attach_shm(*k, 2, 101, 16, 0);
    EXPECT_EQ(page(*k, 2, 0, 0).mapcount, 100u);
    EXPECT_EQ(page(*k, 2, 0, 0).chain_objects, 0u);
    EXPECT_OBJECTS(*k, 101, 1, avc);  // 1 + 100 VMAs
    // Mapped: pages with at least one PTE. nr_mapped counted anonymous pages too until
    // 2.6.18 (512 anon + 1 shm page); 6.x NR_FILE_MAPPED counts file and shmem pages only.
    EXPECT_TRUE(k->meminfo_now().has_mapped);
    EXPECT_EQ(k->meminfo_now().mapped, (profile == "linux-6.18" ? 1u : 513u) * kPage);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// Mapped counted from the page tables (rmap.cc scan_mapped_object_pages) stops scanning an
// object once every cached page of it is mapped: later VMAs cannot add to it. The count
// must stay exact on both sides of that point: a segment mapped in full by two processes'
// halves (the larger first, as the scan visits them), a third one reading some of it,
// then the first half's owner exiting, which leaves cached pages no one maps. The second
// object, never mapped in full, is counted alongside. No fault-around, so each read maps
// its one page.
TEST(RmapAnonVma, MappedStaysExactOnceAnObjectIsMappedInFull) {
  auto k = boot("linux-6.18", {{"fault_around_bytes", "0"}}, 0,
                {{"a", object_kind::shm, 64 * kPage}, {"b", object_kind::shm, 64 * kPage}});
  ASSERT_TRUE(k);
  auto attach = [&](uint32_t pid, int32_t object, uint64_t first, uint64_t pages) {
    ASSERT_TRUE(k->spawn(pid).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_object(pid, 0, object, 64 * kPage).shared()).ok());
    ASSERT_TRUE(k->touch(pid, 0, first * kPage, pages * kPage, kPage, false).ok()) << "pid " << pid;
  };
  auto mapped_pages = [&] { return k->meminfo_now().mapped / kPage; };
  attach(1, 0, 0, 32);
  EXPECT_EQ(mapped_pages(), 32u);
  attach(2, 0, 31, 33);  // pages 31..63: object a is now mapped in full
  EXPECT_EQ(mapped_pages(), 64u);
  attach(3, 0, 0, 10);
  attach(4, 1, 5, 7);  // object b: pages 5..11
  EXPECT_EQ(mapped_pages(), 64u + 7);
  EXPECT_EQ(k->check_invariants(), "");
  // Without process 1, object a has pages 0..9 (process 3) and 31..63 (process 2).
  ASSERT_TRUE(k->exit(1).ok());
  EXPECT_EQ(mapped_pages(), 10u + 33 + 7);
  EXPECT_EQ(k->check_invariants(), "");
}

// A fork chain of depth d: process 1 writes its VMA, then i forks i + 1 for i = 1..d.
// anon_vma_chain without reuse (section 2.3): each fork clones the parent's AVCs (one per
// ancestor) and adds its own anon_vma + AVC, so process i (0-based depth i) has i + 1 AVCs:
//   anon_vmas = d + 1, AVCs = sum_{i=0..d} (i + 1) = (d + 1)(d + 2) / 2, VMAs = d + 1.
//   d:      1  2   3   4   5
//   AVCs:   3  6  10  15  21
// With reuse (3.19+) nothing changes while every process lives: each cloned anon_vma
// still has an active VMA (num_active_vmas >= 1), so none qualifies. A child's COW write
// before it forks changes nothing either: its VMA already has its anon_vma from the fork
// (anon_vma_prepare returns at once).
// anon_vma (2.6.7): the whole family shares the one anon_vma; fork only links the child's
// VMA onto its list (the list node is inside the VMA): 1 anon_vma whatever d.
TEST(RmapAnonVma, ForkChainsOfDepth1To5) {
  struct cfg {
    std::string profile;
    overrides ov;
  };
  const cfg cfgs[] = {{"linux-6.18", {}}, {"linux-6.18", {{"anon_vma_reuse", "false"}}}, {"linux-2.6.15", {}}};
  for (const cfg& c : cfgs)
    for (bool cow : {false, true})
      for (uint64_t d = 1; d <= 5; ++d) {
        SCOPED_TRACE(c.profile + (c.ov.empty() ? "" : " no reuse") + (cow ? " cow" : "") + " d " + std::to_string(d));
        auto k = boot(c.profile, c.ov);
        ASSERT_TRUE(k);
        ASSERT_TRUE(k->spawn(1).ok());
        ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 8 * kPage)).ok());
        ASSERT_TRUE(k->touch(1, 0, 0, 8 * kPage, kPage, true).ok());
        for (uint32_t i = 1; i <= d; ++i) {
          ASSERT_TRUE(k->fork(i, i + 1).ok());
          if (cow) {
            ASSERT_TRUE(k->touch(i + 1, 0, 0, kPage, kPage, true).ok());
          }
        }
        // Each child's write hit a page shared with its parent: d COW copies.
        EXPECT_EQ(k->cow_faults(), cow ? d : 0);
        if (c.profile == "linux-6.18")
          EXPECT_OBJECTS(*k, d + 1, d + 1, (d + 1) * (d + 2) / 2);
        else
          EXPECT_OBJECTS(*k, d + 1, 1, 0);
        EXPECT_EQ(active(*k, "mm_struct"), d + 1);
        EXPECT_EQ(k->check_invariants(), "");
      }
}

// The 3.19 reuse rule needs an anon_vma with no active VMA: only once an intermediate
// process has exited. Chain 1 -> 2 -> 3 (anon_vmas A, B, C; AVCs 1 + 2 + 3 = 6).
// Process 2 exits: its AVCs to A and B go; B keeps P3's AVC, so B lives with
// num_active_vmas 0 and num_children 1 (C). Now 3 anon_vmas, 1 + 3 = 4 AVCs, 2 VMAs.
// Process 3 forks 4: anon_vma_clone walks P3's AVCs oldest first (A, B, C):
//  * A: num_children 2 (its self-link and B), active 1 (P1)   -> no
//  * B: num_children 1 (C) < 2, num_active_vmas 0           -> reused: P4's anon_vma = B
// so P4 gets 3 AVCs and no new anon_vma: 3 anon_vmas, 4 + 3 = 7 AVCs, 3 VMAs.
// Without reuse anon_vma_fork allocates D and a fourth AVC: 4 anon_vmas, 4 + 4 = 8 AVCs.
TEST(RmapAnonVma, ReuseAfterTheMiddleProcessExits) {
  for (bool reuse : {true, false}) {
    SCOPED_TRACE(reuse ? "reuse" : "no reuse");
    auto k = boot("linux-6.18", reuse ? overrides{} : overrides{{"anon_vma_reuse", "false"}});
    ASSERT_TRUE(k);
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 4 * kPage)).ok());
    ASSERT_TRUE(k->touch(1, 0, 0, 4 * kPage, kPage, true).ok());
    ASSERT_TRUE(k->fork(1, 2).ok());
    ASSERT_TRUE(k->fork(2, 3).ok());
    EXPECT_OBJECTS(*k, 3, 3, 6);
    ASSERT_TRUE(k->exit(2).ok());
    EXPECT_OBJECTS(*k, 2, 3, 4);
    ASSERT_TRUE(k->fork(3, 4).ok());
    if (reuse)
      EXPECT_OBJECTS(*k, 3, 3, 7);
    else
      EXPECT_OBJECTS(*k, 3, 4, 8);
    EXPECT_EQ(k->check_invariants(), "");
    // The new process's COW copies go to its anon_vma (B or D): the counts do not move.
    ASSERT_TRUE(k->touch(4, 0, 0, 4 * kPage, kPage, true).ok());
    EXPECT_EQ(k->cow_faults(), 4u);
    if (reuse)
      EXPECT_OBJECTS(*k, 3, 3, 7);
    else
      EXPECT_OBJECTS(*k, 3, 4, 8);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// 7a3ef208e662's own case, "prevent endless growth of anon_vma hierarchy": a daemon-like
// chain where every process forks and then exits (P1 stays). Sequence: 1 forks 2; then
// for k = 2..d: k forks k+1, k exits.
// Without reuse every generation adds an anon_vma and every ancestor's anon_vma stays
// linked from the leaf: after depth d >= 2 the leaf has d + 1 AVCs, P1 has 1:
//   anon_vmas = d + 1, AVCs = d + 2.
// With reuse: d = 2 is the same (3 anon_vmas A, B, C; P3 on all three: 3 + 1 = 4 AVCs).
// d = 3: P3 forks P4 while P2 is gone: B has no active VMA and one child -> reused; P3
// exits -> C loses its active VMA. d = 4: P4 (on B) forks P5: A no, B active (P4) no,
// C: num_children 0, num_active 0 -> reused. d = 5 reuses B again, and so on: the
// hierarchy stops at A, B, C: 3 anon_vmas and 3 + 1 = 4 AVCs for every d >= 2.
TEST(RmapAnonVma, ForkAndExitChainStopsGrowingWithReuse) {
  for (bool reuse : {true, false}) {
    auto k = boot("linux-6.18", reuse ? overrides{} : overrides{{"anon_vma_reuse", "false"}});
    ASSERT_TRUE(k);
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 4 * kPage)).ok());
    ASSERT_TRUE(k->touch(1, 0, 0, 4 * kPage, kPage, true).ok());
    ASSERT_TRUE(k->fork(1, 2).ok());
    EXPECT_OBJECTS(*k, 2, 2, 3);  // d = 1: A, B; P1 1 AVC + P2 2 AVCs
    for (uint32_t d = 2; d <= 6; ++d) {
      SCOPED_TRACE(std::string(reuse ? "reuse" : "no reuse") + " d " + std::to_string(d));
      ASSERT_TRUE(k->fork(d, d + 1).ok());
      ASSERT_TRUE(k->exit(d).ok());
      // The survivor writes everything: COW copies land in its own anon_vma.
      ASSERT_TRUE(k->touch(d + 1, 0, 0, 4 * kPage, kPage, true).ok());
      if (reuse)
        EXPECT_OBJECTS(*k, 2, 3, 4);
      else
        EXPECT_OBJECTS(*k, 2, d + 1, d + 2);
      EXPECT_EQ(k->check_invariants(), "");
    }
  }
}

// mprotect of the middle of a written VMA splits it in three: two new VMAs, each cloned
// onto the anon_vma(s) of the original (anon_vma_clone: one AVC per AVC of the source,
// here 1) and no new anon_vma. mprotect back merges them again (vma_merge frees the two
// VMAs and their AVCs).
TEST(RmapAnonVma, MprotectSplitAddsVmasAndAvcsButNoAnonVma) {
  for (const std::string profile : {"linux-2.6.15", "linux-6.18"}) {
    SCOPED_TRACE(profile);
    const bool avc = profile == "linux-6.18";
    auto k = boot(profile);
    ASSERT_TRUE(k);
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 16 * kPage)).ok());
    ASSERT_TRUE(k->touch(1, 0, 0, 16 * kPage, kPage, true).ok());
    EXPECT_OBJECTS(*k, 1, 1, avc ? 1 : 0);
    ASSERT_TRUE(k->mprotect(1, 0, 4 * kPage, 4 * kPage, prot_read).ok());
    EXPECT_OBJECTS(*k, 3, 1, avc ? 3 : 0);  // +2 VMAs, +2 AVCs, +0 anon_vma
    EXPECT_EQ(k->check_invariants(), "");
    ASSERT_TRUE(k->mprotect(1, 0, 4 * kPage, 4 * kPage, prot_read | prot_write).ok());
    EXPECT_OBJECTS(*k, 1, 1, avc ? 1 : 0);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// find_mergeable_anon_vma ("rmap 40"): a VMA's first write borrows the anon_vma of an
// adjacent compatible neighbour. anon_vma_compatible() ignores the access bits
// (VM_READ|VM_WRITE|VM_EXEC), so two anonymous VMAs that vma_merge keeps apart because
// their protections differ still share one anon_vma. A: 8 pages RW, written, then made
// read-only (no split: the whole VMA). B: mapped next (the top-down layout puts it right
// below A; its pgoff = vm_start >> PAGE_SHIFT, contiguous with A's), RW, written. B cannot
// merge with A (prot differs), but borrows A's anon_vma: 1 anon_vma for 2 VMAs; on 6.18
// one AVC each (A's chain is a single AVC, list_is_singular).
TEST(RmapAnonVma, AdjacentVmaBorrowsItsNeighboursAnonVma) {
  for (const std::string profile : {"linux-2.6.15", "linux-6.18"}) {
    SCOPED_TRACE(profile);
    const bool avc = profile == "linux-6.18";
    auto k = boot(profile);
    ASSERT_TRUE(k);
    ASSERT_TRUE(k->spawn(1).ok());
    auto a = k->mmap(ops::mmap_anon(1, 0, 8 * kPage));
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE(k->touch(1, 0, 0, 8 * kPage, kPage, true).ok());
    ASSERT_TRUE(k->mprotect(1, 0, 0, 8 * kPage, prot_read).ok());
    auto b = k->mmap(ops::mmap_anon(1, 1, 8 * kPage));
    ASSERT_TRUE(b.ok());
    ASSERT_EQ(b.value() + 8 * kPage, a.value()) << "B is not adjacent below A";
    EXPECT_OBJECTS(*k, 2, 1, avc ? 1 : 0);
    ASSERT_TRUE(k->touch(1, 1, 0, 8 * kPage, kPage, true).ok());
    EXPECT_OBJECTS(*k, 2, 1, avc ? 2 : 0);
    EXPECT_EQ(k->check_invariants(), "");
    // A try_to_unmap walk of one of B's pages now visits the VMAs of that one anon_vma
    // that cover its pgoff: B only (A's range does not contain B's pgoffs). Under 2.6.7
    // the walk scans the anon_vma's whole list: A as well.
    auto w = k->try_to_unmap(1, 1, 0);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w->vmas_visited, avc ? 1u : 2u);
    EXPECT_EQ(w->pt_walks, 1u);
    EXPECT_EQ(w->unmapped, 1u);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// ======================================================================================
// 6. try_to_unmap: what each scheme does to find the PTEs of one page.

// Ten processes each map 16 pages of a shm segment (map 0) and read page 3 of it, and
// write an 8-page private anonymous mapping (map 1). Process 11 maps 1024 anonymous pages
// it never touches: no PTE page exists under it.
void ten_sharers(sim_kernel& k) {
  for (uint32_t pid = 1; pid <= 10; ++pid) {
    ASSERT_TRUE(k.spawn(pid).ok());
    ASSERT_TRUE(k.mmap(ops::mmap_object(pid, 0, 0, 16 * kPage).shared()).ok());
    ASSERT_TRUE(k.mmap(ops::mmap_anon(pid, 1, 8 * kPage)).ok());
    ASSERT_TRUE(k.touch(pid, 0, 3 * kPage, kPage, kPage, false).ok());
    ASSERT_TRUE(k.touch(pid, 1, 0, 8 * kPage, kPage, true).ok());
  }
  ASSERT_TRUE(k.spawn(11).ok());
  ASSERT_TRUE(k.mmap(ops::mmap_anon(11, 0, 1024 * kPage)).ok());
}

void expect_unmapped_everywhere(sim_kernel& k) {
  const sample s = k.snapshot("");
  for (uint32_t pid = 1; pid <= 10; ++pid) {
    EXPECT_FALSE(page(k, pid, 0, 3).present) << "pid " << pid;
    EXPECT_EQ(proc(s, pid).rss_shmem, 0u) << "pid " << pid;  // 1 -> 0
    EXPECT_EQ(proc(s, pid).rss_anon, 8u) << "pid " << pid;   // untouched
  }
  // 10 processes x 8 anonymous pages remain.
  EXPECT_EQ(k.meminfo_now().reverse_maps, 80u);
  EXPECT_EQ(k.check_invariants(), "");
}

TEST(RmapWalk, ShmPageMappedByTenProcesses) {
  // pte_chain (2.5.26): the chain holds the 10 PTEs in ceil(10 / 7) = 2 objects; each
  // entry costs one ptep_to_mm + find_vma + PTE access (a page-table walk): 10.
  {
    auto k = boot("linux-2.5.26", {}, 0, one_shm(), 32);
    ASSERT_TRUE(k);
    ten_sharers(*k);
    const sample before = k->snapshot("");
    for (uint32_t pid = 1; pid <= 10; ++pid) ASSERT_EQ(proc(before, pid).rss_shmem, 1u);
    ASSERT_EQ(page(*k, 5, 0, 3).mapcount, 10u);
    ASSERT_EQ(active(*k, "pte_chain"), 2u);
    auto w = k->try_to_unmap(5, 0, 3 * kPage);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w->walks, 1u);
    EXPECT_EQ(w->chain_entries, 10u);
    EXPECT_EQ(w->chain_objects, 2u);
    EXPECT_EQ(w->pt_walks, 10u);
    EXPECT_EQ(w->vmas_visited, 0u);
    EXPECT_EQ(w->ptes_scanned, 0u);
    EXPECT_EQ(w->unmapped, 10u);
    EXPECT_EQ(active(*k, "pte_chain"), 0u);  // every chain entry removed
    expect_unmapped_everywhere(*k);
  }
  // Object-based (2.6.15: anon_vma; 6.18: anon_vma_chain): a file page is found through
  // the i_mmap tree: the 10 shm VMAs covering pgoff 3, one page_vma_mapped_walk each.
  for (const std::string profile : {"linux-2.6.15", "linux-6.18"}) {
    SCOPED_TRACE(profile);
    auto k = boot(profile, {}, 0, one_shm());
    ASSERT_TRUE(k);
    ten_sharers(*k);
    ASSERT_EQ(page(*k, 5, 0, 3).mapcount, 10u);
    auto w = k->try_to_unmap(5, 0, 3 * kPage);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w->walks, 1u);
    EXPECT_EQ(w->vmas_visited, 10u);
    EXPECT_EQ(w->pt_walks, 10u);
    EXPECT_EQ(w->chain_entries, 0u);
    EXPECT_EQ(w->chain_objects, 0u);
    EXPECT_EQ(w->ptes_scanned, 0u);
    EXPECT_EQ(w->unmapped, 10u);
    expect_unmapped_everywhere(*k);
  }
  // none (2.4): swap_out() scans every mm, every VMA, every PTE of a present PTE page in
  // the VMA's range. On i386 2-level the legacy layout puts each process's map 0 at
  // TASK_UNMAPPED_BASE = 0x40000000 (16 pages) and map 1 right after it (8 pages), both in
  // the PTE page of [0x40000000, +4 MiB): per process 2 walks (one per VMA) and 16 + 8 =
  // 24 PTEs; process 11's VMA is exactly that 4 MiB range with no PTE page: 0.
  // Total: pt_walks 10 * 2 = 20, ptes_scanned 10 * 24 = 240.
  {
    auto k = boot("linux-2.5.26", {{"rmap", "none"}}, 0, one_shm(), 32);
    ASSERT_TRUE(k);
    EXPECT_FALSE(has_cache(*k, "pte_chain"));
    ten_sharers(*k);
    ASSERT_EQ(k->map_addr(1, 0), 0x40000000u);
    ASSERT_EQ(k->map_addr(1, 1), 0x40010000u);
    ASSERT_EQ(k->map_addr(11, 0), 0x40000000u);
    auto w = k->try_to_unmap(5, 0, 3 * kPage);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w->walks, 1u);
    EXPECT_EQ(w->pt_walks, 20u);
    EXPECT_EQ(w->ptes_scanned, 240u);
    EXPECT_EQ(w->chain_entries, 0u);
    EXPECT_EQ(w->chain_objects, 0u);
    EXPECT_EQ(w->vmas_visited, 0u);
    EXPECT_EQ(w->unmapped, 10u);
    expect_unmapped_everywhere(*k);
    EXPECT_EQ(k->rmap_work_total().ptes_scanned, 240u);
  }
}

// The 2.4 scan (rmap = none) must unmap only the PTEs of this very page, not every PTE
// of the same object: 2.4's try_to_swap_out() works on `page = pte_page(pte)`, the page
// at that entry; here the PTE at address a of VMA v maps object page
// v.pgoff + (a - v.vm_start) / 4096. (MODEL BUG found by the differential test in
// rmap_property_test.cc, fixed concurrently in 5409acc: maps() in src/model/rmap.cc
// compared only the object, so under rmap=none every PTE of the object matched.)
// Two processes each read pages 0..3 of the segment: page 2 is mapped twice.
//  * page_referenced(page 2): 2 PTEs (not all 8 of the object).
//  * try_to_unmap(page 2): unmapped 2; pages 0, 1, 3 still mapped in both (RssShmem 3
//    each, ReverseMaps 2 * 4 - 2 = 6). swap_out's cost: 2 VMAs of 16 pages, each under
//    one present PTE page: 2 walks, 32 PTEs scanned.
TEST(RmapWalk, NoneSchemeScanMatchesOnlyThePage) {
  auto k = boot("linux-2.5.26", {{"rmap", "none"}}, 0, one_shm(), 32);
  ASSERT_TRUE(k);
  for (uint32_t pid = 1; pid <= 2; ++pid) {
    ASSERT_TRUE(k->spawn(pid).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_object(pid, 0, 0, 16 * kPage).shared()).ok());
    ASSERT_TRUE(k->touch(pid, 0, 0, 4 * kPage, kPage, false).ok());
  }
  ASSERT_EQ(page(*k, 1, 0, 2).mapcount, 2u);
  EXPECT_EQ(k->page_referenced(1, 0, 2 * kPage).value(), 2u);
  auto w = k->try_to_unmap(1, 0, 2 * kPage);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->pt_walks, 2u);
  EXPECT_EQ(w->ptes_scanned, 32u);
  EXPECT_EQ(w->unmapped, 2u);
  for (uint32_t pid = 1; pid <= 2; ++pid)
    for (uint64_t pg : {0u, 1u, 3u}) EXPECT_TRUE(page(*k, pid, 0, pg).present) << "pid " << pid << " page " << pg;
  EXPECT_EQ(proc(k->snapshot(""), 1).rss_shmem, 3u);
  EXPECT_EQ(k->meminfo_now().reverse_maps, 6u);
  EXPECT_EQ(k->check_invariants(), "");
  // The other schemes find exactly the two PTEs of page 2.
  auto pc = boot("linux-2.5.26", {}, 0, one_shm(), 32);
  ASSERT_TRUE(pc);
  for (uint32_t pid = 1; pid <= 2; ++pid) {
    ASSERT_TRUE(pc->spawn(pid).ok());
    ASSERT_TRUE(pc->mmap(ops::mmap_object(pid, 0, 0, 16 * kPage).shared()).ok());
    ASSERT_TRUE(pc->touch(pid, 0, 0, 4 * kPage, kPage, false).ok());
  }
  EXPECT_EQ(pc->page_referenced(1, 0, 2 * kPage).value(), 2u);
  EXPECT_EQ(pc->try_to_unmap(1, 0, 2 * kPage)->unmapped, 2u);
  EXPECT_EQ(pc->meminfo_now().reverse_maps, 6u);
  EXPECT_EQ(pc->check_invariants(), "");
}

// Reclaim's rmap walk never unmaps a page of a VM_LOCKED (MAP_LOCKED / mlock) mapping.
// (MODEL BUG found by this test, fixed in 2565cca: src/model/rmap.cc try_to_unmap()
// zapped every PTE the walk found, whatever its VMA's flags, under every scheme.) The
// kernel:
//  * 2.4 mm/vmscan.c try_to_swap_out(): `if ((vma->vm_flags & VM_LOCKED) || ...)
//    { mark_page_accessed(page); return 0; }` - the PTE stays;
//  * 2.6.0 mm/rmap.c try_to_unmap_one(): "The page is mlock()d, we cannot swap it out":
//    `if (vma->vm_flags & VM_LOCKED) { ret = SWAP_FAIL; goto out_unlock; }` (section 1.4:
//    "refuses VM_LOCKED");
//  * 6.x mm/rmap.c try_to_unmap_one(): `if (!(flags & TTU_IGNORE_MLOCK) &&
//    (vma->vm_flags & VM_LOCKED)) { ... mlock_vma_folio(); goto walk_abort; }`.
// op.h says the same of the model: MAP_LOCKED is "populate at mmap time and never
// reclaim". Expected: a page mapped only by a locked VMA keeps its PTE (unmapped 0,
// RssShmem and ReverseMaps unchanged at 4).
TEST(RmapWalk, TryToUnmapLeavesLockedMappings) {
  const std::pair<std::string, overrides> cfgs[] = {{"linux-2.5.26", {}},
                                                    {"linux-2.5.26", {{"rmap", "none"}}},
                                                    {"linux-2.6.15", {}},
                                                    {"linux-6.18", {}}};
  for (const auto& [profile, ov] : cfgs) {
    SCOPED_TRACE(profile + (ov.empty() ? "" : " rmap=none"));
    auto k = boot(profile, ov, 0, one_shm());
    ASSERT_TRUE(k);
    ASSERT_TRUE(k->spawn(1).ok());
    op o = ops::mmap_object(1, 0, 0, 4 * kPage).shared();
    o.locked = true;  // populated by mmap: 4 pages mapped
    ASSERT_TRUE(k->mmap(o).ok());
    ASSERT_EQ(proc(k->snapshot(""), 1).rss_shmem, 4u);
    auto w = k->try_to_unmap(1, 0, 0);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w->unmapped, 0u) << "an mlocked page was unmapped";
    EXPECT_TRUE(page(*k, 1, 0, 0).present);
    EXPECT_EQ(proc(k->snapshot(""), 1).rss_shmem, 4u);
    EXPECT_EQ(k->meminfo_now().reverse_maps, 4u);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// An anonymous page shared down a fork chain. P1 writes pages 0 and 1 of a 2-page VMA and
// forks P2; P2 writes page 1 (COW: its copy belongs to P2's anon_vma B); P2 forks P3, P3
// forks P4. Page 0 is P1's original, mapped by P1..P4. P2's copy of page 1 is mapped by
// P2, P3, P4. P1's page 1 is mapped by P1 alone (it kept the identity it got at fork).
//  * anon_vma_chain (6.18): A's tree holds the VMAs of P1..P4 (everyone cloned P1's AVC),
//    B's tree those of P2..P4. P1's page 1 (anon_vma A): 4 VMAs visited, 4 walks, 1 PTE
//    cleared (3 walks wasted on VMAs whose PTE maps P2's copy). P2's page 1 (B): 3, 3, 3.
//    Page 0 (A): 4, 4, 4.
//  * anon_vma (2.6.15): one anon_vma for the family; every walk scans its whole list (4
//    VMAs, all covering the pgoff): 4/4/1, 4/4/3, 4/4/4.
//  * pte_chain (2.5.26): exactly the PTEs: P1's page 1 kept its one-entry chain after
//    P2's COW (1 entry, 1 object, 1 walk); P2's copy: 3 entries in 1 object; page 0: 4 in 1.
TEST(RmapWalk, AnonymousPageSharedDownAForkChain) {
  struct want {
    uint64_t visited, walks, unmapped, entries, objects;
  };
  struct cfg {
    std::string profile;
    want p1_page1, p2_page1, page0;
  };
  const cfg cfgs[] = {
      {"linux-6.18", {4, 4, 1, 0, 0}, {3, 3, 3, 0, 0}, {4, 4, 4, 0, 0}},
      {"linux-2.6.15", {4, 4, 1, 0, 0}, {4, 4, 3, 0, 0}, {4, 4, 4, 0, 0}},
      {"linux-2.5.26", {0, 1, 1, 1, 1}, {0, 3, 3, 3, 1}, {0, 4, 4, 4, 1}},
  };
  for (const cfg& c : cfgs) {
    SCOPED_TRACE(c.profile);
    auto k = boot(c.profile);
    ASSERT_TRUE(k);
    ASSERT_TRUE(k->spawn(1).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 2 * kPage)).ok());
    ASSERT_TRUE(k->touch(1, 0, 0, 2 * kPage, kPage, true).ok());
    ASSERT_TRUE(k->fork(1, 2).ok());
    ASSERT_TRUE(k->touch(2, 0, kPage, kPage, kPage, true).ok());
    ASSERT_TRUE(k->fork(2, 3).ok());
    ASSERT_TRUE(k->fork(3, 4).ok());
    ASSERT_EQ(page(*k, 1, 0, 0).mapcount, 4u);
    ASSERT_EQ(page(*k, 1, 0, 1).mapcount, 1u);
    ASSERT_EQ(page(*k, 2, 0, 1).mapcount, 3u);
    auto check = [&](uint32_t pid, uint64_t pg, const want& w) {
      SCOPED_TRACE("pid " + std::to_string(pid) + " page " + std::to_string(pg));
      auto r = k->try_to_unmap(pid, 0, pg * kPage);
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(r->walks, 1u);
      EXPECT_EQ(r->vmas_visited, w.visited);
      EXPECT_EQ(r->pt_walks, w.walks);
      EXPECT_EQ(r->unmapped, w.unmapped);
      EXPECT_EQ(r->chain_entries, w.entries);
      EXPECT_EQ(r->chain_objects, w.objects);
      EXPECT_EQ(r->ptes_scanned, 0u);
      EXPECT_EQ(k->check_invariants(), "");
    };
    check(1, 1, c.p1_page1);
    EXPECT_FALSE(page(*k, 1, 0, 1).present);
    EXPECT_TRUE(page(*k, 2, 0, 1).present);
    check(2, 1, c.p2_page1);
    for (uint32_t pid = 2; pid <= 4; ++pid) EXPECT_FALSE(page(*k, pid, 0, 1).present);
    check(3, 0, c.page0);
    // Nothing is mapped any more; every anonymous page is gone (no swap: dropped).
    EXPECT_EQ(k->meminfo_now().reverse_maps, 0u);
    if (c.profile == "linux-2.5.26") {
      EXPECT_EQ(active(*k, "pte_chain"), 0u);
    }
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// ======================================================================================
// 7. i386 low memory: pte_chains exhaust ZONE_NORMAL while highmem is free.
//
// Machine: linux-2.5.26 (i386, HIGHMEM4G), 1 GiB. Zones: DMA 16 MiB = 4,096 pages,
// Normal (896 - 16) MiB = 225,280 pages, HighMem 1 GiB - 896 MiB = 32,768 pages.
// Boot reservations (low memory): mem_map 262,144 * 40 B / 4096 = 2,560 pages + the
// 4 MiB kernel image 1,024 = 3,584; so 229,376 - 3,584 = 225,792 low pages are free.
//
// Setup, to leave exactly 104 low pages free (as if the page cache had long since
// spilled out of a full highmem): P1 writes a 128 MiB anonymous mapping, filling
// HighMem's 32,768 pages; P2..P8 each read a part of a 225,447-page "filler" shm object
// (32,768 pages each, the last 28,839) and exit, so that its page cache (225,447 pages)
// lands in low memory; then P1 exits and HighMem is free again. The filler's radix tree
// (filemap.h; max index 225,446, height 3): ceil(225,447 / 64) = 3,523 bottom nodes,
// (225,446 >> 12) + 1 = 56 in the middle and the root: 3,580 radix_tree_nodes of 260 B,
// 15 per slab page (15 x 260 + L1_CACHE_ALIGN(24 + 15 x 4) = 3,996 <= 4,096), 239 pages
// with 5 free slots. What stays in low memory: the filler's page cache, its tree, and one
// slab page each of mm_struct and vm_area_struct (SLAB keeps empty slabs until reaped):
// 225,792 - 225,447 - 239 - 2 = 104 pages.
// (Peak during P8: 3 slab + P1's PGD + 32 PTE pages (or, with HIGHPTE, 32 anon pages
// pushed out of highmem by the PTE pages) + the filler and its tree + P8's PGD + 29 PTE
// pages = 3 + 1 + 32 + 225,686 + 1 + 29 = 225,752 <= 225,792.)
//
// Workload: processes 1, 2, ... each spawn, map a 1,024-page (4 MiB) shm segment shared
// and write all of it. Per process, in allocation order: an mm_struct (10 per 384-byte
// slab page: 10 * 384 + L1_CACHE_ALIGN(24 + 40) = 3904; the setup's free slab serves
// processes 1..10, new slab pages at 11, 21, 31, 41), the PGD page, a vm_area_struct
// (59 per page: the setup's slab serves 1..59), the PTE page (low memory unless HIGHPTE),
// then one rmap per page. The n-th mapper of a page allocates a pte_chain only when the
// page goes from PageDirect to a chain (n = 2) or its head is full (n - 1 a multiple of
// 7: n = 8, 15, 22, 29, 36, 43, ...); then all 1,024 pages need one each. The j-th such
// process leaves 1,024 j objects in ceil(1,024 j / 113) slab pages: 10, 19, 28, 37, 46,
// 55, 64 for j = 1..7 (each +9 after the first).
//
// Process 1 also adds the segment's pages to the page cache: its tree (max index 1,023,
// height 2) is 16 bottom nodes and a root, 17 radix_tree_nodes: 5 in the filler's last
// slab, 12 in one new low page. So every figure below counts that page.
// Without HIGHPTE, low pages used after process n (PGD + PTE = 2 each, mm_struct slabs
// at 11/21, pte_chain slabs as above, the tree's page):
//   n=2: 5+10=15; n=7: 25; n=8: 27+9=36; n=10: 40; n=11: 43; n=14: 49; n=15: 51+9=60;
//   n=20: 70; n=21: 73; n=22: 75+9=84; n=28: 96; n=29: 98 after its PGD and PTE page,
//   6 free. Its pte_chains first fill the 37th slab (37 * 113 - 4,096 = 85 free slots),
//   then take 6 more pages (6 * 113 = 678 objects): 85 + 678 = 763 pages mapped; the
//   764th page (index 763) finds no low page for a pte_chain slab: ENOMEM, zone Normal.
// With HIGHPTE the PTE pages go to HighMem (32,768 - 1,024 segment pages free), so a
// process costs 1 low page plus slabs:
//   n=2: 3+10=13; n=8: 19+9=28; n=11: 32; n=15: 36+9=45; n=21: 52; n=22: 53+9=62;
//   n=29: 69+9=78; n=31: 81; n=35: 85; n=36: 86+9=95; n=41: 101; n=42: 102;
//   n=43 (the 7th chain-allocating process): 103 after its PGD, 1 free. The six before
//   it left 6 * 1,024 = 6,144 objects in 55 slabs, whose last has 55 * 113 - 6,144 = 71
//   free slots; then 1 more slab page (113 objects): 71 + 113 = 184 pages mapped; page
//   184 fails.
// So 42 processes fit with HIGHPTE against 28 without.
struct lowmem_result {
  uint32_t failed_pid = 0;  // 0: every process ran
  uint64_t failed_page = 0;
  std::string error;
  uint64_t low_free_after_setup = 0, high_free_after_setup = 0;
};

constexpr uint64_t kFillerPages = 225447;
constexpr uint64_t kSegmentPages = 1024;

lowmem_result run_lowmem(const std::string& profile, const overrides& ov, uint32_t procs) {
  lowmem_result res;
  const std::vector<object_decl> objs = {{"filler", object_kind::shm, kFillerPages * kPage},
                                         {"sga", object_kind::shm, kSegmentPages * kPage}};
  auto k = boot(profile, ov, 1 * GiB, objs, 32);
  EXPECT_TRUE(k);
  if (!k) return res;
  // Setup (pids 1000+).
  EXPECT_TRUE(k->spawn(1000).ok());
  EXPECT_TRUE(k->mmap(ops::mmap_anon(1000, 0, 32768 * kPage)).ok());
  EXPECT_TRUE(k->touch(1000, 0, 0, 32768 * kPage, kPage, true).ok());
  for (uint64_t off = 0, pid = 1001; off < kFillerPages; off += 32768, ++pid) {
    const uint64_t n = std::min<uint64_t>(32768, kFillerPages - off);
    op o = ops::mmap_object(uint32_t(pid), 0, 0, n * kPage).shared();
    o.obj_off = off * kPage;
    EXPECT_TRUE(k->spawn(uint32_t(pid)).ok());
    EXPECT_TRUE(k->mmap(o).ok());
    status s = k->touch(uint32_t(pid), 0, 0, n * kPage, kPage, true);
    EXPECT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(k->exit(uint32_t(pid)).ok());
  }
  EXPECT_TRUE(k->exit(1000).ok());
  EXPECT_EQ(k->check_invariants(), "");
  res.low_free_after_setup = k->meminfo_now().low_free / kPage;
  res.high_free_after_setup = k->meminfo_now().high_free / kPage;
  for (uint32_t pid = 1; pid <= procs; ++pid) {
    status s = k->spawn(pid);
    if (s.ok()) {
      auto m = k->mmap(ops::mmap_object(pid, 0, 1, kSegmentPages * kPage).shared());
      s = m.ok() ? k->touch(pid, 0, 0, kSegmentPages * kPage, kPage, true) : m.error();
    }
    if (!s.ok()) {
      res.failed_pid = pid;
      res.error = s.message();
      // The kernel leaves the pages mapped up to the failing one.
      const sample smp = k->snapshot("");
      for (const auto& p : smp.procs)
        if (p.pid == pid) res.failed_page = p.rss_shmem;
      break;
    }
  }
  EXPECT_EQ(k->check_invariants(), "");
  return res;
}

TEST(RmapLowmem, PteChainsExhaustZoneNormalOn2526) {
  const lowmem_result plain = run_lowmem("linux-2.5.26", {}, 60);
  EXPECT_EQ(plain.low_free_after_setup, 104u);
  EXPECT_EQ(plain.high_free_after_setup, 32768u);
  EXPECT_EQ(plain.failed_pid, 29u);
  EXPECT_EQ(plain.failed_page, 763u);
  EXPECT_NE(plain.error.find("ENOMEM"), std::string::npos) << plain.error;
  EXPECT_NE(plain.error.find("pte_chain"), std::string::npos) << plain.error;
  EXPECT_NE(plain.error.find("zone Normal"), std::string::npos) << plain.error;
  // Highmem is nearly all free: 32,768 - 1,024 segment pages (the PTE pages are low).
  EXPECT_NE(plain.error.find("HighMem has 31744 pages free"), std::string::npos) << plain.error;

  const lowmem_result highpte = run_lowmem("linux-2.5.26", {{"highpte", "true"}}, 60);
  EXPECT_EQ(highpte.low_free_after_setup, 104u);
  EXPECT_EQ(highpte.high_free_after_setup, 32768u);
  EXPECT_EQ(highpte.failed_pid, 43u);
  EXPECT_EQ(highpte.failed_page, 184u);
  EXPECT_NE(highpte.error.find("pte_chain"), std::string::npos) << highpte.error;
  EXPECT_NE(highpte.error.find("zone Normal"), std::string::npos) << highpte.error;
  // 32,768 - 1,024 segment pages - 43 PTE pages.
  EXPECT_NE(highpte.error.find("HighMem has 31701 pages free"), std::string::npos) << highpte.error;
  EXPECT_GT(highpte.failed_pid, plain.failed_pid);
}

// The same workload on 2.6.15 (object-based rmap, PAE, HIGHPTE): no per-mapping rmap
// memory, so 60 processes fit. Its struct page is 32 B: mem_map 262,144 * 32 / 4096 =
// 2,048 pages, so 226,304 low pages are free at boot, and the filler leaves more than
// 2.5.26's 104. Per process it needs an mm_struct, a 32-byte PGD, 3 preallocated PMD
// pages and a vm_area_struct in low memory (the 2 PTE pages are in highmem): about 3.1
// pages, 60 * 3.1 = 186 < the ~600 left.
TEST(RmapLowmem, ObjectBasedRmapFitsTheSameWorkload) {
  const lowmem_result r = run_lowmem("linux-2.6.15", {}, 60);
  EXPECT_EQ(r.failed_pid, 0u) << r.error;
  EXPECT_EQ(r.error, "");
}

}  // namespace
}  // namespace vmlab
