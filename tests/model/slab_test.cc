// The slab allocator model: geometry of both allocators against kernel figures (seed 000,
// 2.6.0-era slabinfo posts, this host's 6.18 slabinfo), the allocation order that decides
// fragmentation, the per-CPU one-deep cache, maxima, shrink and the slabinfo formats.
#include <gtest/gtest.h>

#include <vector>

#include "model/slab.h"

namespace vmlab {
namespace {

constexpr slab_flags kHw{.hwcache_align = true};
constexpr slab_geometry kPteChain{32, 113, 1};

// ---- geometry: SLAB 2.5 --------------------------------------------------------------

TEST(SlabGeometry, Seed000PteChainIs113PerPage) {
  // 2.5 on a Pentium III: sizeof(struct pte_chain) == L1_CACHE_BYTES == 32, created
  // SLAB_MUST_HWCACHE_ALIGN. 113 * 32 + L1_CACHE_ALIGN(24 + 113 * 4) = 3616 + 480 = 4096.
  EXPECT_EQ(calculate_geometry(slab_policy_i386_2_5(32), 32, kHw), kPteChain);
  // Seed 000: 3,411,018 active pte_chains over 30,186 slabs: every slab full.
  EXPECT_EQ(30186u * 113u, 3411018u);
}

TEST(SlabGeometry, PteChainOnOtherCacheLines) {
  // 128-byte chains (Pentium 4): 30 * 128 + L1_CACHE_ALIGN(24 + 120) = 3840 + 256.
  EXPECT_EQ(calculate_geometry(slab_policy_i386_2_5(128), 128, kHw), (slab_geometry{128, 30, 1}));
  // 64-byte chains (Athlon): 60 * 64 + L1_CACHE_ALIGN(24 + 240) = 3840 + 320 = 4160 > 4096.
  EXPECT_EQ(calculate_geometry(slab_policy_i386_2_5(64), 64, kHw), (slab_geometry{64, 59, 1}));
}

TEST(SlabGeometry, HwcacheAlignRoundsUpAndHalvesForSmallObjects) {
  const slab_policy p = slab_policy_i386_2_5(32);
  EXPECT_EQ(calculate_geometry(p, 20, kHw).objsize, 32u);
  EXPECT_EQ(calculate_geometry(p, 12, kHw).objsize, 16u);  // two fit in a line: align 16
  EXPECT_EQ(calculate_geometry(p, 20, {}).objsize, 20u);   // word alignment only
  EXPECT_EQ(calculate_geometry(p, 18, {}).objsize, 20u);
}

TEST(SlabGeometry, LargeObjectsGoOffSlabAndToHigherOrders) {
  const slab_policy p = slab_policy_i386_2_5(32);
  // >= PAGE_SIZE/8: management off slab, so two 2048-byte objects fill a page exactly.
  EXPECT_EQ(calculate_geometry(p, 2048, {}), (slab_geometry{2048, 2, 1}));
  EXPECT_EQ(calculate_geometry(p, 512, {}), (slab_geometry{512, 8, 1}));
  // 5000 bytes: order 1 leaves 3192 of 8192 (> 1/8), order 2 holds 3 leaving 1384.
  EXPECT_EQ(calculate_geometry(p, 5000, {}), (slab_geometry{5000, 3, 4}));
  // With slab_break_gfp_order 1 (machines of 32 MiB or less) order 1 is accepted.
  slab_policy small = p;
  small.break_gfp_order = 1;
  EXPECT_EQ(calculate_geometry(small, 5000, {}), (slab_geometry{5000, 1, 2}));
}

TEST(SlabGeometry, Linux26SlabinfoPostsNeedATwoByteBufctl) {
  // Rows of "slabinfo - version: 2.0" posted to LKML (2.6.0 .. 2.6.9): objsize -> objperslab.
  slab_policy i386 = slab_policy_i386_2_5(32);
  i386.bufctl_size = 2;
  const std::vector<std::pair<uint32_t, uint32_t>> rows = {
      {16, 226}, {32, 119}, {96, 41}, {160, 25}, {256, 15}, {320, 12}, {352, 11}, {384, 10}, {416, 9}, {2048, 2}};
  for (auto [size, num] : rows) EXPECT_EQ(calculate_geometry(i386, size, {}).objperslab, num) << size;
  // The same rows with 2.5's 4-byte bufctl disagree (16-byte objects: 202, not 226).
  EXPECT_EQ(calculate_geometry(slab_policy_i386_2_5(32), 16, {}).objperslab, 202u);
  // x86-64 (struct slab 40 bytes, L1 64): xfrm6_tunnel_spi 64 -> 61, ip6_dst_cache 320 -> 12.
  slab_policy x86_64 = i386;
  x86_64.word_size = 8;
  x86_64.cache_line = 64;
  EXPECT_EQ(calculate_geometry(x86_64, 64, {}).objperslab, 61u);
  EXPECT_EQ(calculate_geometry(x86_64, 320, {}).objperslab, 12u);
  EXPECT_EQ(calculate_geometry(x86_64, 256, {}).objperslab, 15u);
}

// ---- geometry: SLUB 6.x --------------------------------------------------------------

TEST(SlabGeometry, SlubRmapCachesOnTwoCpus) {
  // Kernel 6.18.44 x86-64, 2 CPUs (min_objects 12): /proc/slabinfo and /sys/kernel/slab.
  const slab_policy p = slub_policy_x86_64(2);
  const slab_flags vma{.hwcache_align = true, .typesafe_by_rcu = true, .rcu_freeptr_offset = true};
  const slab_flags anon_vma{.ctor = true, .typesafe_by_rcu = true};
  EXPECT_EQ(calculate_geometry(p, 192, vma), (slab_geometry{192, 21, 1}));
  EXPECT_EQ(calculate_geometry(p, 96, anon_vma), (slab_geometry{104, 39, 1}));  // free pointer outside
  EXPECT_EQ(calculate_geometry(p, 64, {}), (slab_geometry{64, 64, 1}));         // anon_vma_chain
  EXPECT_EQ(calculate_geometry(p, 1568, kHw), (slab_geometry{1600, 20, 8}));    // mm_struct
}

TEST(SlabGeometry, SlubKmallocCachesOnTwoCpus) {
  const slab_policy p = slub_policy_x86_64(2);
  const slab_flags km{.kmalloc = true};
  const std::vector<slab_geometry> host = {{8, 512, 1},    {16, 256, 1},   {32, 128, 1},  {64, 64, 1},
                                           {96, 42, 1},    {128, 32, 1},   {192, 21, 1},  {256, 16, 1},
                                           {512, 16, 2},   {1024, 16, 4},  {2048, 16, 8}, {4096, 8, 8},
                                           {8192, 4, 8}};
  for (const slab_geometry& g : host) EXPECT_EQ(calculate_geometry(p, g.objsize, km), g) << g.objsize;
}

TEST(SlabGeometry, SlubMinObjectsGrowWithCpus) {
  // 64 CPUs: min_objects 4 * (fls(64) + 1) = 32; 32 * 192 = 6144 -> order 1, 42 objects
  // leaving 128 bytes (<= 1/16 of 8192).
  EXPECT_EQ(calculate_geometry(slub_policy_x86_64(64), 192, kHw), (slab_geometry{192, 42, 2}));
  // Order is capped at slub_max_order 3 when min_objects would need more.
  EXPECT_EQ(calculate_geometry(slub_policy_x86_64(64), 1600, {}), (slab_geometry{1600, 20, 8}));
}

TEST(SlabGeometry, DefaultTunablesFollowEnableCpucache) {
  slab_policy p = slab_policy_i386_2_5(32);
  EXPECT_EQ(default_tunables(p, 32).limit, 120u);
  EXPECT_EQ(default_tunables(p, 32).batchcount, 60u);
  EXPECT_EQ(default_tunables(p, 32).sharedfactor, 8u);
  EXPECT_EQ(default_tunables(p, 384).limit, 54u);
  EXPECT_EQ(default_tunables(p, 2048).limit, 24u);
  EXPECT_EQ(default_tunables(p, 8192).limit, 8u);
  EXPECT_EQ(default_tunables(p, 8192).sharedfactor, 0u);
  p.smp = false;
  EXPECT_EQ(default_tunables(p, 32).sharedfactor, 0u);
  EXPECT_EQ(default_tunables(slub_policy_x86_64(2), 32).limit, 0u);
}

// ---- kmem_cache ----------------------------------------------------------------------

std::vector<slab_object> alloc_n(kmem_cache& c, size_t n) {
  std::vector<slab_object> v;
  for (size_t i = 0; i < n; ++i) v.push_back(*c.alloc());
  return v;
}

TEST(SlabCache, FreeEveryOtherKeepsSlabsAndRefillsWithoutGrowing) {
  kmem_cache c("pte_chain", kPteChain);
  std::vector<slab_object> objs = alloc_n(c, 1000);
  EXPECT_EQ(c.counters().num_slabs, 9u);  // ceil(1000 / 113)
  EXPECT_EQ(c.counters().num_objs, 9u * 113);
  EXPECT_EQ(c.full_slabs(), 8u);
  EXPECT_EQ(c.partial_slabs(), 1u);
  for (size_t i = 0; i < objs.size(); i += 2) ASSERT_TRUE(c.free(objs[i]));
  EXPECT_EQ(c.counters().active_objs, 500u);
  EXPECT_EQ(c.counters().num_slabs, 9u);
  EXPECT_EQ(c.counters().active_slabs, 9u);
  EXPECT_EQ(c.partial_slabs(), 9u);
  EXPECT_EQ(c.pages(), 9u);
  alloc_n(c, 500);
  EXPECT_EQ(c.counters().active_objs, 1000u);
  EXPECT_EQ(c.counters().num_slabs, 9u);
  EXPECT_EQ(c.check_invariants(), "");
}

TEST(SlabCache, FreedObjectIsReusedFirst) {
  kmem_cache c("x", kPteChain);
  const std::vector<slab_object> o = alloc_n(c, 3);
  EXPECT_EQ(o[1], (slab_object{0, 1}));
  ASSERT_TRUE(c.free(o[1]));
  EXPECT_EQ(*c.alloc(), o[1]);
  ASSERT_TRUE(c.free(o[0]));
  ASSERT_TRUE(c.free(o[2]));
  EXPECT_EQ(*c.alloc(), o[2]);  // LIFO
  EXPECT_EQ(*c.alloc(), o[0]);
  EXPECT_EQ(*c.alloc(), (slab_object{0, 3}));
}

TEST(SlabCache, AllocatesFromTheSlabThatBecamePartialLast) {
  kmem_cache c("x", kPteChain);
  const std::vector<slab_object> o = alloc_n(c, 3 * 113);  // three full slabs
  ASSERT_TRUE(c.free(o[5]));        // slab 0 becomes partial
  ASSERT_TRUE(c.free(o[113 + 7]));  // then slab 1: the head of the partial list
  ASSERT_TRUE(c.free(o[6]));        // slab 0 stays partial and does not move
  EXPECT_EQ(*c.alloc(), o[113 + 7]);
  EXPECT_EQ(*c.alloc(), o[6]);  // slab 1 is full again; slab 0's LIFO top
  EXPECT_EQ(*c.alloc(), o[5]);
  EXPECT_EQ(c.partial_slabs(), 0u);
  EXPECT_EQ(c.check_invariants(), "");
}

TEST(SlabCache, EmptiedSlabIsKeptAndReusedBeforeGrowing) {
  kmem_cache c("x", kPteChain);
  const std::vector<slab_object> o = alloc_n(c, 3 * 113);
  for (size_t i = 113; i < 2 * 113; ++i) ASSERT_TRUE(c.free(o[i]));
  EXPECT_EQ(c.free_slabs(), 1u);
  EXPECT_EQ(c.counters().num_slabs, 3u);
  EXPECT_EQ(c.counters().active_slabs, 2u);
  EXPECT_EQ(c.pages(), 3u);
  const slab_object again = *c.alloc();
  EXPECT_EQ(again.slab, 1u);
  EXPECT_EQ(c.counters().num_slabs, 3u);
  EXPECT_EQ(c.check_invariants(), "");
}

TEST(SlabCache, ShrinkReleasesOnlyFreeSlabs) {
  kmem_cache c("x", kPteChain);
  const std::vector<slab_object> o = alloc_n(c, 3 * 113);
  for (size_t i = 0; i < 113; ++i) ASSERT_TRUE(c.free(o[i]));
  ASSERT_TRUE(c.free(o[113]));  // slab 1 partial
  EXPECT_EQ(c.shrink(), 1u);
  EXPECT_EQ(c.counters().num_slabs, 2u);
  EXPECT_EQ(c.counters().num_objs, 226u);
  EXPECT_EQ(c.pages(), 2u);
  EXPECT_EQ(c.maxima().num_slabs, 3u);
  EXPECT_EQ(c.shrink(), 0u);
  EXPECT_FALSE(c.free(o[1]));  // its slab is gone
  alloc_n(c, 113);             // fills slab 1, then a new slab in the released id
  EXPECT_EQ(c.counters().num_slabs, 3u);
  EXPECT_EQ(c.check_invariants(), "");
}

TEST(SlabCache, PerCpuOneDeepCache) {
  kmem_cache c("pte_chain", kPteChain, {.percpu_one_deep = true});
  const std::vector<slab_object> o = alloc_n(c, 3);
  ASSERT_TRUE(c.free(o[0]));  // kept by the CPU: still allocated as far as slab knows
  EXPECT_EQ(c.counters().active_objs, 3u);
  ASSERT_TRUE(c.free(o[1]));  // o[1] takes the slot, o[0] goes back to the slab
  EXPECT_EQ(c.counters().active_objs, 2u);
  EXPECT_FALSE(c.free(o[1]));  // already free (in the CPU slot)
  EXPECT_EQ(*c.alloc(), o[1]);
  EXPECT_EQ(*c.alloc(), o[0]);
  EXPECT_EQ(c.counters().active_objs, 3u);
  EXPECT_EQ(c.check_invariants(), "");
}

TEST(SlabCache, RejectsBadFreesAndRefusedPages) {
  uint32_t granted = 0;
  kmem_cache c("x", kPteChain, {.charge_pages = [&](uint32_t n) {
                                  if (granted >= 1) return false;
                                  granted += n;
                                  return true;
                                }});
  const std::vector<slab_object> o = alloc_n(c, 113);
  EXPECT_FALSE(c.alloc().has_value());  // a second slab was refused
  ASSERT_TRUE(c.free(o[0]));
  EXPECT_FALSE(c.free(o[0]));
  EXPECT_FALSE(c.free(slab_object{0, 113}));
  EXPECT_FALSE(c.free(slab_object{7, 0}));
  EXPECT_TRUE(c.alloc().has_value());
  EXPECT_EQ(c.check_invariants(), "");
}

TEST(SlabCache, MaximaOutliveFrees) {
  kmem_cache c("x", kPteChain);
  std::vector<slab_object> o = alloc_n(c, 300);
  for (const slab_object& x : o) ASSERT_TRUE(c.free(x));
  c.shrink();
  EXPECT_EQ(c.counters().active_objs, 0u);
  EXPECT_EQ(c.counters().num_slabs, 0u);
  EXPECT_EQ(c.maxima().active_objs, 300u);
  EXPECT_EQ(c.maxima().num_objs, 339u);
  EXPECT_EQ(c.maxima().active_slabs, 3u);
  EXPECT_EQ(c.maxima().num_slabs, 3u);
  EXPECT_EQ(c.max_pages(), 3u);
  EXPECT_EQ(c.check_invariants(), "");
}

TEST(SlabCache, Seed000PteChainsFill30186Slabs) {
  kmem_cache c("pte_chain", kPteChain);
  for (uint32_t i = 0; i < 3411018; ++i) ASSERT_TRUE(c.alloc().has_value());
  EXPECT_EQ(c.counters().num_slabs, 30186u);
  EXPECT_EQ(c.counters().num_objs, 3411018u);
  EXPECT_EQ(c.pages() * 4096 / (1 << 20), 117u);  // 117.9 MiB: the seed's "118 MB"
}

// ---- slabinfo ------------------------------------------------------------------------

TEST(Slabinfo, Headers) {
  EXPECT_EQ(slabinfo_header(slabinfo_format::v2_1),
            "slabinfo - version: 2.1\n"
            "# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables "
            "<limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\n");
  EXPECT_EQ(slabinfo_header(slabinfo_format::v2_0),
            "slabinfo - version: 2.0\n"
            "# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables "
            "<batchcount> <limit> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\n");
}

TEST(Slabinfo, Version20RowsAsPostedFromA26Kernel) {
  // i386 UP 2.6 rows from an LKML post ("slabinfo - version: 2.0").
  slab_policy p = slab_policy_i386_2_5(32);
  p.bufctl_size = 2;
  p.smp = false;
  kmem_cache tb("tcp_bind_bucket", calculate_geometry(p, 16, {}), {.tunables = default_tunables(p, 16)});
  alloc_n(tb, 19);
  EXPECT_EQ(slabinfo_row(to_slab_row(tb), slabinfo_format::v2_0),
            "tcp_bind_bucket       19    226     16  226    1 : tunables  120   60    0 : slabdata      1      1      0");
  kmem_cache us("unix_sock", calculate_geometry(p, 384, {}), {.tunables = default_tunables(p, 384)});
  std::vector<slab_object> o = alloc_n(us, 170);
  for (size_t i = 0; i < 6; ++i) ASSERT_TRUE(us.free(o[i * 10]));
  EXPECT_EQ(slabinfo_row(to_slab_row(us), slabinfo_format::v2_0),
            "unix_sock            164    170    384   10    1 : tunables   54   27    0 : slabdata     17     17      0");
}

TEST(Slabinfo, Version21RowsAsThisHostPrintsThem) {
  const slab_policy p = slub_policy_x86_64(2);
  kmem_cache k8("kmalloc-8", calculate_geometry(p, 8, {.kmalloc = true}), {.allocator = slab_allocator::slub});
  alloc_n(k8, 1536);
  EXPECT_EQ(slabinfo_row(to_slab_row(k8), slabinfo_format::v2_1),
            "kmalloc-8           1536   1536      8  512    1 : tunables    0    0    0 : slabdata      3      3      0");
  // SLUB prints num_slabs as active_slabs, even with empty slabs kept.
  kmem_cache avc("anon_vma_chain", calculate_geometry(p, 64, {}), {.allocator = slab_allocator::slub});
  std::vector<slab_object> o = alloc_n(avc, 704);
  for (size_t i = 376; i < 704; ++i) ASSERT_TRUE(avc.free(o[i]));
  EXPECT_EQ(slabinfo_row(to_slab_row(avc), slabinfo_format::v2_1),
            "anon_vma_chain       376    704     64   64    1 : tunables    0    0    0 : slabdata     11     11      0");
}

TEST(Slabinfo, MaximaRowAndLongNames) {
  kmem_cache c("a_cache_name_longer_than_17", kPteChain);
  std::vector<slab_object> o = alloc_n(c, 200);
  for (const slab_object& x : o) ASSERT_TRUE(c.free(x));
  EXPECT_EQ(slabinfo_row(to_slab_row(c, true), slabinfo_format::v2_1),
            "a_cache_name_longer_than_17    200    226     32  113    1 : tunables    0    0    0 : slabdata      2      "
            "2      0");
  EXPECT_EQ(slabinfo_row(to_slab_row(c), slabinfo_format::v2_1),
            "a_cache_name_longer_than_17      0    226     32  113    1 : tunables    0    0    0 : slabdata      0      "
            "2      0");
}

}  // namespace
}  // namespace vmlab
