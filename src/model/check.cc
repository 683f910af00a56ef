// check_invariants(): validate_mm for the model. Recounts every figure the model keeps
// incrementally — tables per level per mm and kernel-wide, VmPTE, PageTables, RSS, anon
// mapcounts, presence counts — from the trees themselves, and reports the differences.
// Property tests call it after every op.
#include <bit>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "model/kernel.h"
#include "vmlab/sim_kernel.h"

namespace vmlab {

// Invariant 7 of pgtable.h: the packed form's structure.
struct pte_table_check {
  static void packed_form(const pte_table& t, uint32_t entries, std::ostringstream& err) {
    if (!t.packed_) return;
    if (is_uniform(&t)) err << "a packed uniform PTE table; ";
    const uint64_t blocks = t.pk_.blocks;
    const int n = popcount64(blocks);
    if (n > kPackedBlocks) err << "a packed PTE table with " << n << " blocks; ";
    if (entries / 16 < 64 && blocks >> (entries / 16)) err << "a packed block past the table's entries; ";
    for (int k = 0; k < kPackedBlocks; ++k)
      if ((k < n) != (t.pk_.mask[k] != 0)) err << "packed block mask " << k << " of " << n << " is " << t.pk_.mask[k] << "; ";
  }
};

namespace {

// Invariant 8 of pgtable.h: a compact value's own structure (where it sits is walk's).
void check_compact_value(const void* v, uint32_t entries, std::ostringstream& err) {
  using L = compact_layout;
  const uint64_t x = L::bits(v);
  const uint64_t blocks = x >> L::kBlocksShift;
  if (entries / 16 > L::kMaxBlocks) err << "a compact PTE table of " << entries << " entries; ";
  if (entries / 16 < 32 && blocks >> (entries / 16)) err << "a compact block past the table's entries; ";
  const uint32_t b = uint32_t(x >> L::kIndexShift) & 31;
  const auto m = uint16_t(x >> L::kMaskShift);
  if (x & L::kPartial) {
    if (!((blocks >> b) & 1)) err << "a compact table's partial block " << b << " holds no entries; ";
    if (m == 0 || m == 0xffff) err << "a compact table's partial block is " << (m ? "full" : "empty") << "; ";
  } else if (b || m) {
    err << "a compact table with a partial block's bits but no partial block; ";
  }
  const uint64_t used = L::kTag | L::kPartial | uint64_t{31} << L::kIndexShift | uint64_t{0xffff} << L::kMaskShift |
                        ~uint64_t{0} << L::kBlocksShift;
  if (x & ~used) err << "a compact value with stray bits; ";
}

struct recount {
  std::set<const void*> nodes[kLevels];
  // Slots holding a uniform node or a compact PTE table, which are not nodes of their own:
  // one page each (pgtable.h).
  uint64_t value_refs[kLevels] = {};
  std::unordered_map<uint32_t, uint32_t> anon_refs;  // shared anonymous pages: PTEs per id
  uint64_t exclusive_anon = 0;                       // anonymous pages mapped once, without id
  // PTEs per mapped object page, sparse: an object may be far larger than what is mapped
  // of it (a 512 GiB segment with a few pages touched), and the check runs after every op.
  std::vector<std::unordered_map<uint64_t, uint32_t>> obj_refs;
  // Huge leaves: huge anonymous pages by id (leaves mapping each), shmem folios by
  // (object, chunk) (PMD leaves mapping each).
  std::unordered_map<uint32_t, uint32_t> huge_refs;
  std::map<std::pair<int32_t, uint64_t>, uint32_t> pmd_maps;
  uint64_t thp_pages = 0;  // pages of PMD-mapped THPs that no PTE maps anywhere (no subpage ids)
  // Shared page tables (ptshare.h): references to each top node, and the entries of all
  // shared subtrees, counted once (in no mm's RSS).
  std::unordered_map<const void*, uint32_t> shared_refs;
  mm_rss shared_rss;
  std::ostringstream err;
};

// A huge leaf at slot i of d (huge.h invariant 4 and what it maps).
// `in_shared`: d is in a shared subtree, whose entries count in rss = the shared ones.
void walk_leaf(const kernel& k, const mm_struct& mm, const pt_dir* d, uint32_t i, int idx, vaddr base, recount& rc,
               level_counts& mm_tables, mm_rss& rss, bool in_shared) {
  const paging_format& f = k.prof.paging;
  auto it = mm.vmas.upper_bound(base);
  const vm_area_struct* v = nullptr;
  if (it != mm.vmas.begin() && std::prev(it)->second.vm_end > base) v = &std::prev(it)->second;
  if (!v) { rc.err << "huge leaf outside any VMA at 0x" << fmt_hex(base) << "; "; return; }
  const uint64_t pages = f.at(idx).leaf_size() >> k.geo.shift;
  // A leaf larger than its entry: in the entry of its aligned address, the rest of its
  // span empty (arch.h invariant 5).
  if (const uint32_t stride = f.at(idx).leaf_stride(); stride > 1) {
    if (i & (stride - 1)) rc.err << "a huge leaf off its aligned entry at 0x" << fmt_hex(base) << "; ";
    for (uint32_t j = i + 1; j < (i | (stride - 1)) + 1 && j < d->entries; ++j)
      if (d->slot[j]) rc.err << "an entry inside the span of the huge leaf at 0x" << fmt_hex(base) << "; ";
  }
  const uint32_t id = d->page_of(i);
  if (is_compact(d->slot[i])) {
    rc.err << "a compact value as a huge leaf's deposit at 0x" << fmt_hex(base) << "; ";
  } else if (d->slot[i] != no_deposit()) {
    // An anonymous THP's (or the huge zero page's) deposited table: a PTE-level node of
    // this mm, empty until the PMD is split.
    const auto* t = static_cast<const pte_table*>(d->slot[i]);
    const level pte = f.pte().lvl;
    rc.nodes[static_cast<int>(pte)].insert(t);
    ++mm_tables[static_cast<int>(pte)];
    if (t->nr_present || t->owns_bitmap() || t->is_full()) rc.err << "a deposited table has entries; ";
    if (!v->is_anon() || idx != f.nr_levels - 2) rc.err << "a deposit under a leaf that is not an anonymous PMD; ";
  }
  if (in_shared && !(v->is_hugetlb() && is_mshare_vma(k, *v)))
    rc.err << "a huge leaf in a shared page-table subtree (only an mshare region's hugetlb pages are) at 0x" << fmt_hex(base) << "; ";
  if (v->is_hugetlb()) {
    if (f.at(idx).leaf_size() != bytes{1} << v->huge_shift) rc.err << "hugetlb leaf of the wrong size at 0x" << fmt_hex(base) << "; ";
    if (id) ++rc.huge_refs[id];
    if (k.prof.huge.hugetlb_in_rss) rss.file += pages;
    return;
  }
  if (v->is_anon()) {
    if (!id) return;  // the huge zero page
    rss.anon += pages;
    ++rc.huge_refs[id];
    const huge_anon& h = k.huge.anons[id];
    if (h.subpages)
      for (uint32_t j = 0; j < pages; ++j) ++rc.anon_refs[h.subpages + j];
    return;
  }
  if (id) rc.err << "a huge anonymous page under a file leaf; ";
  (k.objects[v->object].kind == object_kind::file ? rss.file : rss.shmem) += pages;
  const uint64_t pg = v->pgoff_at(base, k.geo.shift);
  for (uint64_t j = 0; j < pages; ++j) ++rc.obj_refs[static_cast<size_t>(v->object)][pg + j];
  ++rc.pmd_maps[{v->object, pg / pages}];
}

void walk(const kernel& k, const mm_struct& mm, int idx, const void* node, vaddr base, recount& rc,
          level_counts& mm_tables, mm_rss& rss, bool in_shared = false) {
  const paging_format& f = k.prof.paging;
  const level l = f.at(idx).lvl;
  const bool uniform = is_uniform(node);
  const bool compact = is_compact(node);
  const bool shared = is_shared_pt(k, idx, node);
  if (in_shared && !shared) rc.err << "a private node inside a shared page-table subtree; ";
  if (!in_shared && shared) {
    // The top of a shared subtree (ptshare.h): this mm's own reference, which its VmPTE
    // counts. What is below is walked once, for the first mm that reaches it, and is
    // charged to no mm: its entries go to shared_rss.
    const auto key = k.pts.key_of.find(node);
    if (key == k.pts.key_of.end()) rc.err << "a shared page-table page that is not registered; ";
    else if (!key->second.host) ++mm_tables[static_cast<int>(l)];  // an mshare page is the host mm's
    ++rc.shared_refs[node];
    if (rc.nodes[static_cast<int>(l)].count(node)) return;
  } else if (!in_shared) {
    ++mm_tables[static_cast<int>(l)];
  }
  in_shared = in_shared || shared;
  mm_rss& entry_rss = in_shared ? rc.shared_rss : rss;
  if (uniform) {
    if (in_shared) rc.err << "a uniform node inside a shared page-table subtree; ";
    ++rc.value_refs[static_cast<int>(l)];
    if (node != k.store.uniform(idx, true) && node != k.store.uniform(idx, false)) rc.err << "a uniform node of another level; ";
  } else if (compact) {
    if (in_shared) rc.err << "a compact PTE table inside a shared page-table subtree; ";
    if (idx != f.nr_levels - 1) { rc.err << "a compact value above the PTE level; "; return; }
    check_compact_value(node, f.pte().entries, rc.err);
    ++rc.value_refs[static_cast<int>(l)];
  } else {
    rc.nodes[static_cast<int>(l)].insert(node);
  }
  if (idx == f.nr_levels - 1) {
    const pte_ref ref(k.store, node);
    const pte_table* t = ref.get();
    if (uniform && (t->packed() || t->writable() || t->anonmap() || t->anon() || (t->nr_present && !t->is_full())))
      rc.err << "a uniform PTE table with per-entry state; ";
    pte_table_check::packed_form(*t, f.pte().entries, rc.err);
    uint32_t n = 0;
    // A word at a time, then the present entries only: a sparse table (one entry in 512,
    // as a stride touch leaves it) costs a few word tests, not 512 entry tests.
    if (t->anon())
      for (uint32_t i = 0; i < f.pte().entries; ++i)
        if (t->anon()[i] && !((t->anon_word(i >> 6) >> (i & 63)) & 1))
          rc.err << "anon id on an entry without its anonmap bit; ";
    for (uint32_t w = 0; w * 64 < f.pte().entries; ++w) {
      const uint64_t present = t->word(w);
      if (t->anon_word(w) & ~present) rc.err << "anonmap bit on a non-present entry; ";
      if (t->writable_word(w) & ~present) rc.err << "writable bit on a non-present entry; ";
      for (uint64_t m = present; m; m &= m - 1) {
        const uint32_t i = w * 64 + uint32_t(__builtin_ctzll(m));
        const bool is_anon = (t->anon_word(w) >> (i & 63)) & 1;
        ++n;
        const vaddr a = base + (vaddr{i} << k.geo.shift);
        auto it = mm.vmas.upper_bound(a);
        const vm_area_struct* v = nullptr;
        if (it != mm.vmas.begin() && std::prev(it)->second.vm_end > a) v = &std::prev(it)->second;
        if (!v) { rc.err << "present PTE outside any VMA at 0x" << fmt_hex(a) << "; "; continue; }
        if (uniform && !entries_stateless(k, *v))
          rc.err << "a uniform PTE table under a VMA that keeps per-entry state at 0x" << fmt_hex(a) << "; ";
        const uint32_t id = t->anon() ? t->anon()[i] : 0;
        if (is_anon) {
          ++entry_rss.anon;
          if (id) ++rc.anon_refs[id];
          else ++rc.exclusive_anon;
        } else if (!v->is_anon()) {
          (k.objects[v->object].kind == object_kind::file ? entry_rss.file : entry_rss.shmem)++;
          ++rc.obj_refs[static_cast<size_t>(v->object)][v->pgoff_at(a, k.geo.shift)];
        }
      }
    }
    if (n != t->nr_present) rc.err << "nr_present " << t->nr_present << " != " << n << "; ";
    if (!t->is_full() && n == f.pte().entries) rc.err << "full table not shared; ";
    return;
  }
  const auto* d = static_cast<const pt_dir*>(node);
  uint32_t used = 0, leaves = 0;
  for (uint32_t i = 0; i < d->entries; ++i) {
    if (!d->slot[i]) {
      if (d->is_leaf(i) || d->leaf_writable(i) || d->page_of(i)) rc.err << "leaf bits on an empty slot; ";
      continue;
    }
    ++used;
    const vaddr b = base + (vaddr{i} << f.at(idx).shift);
    if (d->is_leaf(i)) {
      ++leaves;
      walk_leaf(k, mm, d, i, idx, b, rc, mm_tables, entry_rss, in_shared);
      continue;
    }
    walk(k, mm, idx + 1, d->slot[i], b, rc, mm_tables, rss, in_shared);
  }
  if (used != d->nr_used) rc.err << "nr_used " << d->nr_used << " != " << used << "; ";
  if (leaves != d->nr_leaves) rc.err << "nr_leaves " << d->nr_leaves << " != " << leaves << "; ";
}

// huge.h invariants: the entire mapcounts, the THP counters, the shmem folios and their
// PMD mappings, the hugetlb pools and their reservations. Adds the pages of PMD-mapped
// THPs not yet split anywhere to anon_pages.
void check_huge(const kernel& k, recount& rc, uint64_t& anon_pages) {
  const uint64_t pmd_pages = k.geo.entries;
  uint64_t thps = 0;
  std::vector<uint64_t> private_pages(k.huge.hstates.size(), 0);
  for (uint32_t id = 1; id < k.huge.anons.size(); ++id) {
    const huge_anon& h = k.huge.anons[id];
    const uint32_t refs = rc.huge_refs.count(id) ? rc.huge_refs.at(id) : 0;
    if (!h.live) {
      if (refs) rc.err << "huge page " << id << " mapped but released; ";
      continue;
    }
    if (h.entire != refs) rc.err << "huge page " << id << " entire mapcount " << h.entire << " != leaves " << refs << "; ";
    if (h.entire == 0) rc.err << "huge page " << id << " alive without a PMD mapping; ";
    if (h.hstate >= 0) {
      ++private_pages[static_cast<size_t>(h.hstate)];
    } else {
      ++thps;
      if (!h.subpages) {
        anon_pages += pmd_pages;
        rc.thp_pages += pmd_pages;
      }
    }
  }
  if (k.huge.anon_thps != thps * pmd_pages) rc.err << "AnonHugePages " << k.huge.anon_thps << " != recount " << thps * pmd_pages << "; ";
  uint64_t folios = 0, pmd_mapped = 0;
  for (size_t o = 0; o < k.objects.size(); ++o) {
    const mem_object& obj = k.objects[o];
    folios += obj.huge_folio.popcount();
    for (uint64_t c = 0; c < obj.pmd_maps.size(); ++c) {
      auto it = rc.pmd_maps.find({int32_t(o), c});
      const uint32_t n = it == rc.pmd_maps.end() ? 0 : it->second;
      if (obj.pmd_maps[c] != n) rc.err << "object " << o << " folio " << c << " PMD maps " << obj.pmd_maps[c] << " != " << n << "; ";
      pmd_mapped += n ? pmd_pages : 0;
    }
  }
  if (k.huge.shmem_thps != folios * pmd_pages) rc.err << "ShmemHugePages " << k.huge.shmem_thps << " != recount; ";
  if (k.huge.shmem_pmdmapped != pmd_mapped) rc.err << "ShmemPmdMapped " << k.huge.shmem_pmdmapped << " != recount " << pmd_mapped << "; ";
  // The pools: every page in phys, in use = in a file or private, reservations accounted.
  uint64_t pool = 0;
  for (size_t x = 0; x < k.huge.hstates.size(); ++x) {
    const hstate& h = k.huge.hstates[x];
    if (h.free > h.nr || h.resv > h.free || h.surplus > h.nr) rc.err << "hstate " << (h.size() >> 10) << " kB counts inconsistent; ";
    pool += h.nr * (h.size() >> k.geo.shift);
    uint64_t in_files = 0, reserved = 0;
    for (const mem_object& obj : k.objects) {
      if (obj.huge_shift != h.shift) continue;
      in_files += obj.hpage.popcount();
      reserved += obj.hpage_resv.popcount();
    }
    std::set<const uint64_t*> resv_maps;
    for (const auto& [pid, mm] : k.mms)
      for (const auto& [start, v] : mm->vmas)
        if (v.resv && v.huge_shift == h.shift && resv_maps.insert(v.resv.get()).second) reserved += *v.resv;
    if (h.nr - h.free != in_files + private_pages[x])
      rc.err << "hstate " << (h.size() >> 10) << " kB: " << h.nr - h.free << " pages in use != " << in_files << " in files + "
             << private_pages[x] << " private; ";
    if (h.resv != reserved) rc.err << "hstate " << (h.size() >> 10) << " kB: HugePages_Rsvd " << h.resv << " != recount " << reserved << "; ";
  }
  if (pool != k.pm.used(page_use::hugetlb)) rc.err << "hugetlb pool pages " << k.pm.used(page_use::hugetlb) << " != recount " << pool << "; ";
  // A private mapping's resv_map (hugetlb.cc): its count is the pages of its live pieces
  // whose reservation no fault consumed; a map no VMA holds any more is gone.
  std::map<const uint64_t*, std::set<uint64_t>> covered;  // file huge page indices per map
  for (const auto& [pid, mm] : k.mms)
    for (const auto& [start, v] : mm->vmas) {
      if (!v.resv) continue;
      if (!v.is_hugetlb() || v.shared) { rc.err << "a reservation count on a VMA that is not private hugetlb; "; continue; }
      const uint64_t first = v.pgoff >> (v.huge_shift - k.geo.shift);
      std::set<uint64_t>& idx = covered[v.resv.get()];
      for (uint64_t i = 0, n = (v.vm_end - v.vm_start) >> v.huge_shift; i < n; ++i) idx.insert(first + i);
    }
  for (const auto& [key, idx] : covered) {
    auto it = k.huge.resv_consumed.find(key);
    uint64_t unused = 0;
    for (uint64_t i : idx)
      if (it == k.huge.resv_consumed.end() || !((i / 64 < it->second.size()) && ((it->second[i / 64] >> (i & 63)) & 1))) ++unused;
    if (*key != unused) rc.err << "private hugetlb reservations " << *key << " != unconsumed pages of the mapping " << unused << "; ";
  }
  for (const auto& [key, bits] : k.huge.resv_consumed)
    if (!covered.count(key)) rc.err << "a resv_map left behind by its mapping; ";
}

// rmap.h invariants 1-3: mapcounts, ReverseMaps, Mapped, and every pte_chain.
void check_rmap(const kernel& k, recount& rc) {
  uint64_t rss = 0;
  for (const auto& [pid, mm] : k.mms) {
    rss += mm->rss.anon + mm->rss.file + mm->rss.shmem;
    // hugetlb pages counted in RSS (2.5/2.6) never had an rmap.
    if (k.prof.huge.hugetlb_in_rss) rss -= mm->hugetlb_usage >> k.geo.shift;
  }
  rss += rc.shared_rss.anon + rc.shared_rss.file + rc.shared_rss.shmem;  // shared PTEs count once
  if (rss != k.rm.reverse_maps) rc.err << "ReverseMaps " << k.rm.reverse_maps << " != sum of RSS " << rss << "; ";
  uint64_t chains = 0, mapped_file = 0;
  auto check_chain = [&](uint32_t mapcount, uint32_t head, const char* what) {
    if (!head) return;
    if (mapcount == 0) rc.err << what << ": a pte_chain on an unmapped page; ";
    if (k.prof.rmap.collapse_on_remove && mapcount == 1) rc.err << what << ": a one-entry chain not collapsed; ";
    uint64_t n = 0;
    for (uint32_t c = head; c; c = k.rm.chain_next[c]) ++n;
    if (n != pte_chain_objects(k, mapcount))
      rc.err << what << ": " << n << " chain objects for mapcount " << mapcount << "; ";
    chains += n;
  };
  for (size_t o = 0; o < k.objects.size(); ++o) {
    const mem_object& obj = k.objects[o];
    const auto& refs = rc.obj_refs[o];
    mapped_file += refs.size();
    for (const auto& [pg, n] : refs)
      if (!obj.is_resident(pg)) { rc.err << "object " << o << " page " << pg << " mapped but not in the page cache; "; return; }
    if (obj.mapcount.empty()) continue;  // no per-page state under this scheme (rmap.h)
    // Only pages in the page cache can carry a mapcount or a chain: a page is faulted in
    // before it is mapped, and nothing drops pages from the cache. The scan skips the
    // empty words of the residency bitmap, so its cost follows what was touched.
    bool bad = false;
    obj.resident.for_each_word([&](uint64_t w, uint64_t word) {
      for (uint64_t bits = word; bits && !bad; bits &= bits - 1) {
        const uint64_t pg = (w << 6) + uint64_t(std::countr_zero(bits));
        if (pg >= obj.nr_pages) break;
        const auto it = refs.find(pg);
        const uint32_t n = it == refs.end() ? 0 : it->second;
        if (obj.mapcount[pg] != n) {
          rc.err << "object " << o << " page " << pg << " mapcount " << obj.mapcount[pg] << " != " << n << "; ";
          bad = true;
          return;
        }
        check_chain(obj.mapcount[pg], obj.chain[pg], "object page");
      }
    });
    if (bad) return;
  }
  if (mapped_file != count_mapped_object_pages(k))
    rc.err << "mapped file pages " << count_mapped_object_pages(k) << " != " << mapped_file << "; ";
  const uint64_t mapped_anon = rc.exclusive_anon + rc.anon_refs.size() + rc.thp_pages;
  if (mapped_anon != k.rm.mapped_anon) rc.err << "mapped anon pages " << k.rm.mapped_anon << " != " << mapped_anon << "; ";
  if (k.rmap->per_page_state) {
    for (const auto& [id, n] : rc.anon_refs) check_chain(n, k.pm.chain(id), "anon page");
    const kmem_cache* c = k.km.cache(kmem_kind::pte_chain);
    const uint64_t active = c->counters().active_objs;
    // The per-CPU one-deep cache holds an object the slab counts as allocated.
    if (active != chains && !(k.prof.rmap.percpu_one_deep && active == chains + 1))
      rc.err << "pte_chain active objects " << active << " != chains " << chains << "; ";
  }
}

// The page cache from scratch (filemap.h invariants): each object's index nodes per level
// from its cached pages, their slab objects, Cached, Dirty and Writeback.
void check_page_cache(const kernel& k, recount& rc) {
  uint64_t cached = 0, dirty = 0, writeback = 0, nodes = 0;
  for (size_t i = 0; i < k.objects.size(); ++i) {
    const mem_object& o = k.objects[i];
    if (o.kind == object_kind::hugetlb) continue;
    cached += o.nr_resident;
    const uint64_t d = o.dirty.popcount(), wb = o.writeback.popcount();
    if (d != o.nr_dirty || wb != o.nr_writeback) rc.err << "object " << i << " dirty/writeback counts differ; ";
    dirty += d;
    writeback += wb;
    o.dirty.for_each_word([&](uint64_t w, uint64_t bits) {
      if (bits & ~o.resident.word(w)) rc.err << "object " << i << " has a dirty page not in the page cache; ";
    });
    if (!k.km.cache(kmem_kind::radix_tree_node)) continue;
    // Nodes per level: level 1 = the words with a cached page (not a huge folio's),
    // level l = distinct w >> 6(l - 1); as many levels as the largest index needs.
    uint64_t max = 0;
    bool any = false;
    std::vector<uint64_t> per(12, 0), last(12, ~uint64_t{0});
    o.resident.for_each_word([&](uint64_t w, uint64_t bits) {
      any = true;
      max = w * 64 + 63 - uint64_t(__builtin_clzll(bits));
      if (!mem_object::test_bit(o.huge_folio, w * 64 / k.geo.entries)) {
        ++per[1];
        if (o.tree.node.empty() || !o.tree.node[0].get(w)) per[0] = 1;  // a bottom node is missing
      }
      for (uint32_t l = 2; l < per.size(); ++l)
        if ((w >> (6 * (l - 1))) != last[l]) {
          last[l] = w >> (6 * (l - 1));
          ++per[l];
        }
    });
    const uint8_t h = any ? page_cache_height(max) : 0;
    if (o.tree.height != h) rc.err << "object " << i << " radix tree height " << int(o.tree.height) << " != " << int(h) << "; ";
    if (h && per[0]) rc.err << "object " << i << " lacks a bottom radix_tree_node; ";
    for (uint32_t l = 1; l < per.size(); ++l) {
      const uint64_t want = l <= h ? per[l] : 0, have = l <= o.tree.nr.size() ? o.tree.nr[l - 1] : 0;
      if (want != have) rc.err << "object " << i << " has " << have << " radix_tree_nodes at level " << l << ", recount " << want << "; ";
      nodes += have;
    }
  }
  if (cached != k.fm.nr_cached) rc.err << "Cached " << k.fm.nr_cached << " != recount " << cached << "; ";
  if (dirty != k.fm.nr_dirty || writeback != k.fm.nr_writeback) rc.err << "Dirty/Writeback differ from the recount; ";
  if (const kmem_cache* c = k.km.cache(kmem_kind::radix_tree_node); c && c->counters().active_objs != nodes)
    rc.err << "radix_tree_node objects " << c->counters().active_objs << " != nodes " << nodes << "; ";
}

// Every slab cache is consistent, and holds exactly the objects the model has.
void check_kmem(const kernel& k, recount& rc) {
  uint64_t slab_pages = 0;
  for (const auto& c : k.km.caches)
    if (c) {
      if (std::string bad = c->check_invariants(); !bad.empty()) rc.err << c->name() << ": " << bad << "; ";
      slab_pages += c->pages();
    }
  if (slab_pages != k.pm.used(page_use::slab)) rc.err << "slab pages " << k.pm.used(page_use::slab) << " != " << slab_pages << "; ";
  uint64_t vmas = 0, avcs = 0;
  std::unordered_map<uint32_t, uint64_t> links, active;
  for (const auto& [pid, mm] : k.mms) {
    bool cache_seen = mm->mmap_cache == nullptr;  // find_vma's hint: one of this mm's VMAs
    for (const auto& [start, v] : mm->vmas) {
      cache_seen |= mm->mmap_cache == &v;
      ++vmas;
      avcs += v.avcs.size();
      if (v.anon_vma) ++active[v.anon_vma];
      if (k.rmap->anon_vma_objects && !k.rmap->anon_vma_chains && v.anon_vma) ++links[v.anon_vma];
      for (const auto& l : v.avcs) ++links[l.av];
      if (v.anon_vma && k.rmap->anon_vma_chains) {
        bool on = false;
        for (const auto& l : v.avcs) on |= l.av == v.anon_vma;
        if (!on) rc.err << "VMA at 0x" << fmt_hex(start) << " has no AVC to its own anon_vma; ";
      }
      if (v.anon_vma && !v.has_anon_vma) rc.err << "anon_vma without has_anon_vma; ";
    }
    if (!cache_seen) rc.err << "pid " << pid << "'s mmap_cache is none of its VMAs; ";
  }
  auto objs = [&](kmem_kind kind) { return k.km.cache(kind) ? k.km.cache(kind)->counters().active_objs : 0; };
  if (objs(kmem_kind::vm_area_struct) != vmas) rc.err << "vm_area_struct objects " << objs(kmem_kind::vm_area_struct) << " != VMAs " << vmas << "; ";
  if (objs(kmem_kind::mm_struct) != k.mms.size()) rc.err << "mm_struct objects != processes; ";
  if (objs(kmem_kind::anon_vma_chain) != avcs) rc.err << "anon_vma_chain objects " << objs(kmem_kind::anon_vma_chain) << " != AVCs " << avcs << "; ";
  uint64_t live = 0;
  std::unordered_map<uint32_t, uint64_t> children, root_refs;
  for (uint32_t id = 1; id < k.anon_vmas.size(); ++id) {
    const anon_vma& av = k.anon_vmas[id];
    if (!av.live) continue;
    ++live;
    if (av.parent != id) ++children[av.parent];
    if (av.root != id) ++root_refs[av.root];
  }
  if (objs(kmem_kind::anon_vma) != live) rc.err << "anon_vma objects " << objs(kmem_kind::anon_vma) << " != live anon_vmas " << live << "; ";
  for (uint32_t id = 1; id < k.anon_vmas.size(); ++id) {
    const anon_vma& av = k.anon_vmas[id];
    if (!av.live) continue;
    if (av.nr_vmas != links[id]) rc.err << "anon_vma " << id << " links " << av.nr_vmas << " != " << links[id] << "; ";
    if (!k.rmap->anon_vma_chains) {
      if (!av.nr_vmas) rc.err << "anon_vma " << id << " alive without VMAs; ";
      continue;
    }
    if (av.num_active_vmas != active[id]) rc.err << "anon_vma " << id << " num_active_vmas " << av.num_active_vmas << " != " << active[id] << "; ";
    const uint64_t self = av.root == id && av.nr_vmas ? 1 : 0;
    if (av.num_children != children[id] + self) rc.err << "anon_vma " << id << " num_children " << av.num_children << " != " << children[id] + self << "; ";
    const uint64_t refs = (av.nr_vmas ? 1 : 0) + (av.root == id ? root_refs[id] : 0);
    if (av.refcount != refs) rc.err << "anon_vma " << id << " refcount " << av.refcount << " != " << refs << "; ";
  }
}

}  // namespace

std::string sim_kernel::check_invariants() const {
  const kernel& k = *k_;
  const paging_format& f = k.prof.paging;
  recount rc;
  rc.obj_refs.resize(k.objects.size());
  std::map<uint32_t, level_counts> mm_tables;  // per mm: fragment levels pack per mm
  for (const auto& [pid, mmp] : k.mms) {
    const mm_struct& mm = *mmp;
    level_counts& tables = mm_tables[pid];
    mm_rss rss;
    walk(k, mm, 0, mm.pgd, 0, rc, tables, rss);
    if (tables != mm.nr_tables) rc.err << "pid " << pid << ": per-level table counts differ; ";
    bytes vmpte = 0;
    for (int i = 1; i < f.nr_levels; ++i)
      if (k.prof.counts_in_vmpte(f.at(i).lvl)) vmpte += tables[static_cast<int>(f.at(i).lvl)] * f.at(i).table_bytes();
    if (vmpte != mm.pgtables_bytes) rc.err << "pid " << pid << ": VmPTE " << mm.pgtables_bytes << " != recount " << vmpte << "; ";
    if (rss.anon != mm.rss.anon || rss.file != mm.rss.file || rss.shmem != mm.rss.shmem)
      rc.err << "pid " << pid << ": RSS anon/file/shmem " << mm.rss.anon << "/" << mm.rss.file << "/" << mm.rss.shmem
             << " != recount " << rss.anon << "/" << rss.file << "/" << rss.shmem << "; ";
    vaddr prev_end = 0;
    for (const auto& [start, v] : mm.vmas) {
      if (start != v.vm_start || v.vm_start >= v.vm_end || v.vm_start < prev_end) rc.err << "VMA order broken; ";
      prev_end = v.vm_end;
    }
  }
  bytes nr_pagetable = 0;
  uint64_t pages = 0;
  for (int i = 0; i < f.nr_levels; ++i) {
    const level l = f.at(i).lvl;
    const uint64_t n = rc.nodes[static_cast<int>(l)].size() + rc.value_refs[static_cast<int>(l)];
    if (n != k.pm.tables[static_cast<int>(l)]) rc.err << level_name(l) << " tables " << k.pm.tables[static_cast<int>(l)] << " != recount " << n << "; ";
    const bytes each = i == 0 ? k.prof.pgd_bytes() : f.at(i).table_bytes();
    // Backing pages, from first principles rather than pgalloc.cc's backing_pages(): whole
    // pages per table, slab objects packed kernel-wide, fragments packed per mm.
    uint64_t pg = 0;
    if (i == 0 && f.pgd_from_slab) pg = 0;
    else if (f.at(i).alloc == table_alloc::page) pg = n * (each / k.geo.size());
    else if (f.at(i).alloc == table_alloc::slab) pg = div_round_up(n, k.geo.size() / f.at(i).alloc_size());
    else
      for (const auto& [pid, mmp] : k.mms)
        pg += div_round_up(mm_tables[pid][static_cast<int>(l)], k.geo.size() / f.at(i).alloc_size());
    pages += pg;
    if (k.prof.counts_in_page_tables(l) && f.at(i).alloc != table_alloc::slab) nr_pagetable += pg * k.geo.size();
  }
  if (pages != k.pm.used(page_use::pgtable))
    rc.err << "page-table pages " << k.pm.used(page_use::pgtable) << " != recount " << pages << "; ";
  if (nr_pagetable != k.pm.nr_pagetable) rc.err << "PageTables " << k.pm.nr_pagetable << " != recount " << nr_pagetable << "; ";
  // Shared page tables: each top node's refcount is the mms that point at it, and the
  // partner map holds exactly the live top nodes.
  for (const auto& [node, refs] : rc.shared_refs) {
    const auto it = k.pts.key_of.find(node);
    if (it == k.pts.key_of.end()) continue;
    const uint32_t ref = pt_refcount(k, it->second.idx, const_cast<void*>(node));
    if (ref != refs) rc.err << "shared page-table page refcount " << ref << " != " << refs << " holders; ";
  }
  if (k.pts.key_of.size() != rc.shared_refs.size() || k.pts.shareable.size() != k.pts.key_of.size())
    rc.err << "shared page-table map holds " << k.pts.key_of.size() << " pages, " << rc.shared_refs.size() << " are held; ";
  uint64_t anon_pages = rc.exclusive_anon;
  check_huge(k, rc, anon_pages);
  for (const auto& [id, n] : rc.anon_refs) {
    ++anon_pages;
    if (k.pm.mapcount(id) != n) { rc.err << "anon page " << id << " mapcount " << k.pm.mapcount(id) << " != " << n << "; "; break; }
  }
  if (anon_pages != k.pm.used(page_use::anon))
    rc.err << "AnonPages " << k.pm.used(page_use::anon) << " != recount " << anon_pages << "; ";
  uint64_t cache = 0;
  for (const auto& o : k.objects) {
    const uint64_t n = o.resident.popcount();
    if (n != o.nr_resident) rc.err << "object residency count differs; ";
    cache += n;
  }
  if (cache != k.pm.used(page_use::cache)) rc.err << "page cache " << k.pm.used(page_use::cache) << " != recount " << cache << "; ";
  check_page_cache(k, rc);
  if (std::string lru = check_lru(k); !lru.empty()) rc.err << lru << "; ";
  check_rmap(k, rc);
  check_kmem(k, rc);
  return rc.err.str();
}

}  // namespace vmlab
