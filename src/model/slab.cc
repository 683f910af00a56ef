// The slab allocator model; see slab.h for the kernel sources and the simplifications.
#include "model/slab.h"

#include <algorithm>
#include <bit>
#include <cstdio>

namespace vmlab {

namespace {

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// The kernel's fls(): 1-based index of the highest set bit, 0 for 0.
uint32_t fls(uint32_t x) { return static_cast<uint32_t>(32 - std::countl_zero(x)); }

// The kernel's get_order(): the smallest order whose block holds size bytes.
uint32_t get_order(uint64_t size, uint32_t page_size) {
  uint32_t order = 0;
  while ((uint64_t{page_size} << order) < size) ++order;
  return order;
}

// ---- SLAB, Linux 2.5 mm/slab.c ------------------------------------------------------

// sizeof(struct slab) in 2.5: struct list_head list (2 pointers), unsigned long colouroff,
// void *s_mem, unsigned int inuse, kmem_bufctl_t free, padded to the word.
// i386 with a 4-byte bufctl: 8 + 4 + 4 + 4 + 4 = 24. x86-64: 16 + 8 + 8 + 4 + 4 = 40.
uint32_t sizeof_struct_slab(const slab_policy& p) {
  return static_cast<uint32_t>(align_up(4 * p.word_size + 4 + p.bufctl_size, p.word_size));
}

struct estimate {
  uint32_t num = 0;
  uint64_t left_over = 0;
};

// cache_estimate(): the most objects i with i*size + L1_CACHE_ALIGN(base + i*extra) within
// the slab, where base + i*extra is the on-slab management (struct slab and one bufctl per
// object), cache-line aligned so the first object starts on a line.
estimate cache_estimate(const slab_policy& p, uint32_t order, uint32_t size, bool off_slab) {
  const uint64_t total = uint64_t{p.page_size} << order;
  const uint64_t base = off_slab ? 0 : sizeof_struct_slab(p);
  const uint64_t extra = off_slab ? 0 : p.bufctl_size;
  auto need = [&](uint64_t i) { return i * size + align_up(base + i * extra, p.cache_line); };
  uint64_t i = 0;
  while (need(i + 1) <= total) ++i;
  // SLAB_LIMIT: the two largest bufctl values mean BUFCTL_END and BUFCTL_FREE.
  const uint64_t slab_limit = (p.bufctl_size >= 4 ? uint64_t{UINT32_MAX} : (uint64_t{1} << (8 * p.bufctl_size)) - 1) - 2;
  i = std::min(i, slab_limit);
  return {static_cast<uint32_t>(i), total - need(i)};
}

slab_geometry slab_2_5_geometry(const slab_policy& p, uint32_t object_size, const slab_flags& f) {
  // kmem_cache_create(): word-align, decide on- or off-slab management on that size, then
  // round to the cache line (halved while two objects fit in one). The 2.5 general caches
  // (size-N, behind kmalloc) were created SLAB_HWCACHE_ALIGN. The 2.5 third argument is a
  // colour offset, not an alignment, so f.align does not apply.
  uint32_t size = static_cast<uint32_t>(align_up(object_size, p.word_size));
  const bool off_slab = size >= p.page_size / 8;
  if (f.hwcache_align || f.kmalloc) {
    uint32_t align = p.cache_line;
    while (size < align / 2) align /= 2;
    size = static_cast<uint32_t>(align_up(size, align));
  }
  // The gfporder loop: the first order with at most 1/8 of the slab left over, but no
  // order at or past slab_break_gfp_order unless nothing fits below it.
  uint32_t order = 0;
  estimate e;
  for (;; ++order) {
    e = cache_estimate(p, order, size, off_slab);
    if (order >= p.max_gfp_order) break;
    if (e.num == 0) continue;
    if (order >= p.break_gfp_order) break;
    if (e.left_over * 8 <= (uint64_t{p.page_size} << order)) break;
  }
  return {size, e.num, 1u << order};
}

// ---- SLUB, Linux 6.x mm/slub.c ------------------------------------------------------

constexpr uint32_t kMaxObjsPerPage = 32767;  // MAX_OBJS_PER_PAGE: slab->objects is 15 bits
constexpr uint32_t kMinAlign = 8;            // arch_slab_minalign(), ARCH_KMALLOC_MINALIGN

// calculate_alignment(), on the object size as the caller gave it.
uint32_t slub_alignment(const slab_policy& p, uint32_t object_size, const slab_flags& f) {
  uint32_t align = f.align;
  if (f.kmalloc) align = std::max(align, object_size & (~object_size + 1));  // 1 << (ffs - 1)
  if (f.hwcache_align) {
    uint32_t ralign = p.cache_line;
    while (object_size <= ralign / 2) ralign /= 2;
    align = std::max(align, ralign);
  }
  align = std::max(align, kMinAlign);
  return static_cast<uint32_t>(align_up(align, p.word_size));
}

uint32_t order_objects(const slab_policy& p, uint32_t order, uint32_t size) {
  return static_cast<uint32_t>((uint64_t{p.page_size} << order) / size);
}

// calc_slab_order(): the first order from min_order whose leftover is within 1/fraction.
uint32_t calc_slab_order(const slab_policy& p, uint32_t size, uint32_t min_order, uint32_t fraction) {
  uint32_t order = min_order;
  for (; order <= p.max_order; ++order) {
    const uint64_t slab_size = uint64_t{p.page_size} << order;
    if (slab_size % size <= slab_size / fraction) break;
  }
  return order;
}

// calculate_order() as of 6.8: enough pages for min_objects, then the smallest order
// from there whose waste is at most 1/16, else 1/8, 1/4, 1/2.
uint32_t slub_order(const slab_policy& p, uint32_t size) {
  uint32_t min_objects = p.min_objects != 0 ? p.min_objects : 4 * (fls(p.nr_cpus) + 1);
  const uint32_t max_objects = std::max(order_objects(p, p.max_order, size), 1u);
  min_objects = std::min(min_objects, max_objects);
  const uint32_t min_order = get_order(uint64_t{min_objects} * size, p.page_size);
  if (order_objects(p, min_order, size) > kMaxObjsPerPage) {
    return get_order(uint64_t{size} * kMaxObjsPerPage, p.page_size) - 1;
  }
  for (uint32_t fraction = 16; fraction > 1; fraction /= 2) {
    const uint32_t order = calc_slab_order(p, size, min_order, fraction);
    if (order <= p.max_order) return order;
  }
  return get_order(size, p.page_size);  // bigger than slub_max_order allows
}

slab_geometry slub_geometry(const slab_policy& p, uint32_t object_size, const slab_flags& f) {
  // calculate_sizes(): SLUB links free objects through a pointer stored in the free object
  // itself (near its middle). A constructor's work, or a reader under
  // SLAB_TYPESAFE_BY_RCU, must find the object intact after kmem_cache_free(), so such a
  // cache keeps the pointer in an extra word after the object. anon_vma has both (RCU
  // readers in folio_lock_anon_vma_read(), anon_vma_ctor()): 96 + 8 = 104 bytes, as
  // slabinfo shows. vm_area_struct is TYPESAFE_BY_RCU too but names a freeptr_offset
  // inside the struct (6.12+), so it stays 192.
  uint32_t size = static_cast<uint32_t>(align_up(object_size, p.word_size));
  const bool ptr_outside = (f.typesafe_by_rcu && !f.rcu_freeptr_offset) || f.ctor;
  if (ptr_outside) size += p.word_size;
  size = static_cast<uint32_t>(align_up(size, slub_alignment(p, object_size, f)));
  const uint32_t order = slub_order(p, size);
  return {size, order_objects(p, order, size), 1u << order};
}

}  // namespace

slab_policy slab_policy_i386_2_5(uint32_t l1_cache_bytes) {
  slab_policy p;
  p.allocator = slab_allocator::slab_2_5;
  p.cache_line = l1_cache_bytes;
  p.word_size = 4;
  p.bufctl_size = 4;
  return p;
}

slab_policy slub_policy_x86_64(uint32_t nr_cpus) {
  slab_policy p;
  p.allocator = slab_allocator::slub;
  p.cache_line = 64;
  p.word_size = 8;
  p.nr_cpus = nr_cpus;
  return p;
}

slab_geometry calculate_geometry(const slab_policy& p, uint32_t object_size, const slab_flags& f) {
  return p.allocator == slab_allocator::slab_2_5 ? slab_2_5_geometry(p, object_size, f)
                                                 : slub_geometry(p, object_size, f);
}

slab_tunables default_tunables(const slab_policy& p, uint32_t objsize) {
  if (p.allocator == slab_allocator::slub) return {};
  if (p.cpucache_2_4) {
    if (objsize > p.page_size) return {};
    const uint32_t limit = objsize > 1024 ? 60 : objsize > 256 ? 124 : 252;
    return {limit, limit / 2, 0};
  }
  // enable_cpucache(): fewer cached objects the bigger they are; batchcount is half.
  uint32_t limit = 120;
  if (objsize > 131072) {
    limit = 1;
  } else if (objsize > p.page_size) {
    limit = 8;
  } else if (objsize > 1024) {
    limit = 24;
  } else if (objsize > 256) {
    limit = 54;
  }
  const uint32_t shared = p.smp && objsize <= p.page_size ? 8 : 0;
  return {limit, (limit + 1) / 2, shared};
}

// ---- kmem_cache ---------------------------------------------------------------------

kmem_cache::kmem_cache(std::string name, slab_geometry g, kmem_cache_options o)
    : name_(std::move(name)), geo_(g), opt_(std::move(o)) {}

void kmem_cache::list_add(uint32_t s, list_id l) {
  slab_desc& d = slabs_[s];
  d.list = l;
  d.prev = kNone;
  d.next = head_[l];
  if (d.next != kNone) slabs_[d.next].prev = s;
  head_[l] = s;
  ++list_len_[l];
}

void kmem_cache::list_del(uint32_t s) {
  slab_desc& d = slabs_[s];
  if (d.prev != kNone) {
    slabs_[d.prev].next = d.next;
  } else {
    head_[d.list] = d.next;
  }
  if (d.next != kNone) slabs_[d.next].prev = d.prev;
  --list_len_[d.list];
  d.list = kDead;
}

// cache_grow() + cache_init_objs(): a slab whose free chain runs 0, 1, 2, ... in order.
uint32_t kmem_cache::grow() {
  if (opt_.charge_pages && !opt_.charge_pages(geo_.pagesperslab)) return kNone;
  uint32_t s;
  if (!dead_ids_.empty()) {
    s = dead_ids_.back();
    dead_ids_.pop_back();
  } else {
    s = static_cast<uint32_t>(slabs_.size());
    slabs_.emplace_back();
    bufctl_.resize(bufctl_.size() + geo_.objperslab);
    allocated_.resize(allocated_.size() + geo_.objperslab);
  }
  const uint64_t first = uint64_t{s} * geo_.objperslab;
  for (uint32_t i = 0; i < geo_.objperslab; ++i) {
    bufctl_[first + i] = i + 1 < geo_.objperslab ? i + 1 : kNone;
  }
  slabs_[s].inuse = 0;
  slabs_[s].free_head = 0;
  list_add(s, kFree);
  now_.num_slabs += 1;
  now_.num_objs += geo_.objperslab;
  return s;
}

// kmem_cache_alloc_one_tail(): pop the slab's free chain; a slab leaving the free list goes
// to the head of the partial list, a slab that fills up goes to the full list.
slab_object kmem_cache::alloc_from(uint32_t s) {
  slab_desc& d = slabs_[s];
  if (d.inuse == 0) {
    list_del(s);
    list_add(s, kPartial);
    now_.active_slabs += 1;
  }
  const slab_object obj{s, d.free_head};
  d.free_head = bufctl_[bit(obj)];
  allocated_[bit(obj)] = true;
  d.inuse += 1;
  now_.active_objs += 1;
  if (d.inuse == geo_.objperslab) {
    list_del(s);
    list_add(s, kFull);
  }
  return obj;
}

std::optional<slab_object> kmem_cache::alloc() {
  if (percpu_) {  // pte_chain_alloc(): the CPU's cached object first
    const slab_object obj = *percpu_;
    percpu_.reset();
    return obj;
  }
  uint32_t s = head_[kPartial];
  if (s == kNone) s = head_[kFree];
  if (s == kNone && geo_.objperslab != 0) s = grow();
  if (s == kNone) return std::nullopt;
  const slab_object obj = alloc_from(s);
  note_maxima();
  return obj;
}

// kmem_cache_free_one(): push onto the slab's free chain (LIFO); an emptied slab goes to
// the head of the free list, a full slab that gains a free object to the head of the
// partial list. A partial slab that stays partial does not move.
void kmem_cache::release(slab_object obj) {
  slab_desc& d = slabs_[obj.slab];
  bufctl_[bit(obj)] = d.free_head;
  d.free_head = obj.index;
  allocated_[bit(obj)] = false;
  const bool was_full = d.inuse == geo_.objperslab;
  d.inuse -= 1;
  now_.active_objs -= 1;
  if (d.inuse == 0) {
    list_del(obj.slab);
    list_add(obj.slab, kFree);
    now_.active_slabs -= 1;
  } else if (was_full) {
    list_del(obj.slab);
    list_add(obj.slab, kPartial);
  }
}

bool kmem_cache::free(slab_object obj) {
  if (obj.slab >= slabs_.size() || obj.index >= geo_.objperslab) return false;
  if (!allocated_[bit(obj)] || percpu_ == obj) return false;
  if (opt_.percpu_one_deep) {
    // __pte_chain_free(): the new object takes the CPU's slot; the one it displaces goes
    // back to the slab.
    const std::optional<slab_object> old = percpu_;
    percpu_ = obj;
    if (old) release(*old);
    return true;
  }
  release(obj);
  return true;
}

uint64_t kmem_cache::shrink() {
  uint64_t pages = 0;
  while (head_[kFree] != kNone) {
    const uint32_t s = head_[kFree];
    list_del(s);
    dead_ids_.push_back(s);
    now_.num_slabs -= 1;
    now_.num_objs -= geo_.objperslab;
    pages += geo_.pagesperslab;
  }
  return pages;
}

void kmem_cache::note_maxima() {
  max_.active_objs = std::max(max_.active_objs, now_.active_objs);
  max_.num_objs = std::max(max_.num_objs, now_.num_objs);
  max_.active_slabs = std::max(max_.active_slabs, now_.active_slabs);
  max_.num_slabs = std::max(max_.num_slabs, now_.num_slabs);
}

std::string kmem_cache::check_invariants() const {
  uint64_t active = 0, live = 0, on_list[3] = {0, 0, 0};
  for (uint32_t s = 0; s < slabs_.size(); ++s) {
    const slab_desc& d = slabs_[s];
    if (d.list == kDead) continue;
    ++live;
    ++on_list[d.list];
    const list_id want = d.inuse == geo_.objperslab ? kFull : d.inuse == 0 ? kFree : kPartial;
    if (d.list != want) return "1: slab " + std::to_string(s) + " on the wrong list";
    active += d.inuse;
    uint64_t chain = 0;
    for (uint32_t i = d.free_head; i != kNone; i = bufctl_[uint64_t{s} * geo_.objperslab + i]) {
      if (allocated_[uint64_t{s} * geo_.objperslab + i] || ++chain > geo_.objperslab) {
        return "6: slab " + std::to_string(s) + " free chain broken";
      }
    }
    if (chain != geo_.objperslab - d.inuse) return "6: slab " + std::to_string(s) + " free chain length";
  }
  for (int l = 0; l < 3; ++l) {
    if (on_list[l] != list_len_[l]) return "1: list length";
  }
  if (active != now_.active_objs || now_.num_objs != now_.num_slabs * geo_.objperslab) return "2";
  if (live != now_.num_slabs || now_.active_slabs != on_list[kFull] + on_list[kPartial]) return "3";
  if (max_.active_objs < now_.active_objs || max_.num_objs < now_.num_objs ||
      max_.active_slabs < now_.active_slabs || max_.num_slabs < now_.num_slabs) {
    return "5";
  }
  return "";
}

// ---- /proc/slabinfo -----------------------------------------------------------------

const char* slabinfo_version(slabinfo_format f) {
  switch (f) {
    case slabinfo_format::v1_1: return "1.1";
    case slabinfo_format::v2_0: return "2.0";
    case slabinfo_format::v2_1: return "2.1";
  }
  return "?";
}

std::optional<slabinfo_format> parse_slabinfo_version(const std::string& v) {
  for (slabinfo_format f : {slabinfo_format::v1_1, slabinfo_format::v2_0, slabinfo_format::v2_1})
    if (v == slabinfo_version(f)) return f;
  return std::nullopt;
}

std::string slabinfo_header(slabinfo_format f) {
  // 2.4/2.5 s_show() printed "slabinfo - version: 1.1 (SMP)" and no column header.
  if (f == slabinfo_format::v1_1) return "slabinfo - version: 1.1 (SMP)\n";
  // 2.0 named the tunables in the wrong order; 2.1 (2.6.10) corrected the header only.
  const char* tunables = f == slabinfo_format::v2_0 ? " : tunables <batchcount> <limit> <sharedfactor>"
                                                    : " : tunables <limit> <batchcount> <sharedfactor>";
  return std::string("slabinfo - version: ") + slabinfo_version(f) + "\n" +
         "# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab>" + tunables +
         " : slabdata <active_slabs> <num_slabs> <sharedavail>\n";
}

slab_row to_slab_row(const kmem_cache& c, bool maxima) {
  const slab_counters& n = maxima ? c.maxima() : c.counters();
  slab_row r;
  r.name = c.name();
  r.active_objs = n.active_objs;
  r.num_objs = n.num_objs;
  r.objsize = c.geometry().objsize;
  r.objperslab = c.geometry().objperslab;
  r.pagesperslab = c.geometry().pagesperslab;
  r.active_slabs = c.allocator() == slab_allocator::slub ? n.num_slabs : n.active_slabs;
  r.num_slabs = n.num_slabs;
  r.limit = c.tunables().limit;
  r.batchcount = c.tunables().batchcount;
  r.sharedfactor = c.tunables().sharedfactor;
  return r;
}

std::string slabinfo_row(const slab_row& r, slabinfo_format f) {
  // 1.1 (2.5 s_show, SMP): name active num objsize active_slabs num_slabs pagesperslab :
  // limit batchcount. 2.0/2.1 (2.6.0 s_show, today's cache_show) print the same columns
  // the same way; the per-CPU shared array is not modelled, so sharedavail is 0.
  const auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  auto print = [&](char* buf, size_t len) {
    if (f == slabinfo_format::v1_1)
      return std::snprintf(buf, len, "%-17s %6llu %6llu %6u %4llu %4llu %4u : %4u %4u", r.name.c_str(), u(r.active_objs),
                           u(r.num_objs), r.objsize, u(r.active_slabs), u(r.num_slabs), r.pagesperslab, r.limit,
                           r.batchcount);
    return std::snprintf(buf, len, "%-17s %6llu %6llu %6u %4u %4u : tunables %4u %4u %4u : slabdata %6llu %6llu %6u",
                         r.name.c_str(), u(r.active_objs), u(r.num_objs), r.objsize, r.objperslab, r.pagesperslab,
                         r.limit, r.batchcount, r.sharedfactor, u(r.active_slabs), u(r.num_slabs), 0u);
  };
  std::string row(static_cast<size_t>(print(nullptr, 0)), '\0');
  print(row.data(), row.size() + 1);
  return row;
}

}  // namespace vmlab
