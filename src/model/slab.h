// The slab allocator: how many objects of a cache fit in how many pages, and which slab
// an allocation or a free lands in, which is what decides slab fragmentation.
//
// Kernel: two allocators, chosen by a value (slab_policy::allocator), never by a version if:
//  * SLAB, Linux 2.5/2.6 mm/slab.c: kmem_cache_create() (size and alignment),
//    cache_estimate() (objects per slab with on-slab management), the gfporder loop, and
//    the slabs_partial / slabs_full / slabs_free lists of kmem_cache_alloc_one() and
//    kmem_cache_free_one() (2.4/2.5 list discipline).
//  * SLUB, 6.x mm/slub.c: calculate_alignment(), calculate_sizes() (free pointer),
//    calculate_order() / calc_slab_order() in the 6.8+ form (waste fraction 1/16, 1/8,
//    1/4, 1/2 over min_order .. slub_max_order).
// /proc/slabinfo: version 2.0 (2.6.0-test1 .. 2.6.9 SLAB; its header names the tunables
// <batchcount> <limit> but the row prints limit first) and version 2.1 (2.6.10+, SLUB).
//
// Simplifications (each changes what the model can say, so each is named):
//  * One allocation order for both allocators, the 2.5 one: take the head of the partial
//    list (the slab that most recently became partial), else the head of the free list
//    (the slab that most recently became free), else grow. Within a slab the free
//    objects are a LIFO stack (the bufctl chain), so a freed object is reused first.
//    SLUB's per-CPU slab and SLAB 2.6's per-CPU array caches (up to `limit` objects per
//    CPU, counted active in slabinfo) are not modelled; the only per-CPU cache is the
//    optional one-deep one that 2.5.55+ rmap.c kept for pte_chains (local_pte_chain).
//  * Free slabs are kept until shrink(): 2.5 reaped them lazily (kmem_cache_reap under
//    memory pressure), so a drop in active objects does not give pages back by itself.
//  * No colouring (it moves objects within a slab, it does not change their number), no
//    debug layouts (red zones, poisoning, stored users), no offslab_limit check (with the
//    general caches up to 128 KiB it never binds), no NUMA nodes, one CPU.
//  * The off-slab management object of a large SLAB cache is itself kmalloc'ed; its bytes
//    belong to another cache and are not counted here.
//
// Invariants (check_invariants() verifies them):
//  1. every live slab is on exactly one list: full iff inuse == objperslab, free iff
//     inuse == 0, partial otherwise;
//  2. active_objs == sum of inuse over live slabs (the per-CPU object counts: to the slab
//     it is allocated); num_objs == num_slabs * objperslab;
//  3. active_slabs == full + partial == num_slabs - free slabs;
//  4. pages() == num_slabs * pagesperslab;
//  5. every maximum is >= its current value;
//  6. a slab's free chain holds exactly objperslab - inuse objects, none of them allocated.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vmlab/run_result.h"

