#include "model/rmap.h"

#include <algorithm>
#include <unordered_set>

#include "model/kernel.h"

namespace vmlab {
namespace {

uint32_t slots(const kernel& k) { return k.prof.rmap.pte_chain_slots; }

// pte_chain objects by id (object index in the cache + 1) with their `next` links.
uint32_t chain_alloc(kernel& k) {
  auto o = kmem_alloc(k, kmem_kind::pte_chain);
  if (!o) return 0;
  const uint32_t id = o->slab * k.km.cache(kmem_kind::pte_chain)->geometry().objperslab + o->index + 1;
  if (k.rm.chain_next.size() <= id) k.rm.chain_next.resize(std::max<size_t>(id + 1, k.rm.chain_next.size() * 2), 0);
  k.rm.chain_next[id] = 0;
  return id;
}

void chain_free(kernel& k, uint32_t id) {
  const uint32_t per = k.km.cache(kmem_kind::pte_chain)->geometry().objperslab;
  kmem_free(k, kmem_kind::pte_chain, slab_object{(id - 1) / per, (id - 1) % per});
}

// Frees the head object of a chain; returns the new head.
uint32_t chain_pop(kernel& k, uint32_t head) {
  const uint32_t next = k.rm.chain_next[head];
  chain_free(k, head);
  return next;
}

}  // namespace

// Mapped's maximum, where it is kept incrementally (pte_chain; anonymous pages).
void note_mapped_growth(kernel& k) {
  if (!k.rmap->per_page_state) {
    k.rm.mapped_may_have_grown = true;
    return;
  }
  const uint64_t m = k.rm.mapped_file + (k.prof.meminfo.mapped_counts_anon ? k.rm.mapped_anon : 0);
  k.rm.max_mapped = std::max(k.rm.max_mapped, m);
}

uint64_t pte_chain_objects(const kernel& k, uint64_t n) {
  const uint32_t r = slots(k);
  return r <= 1 ? n : (n + r - 1) / r;
}

status page_add_rmap(kernel& k, page_rmap p, bool anon) {
  uint32_t& n = *p.mapcount;
  if (k.rmap->per_page_state && n >= 1) {
    uint32_t& head = *p.chain;
    const uint32_t r = slots(k);
    if (head == 0) {
      // PageDirect becomes a chain: the old direct pte and the new one go into one chain
      // object (2.5.35+: slots NRPTE-1 and NRPTE-2), or into two (2.5.28-2.5.34).
      const uint32_t a = chain_alloc(k);
      if (!a) return oom_status(k, "a pte_chain", gfp_zone::kernel);
      if (r == 1) {
        const uint32_t b = chain_alloc(k);
        if (!b) {
          chain_free(k, a);
          return oom_status(k, "a pte_chain", gfp_zone::kernel);
        }
        k.rm.chain_next[b] = a;
        head = b;
      } else {
        head = a;
      }
    } else if (n % r == 0) {
      // The head is full (only the head ever has free slots): a new head.
      const uint32_t a = chain_alloc(k);
      if (!a) return oom_status(k, "a pte_chain", gfp_zone::kernel);
      k.rm.chain_next[a] = head;
      head = a;
    }
  }
  if (n++ == 0) {
    ++(anon ? k.rm.mapped_anon : k.rm.mapped_file);
    if (anon ? k.prof.meminfo.mapped_counts_anon : true) note_mapped_growth(k);
  }
  k.rm.max_reverse_maps = std::max(k.rm.max_reverse_maps, ++k.rm.reverse_maps);
  return {};
}

void page_remove_rmap(kernel& k, page_rmap p, bool anon) {
  uint32_t& n = *p.mapcount;
  if (k.rmap->per_page_state && *p.chain) {
    uint32_t& head = *p.chain;
    const uint32_t r = slots(k);
    // 2.5.35+: the head's first used slot fills the victim's; the head goes when empty.
    // Two-pointer generation: the victim's own object goes (modelled as the head: which
    // object held which pte is not tracked, and every object is alike).
    if (r == 1 || (n - 1) % r == 0) head = chain_pop(k, head);
    if (k.prof.rmap.collapse_on_remove && n - 1 == 1)
      while (head) head = chain_pop(k, head);
  }
  if (--n == 0) --(anon ? k.rm.mapped_anon : k.rm.mapped_file);
  --k.rm.reverse_maps;
}

namespace {

bool pte_chain_add_object_word(kernel& k, int32_t obj, int64_t pg0, uint64_t m, uint64_t& done) {
  done = 0;
  for (uint64_t b = m; b; b &= b - 1) {
    if (!page_add_rmap(k, object_page(k, obj, uint64_t(pg0 + __builtin_ctzll(b))), false).ok()) return false;
    done |= b & (~b + 1);
  }
  return true;
}

void pte_chain_remove_object_word(kernel& k, int32_t obj, int64_t pg0, uint64_t m) {
  for (uint64_t b = m; b; b &= b - 1)
    page_remove_rmap(k, object_page(k, obj, uint64_t(pg0 + __builtin_ctzll(b))), false);
}

// Shared anonymous pages: page_dup_rmap (with its pte_chain under 2.5), page_remove_rmap.
bool pte_chain_dup_anon(kernel& k, uint32_t id) { return page_add_rmap(k, anon_page(k, id), true).ok(); }

bool pte_chain_remove_anon(kernel& k, uint32_t id) {
  page_remove_rmap(k, anon_page(k, id), true);
  if (k.pm.mapcount(id)) return false;
  k.pm.release_anon(id);
  return true;
}

// The schemes without per-page state keep only the mapcount of shared anonymous pages
// (do_wp_page needs it) and the counters.
bool mapcount_dup_anon(kernel& k, uint32_t id) {
  ++*k.pm.anon_mapcount(id);
  if (++k.rm.reverse_maps > k.rm.max_reverse_maps) k.rm.max_reverse_maps = k.rm.reverse_maps;
  return true;
}

bool mapcount_remove_anon(kernel& k, uint32_t id) {
  uint32_t* mc = k.pm.anon_mapcount(id);
  --*mc;
  --k.rm.reverse_maps;
  if (*mc) return false;
  --k.rm.mapped_anon;
  k.pm.release_anon(id);
  return true;
}

template <bool (*Remove)(kernel&, uint32_t)>
uint64_t remove_anon_word(kernel& k, uint32_t* ids, uint64_t m, uint64_t& removed) {
  uint64_t freed = 0;
  removed = 0;
  for (uint64_t b = m; b; b &= b - 1) {
    uint32_t& id = ids[__builtin_ctzll(b)];
    if (!id) continue;
    freed += Remove(k, id);
    id = 0;
    ++removed;
  }
  return freed;
}

uint64_t pte_chain_mapped_object_pages(const kernel& k) { return k.rm.mapped_file; }

// Shm/file pages mapped by at least one PTE, counted from the page tables: per object, the
// ranges uniform full nodes and PMD-mapped folios map (merged), and a sparse bitmap of
// what other PTE tables map outside them. Host work follows the nodes, not the pages
// (issue 11): 1,500 sharers of a 300 GiB segment give 450,000 ranges, not 118 billion bits.
// Only a page in the page cache can be mapped, so once an object's bitmap holds every
// cached page of the object, no further mapping can add to its count, and its remaining
// VMAs are skipped. The address spaces are visited in order of their file and shmem RSS,
// largest first, so that such a point comes early: 1,500 processes that each read a
// random 1% of a segment map all of its cached pages together, and the later of them,
// whose fault-around found a warm page cache, map 15% of it each.
uint64_t scan_mapped_object_pages(const kernel& k) {
  // The bitmap is sparse (sparse.h): its memory follows what partial tables map, not the
  // objects' sizes; a directory of chunks where the object is small enough.
  struct object_maps {
    std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [first, last) object pages
    size_t ranges_merged = 0;                           // the size of `ranges` when last merged
    sparse_bitmap bits;                                 // pages other tables map
    uint64_t nr_bits = 0;                               // bits set in `bits`
    bool all = false;                                   // every cached page of the object is mapped
    bool stray = false;                                 // `bits` holds a page not cached: never stop
  };
  std::vector<object_maps> seen(k.objects.size());
  for (size_t o = 0; o < seen.size(); ++o) seen[o].bits.expect_bits(k.objects[o].nr_pages);
  // Whether om's bitmap now holds every cached page of object o. A mapped page is in the
  // page cache (check.cc verifies it), but the test does not lean on that: it checks that
  // the bits are the cached pages themselves before it stops the scan of an object.
  // Or whether the ranges alone cover the whole object (a process that read all of it in,
  // before others that read parts): ranges merged in place each time they have doubled
  // since the last merge (so merging costs O(R log R) in all, not per VMA).
  auto merge_ranges = [](std::vector<std::pair<uint64_t, uint64_t>>& r) {
    std::sort(r.begin(), r.end());
    size_t n = 0;
    for (const auto& x : r) {
      if (n && x.first <= r[n - 1].second) r[n - 1].second = std::max(r[n - 1].second, x.second);
      else r[n++] = x;
    }
    r.resize(n);
  };
  auto holds_all = [&](object_maps& om, size_t o) {
    const mem_object& obj = k.objects[o];
    if (!om.all && om.ranges.size() > 2 * om.ranges_merged) {
      merge_ranges(om.ranges);
      om.ranges_merged = om.ranges.size();
      om.all = om.ranges.size() == 1 && om.ranges[0].first == 0 && om.ranges[0].second >= obj.nr_pages;
    }
    if (om.all || om.stray || om.nr_bits < obj.nr_resident) return om.all;
    om.bits.for_each_word([&](uint64_t w, uint64_t bits) { om.stray = om.stray || (bits & ~obj.resident.word(w)) != 0; });
    return om.all = !om.stray && om.nr_bits == obj.nr_resident;
  };
  std::unordered_set<const void*> shared_seen;  // shared page tables map the same pages for every holder
  std::vector<const mm_struct*> by_rss;
  by_rss.reserve(k.mms.size());
  for (const auto& entry : k.mms) by_rss.push_back(entry.second.get());
  std::stable_sort(by_rss.begin(), by_rss.end(), [](const mm_struct* a, const mm_struct* b) {
    return a->rss.file + a->rss.shmem > b->rss.file + b->rss.shmem;
  });
  for (const mm_struct* mmp : by_rss) {
    const mm_struct& mm = *mmp;
    for (const auto& vma_entry : mm.vmas) {
      // A named reference, not a structured binding: clang 14 cannot capture those.
      const vm_area_struct& v = vma_entry.second;
      if (v.is_anon() || v.is_hugetlb()) continue;  // hugetlb pages are not in Mapped
      object_maps& om = seen[static_cast<size_t>(v.object)];
      if (holds_all(om, static_cast<size_t>(v.object))) continue;
      auto add_range = [&](vaddr lo, vaddr hi) {
        const uint64_t pg = v.pgoff_at(lo, k.geo.shift);
        om.ranges.emplace_back(pg, pg + k.geo.pages(hi - lo));
        return true;
      };
      // PMD-mapped shmem folios: every page of the folio (NR_FILE_MAPPED counts them).
      for_each_leaf(const_cast<kernel&>(k), const_cast<mm_struct&>(mm), v.vm_start, v.vm_end,
                    [&](const leaf_ref& l) { add_range(l.base, l.base + l.size); });
      for_each_pte_table(k, mm, v, [&](vaddr base, const pte_table* t, vaddr vlo, vaddr vhi) {
        if (!t->nr_present) return;
        if (t->is_full() && !t->anonmap()) {
          add_range(vlo, vhi);  // every entry maps its object page
          return;
        }
        if (vlo == base && vhi == base + k.geo.table_span() && !t->anonmap()) {
          // The whole table lies in the VMA (the usual case): word w is object page pg0 + 64w on.
          const auto pg0 = uint64_t(v.pgoff_at_signed(base, k.geo.shift));
          t->for_each_word([&](uint32_t w, uint64_t present) { om.nr_bits += om.bits.or_window(pg0 + 64 * w, present); });
          return;
        }
        t->for_each_word([&](uint32_t w, uint64_t present) {
          const vaddr wlo = base + w * k.geo.word_span(), whi = wlo + k.geo.word_span();
          const vaddr lo = std::max(wlo, v.vm_start), hi = std::min(whi, v.vm_end);
          if (lo >= hi) return;
          const uint32_t b0 = uint32_t(k.geo.pages(lo - wlo)), b1 = uint32_t(k.geo.pages(hi - wlo));
          uint64_t m = present & ~t->anon_word(w) & bit_span(b0, b1 - b0);
          if (!m) return;
          // Bit b of m is object page pg0 + b; bits below the VMA are clear in m.
          int64_t pg0 = v.pgoff_at_signed(wlo, k.geo.shift);
          if (pg0 < 0) {
            m >>= -pg0;
            pg0 = 0;
          }
          om.nr_bits += om.bits.or_window(uint64_t(pg0), m);
        });
      }, add_range, &shared_seen);
    }
  }
  uint64_t n = 0;
  for (object_maps& om : seen) {
    // Merge the ranges, count them, then count the bitmap's pages outside them.
    merge_ranges(om.ranges);
    const auto& merged = om.ranges;
    for (const auto& r : merged) n += r.second - r.first;
    auto outside_ranges = [&](uint64_t w, uint64_t bits) {
      uint64_t m = bits;
      const uint64_t lo = w * 64, hi = lo + 64;
      // The merged ranges that overlap this word: from the last one starting below hi.
      auto it = std::upper_bound(merged.begin(), merged.end(), std::make_pair(hi, uint64_t{0}));
      while (it != merged.begin()) {
        --it;
        if (it->second <= lo) break;
        const uint64_t a = std::max(it->first, lo) - lo, b = std::min(it->second, hi) - lo;
        m &= ~bit_span(a, b - a);
      }
      return uint64_t(popcount64(m));
    };
    om.bits.for_each_word([&](uint64_t w, uint64_t bits) { n += outside_ranges(w, bits); });
  }
  return n;
}

}  // namespace

uint64_t count_mapped_object_pages(const kernel& k) {
  if (k.rmap->per_page_state) return k.rmap->mapped_object_pages(k);
  // Counted from the page tables: once per change of the object pages' PTEs. check.cc
  // compares this (the kept count when it is kept) with its own recount after every op.
  if (k.rm.counted_at_change != k.rm.object_map_changes) {
    k.rm.counted_object_pages = k.rmap->mapped_object_pages(k);
    k.rm.counted_at_change = k.rm.object_map_changes;
  }
  return k.rm.counted_object_pages;
}

uint64_t mapped_pages(const kernel& k) {
  return count_mapped_object_pages(k) + (k.prof.meminfo.mapped_counts_anon ? k.rm.mapped_anon : 0);
}

void note_mapped_max(kernel& k) {
  if (!k.rm.mapped_may_have_grown) return;
  k.rm.max_mapped = std::max(k.rm.max_mapped, mapped_pages(k));
  k.rm.mapped_may_have_grown = false;
}

uint64_t object_page_mapcount(const kernel& k, int32_t obj, uint64_t pg) {
  const mem_object& o = k.objects[static_cast<size_t>(obj)];
  if (!o.mapcount.empty()) return o.mapcount[pg];
  uint64_t n = 0;
  for (const auto& [pid, mmp] : k.mms)
    for (const auto& [start, v] : mmp->vmas) {
      if (v.object != obj || pg < v.pgoff || pg >= v.pgoff + v.pages(k.geo.shift)) continue;
      const vaddr a = v.addr_of(pg, k.geo.shift);
      const pte_ref t = pte_lookup(k, *mmp, a);
      const uint32_t i = k.geo.index(a);
      if (t && t->test(i) && !((t->anon_word(i >> 6) >> (i & 63)) & 1)) ++n;
    }
  return n;
}

page_rmap object_page(kernel& k, int32_t obj, uint64_t pg) {
  mem_object& o = k.objects[static_cast<size_t>(obj)];
  return {&o.mapcount[pg], o.chain.empty() ? nullptr : &o.chain[pg]};
}

page_rmap anon_page(kernel& k, uint32_t id) { return {k.pm.anon_mapcount(id), k.pm.anon_chain(id)}; }

// ---- rmap walks --------------------------------------------------------------------

// The page mapped at one address: what try_to_unmap is asked about.
struct rmap_page {
  enum kind_t : uint8_t { none, object, anon_shared, anon_exclusive } kind = none;
  int32_t obj = -1;
  uint64_t pg = 0;      // object page, or the anonymous page's pgoff (linear index)
  uint32_t id = 0;      // shared anon id
  uint32_t av = 0;      // the anon_vma an anonymous page belongs to
  mm_struct* mm = nullptr;  // exclusive anon: its only mapping
  vaddr addr = 0;
};

namespace {

bool anon_bit(const pte_table* t, uint32_t i) { return (t->anon_word(i >> 6) >> (i & 63)) & 1; }

rmap_page identify(kernel& k, mm_struct& mm, vaddr addr) {
  rmap_page p;
  vm_area_struct* v = find_vma(mm, addr);
  if (!v) return p;
  const pte_ref t = pte_lookup(k, mm, addr);
  const uint32_t i = k.geo.index(addr);
  if (!t || !t->test(i)) return p;
  const uint64_t pgoff = v->pgoff_at(addr, k.geo.shift);
  if (anon_bit(t.get(), i)) {
    p.pg = pgoff;
    p.id = t->anon() ? t->anon()[i] : 0;
    p.kind = p.id ? rmap_page::anon_shared : rmap_page::anon_exclusive;
    p.av = p.id ? k.pm.anon_origin(p.id) : v->anon_vma;
    if (!p.av) p.av = v->anon_vma;
    p.mm = &mm;
    p.addr = addr;
  } else if (!v->is_anon()) {
    p.kind = rmap_page::object;
    p.obj = v->object;
    p.pg = pgoff;
  }
  return p;  // an anonymous VMA's non-anon PTE is the zero page: PageReserved, no rmap
}

// Whether entry i of PTE table t, at addr of mm inside v, maps page p.
bool entry_maps(uint8_t shift, const pte_table* t, uint32_t i, const mm_struct& mm, const vm_area_struct& v,
                vaddr addr, const rmap_page& p) {
  if (!t || !t->test(i)) return false;
  switch (p.kind) {
    case rmap_page::object:
      return !anon_bit(t, i) && v.object == p.obj && v.pgoff_at(addr, shift) == p.pg;
    case rmap_page::anon_shared: return anon_bit(t, i) && t->anon() && t->anon()[i] == p.id;
    case rmap_page::anon_exclusive: return &mm == p.mm && addr == p.addr;
    case rmap_page::none: return false;
  }
  return false;
}

bool maps(kernel& k, mm_struct& mm, const vm_area_struct& v, vaddr addr, const rmap_page& p) {
  const pte_ref t = pte_lookup(k, mm, addr);
  return entry_maps(k.geo.shift, t.get(), k.geo.index(addr), mm, v, addr, p);
}

using mapping = rmap_mapping;

// The VMA of each mm that would hold page p at its pgoff, with the address it maps it at.
template <class F>
void for_each_candidate(kernel& k, const rmap_page& p, F&& f) {
  for (auto& [pid, mmp] : k.mms)
    for (auto& [start, v] : mmp->vmas) {
      if (p.kind == rmap_page::object ? v.object != p.obj : !v.is_cow()) continue;
      if (p.kind != rmap_page::object && !v.is_anon() && !v.has_anon_vma) continue;
      if (p.pg < v.pgoff || p.pg >= v.pgoff + v.pages(k.geo.shift)) continue;
      f(*mmp, v, v.addr_of(p.pg, k.geo.shift));
    }
}

// swap_out() (2.4): every mm, every VMA, every PTE table under it, entry by entry.
void walk_scan(kernel& k, const rmap_page& p, rmap_work& w, std::vector<mapping>& found) {
  const uint8_t shift = k.prof.paging.page_shift;
  for (auto& mm_entry : k.mms) {
    mm_struct* mm = mm_entry.second.get();  // not a structured binding: clang 14 cannot capture those
    for (auto& vma_entry : mm->vmas) {
      const vm_area_struct& v = vma_entry.second;
      for_each_pte_table(k, *mm, v, [&](vaddr base, const pte_table* t, vaddr lo, vaddr hi) {
        ++w.pt_walks;
        w.ptes_scanned += (hi - lo) >> shift;
        for (vaddr a = lo; a < hi; a += vaddr{1} << shift)
          if (entry_maps(shift, t, uint32_t((a - base) >> shift), *mm, v, a, p)) found.push_back({mm, a});
      });
    }
  }
}

// The PTEs the walks below reach are the ones that map the page: found directly.
void find_mappings(kernel& k, const rmap_page& p, std::vector<mapping>& found) {
  for_each_candidate(k, p, [&](mm_struct& mm, vm_area_struct& v, vaddr a) {
    if (maps(k, mm, v, a, p)) found.push_back({&mm, a});
  });
}

// pte_chain: the chain holds exactly the mapping PTEs; each costs ptep_to_mm + find_vma.
// A chain of n PTEs (in chain mode or PageDirect) walked: every entry, every object, a
// ptep_to_mm + find_vma for each.
void pte_chain_work(const kernel& k, uint64_t n, bool in_chain, rmap_work& w) {
  w.chain_entries += n;
  if (in_chain) w.chain_objects += pte_chain_objects(k, n);
  w.pt_walks += n;
}

void walk_pte_chain(kernel& k, const rmap_page& p, rmap_work& w, std::vector<mapping>& found) {
  uint64_t n = 1;
  bool in_chain = false;
  if (p.kind == rmap_page::object) {
    const mem_object& o = k.objects[static_cast<size_t>(p.obj)];
    n = o.mapcount[p.pg];
    in_chain = o.chain[p.pg] != 0;
  } else if (p.kind == rmap_page::anon_shared) {
    n = k.pm.mapcount(p.id);
    in_chain = k.pm.chain(p.id) != 0;
  }
  pte_chain_work(k, n, in_chain, w);
  find_mappings(k, p, found);
}

void pte_chain_object_work(const kernel& k, int32_t obj, uint64_t pg, uint64_t, uint64_t ptes, rmap_work& w) {
  ++w.walks;
  pte_chain_work(k, ptes, k.objects[static_cast<size_t>(obj)].chain[pg] != 0, w);
}

// The VMAs an object-based walk stabs, each with a page-table walk
// (page_vma_mapped_walk() / page_check_address()).
void object_based_work(uint64_t covering, rmap_work& w) {
  w.vmas_visited += covering;
  w.pt_walks += covering;
}

void object_based_object_work(const kernel&, int32_t, uint64_t, uint64_t covering, uint64_t, rmap_work& w) {
  ++w.walks;
  object_based_work(covering, w);
}

// Object-based: file pages through the i_mmap tree (the VMAs covering the page's pgoff);
// anonymous pages through their anon_vma. 2.6.7 walks the anon_vma's whole list (the
// family's VMAs that do not cover this pgoff are visited, vma_address() fails, no
// page-table walk); anon_vma_chain stabs the anon_vma's tree.
void walk_object_based(kernel& k, const rmap_page& p, rmap_work& w, std::vector<mapping>& found) {
  const bool chain = k.rmap->anon_vma_chains;
  auto on_anon_vma = [&](const vm_area_struct& v) {
    if (!chain) return v.anon_vma == p.av;
    for (const auto& l : v.avcs)
      if (l.av == p.av) return true;
    return false;
  };
  uint64_t covering = 0;
  for_each_candidate(k, p, [&](mm_struct&, vm_area_struct& v, vaddr) {
    if (p.kind != rmap_page::object && !on_anon_vma(v)) return;
    ++covering;
  });
  object_based_work(covering, w);
  if (p.kind != rmap_page::object && !chain && p.av) w.vmas_visited += k.anon_vmas[p.av].nr_vmas - covering;
  find_mappings(k, p, found);
}

// Finds every PTE mapping p the way the design would, counting its work.
std::vector<mapping> rmap_walk(kernel& k, const rmap_page& p, rmap_work& w) {
  ++w.walks;
  std::vector<mapping> found;
  k.rmap->walk(k, p, w, found);
  return found;
}

void add_work(rmap_work& to, const rmap_work& w) { to += w; }

}  // namespace

uint64_t page_referenced(kernel& k, mm_struct& mm, vaddr addr) {
  const rmap_page p = identify(k, mm, addr);
  if (p.kind == rmap_page::none) return 0;
  rmap_work w;
  const uint64_t n = rmap_walk(k, p, w).size();
  add_work(k.rm.work, w);
  // 2.5.35+: a chain down to one pte goes back to PageDirect here, and only here.
  if (k.rmap->per_page_state && p.kind != rmap_page::anon_exclusive) {
    page_rmap r = p.kind == rmap_page::object ? object_page(k, p.obj, p.pg) : anon_page(k, p.id);
    if (*r.chain && *r.mapcount == 1) *r.chain = chain_pop(k, *r.chain);
  }
  return n;
}

rmap_work try_to_unmap(kernel& k, mm_struct& mm, vaddr addr) {
  rmap_work w;
  const rmap_page p = identify(k, mm, addr);
  if (p.kind == rmap_page::none) return w;
  const std::vector<mapping> found = rmap_walk(k, p, w);
  // An mlocked page is not reclaimed: 2.4 try_to_swap_out and 2.6 try_to_unmap_one refuse
  // VM_LOCKED (SWAP_FAIL ends the walk), and 6.x keeps mlocked folios off the evictable
  // LRU altogether. The model leaves every PTE of such a page in place.
  for (const mapping& m : found)
    if (find_vma(*m.mm, m.addr)->locked) {
      add_work(k.rm.work, w);
      return w;
    }
  for (const mapping& m : found) {
    vm_area_struct* v = find_vma(*m.mm, m.addr);
    zap_range(k, *m.mm, *v, m.addr, m.addr + k.geo.size(), false);
    ++w.unmapped;
  }
  add_work(k.rm.work, w);
  return w;
}

const rmap_ops& rmap_ops_for(rmap_scheme s) {
  static const rmap_ops none{rmap_scheme::none, false, false, false, nullptr, nullptr, mapcount_dup_anon,
                             mapcount_remove_anon, remove_anon_word<mapcount_remove_anon>, walk_scan, scan_mapped_object_pages, nullptr};
  static const rmap_ops pte_chain{rmap_scheme::pte_chain, true, false, false, pte_chain_add_object_word,
                                  pte_chain_remove_object_word, pte_chain_dup_anon, pte_chain_remove_anon,
                                  remove_anon_word<pte_chain_remove_anon>,
                                  walk_pte_chain, pte_chain_mapped_object_pages, pte_chain_object_work};
  static const rmap_ops anon_vma{rmap_scheme::anon_vma, false, true, false, nullptr, nullptr, mapcount_dup_anon,
                                 mapcount_remove_anon, remove_anon_word<mapcount_remove_anon>, walk_object_based, scan_mapped_object_pages,
                                 object_based_object_work};
  static const rmap_ops anon_vma_chain{rmap_scheme::anon_vma_chain, false, true, true, nullptr, nullptr,
                                       mapcount_dup_anon, mapcount_remove_anon, remove_anon_word<mapcount_remove_anon>, walk_object_based,
                                       scan_mapped_object_pages, object_based_object_work};
  switch (s) {
    case rmap_scheme::none: return none;
    case rmap_scheme::pte_chain: return pte_chain;
    case rmap_scheme::anon_vma: return anon_vma;
    case rmap_scheme::anon_vma_chain: return anon_vma_chain;
  }
  return none;
}

status rmap_policy_finish(kernel_profile& p) {
  if (!rmap_ops_for(p.rmap.scheme).per_page_state) return {};
  if (p.rmap.pte_addr_bytes == 0) {
    // 2.6.0 asm-i386/pgtable.h: HIGHPTE with HIGHMEM64G (PAE) makes it a u64 physical
    // address; HIGHPTE without PAE a u32; otherwise a pte_t pointer (sizeof(long)).
    const bool pae_highpte = p.zones.highpte && p.paging.pte().entry_bytes == 8 && p.paging.task_size <= (uint64_t{1} << 32);
    p.rmap.pte_addr_bytes = pae_highpte ? 8 : p.objs.slab.word_size;
  }
  if (p.rmap.pte_chain_slots == 0) {
    // NRPTE = (L1_CACHE_BYTES - sizeof(long)) / sizeof(pte_addr_t)
    const uint32_t per = (p.objs.slab.cache_line - p.objs.slab.word_size) / std::max(1u, p.rmap.pte_addr_bytes);
    if (per < 2)
      return status::invalid_argument("a " + std::to_string(p.objs.slab.cache_line) +
                                      "-byte cache line leaves no room for a pte_chain's slots (NRPTE < 2); "
                                      "set pte_chain_slots");
    p.rmap.pte_chain_slots = per;
  }
  return {};
}

}  // namespace vmlab
