#include "model/vmscan.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/filemap.h"
#include "model/kernel.h"

namespace vmlab {
namespace {

// SWAP_CLUSTER_MAX (include/linux/swap.h, 2.4 - 6.x): the PTEs one swap_out pass aims at,
// and the smallest highmem watermark.
constexpr uint64_t kSwapClusterMax = 32;
// Pages reclaim looks at together: a run off the list's head is cut to this, so that the
// mappings of a chunk are gathered once (one pass over the VMAs of its object).
constexpr uint64_t kChunk = 512;
constexpr uint64_t kChunkWords = kChunk / 64;

bool evictable(const kernel& k, int32_t obj) { return k.objects[size_t(obj)].kind == object_kind::file; }

uint64_t free_pages(const kernel& k) { return k.pm.total_pages() - k.pm.used(); }

uint64_t int_sqrt(uint64_t x) {
  auto r = uint64_t(std::sqrt(double(x)));
  while (r * r > x) --r;
  while ((r + 1) * (r + 1) <= x) ++r;
  return r;
}

void push_tail(kernel& k, int32_t obj, uint64_t pg, uint64_t n) {
  auto& runs = k.lru.runs;
  if (!runs.empty() && runs.back().obj == obj && runs.back().pg + runs.back().n == pg &&
      runs.back().n + n <= UINT32_MAX) {
    runs.back().n += uint32_t(n);
  } else {
    runs.push_back({obj, uint32_t(n), pg});
  }
  k.lru.nr_pages += n;
}

// What the page tables say about a chunk of pages [pg, pg + n) of one object: every VMA
// that maps part of it, the PTEs and covering VMAs per page, and the pages reclaim must
// leave mapped (an mlocked VMA, a shared page table maps them).
struct chunk_map {
  mm_struct* mm;
  const vm_area_struct* v;
  uint64_t mask[kChunkWords];  // chunk pages whose PTE in this VMA maps the object page
};

struct chunk {
  int32_t obj = -1;
  uint64_t pg = 0, n = 0;
  std::vector<chunk_map> maps;
  uint32_t ptes[kChunk];
  uint32_t covering[kChunk];
  uint64_t keep[kChunkWords];
};

void gather(kernel& k, chunk& c) {
  std::fill(std::begin(c.ptes), std::end(c.ptes), 0u);
  std::fill(std::begin(c.covering), std::end(c.covering), 0u);
  std::fill(std::begin(c.keep), std::end(c.keep), 0ull);
  c.maps.clear();
  const uint8_t shift = k.geo.shift;
  const vaddr span = k.geo.table_span();
  for (auto& mm_entry : k.mms) {
    mm_struct* mm = mm_entry.second.get();
    for (const auto& vma_entry : mm->vmas) {
      const vm_area_struct& v = vma_entry.second;
      if (v.object != c.obj) continue;
      const uint64_t lo = std::max(c.pg, v.pgoff), hi = std::min(c.pg + c.n, v.pgoff + v.pages(shift));
      if (lo >= hi) continue;
      for (uint64_t p = lo; p < hi; ++p) ++c.covering[p - c.pg];
      chunk_map m{mm, &v, {}};
      bool any = false;
      const vaddr end = v.addr_of(hi, shift);
      for (vaddr a = v.addr_of(lo, shift); a < end;) {
        const vaddr base = k.geo.table_base(a);
        const vaddr tend = std::min(base + span, end);
        const pte_ref t = pte_lookup(k, *mm, a);
        if (!t) {
          a = std::max(tend, pte_walk_skip(k, *mm, a));
          continue;
        }
        // Chunk index of entry i of this table: i + off.
        const int64_t off = int64_t(v.pgoff_at(a, shift)) - int64_t(c.pg) - int64_t(k.geo.index(a));
        const uint32_t i0 = k.geo.index(a), i1 = uint32_t(k.geo.pages(tend - base));
        const bool keep = v.locked || t->shared_pt;
        for (uint32_t w = i0 / 64; w * 64 < i1; ++w) {
          uint64_t bits = t->word(w) & ~t->anon_word(w);
          if (w * 64 < i0) bits &= ~uint64_t{0} << (i0 - w * 64);
          if (i1 - w * 64 < 64) bits &= (uint64_t{1} << (i1 - w * 64)) - 1;
          for (; bits; bits &= bits - 1) {
            const auto ci = uint64_t(int64_t(w * 64 + uint32_t(__builtin_ctzll(bits))) + off);
            ++c.ptes[ci];
            m.mask[ci / 64] |= uint64_t{1} << (ci % 64);
            if (keep) c.keep[ci / 64] |= uint64_t{1} << (ci % 64);
            any = true;
          }
        }
        a = tend;
      }
      if (any) c.maps.push_back(m);
    }
  }
}

// Clears the PTEs of chunk pages `evict` in every VMA that maps them (try_to_unmap), a
// run of consecutive pages at a time.
void unmap_chunk(kernel& k, const chunk& c, const uint64_t* evict) {
  const uint8_t shift = k.geo.shift;
  for (const chunk_map& m : c.maps) {
    uint64_t run_start = 0;
    bool in_run = false;
    for (uint64_t i = 0; i <= c.n; ++i) {
      const bool on = i < c.n && ((m.mask[i / 64] & evict[i / 64]) >> (i % 64)) & 1;
      if (on && !in_run) {
        run_start = i;
        in_run = true;
      } else if (!on && in_run) {
        zap_range(k, *m.mm, *m.v, m.v->addr_of(c.pg + run_start, shift), m.v->addr_of(c.pg + i, shift), false);
        in_run = false;
      }
    }
  }
  k.forget_walks();
}

// 2.4's swap_out(): scans the processes' page tables round robin from (swap_pid,
// swap_address), clearing the referenced bit of a mapped file page it meets, or, when
// the page is unreferenced, its PTE, until `want` PTEs are cleared or every process was
// scanned twice. VM_LOCKED VMAs are skipped (swap_out_vma). Only file VMAs are scanned:
// their pages are the only ones without swap that a cleared PTE makes reclaimable.
void swap_out(kernel& k, uint64_t want) {
  lru_state& l = k.lru;
  ++l.st.swap_out_calls;
  if (k.mms.empty()) return;
  note_mapped_max(k);
  const uint8_t shift = k.geo.shift;
  rmap_work w;
  uint64_t cleared = 0;
  auto it = k.mms.lower_bound(l.swap_pid);
  if (it == k.mms.end()) {
    it = k.mms.begin();
    l.swap_address = 0;
  }
  const size_t rounds = 2 * k.mms.size() + 1;
  for (size_t r = 0; r < rounds && cleared < want; ++r) {
    mm_struct& mm = *it->second;
    const vaddr from = it->first == l.swap_pid ? l.swap_address : 0;
    std::vector<std::pair<vaddr, const vm_area_struct*>> zaps;
    vaddr stop = 0;
    for (const auto& vma_entry : mm.vmas) {
      const vm_area_struct& v = vma_entry.second;
      if (v.vm_end <= from || v.is_anon() || v.locked || !evictable(k, v.object) || stop) continue;
      mem_object& o = k.objects[size_t(v.object)];
      for_each_pte_table(k, mm, v, [&](vaddr base, const pte_table* t, vaddr lo, vaddr hi) {
        if (stop || hi <= from) return;
        lo = std::max(lo, from);
        ++w.pt_walks;
        w.ptes_scanned += (hi - lo) >> shift;
        const uint32_t i0 = k.geo.index(lo), i1 = uint32_t(k.geo.pages(hi - base));
        for (uint32_t i = i0; i < i1 && !stop; ++i) {
          if (!t->test(i) || ((t->anon_word(i / 64) >> (i % 64)) & 1)) continue;
          const vaddr a = base + (vaddr{i} << shift);
          const uint64_t pg = v.pgoff_at(a, shift);
          if (o.referenced.test(pg)) {
            o.referenced.put(pg, false);  // age_page_up: the young bit cleared
            continue;
          }
          zaps.emplace_back(a, &v);
          if (++cleared >= want) stop = a + (vaddr{1} << shift);
        }
      });
    }
    for (const auto& [a, v] : zaps) zap_range(k, mm, *v, a, a + (vaddr{1} << shift), false);
    k.forget_walks();
    if (stop) {
      l.swap_pid = it->first;
      l.swap_address = stop;
      break;
    }
    if (++it == k.mms.end()) it = k.mms.begin();
    l.swap_pid = it->first;
    l.swap_address = 0;
  }
  w.unmapped = cleared;
  l.st.unmapped += cleared;
  l.st.work += w;
  k.rm.work += w;
}

}  // namespace

void vmscan_init(kernel& k) {
  const reclaim_policy& rp = k.prof.reclaim;
  lru_state& l = k.lru;
  const uint64_t page_kb = k.geo.size() / 1024;
  if (rp.rule == wmark_rule::zone_balance_ratio) {
    l.wmark_min = l.wmark_low = l.wmark_high = 0;
    for (zone_type z : {zone_type::dma, zone_type::dma32, zone_type::normal, zone_type::highmem}) {
      if (!k.pm.zone_present(z)) continue;
      const uint32_t ratio = rp.balance_ratio[z == zone_type::dma ? 0 : z == zone_type::highmem ? 2 : 1];
      const uint64_t m = std::clamp<uint64_t>(k.pm.zone_pages(z) / ratio, rp.balance_min, rp.balance_max);
      l.wmark_min += m;
      l.wmark_low += 2 * m;
      l.wmark_high += 3 * m;
    }
    return;
  }
  const uint64_t lowmem_kb = k.pm.low_pages() * page_kb;
  uint64_t mfk = std::clamp<uint64_t>(int_sqrt(lowmem_kb * 16), 128, rp.min_free_max_kb);
  if (rp.thp_min_free && k.prof.huge.thp && k.prof.huge.enabled != thp_mode::never) {
    uint64_t zones = 0;
    for (zone_type z : {zone_type::dma, zone_type::dma32, zone_type::normal})
      zones += k.pm.zone_present(z) ? 1 : 0;
    constexpr uint64_t kMigratePcptypes = 3;  // MIGRATE_UNMOVABLE, MOVABLE, RECLAIMABLE
    const uint64_t rec = k.pm.pageblock_pages() * zones * (2 + kMigratePcptypes * kMigratePcptypes);
    mfk = std::max(mfk, std::min(rec, k.pm.low_pages() / 20) * page_kb);
  }
  uint64_t mn = mfk / page_kb;
  if (k.pm.has_highmem())
    mn += std::clamp<uint64_t>(k.pm.zone_pages(zone_type::highmem) / 1024, kSwapClusterMax, 128);
  const uint64_t managed = k.pm.total_pages() - k.pm.used(page_use::reserved);
  const uint64_t step = std::max(mn / 4, managed * rp.scale_factor / 10000);
  l.wmark_min = mn;
  l.wmark_low = mn + step;
  l.wmark_high = mn + 2 * step;
}

void mark_referenced_range(kernel& k, int32_t obj, uint64_t pg, uint64_t n) {
  mem_object& o = k.objects[size_t(obj)];
  if (o.kind != object_kind::file) return;
  for_each_bit_word(pg, n, [&](uint64_t w, uint64_t bits) { o.referenced.word_ref(w) |= bits; });
}

void lru_add_word(kernel& k, int32_t obj, uint64_t w, uint64_t bits) {
  if (!evictable(k, obj)) return;
  for (uint64_t b = bits; b;) {
    const uint32_t lo = uint32_t(__builtin_ctzll(b));
    const uint64_t from = b >> lo;
    const uint32_t len = ~from == 0 ? 64 - lo : uint32_t(__builtin_ctzll(~from));
    push_tail(k, obj, w * 64 + lo, len);
    b = lo + len >= 64 ? 0 : b & (~uint64_t{0} << (lo + len));
  }
}

void lru_unadd(kernel& k, int32_t obj, uint64_t pg) {
  if (!evictable(k, obj)) return;
  lru_run& b = k.lru.runs.back();
  // REQUIRES: b.obj == obj && b.pg + b.n - 1 == pg.
  (void)pg;
  if (--b.n == 0) k.lru.runs.pop_back();
  --k.lru.nr_pages;
}

uint64_t shrink_page_cache(kernel& k, uint64_t nr) {
  lru_state& l = k.lru;
  const bool by_rmap = k.rmap->object_walk_work != nullptr;
  uint64_t freed = 0, scanned = 0, pending = 0, pending_ptes = 0;
  rmap_work w;
  // Every page may be looked at a few times (a second chance, then 2.4's wait for
  // swap_out); past that what is left cannot be evicted (mlocked, shared tables).
  const uint64_t limit = 4 * l.nr_pages + nr;
  chunk c;
  while (freed < nr && !l.runs.empty() && scanned < limit) {
    if (pending >= std::max(kSwapClusterMax, std::min(nr - freed, l.nr_pages))) {
      // As many PTEs as map the pages waiting (a page is freed only when its last goes).
      swap_out(k, pending_ptes);
      pending = pending_ptes = 0;
    }
    lru_run& head = l.runs.front();
    c.obj = head.obj;
    c.pg = head.pg;
    c.n = std::min<uint64_t>({head.n, kChunk, std::max<uint64_t>(nr - freed, 1)});
    head.pg += c.n;
    head.n -= uint32_t(c.n);
    if (head.n == 0) l.runs.pop_front();
    l.nr_pages -= c.n;
    mem_object& o = k.objects[size_t(c.obj)];
    gather(k, c);
    uint64_t evict[kChunkWords] = {};
    bool any_mapped = false;
    for (uint64_t i = 0; i < c.n; ++i) {
      const uint64_t pg = c.pg + i;
      if (!o.resident.test(pg)) continue;  // (not expected: the list holds cached pages only)
      ++scanned;
      const bool mapped = c.ptes[i] != 0;
      const bool keep = (c.keep[i / 64] >> (i % 64)) & 1;
      if (o.referenced.test(pg)) {
        // folio_check_references: the young PTEs (or the PG_referenced of an access) give
        // the page another round; page_referenced's walk finds them.
        o.referenced.put(pg, false);
        if (mapped && by_rmap) k.rmap->object_walk_work(k, c.obj, pg, c.covering[i], c.ptes[i], w);
        push_tail(k, c.obj, pg, 1);
        ++l.st.rotated;
        continue;
      }
      if (mapped && keep) {
        if (by_rmap) k.rmap->object_walk_work(k, c.obj, pg, c.covering[i], c.ptes[i], w);
        push_tail(k, c.obj, pg, 1);
        ++l.st.kept;
        continue;
      }
      if (mapped && !by_rmap) {
        // 2.4: nothing leads from the page to its PTEs; swap_out will clear some.
        push_tail(k, c.obj, pg, 1);
        ++pending;
        pending_ptes += c.ptes[i];
        continue;
      }
      if (mapped) {
        // Two walks, as shrink_folio_list does them: folio_check_references finds no young
        // PTE, then try_to_unmap clears them.
        k.rmap->object_walk_work(k, c.obj, pg, c.covering[i], c.ptes[i], w);
        k.rmap->object_walk_work(k, c.obj, pg, c.covering[i], c.ptes[i], w);
        l.st.unmapped += c.ptes[i];
        w.unmapped += c.ptes[i];
        any_mapped = true;
      }
      evict[i / 64] |= uint64_t{1} << (i % 64);
    }
    if (any_mapped) {
      note_mapped_max(k);
      unmap_chunk(k, c, evict);
    }
    for (uint64_t i = 0; i < c.n; ++i) {
      if (!((evict[i / 64] >> (i % 64)) & 1)) continue;
      const uint64_t pg = c.pg + i;
      if (o.dirty.test(pg)) l.st.written += filemap_write_and_wait(k, c.obj, pg, 1);  // pageout
      remove_from_page_cache(k, c.obj, pg);
      ++freed;
    }
  }
  if (pending && freed < nr) swap_out(k, pending_ptes);
  l.st.work += w;
  k.rm.work += w;
  l.st.scanned += scanned;
  l.st.reclaimed += freed;
  return freed;
}

void balance_pgdat(kernel& k, uint64_t need) {
  const uint64_t fr = free_pages(k), target = k.lru.wmark_high + need;
  if (fr < target) shrink_page_cache(k, target - fr);
}

std::string check_lru(const kernel& k) {
  uint64_t on_list = 0, cached = 0;
  std::vector<sparse_bitmap> seen(k.objects.size());
  for (const lru_run& r : k.lru.runs) {
    if (r.obj < 0 || size_t(r.obj) >= k.objects.size() || !evictable(k, r.obj))
      return "LRU run of object " + std::to_string(r.obj) + ", which is not a file";
    const mem_object& o = k.objects[size_t(r.obj)];
    for (uint64_t p = r.pg; p < r.pg + r.n; ++p) {
      if (!o.resident.test(p)) return "LRU page " + std::to_string(p) + " of object " + std::to_string(r.obj) + " is not cached";
      if (seen[size_t(r.obj)].test(p))
        return "LRU page " + std::to_string(p) + " of object " + std::to_string(r.obj) + " is on the list twice";
      seen[size_t(r.obj)].set(p);
    }
    on_list += r.n;
  }
  for (size_t i = 0; i < k.objects.size(); ++i) {
    const mem_object& o = k.objects[i];
    bool bad = false;
    o.referenced.for_each_word([&](uint64_t w, uint64_t bits) { bad |= (bits & ~o.resident.word(w)) != 0; });
    if (bad) return "object " + std::to_string(i) + " has referenced pages that are not cached";
    o.ra_mark.for_each_word([&](uint64_t w, uint64_t bits) { bad |= (bits & ~o.resident.word(w)) != 0; });
    if (bad || (o.kind != object_kind::file && o.ra_mark.any()))
      return "object " + std::to_string(i) + " has PG_readahead pages that are not cached pages of a file (readahead.h)";
    if (o.kind != object_kind::file) {
      if (o.referenced.any()) return "object " + std::to_string(i) + " is not a file but has referenced pages";
      continue;
    }
    cached += o.nr_resident;
  }
  if (on_list != k.lru.nr_pages)
    return "LRU runs hold " + std::to_string(on_list) + " pages, nr_pages says " + std::to_string(k.lru.nr_pages);
  if (on_list != cached)
    return "LRU holds " + std::to_string(on_list) + " pages, the files' page cache " + std::to_string(cached);
  return "";
}

}  // namespace vmlab