namespace vmlab {

enum class slab_allocator : uint8_t {
  slab_2_5,  // mm/slab.c, Linux 2.5 / 2.6
  slub,      // mm/slub.c, Linux 6.x
};

// The machine and allocator knobs that decide the geometry.
struct slab_policy {
  slab_allocator allocator = slab_allocator::slub;
  uint32_t page_size = 4096;
  // L1_CACHE_BYTES (SLAB) or cache_line_size() (SLUB): the SLAB_HWCACHE_ALIGN unit.
  uint32_t cache_line = 64;
  uint32_t word_size = 8;  // sizeof(void *) == BYTES_PER_WORD
  // SLAB: sizeof(kmem_bufctl_t). 4 on 2.5 (unsigned int in mm/slab.c; seed 000's 113
  // pte_chains per slab needs 4); the 2.6.0 .. 2.6.9 slabinfo samples on i386 and
  // x86-64 (16-byte objects 226 per page, 64-byte ones 61) only fit 2 (unsigned short).
  uint32_t bufctl_size = 4;
  // SLAB: slab_break_gfp_order, BREAK_GFP_ORDER_HI (2) on machines above 32 MiB, else 1.
  uint32_t break_gfp_order = 2;
  uint32_t max_gfp_order = 5;  // SLAB: MAX_GFP_ORDER
  bool smp = true;             // SLAB: the shared array (sharedfactor 8) exists only on SMP
  // SLAB: the 2.4 enable_cpucache() (2.5.26 still had it): limit 252 / 124 / 60 by size,
  // none above a page, no shared array.
  bool cpucache_2_4 = false;
  // SLUB: num_present_cpus() and the slub_min_objects= / slub_max_order= parameters.
  uint32_t nr_cpus = 1;
  uint32_t min_objects = 0;  // 0: 4 * (fls(nr_cpus) + 1)
  uint32_t max_order = 3;    // PAGE_ALLOC_COSTLY_ORDER
};

// i386 Linux 2.5 SLAB with the given L1 line (32 on a Pentium III, seed 000's box).
slab_policy slab_policy_i386_2_5(uint32_t l1_cache_bytes = 32);
// x86-64 Linux 6.x SLUB on a machine with nr_cpus present CPUs.
slab_policy slub_policy_x86_64(uint32_t nr_cpus);

// What kmem_cache_create() was told about the cache.
struct slab_flags {
  // SLAB_HWCACHE_ALIGN; for the 2.5 geometry SLAB_MUST_HWCACHE_ALIGN is the same thing
  // (they differ only in whether debugging may drop the alignment).
  bool hwcache_align = false;
  bool ctor = false;             // a constructor: SLUB keeps the free pointer outside
  bool typesafe_by_rcu = false;  // SLAB_TYPESAFE_BY_RCU: likewise, unless ...
  bool rcu_freeptr_offset = false;  // ... the cache gave a freeptr_offset (6.12+)
  // A kmalloc-N cache: aligned to the largest power of two dividing N (create_boot_cache).
  bool kmalloc = false;
  uint32_t align = 0;  // the align argument of kmem_cache_create (0: none)
};

struct slab_geometry {
  uint32_t objsize = 0;  // the slot size, as slabinfo prints it
  uint32_t objperslab = 0;
  uint32_t pagesperslab = 0;
  bool operator==(const slab_geometry&) const = default;
};

// The geometry the policy's allocator gives an object of object_size bytes (sizeof of the
// struct) created with the given flags. REQUIRES: object_size > 0, and it fits the
// allocator's largest slab order.
slab_geometry calculate_geometry(const slab_policy& p, uint32_t object_size, const slab_flags& f);

// /proc/slabinfo's tunables columns (the SLAB per-CPU array caches; zero for SLUB).
struct slab_tunables {
  uint32_t limit = 0;
  uint32_t batchcount = 0;
  uint32_t sharedfactor = 0;
};
// 2.6.0 enable_cpucache() defaults for an object of objsize bytes.
slab_tunables default_tunables(const slab_policy& p, uint32_t objsize);

struct slab_counters {
  uint64_t active_objs = 0;
  uint64_t num_objs = 0;
  uint64_t active_slabs = 0;
  uint64_t num_slabs = 0;
};

// An allocated object: its slab and its index in the slab.
struct slab_object {
  uint32_t slab = 0;
  uint32_t index = 0;
  bool operator==(const slab_object&) const = default;
};

struct kmem_cache_options {
  // Only slabinfo depends on it: SLUB reports every slab as active (get_slabinfo()).
  slab_allocator allocator = slab_allocator::slab_2_5;
  slab_tunables tunables{};
  // 2.5.55+ pte_chain_alloc()/__pte_chain_free(): one freed object kept per CPU and
  // handed back by the next alloc. One CPU is modelled.
  bool percpu_one_deep = false;
  // Called with pagesperslab before a slab is added; false fails the allocation (the
  // page allocator said no). Empty: always granted.
  std::function<bool(uint32_t pages)> charge_pages = nullptr;
};

class kmem_cache {
 public:
  kmem_cache(std::string name, slab_geometry g, kmem_cache_options o = {});

  // An object, or nullopt when a new slab was needed and charge_pages refused it (or the
  // geometry holds no object).
  std::optional<slab_object> alloc();
  // false (and nothing changes) when obj is not an allocated object of this cache.
  bool free(slab_object obj);
  // Releases every free slab (kmem_cache_shrink); returns the pages released.
  uint64_t shrink();

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const slab_geometry& geometry() const { return geo_; }
  [[nodiscard]] const slab_tunables& tunables() const { return opt_.tunables; }
  [[nodiscard]] slab_allocator allocator() const { return opt_.allocator; }
  [[nodiscard]] const slab_counters& counters() const { return now_; }
  [[nodiscard]] const slab_counters& maxima() const { return max_; }
  [[nodiscard]] uint64_t pages() const { return now_.num_slabs * geo_.pagesperslab; }
  [[nodiscard]] uint64_t max_pages() const { return max_.num_slabs * geo_.pagesperslab; }
  [[nodiscard]] uint64_t full_slabs() const { return list_len_[kFull]; }
  [[nodiscard]] uint64_t partial_slabs() const { return list_len_[kPartial]; }
  [[nodiscard]] uint64_t free_slabs() const { return list_len_[kFree]; }
  // "" when the invariants above hold, else the first one broken. O(num_objs).
  [[nodiscard]] std::string check_invariants() const;

 private:
  enum list_id : uint8_t { kFull, kPartial, kFree, kDead };
  static constexpr uint32_t kNone = UINT32_MAX;
  struct slab_desc {
    uint32_t inuse = 0;
    uint32_t free_head = kNone;  // first free object: the top of the LIFO chain
    uint32_t prev = kNone, next = kNone;
    list_id list = kDead;
  };

  uint32_t grow();  // a new slab on the free list, or kNone
  slab_object alloc_from(uint32_t slab);
  void release(slab_object obj);
  void list_add(uint32_t slab, list_id l);  // at the head, as the kernel's list_add
  void list_del(uint32_t slab);
  void note_maxima();
  [[nodiscard]] uint64_t bit(slab_object o) const { return uint64_t{o.slab} * geo_.objperslab + o.index; }

  std::string name_;
  slab_geometry geo_;
  kmem_cache_options opt_;
  std::vector<slab_desc> slabs_;    // by slab id; dead ids are reused by grow()
  std::vector<uint32_t> bufctl_;    // per object: the next free object in its slab
  std::vector<bool> allocated_;     // per object
  std::vector<uint32_t> dead_ids_;  // slab ids released by shrink()
  uint32_t head_[3] = {kNone, kNone, kNone};
  uint64_t list_len_[3] = {0, 0, 0};
  std::optional<slab_object> percpu_;
  slab_counters now_{}, max_{};
};

enum class slabinfo_format : uint8_t {
  v1_1,  // 2.4 .. 2.5.x SMP: no objperslab column; "(SMP)" header; " : limit batchcount"
  v2_0,  // 2.6.0-test1 .. 2.6.9 (SLAB)
  v2_1,  // 2.6.10 .. today (SLAB, then SLUB)
};
// "1.1", "2.0", "2.1"; and back (nullopt for anything else).
const char* slabinfo_version(slabinfo_format f);
std::optional<slabinfo_format> parse_slabinfo_version(const std::string& v);

// The header lines (one for 1.1, two since 2.0), each ending in '\n'.
std::string slabinfo_header(slabinfo_format f);
// The slabinfo figures of a cache, from its current counters or its maxima. SLUB reports
// every slab as active (get_slabinfo() does not track which slabs have objects in use).
slab_row to_slab_row(const kmem_cache& c, bool maxima = false);
// One row without '\n', in the columns of format f.
std::string slabinfo_row(const slab_row& r, slabinfo_format f);

}  // namespace vmlab
