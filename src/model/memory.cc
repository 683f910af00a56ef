// Faults, the page walk and zap: the model's mm/memory.c (copy_page_range lives in
// fork.cc, free_pgd_range in free_pgtables.cc).
//
// Kernel (6.x unless noted): handle_mm_fault -> do_anonymous_page (read: zero page, no
// anon_vma), do_read_fault (fault-around via ->map_pages, then __do_fault), do_cow_fault,
// do_shared_fault, do_wp_page (reuse when the anon page is mapped once, else copy);
// zap_pte_range (+ CONFIG_PT_RECLAIM).
//
// Everything works a PTE page at a time on 64-entry words. A fault is counted per
// faulting access, as the kernel counts min_flt: fault-around maps several pages for one.
//
// Simplifications: shm and tmpfs pages never leave the page cache (no reclaim); shared
// file mappings use write-notify (a read-mapped page faults again on first write), shm
// does not; mprotect(PROT_WRITE) does not pre-set PTE write bits (6.x sets them for
// exclusive anon pages: one fault fewer per such page, no page-table difference).
#include <algorithm>

#include "model/kernel.h"
#include "model/readahead.h"

namespace vmlab {
namespace {

constexpr uint64_t bit(uint32_t i) { return uint64_t{1} << (i & 63); }

struct table_view {
  uint32_t entries;  // PTRS_PER_PTE
  uint32_t nwords;
};

table_view view_of(const kernel& k) { return {k.geo.entries, k.geo.entries / 64}; }

// Sets n bitmap words to v. The usual table's 8 words are a constant size, which the
// compiler stores as vectors; a size it cannot see became `rep stos`, whose start-up cost
// more than a whole run of faults (perf on the 1,500 x 300 GiB 1% scenario).
void fill_words(uint64_t* w, uint32_t n, uint64_t v) {
  if (n == 8) std::fill_n(w, 8, v);
  else std::fill_n(w, n, v);
}

// The bits of entries [from, to) that fall in bitmap word x.
uint64_t bits_in_word(uint32_t from, uint32_t to, uint32_t x) {
  const uint32_t lo = std::max(from, x * 64) - x * 64, hi = std::min(to, x * 64 + 64) - x * 64;
  return bit_span(lo, hi - lo);
}

// Sets mask[] bits [from, to) (entry indices).
void set_bits(uint64_t* mask, uint32_t from, uint32_t to) {
  if (from < to) for_each_bit_word(from, to - from, [&](uint64_t w, uint64_t m) { mask[w] |= m; });
}

// Object page behind entry i of the table at `base`.
uint64_t object_pg(const kernel& k, const vm_area_struct& vma, vaddr base, uint32_t i) {
  return vma.pgoff_at(base + (vaddr{i} << k.geo.shift), k.geo.shift);
}

// Object page behind bit 0 of word w of the table at `base` (negative when the VMA
// starts above it; such bits are never set for this VMA).
int64_t object_pg0(const kernel& k, const vm_area_struct& vma, vaddr base, uint32_t w) {
  return vma.pgoff_at_signed(base + w * k.geo.word_span(), k.geo.shift);
}

// A per-page bitmap of the object (page-cache residency, PG_readahead) for the object
// pages behind entries [64w, 64w+64) of the table at `base`, restricted to entries inside
// the VMA (others read as clear). Entry i maps object page p0 + i, so a word is one
// shifted window of the object's bitmap. Bits [0, all_set) of the bitmap are known to be
// set, and are not looked up (a page cache that holds the whole object).
uint64_t object_bits_word(const kernel& k, const vm_area_struct& vma, vaddr base, uint32_t w, const sparse_bitmap& bits,
                          uint64_t all_set = 0) {
  const uint8_t sh0 = k.geo.shift;
  const vaddr wlo = base + w * k.geo.word_span(), whi = wlo + k.geo.word_span();
  if (wlo >= vma.vm_start && whi <= vma.vm_end) {  // the usual word, inside the VMA
    const uint64_t p = vma.pgoff_at(wlo, sh0);
    return p + 64 <= all_set ? ~uint64_t{0} : bits.window(p);
  }
  const vaddr lo = std::max(wlo, vma.vm_start), hi = std::min(whi, vma.vm_end);
  if (lo >= hi) return 0;
  const uint32_t b0 = uint32_t((lo - wlo) >> sh0), b1 = uint32_t((hi - wlo) >> sh0);
  const uint64_t in_vma = bit_span(b0, b1 - b0);
  // Negative when the VMA starts inside the word; those entries are masked off.
  const int64_t p = object_pg0(k, vma, base, w);
  uint64_t v = 0;
  if (p >= 0 && uint64_t(p) + 64 <= all_set) v = ~uint64_t{0};
  else if (p >= 0) v = bits.window(uint64_t(p));
  else if (p > -64) v = bits.word(0) << uint64_t(-p);
  return v & in_vma;
}

// Forced inline, as map_object_word: a cold read fault calls each once, and as calls they
// were a tenth of its instructions (callgrind, BENCHMARKS.md "2026-12-07, tenth").
[[gnu::always_inline]] inline uint64_t resident_word(const kernel& k, const vm_area_struct& vma, vaddr base,
                                                     uint32_t w) {
  const mem_object& obj = k.objects[vma.object];
  return object_bits_word(k, vma, base, w, obj.resident, obj.nr_resident == obj.nr_pages ? obj.nr_pages : 0);
}

// Puts the object page behind entry i, not cached, into the page cache (filemap.h).
bool make_resident(kernel& k, const vm_area_struct& vma, vaddr base, uint32_t i) {
  const uint64_t pg = object_pg(k, vma, base, i);
  return add_to_page_cache_word(k, vma.object, pg / 64, uint64_t{1} << (pg % 64));
}

// Puts the object pages behind the entries of `cold` (one word, none of them cached) into
// the page cache; false (nothing changed) when they do not all fit. Entry b maps object
// page p0 + b: the bits land in one or two words of the object.
bool make_resident_word(kernel& k, const vm_area_struct& vma, vaddr base, uint32_t w, uint64_t cold) {
  if (!cold) return true;
  const int64_t p0 = object_pg0(k, vma, base, w);
  // Entries below the VMA start are never in `cold`: shift them out first.
  const uint32_t skip = p0 < 0 ? uint32_t(-p0) : 0;
  const uint64_t bits = cold >> skip, first = uint64_t(p0 + skip);
  const uint64_t ow = first / 64, r = first % 64;
  const uint64_t lo = bits << r, hi = r ? bits >> (64 - r) : 0;
  if (!add_to_page_cache_word(k, vma.object, ow, lo)) return false;
  if (hi && !add_to_page_cache_word(k, vma.object, ow + 1, hi)) {
    for (uint64_t b = lo; b; b &= ~(uint64_t{1} << (63 - __builtin_clzll(b))))  // last added first
      undo_add_to_page_cache(k, vma.object, ow * 64 + uint64_t(63 - __builtin_clzll(b)));
    return false;
  }
  return true;
}

uint64_t& rss_for_object(const kernel& k, mm_struct& mm, const vm_area_struct& vma) {
  return k.objects[vma.object].kind == object_kind::file ? mm.rss.file : mm.rss.shmem;
}

// Marks the entries in `m` (one word, none of them present yet) present.
void map_word(kernel& k, pte_table* t, uint32_t w, uint64_t m) {
  if (!m) return;
  k.store.set_present(t, w, m);
}

// Maps the object pages of `m` (one word, none present yet): page_add_rmap for each, in
// address order, then the PTEs. On ENOMEM (a pte_chain) the pages before the failing one
// stay mapped, as the kernel leaves them. `done` gets what was mapped.
[[gnu::always_inline]] inline bool map_object_word(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr base,
                                                   pte_table* t, uint32_t w, uint64_t m, uint64_t& done) {
  const bool ok = rmap_add_object_word(k, vma.object, object_pg0(k, vma, base, w), m, done);
  map_word(k, t, w, done);
  // The entries of a shared page table are in no mm's RSS counter (ptshare.h).
  if (!t->shared_pt) rss_for_object(k, mm, vma) += uint64_t(popcount64(done));
  return ok;
}

status pte_chain_enomem(const kernel& k) { return oom_status(k, "a pte_chain", gfp_zone::kernel); }

// Private/shared write-notify mappings track PTE write permission explicitly.
bool tracks_writable(const kernel& k, const vm_area_struct& vma) {
  return vma.is_cow() || (!vma.is_anon() && k.objects[vma.object].kind == object_kind::file);
}

// A write through a shared file mapping dirties the pages (do_shared_fault /
// wp_page_shared -> folio_mark_dirty; shmem's are not accounted: filemap.h).
void dirty_mapped_word(kernel& k, const vm_area_struct& vma, vaddr base, uint32_t w, uint64_t m) {
  if (vma.is_cow() || vma.is_anon() || k.objects[vma.object].kind != object_kind::file) return;
  for (uint64_t b = m; b; b &= b - 1)
    filemap_dirty_range(k, vma.object, object_pg(k, vma, base, w * 64 + uint32_t(__builtin_ctzll(b))), 1);
}

// The windows do_fault_around() maps in the PTE table at `base` under `vma`: around entry
// p, aligned down to fault_around_pages, clipped to the VMA and to this PTE page.
struct around_windows {
  uint32_t n;            // fault_around_pages (1: no fault-around)
  uint32_t first, last;  // the table's entries inside the VMA: [first, last)
  // [from, to) around entry p.
  [[nodiscard]] std::pair<uint32_t, uint32_t> at(uint32_t p) const {
    const uint32_t from = std::max(p & ~(n - 1), first);
    return {from, std::min(from + n, last)};
  }
};

around_windows around_of(const kernel& k, const vm_area_struct& vma, vaddr base) {
  const uint32_t entries = view_of(k).entries;
  const bool around = k.prof.fault_around_bytes > k.geo.size();  // should_fault_around
  return {around ? static_cast<uint32_t>(k.geo.pages(k.prof.fault_around_bytes)) : 1,
          vma.vm_start <= base ? 0 : uint32_t(k.geo.pages(vma.vm_start - base)),
          vma.vm_end >= base + k.geo.table_span() ? entries : uint32_t(k.geo.pages(vma.vm_end - base))};
}

std::pair<uint32_t, uint32_t> fault_around_window(const kernel& k, const vm_area_struct& vma, vaddr base, uint32_t p) {
  return around_of(k, vma, base).at(p);
}

// One read fault at entry p of a file/shm VMA (private or shared): do_read_fault. The
// fault-around window's cached pages are mapped first (do_fault_around maps them even
// when the faulting page itself is not cached), then the faulting page is read into the
// page cache if needed and mapped. `res`, when given, is the whole table's residency
// (resident_word per word), kept up to date here; `need`, when given, loses what got mapped.
status read_fault_readahead(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, pte_table* t, uint32_t p,
                            uint64_t* res, uint64_t* need);

status read_fault_at(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, pte_table* t, uint32_t p,
                     uint64_t* res, uint64_t* need) {
  if (mmap_readahead_applies(k, vma)) return read_fault_readahead(k, mm, vma, base, t, p, res, need);
  ++k.faults;
  ++mm.min_flt;
  const auto [from, to] = fault_around_window(k, vma, base, p);
  // The faulting page comes into the page cache first (before anything is mapped: an
  // allocation failure leaves the table as it was); the window's other cached pages are
  // then the same whether looked up before or after, as no other entry maps that page.
  const uint32_t pw = p >> 6;
  uint64_t cached_pw = res ? res[pw] : resident_word(k, vma, base, pw);
  if (!(cached_pw & bit(p))) {
    if (!make_resident(k, vma, base, p)) return oom_status(k, "a page-cache page", gfp_zone::highuser);
    cached_pw |= bit(p);
    if (res) res[pw] |= bit(p);
  }
  // The window spans words from/64 .. (to-1)/64: one by default (16 entries), up to the
  // whole table (fault_around_bytes' limit).
  for (uint32_t x = from >> 6; x <= (to - 1) >> 6; ++x) {
    const uint64_t cached = x == pw ? cached_pw : res ? res[x] : resident_word(k, vma, base, x);
    uint64_t done = 0;
    const bool ok = map_object_word(k, mm, vma, base, t, x, bits_in_word(from, to, x) & cached & ~t->word(x), done);
    if (need) need[x] &= ~done;
    if (!ok) return pte_chain_enomem(k);
  }
  return {};
}

// read_fault_at on a file mapping whose faults read ahead (readahead.h): fault-around
// first, over the cached pages without PG_readahead; then, if the faulting page is still
// unmapped, filemap_fault's readahead; a fault that read (or dropped its lock to read
// ahead) is retried, and the retry's fault-around maps what came in, the faulting page
// with it. Otherwise the faulting page alone is mapped (finish_fault, one PTE).
status read_fault_readahead(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, pte_table* t, uint32_t p,
                            uint64_t* res, uint64_t* need) {
  ++k.faults;
  ++mm.min_flt;
  const mem_object& obj = k.objects[vma.object];
  const around_windows aw = around_of(k, vma, base);
  const bool around = aw.n > 1;
  const std::pair<uint32_t, uint32_t> window = aw.at(p);
  const uint32_t from = window.first, to = window.second;  // named: the lambda below captures them
  const uint32_t w0 = from >> 6, w1 = (to - 1) >> 6;
  // filemap_map_pages over the window: maps the cached pages without PG_readahead that
  // are not mapped yet; every page it takes (mapped already or not) lowers mmap_miss.
  const auto fault_around = [&]() -> bool {
    if (!around) return true;
    uint64_t took = 0;
    for (uint32_t x = w0; x <= w1; ++x) {
      const uint64_t ok = bits_in_word(from, to, x) & resident_word(k, vma, base, x) & ~object_bits_word(k, vma, base, x, obj.ra_mark);
      took += uint64_t(popcount64(ok));
      uint64_t done = 0;
      const bool mapped = map_object_word(k, mm, vma, base, t, x, ok & ~t->word(x), done);
      if (need) need[x] &= ~done;
      if (!mapped) return false;
    }
    mmap_miss_hits(k, vma, took);
    return true;
  };
  if (!fault_around()) return pte_chain_enomem(k);
  if (t->test(p)) return {};  // VM_FAULT_NOPAGE
  const uint64_t pg = object_pg(k, vma, base, p);
  bool retry = true;
  if (obj.is_resident(pg)) {
    retry = mmap_async_readahead(k, vma, pg);
  } else {
    mmap_sync_readahead(k, vma, pg);
    if (!obj.is_resident(pg) && !make_resident(k, vma, base, p)) return oom_status(k, "a page-cache page", gfp_zone::highuser);
  }
  if (retry) {  // it read: pages anywhere in this table may be cached now
    if (res)
      for (uint32_t w = 0; w < t->nwords; ++w) res[w] = resident_word(k, vma, base, w);
    if (!fault_around()) return pte_chain_enomem(k);
  }
  if (!t->test(p)) {  // finish_fault: this page alone
    uint64_t done = 0;
    const bool mapped = map_object_word(k, mm, vma, base, t, p >> 6, bit(p), done);
    if (need) need[p >> 6] &= ~done;
    if (!mapped) return pte_chain_enomem(k);
  }
  return {};
}

// Read faults on every entry of `need`, in address order.
status read_fault_object(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, pte_table* t, uint64_t* need) {
  const table_view tv = view_of(k);
  uint64_t res[kMaxPteWords];
  for (uint32_t w = 0; w < tv.nwords; ++w) res[w] = need[w] || (w && need[w - 1]) || (w + 1 < tv.nwords && need[w + 1]) ? resident_word(k, vma, base, w) : 0;
  for (uint32_t w = 0; w < tv.nwords; ++w)
    while (need[w])
      if (status s = read_fault_at(k, mm, vma, base, t, w * 64 + uint32_t(__builtin_ctzll(need[w])), res, need); !s.ok())
        return s;
  return {};
}

// Write to a PTE that is present but not writable (do_wp_page): reuse an anon page that
// is mapped only here, otherwise copy (COW). Shared write-notify mappings just upgrade.
status wp_fault(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, pte_table* t, uint32_t i) {
  ++k.faults;
  ++mm.min_flt;
  const uint32_t w = i >> 6;
  k.store.ensure_writable(t);
  if (vma.is_cow()) {
    const bool was_anon = t->anon_word(w) & bit(i);
    const uint32_t id = t->anon() ? t->anon()[i] : 0;
    if (!(was_anon && (id == 0 || k.pm.mapcount(id) == 1))) {
      // wp_page_copy(): anon_vma_prepare, a new page, the old page's rmap goes.
      if (!vma.has_anon_vma)
        if (status s = anon_vma_prepare(k, mm, vma); !s.ok()) return s;
      if (!k.pm.alloc(page_use::anon, gfp_zone::highuser, 1))
        return oom_status(k, "an anonymous page (COW)", gfp_zone::highuser);
      ++k.cow_faults;
      if (id) {
        if (rmap_remove_anon(k, id)) k.pm.free(page_use::anon, 1);  // anon replaces anon: RSS unchanged
        t->anon()[i] = 0;
      } else {
        ++mm.rss.anon;  // replaces the zero page or a page-cache page
        if (!vma.is_anon()) {
          --rss_for_object(k, mm, vma);
          rmap_remove_object_word(k, vma.object, int64_t(object_pg(k, vma, base, i)), 1);
        }
        k.store.ensure_anonmap(t);
        t->anonmap()[w] |= bit(i);
      }
      page_add_anon_exclusive(k, 1);
    }
  }
  t->writable()[w] |= bit(i);
  dirty_mapped_word(k, vma, base, w, bit(i));
  return {};
}

// Write faults on not-present entries.
status write_fault_none(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, pte_table* t, uint32_t w, uint64_t m) {
  const uint64_t cold = vma.is_anon() ? 0 : uint64_t(popcount64(m & ~resident_word(k, vma, base, w)));
  const uint64_t cost = cold + (vma.shared ? 0 : uint64_t(popcount64(m)));
  if ((m & (m - 1)) && !k.pm.can_alloc(gfp_zone::highuser, cost)) {
    // Not everything fits: the kernel faults page by page, in address order, and fails at
    // the first page it cannot allocate; so do we.
    for (uint64_t b = m; b; b &= b - 1)
      if (status s = write_fault_none(k, mm, vma, base, t, w, b & (~b + 1)); !s.ok()) return s;
    return {};
  }
  if (vma.shared) {
    if (!make_resident_word(k, vma, base, w, m & ~resident_word(k, vma, base, w)))
      return oom_status(k, "a page-cache page", gfp_zone::highuser);
    uint64_t done = 0;
    const bool ok = map_object_word(k, mm, vma, base, t, w, m, done);
    if (tracks_writable(k, vma) && done) { k.store.ensure_writable(t); t->writable()[w] |= done; }
    dirty_mapped_word(k, vma, base, w, done);
    k.faults += uint64_t(popcount64(done));
    mm.min_flt += uint64_t(popcount64(done));
    return ok ? status{} : pte_chain_enomem(k);
  }
  // do_anonymous_page (write) or do_cow_fault: anon_vma_prepare, a fresh anonymous page
  // per entry (PageDirect: no rmap allocation).
  const uint64_t n = uint64_t(popcount64(m));
  if (!vma.is_anon() && !make_resident_word(k, vma, base, w, m & ~resident_word(k, vma, base, w)))
    return oom_status(k, "a page-cache page", gfp_zone::highuser);
  // As do_anonymous_page: anon_vma_prepare first (it stays if the page cannot be had).
  if (!vma.has_anon_vma)
    if (status s = anon_vma_prepare(k, mm, vma); !s.ok()) return s;
  if (!k.pm.alloc(page_use::anon, gfp_zone::highuser, n)) return oom_status(k, "an anonymous page", gfp_zone::highuser);
  page_add_anon_exclusive(k, n);
  k.store.ensure_writable(t);
  k.store.ensure_anonmap(t);
  t->anonmap()[w] |= m;
  t->writable()[w] |= m;
  map_word(k, t, w, m);
  mm.rss.anon += n;
  k.faults += n;
  mm.min_flt += n;
  return {};
}

// The child in slot x of directory d (level index child_idx), allocated when absent and
// `alloc`, made private when uniform. nullptr when absent (and *oom when out of memory).
// Materializing forgets the walk caches.
void* walk_slot(kernel& k, mm_struct& mm, pt_dir* d, uint32_t x, int child_idx, bool alloc, bool* oom) {
  void*& s = d->slot[x];
  if (!s) {
    if (!alloc) return nullptr;
    s = pt_alloc(k, mm, child_idx, d);
    if (!s) { *oom = true; return nullptr; }
    ++d->nr_used;
  }
  if (is_uniform(s) || is_compact(s)) pt_materialize(k, d, x, child_idx);
  return s;
}

}  // namespace

gfp_zone pte_gfp(const kernel& k) { return k.prof.zones.highpte ? gfp_zone::highuser : gfp_zone::kernel; }

namespace {

// pte_walk past its walk cache: dir_walk and walk_slot, x the slot in the PTE tables'
// directory.
pte_table* pte_walk_miss(kernel& k, mm_struct& mm, vaddr addr, uint32_t x, bool alloc, bool* oom) {
  const paging_format& f = k.prof.paging;
  const int last = f.nr_levels - 2;  // the directory that points at PTE tables
  pt_dir* d = dir_walk(k, mm, last, addr, alloc, oom);
  if (!d || d->is_leaf(x)) return nullptr;  // a huge page maps it: no table below
  void* s = walk_slot(k, mm, d, x, last + 1, alloc, oom);
  if (!s) return nullptr;
  if (last > 0) {  // dir_walk cached d, but materializing the table forgot it
    k.cache_dir_mm = &mm;
    k.cache_dir_base = addr & ~(f.at(last).table_span() - 1);
    k.cache_dir = d;
  }
  k.cache_mm = &mm;
  k.cache_base = k.geo.table_base(addr);
  k.cache_pte = static_cast<pte_table*>(s);
  return k.cache_pte;
}

// The walk cache's part, inline in fault_page (once per fault).
[[gnu::always_inline]] inline pte_table* pte_walk_inline(kernel& k, mm_struct& mm, vaddr addr, bool alloc, bool* oom) {
  const paging_format& f = k.prof.paging;
  const vaddr base = k.geo.table_base(addr);
  if (k.cache_mm == &mm && k.cache_base == base) return k.cache_pte;
  const int last = f.nr_levels - 2;  // the directory that points at PTE tables
  const uint32_t x = f.index(last, addr);
  // That directory from the walk cache, holding a private table: dir_walk's and
  // walk_slot's common case without their calls (random faults under one PMD page).
  if (last > 0 && k.cache_dir_mm == &mm && k.cache_dir_base == (addr & ~(f.at(last).table_span() - 1))) {
    const pt_dir* cd = k.cache_dir;
    if (void* s = cd->slot[x]; s && !cd->is_leaf(x) && !is_compact(s) && !is_uniform(s)) {
      k.cache_mm = &mm;
      k.cache_base = base;
      return k.cache_pte = static_cast<pte_table*>(s);
    }
  }
  return pte_walk_miss(k, mm, addr, x, alloc, oom);
}

}  // namespace

pte_table* pte_walk(kernel& k, mm_struct& mm, vaddr addr, bool alloc, bool* oom) {
  return pte_walk_inline(k, mm, addr, alloc, oom);
}

pte_ref pte_lookup(const kernel& k, const mm_struct& mm, vaddr addr) {
  const pt_dir* d = dir_lookup(k, mm, k.prof.paging.nr_levels - 2, addr);
  if (!d) return {};
  const uint32_t x = k.prof.paging.index(k.prof.paging.nr_levels - 2, addr);
  return d->is_leaf(x) ? pte_ref() : pte_ref(k.store, d->slot[x]);
}

vaddr pte_walk_skip(const kernel& k, const mm_struct& mm, vaddr addr) {
  const paging_format& f = k.prof.paging;
  const pt_dir* d = mm.pgd;
  for (int i = 0; i < f.nr_levels - 1; ++i) {
    const uint32_t x = f.index(i, addr);
    if (!d || d->is_leaf(x) || !d->slot[x]) {
      const vaddr entry = f.at(i).span();  // what one entry of this level maps
      // In the table that points at PTE tables: on to its next PTE table, a slot scan
      // rather than a walk from the PGD for every empty slot.
      uint32_t y = x + 1;
      if (d && i == f.nr_levels - 2)
        while (y < d->entries && (!d->slot[y] || d->is_leaf(y))) ++y;
      return (addr & ~(entry - 1)) + vaddr{y - x} * entry;
    }
    d = static_cast<const pt_dir*>(d->slot[x]);
  }
  return k.geo.table_base(addr) + k.geo.table_span();
}

pt_dir* dir_walk(kernel& k, mm_struct& mm, int idx, vaddr addr, bool alloc, bool* oom) {
  const paging_format& f = k.prof.paging;
  // The directory above PTE tables comes from the walk cache when it holds the one that
  // maps addr (a 2-level format's is the PGD itself).
  const bool pmd = idx == f.nr_levels - 2 && idx > 0;
  const vaddr dir_base = pmd ? addr & ~(f.at(idx).table_span() - 1) : 0;
  if (pmd && k.cache_dir_mm == &mm && k.cache_dir_base == dir_base) return k.cache_dir;
  pt_dir* d = mm.pgd;
  for (int i = 0; i < idx; ++i) {
    const uint32_t x = f.index(i, addr);
    if (d->is_leaf(x)) return nullptr;
    d = static_cast<pt_dir*>(walk_slot(k, mm, d, x, i + 1, alloc, oom));
    if (!d) return nullptr;
  }
  if (pmd) {
    k.cache_dir_mm = &mm;
    k.cache_dir_base = dir_base;
    k.cache_dir = d;
  }
  return d;
}

const pt_dir* dir_lookup(const kernel& k, const mm_struct& mm, int idx, vaddr addr) {
  const paging_format& f = k.prof.paging;
  const pt_dir* d = mm.pgd;
  for (int i = 0; i < idx && d; ++i) {
    const uint32_t x = f.index(i, addr);
    if (d->is_leaf(x)) return nullptr;
    d = static_cast<const pt_dir*>(d->slot[x]);
  }
  return d;
}

namespace {

status fault_table_locked(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, pte_table* t, const uint64_t* mask, bool write);

}  // namespace

status fault_table(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, const uint64_t* mask, bool write) {
  bool oom = false;
  if (pt_shareable_vma(k, vma) && !pte_lookup(k, mm, base) && !ptshare_prepare(k, mm, vma, base))
    return oom_status(k, "a page-table page", gfp_zone::kernel);
  pte_table* t = pte_walk(k, mm, base, true, &oom);
  if (!t) return oom_status(k, "a page-table page", pte_gfp(k));
  return fault_table_locked(k, mm, vma, base, t, mask, write);
}

namespace {

status fault_table_locked(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, pte_table* t, const uint64_t* mask, bool write) {
  const table_view tv = view_of(k);
  uint64_t need[kMaxPteWords];
  bool any_need = false;
  for (uint32_t w = 0; w < tv.nwords; ++w) { need[w] = mask[w] & ~t->word(w); any_need |= need[w] != 0; }

  if (write) {
    const bool wp_possible = tracks_writable(k, vma) && vma.writable();
    for (uint32_t w = 0; w < tv.nwords; ++w) {
      if (need[w]) if (status s = write_fault_none(k, mm, vma, base, t, w, need[w]); !s.ok()) return s;
      // Present but write-protected entries (COW, zero page, write-notify).
      if (wp_possible) {
        uint64_t wp = mask[w] & t->word(w) & ~t->writable_word(w) & ~need[w];
        for (; wp; wp &= wp - 1)
          if (status s = wp_fault(k, mm, vma, base, t, w * 64 + uint32_t(__builtin_ctzll(wp))); !s.ok()) return s;
      }
    }
    return {};
  }
  if (!any_need) return {};
  if (vma.is_anon()) {
    // do_anonymous_page, read: map the zero page; no anon_vma, no RSS.
    for (uint32_t w = 0; w < tv.nwords; ++w) {
      map_word(k, t, w, need[w]);
      k.faults += uint64_t(popcount64(need[w]));
      mm.min_flt += uint64_t(popcount64(need[w]));
    }
    return {};
  }
  return read_fault_object(k, mm, vma, base, t, need);
}

// What one fault may allocate, for the reclaim point in front of it: the fault-around
// window (or 2.4's read-around cluster, at most a PTE table's worth) and the tables above.
uint64_t fault_reclaim_need(const kernel& k) {
  return std::max<uint64_t>(k.geo.pages(k.prof.fault_around_bytes), 32) + k.prof.paging.nr_levels;
}

// The PTE table t at `base` of mm becomes compact slot value v (pgtable.h): its node goes
// back to the store, and the walk cache, which held it, forgets it (the directory above
// stays cached).
void install_compact(kernel& k, mm_struct& mm, vaddr base, pte_table* t, void* v) {
  const int above = k.prof.paging.nr_levels - 2;
  bool oom = false;
  pt_dir* d = dir_walk(k, mm, above, base, false, &oom);
  d->slot[k.prof.paging.index(above, base)] = v;
  k.store.free_pte_table(t);
  k.cache_mm = nullptr;
  ++k.tables_compacted;
}

}  // namespace

status fault_page(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr addr, bool write) {
  // Before the fault: reclaim may run (vmscan.h).
  reclaim_point(k, fault_reclaim_need(k));
  if (vma.is_hugetlb()) return hugetlb_fault_range(k, mm, vma, addr, addr + k.geo.size(), k.geo.size(), write);
  bool oom = false;
  pte_table* t = pte_walk_inline(k, mm, addr, false, &oom);
  if (!t) {
    // No PTE table: a huge page may map the range, or may be made to (huge.h).
    bool handled = false;
    status s = huge_pmd_fault(k, mm, vma, k.geo.table_base(addr), write, &handled);
    if (handled) return s;
    if (pt_shareable_vma(k, vma) && !ptshare_prepare(k, mm, vma, addr))
      return oom_status(k, "a page-table page", gfp_zone::kernel);
    t = pte_walk(k, mm, addr, true, &oom);
  }
  if (!t) return oom_status(k, "a page-table page", pte_gfp(k));
  const uint32_t i = k.geo.index(addr);
  const uint32_t w = i >> 6;
  const uint64_t b = bit(i);
  if (t->test(i)) {
    // Present: only a write to a write-protected entry faults.
    if (!write || !tracks_writable(k, vma) || (t->writable_word(w) & b)) return {};
  } else if (vma.is_anon() && !write) {
    map_word(k, t, w, b);  // the zero page
    ++k.faults;
    ++mm.min_flt;
    return {};
  } else if (vma.is_anon() || (vma.shared && write)) {
    return write_fault_none(k, mm, vma, k.geo.table_base(addr), t, w, b);
  } else if (!write) {
    return read_fault_at(k, mm, vma, k.geo.table_base(addr), t, i, nullptr, nullptr);
  }
  // Everything else (fault-around reads, COW of file pages, write-protect faults).
  uint64_t mask[kMaxPteWords] = {};
  mask[w] = b;
  return fault_table(k, mm, vma, k.geo.table_base(addr), mask, write);
}

namespace {

// Whether every fault-around window of the table is an aligned block of one word: the
// table inside the VMA end to end, a window of at most 64 entries (a power of two).
bool one_word_windows(const kernel& k, const around_windows& aw) {
  return aw.first == 0 && aw.last == k.geo.entries && aw.n <= 64;
}

// Whether entry 0 of the table at base maps the first page of an object word (REQUIRES: not
// anonymous). With one_word_windows, the table's words are its object's words: its
// residency is then a chunk of the object's bitmap (table_residency).
bool object_word_aligned(const kernel& k, const vm_area_struct& vma, vaddr base) {
  const int64_t pg0 = object_pg0(k, vma, base, 0);
  return pg0 >= 0 && pg0 % 64 == 0;
}

// Whether the windows are whole 16-entry blocks of one word, at most 32 to a table (a
// compact value's blocks): read_fault_windows' case.
bool whole_block_windows(const kernel& k, const around_windows& aw) {
  return aw.n <= 64 && aw.n % 16 == 0 && k.geo.entries <= 512;
}

// The page-cache residency of the object pages behind a table whose words are its
// object's (one_word_windows, object_word_aligned), its words
// into res, read as a chunk of the object's bitmap; whether they are all cached. Inline:
// called once per table of a warm batch, and GCC left it out of line (6% more
// instructions per warm client, bench/count-instructions.sh).
inline bool table_residency(const kernel& k, const vm_area_struct& vma, vaddr base, uint64_t* res) {
  const mem_object& obj = k.objects[vma.object];
  const auto pg0 = uint64_t(object_pg0(k, vma, base, 0));
  const table_view tv = view_of(k);
  if (obj.nr_resident == obj.nr_pages && pg0 + tv.entries <= obj.nr_pages) {
    fill_words(res, tv.nwords, ~uint64_t{0});
    return true;
  }
  obj.resident.words(pg0 / 64, tv.nwords, res);
  uint64_t all = ~uint64_t{0};
  for (uint32_t x = 0; x < tv.nwords; ++x) all &= res[x];
  return all == ~uint64_t{0};
}

// map_object_word's steps for the words named in `seen`, the PTEs set by the caller for
// the whole table at once: word w's pages cache[w] read into the page cache (no cache:
// none), then its entries map[w] given their mappings; the RSS gains them unless the table
// is shared. With no per-page rmap state (read_fault_run's REQUIRES) every page gets its
// mapping.
status map_object_words(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr base, const uint64_t* cache,
                        const uint64_t* map, uint32_t seen, bool shared_pt) {
  uint64_t mapped = 0;
  for (uint32_t x = seen; x; x &= x - 1) {
    const auto w = uint32_t(__builtin_ctz(x));
    if (cache && cache[w] && !make_resident_word(k, vma, base, w, cache[w]))
      return oom_status(k, "a page-cache page", gfp_zone::highuser);
    uint64_t done = 0;
    if (map[w] && !rmap_add_object_word(k, vma.object, object_pg0(k, vma, base, w), map[w], done)) return pte_chain_enomem(k);
    mapped += uint64_t(popcount64(map[w]));
  }
  if (!shared_pt) rss_for_object(k, mm, vma) += mapped;  // as map_object_word
  return {};
}

// The windows-only table (read_fault_windows) once it is known to be one: the empty slot
// `slot` of directory d gets it, as a compact value of full blocks.
status windows_table(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, pt_dir* d, uint32_t slot,
                     uint32_t windows, const around_windows& aw) {
  // Each window is one fault that maps all of it (the object pages are all cached): a
  // later access in it finds its page present.
  const int window_shift = __builtin_ctz(aw.n);
  const uint64_t window_mask = aw.n >= 64 ? ~uint64_t{0} : (uint64_t{1} << aw.n) - 1;
  const uint32_t blocks_per_window = aw.n / 16, window_blocks = (1u << blocks_per_window) - 1;
  uint64_t map[kMaxPteWords];
  fill_words(map, view_of(k).nwords, 0);  // not `= {}`: that is a `rep stos` of all kMaxPteWords
  uint32_t seen = 0, full_blocks = 0;
  for (uint32_t x = windows; x; x &= x - 1) {
    const auto i = uint32_t(__builtin_ctz(x));
    const uint32_t e = i << window_shift;
    map[e >> 6] |= window_mask << (e & 63);
    seen |= 1u << (e >> 6);
    full_blocks |= window_blocks << (i * blocks_per_window);
  }
  const auto faults = uint64_t(popcount64(windows));
  k.faults += faults;
  mm.min_flt += faults;
  if (status s = map_object_words(k, mm, vma, base, nullptr, map, seen, false); !s.ok()) return s;
  d->slot[slot] = k.store.compact_blocks(full_blocks);
  ++d->nr_used;
  return {};
}

// read_fault_run's most common case on its own: a PTE table not there yet, under the VMA
// end to end, whose object pages are all in the page cache, and fault-around windows of
// whole 16-entry blocks (at most 32 to a table). Then the order of the run's faults does
// not matter, only which windows they reach (bit i of `windows`: entries [i * n, i * n + n)):
// each is one fault that maps all of its window, and the table is a compact value of full
// blocks. *done false, nothing changed, when the table is not such a table. Same REQUIRES
// as read_fault_run (its reclaim point is the caller's), and the new table counted in
// *new_tables likewise.
status read_fault_windows(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, uint32_t windows,
                          uint64_t* new_tables, bool* done) {
  *done = false;
  const around_windows aw = around_of(k, vma, base);
  if (!windows || !one_word_windows(k, aw) || !whole_block_windows(k, aw) || !object_word_aligned(k, vma, base)) return {};
  if (uint64_t res[kMaxPteWords]; !table_residency(k, vma, base, res)) return {};
  bool oom = false;
  const int above = k.prof.paging.nr_levels - 2;
  pt_dir* d = dir_walk(k, mm, above, base, true, &oom);
  if (!d) return oom_status(k, "a page-table page", pte_gfp(k));
  const uint32_t slot = k.prof.paging.index(above, base);
  if (d->slot[slot]) return {};  // the table is there
  ++*new_tables;
  *done = true;
  return windows_table(k, mm, vma, base, d, slot, windows, aw);
}

}  // namespace

status read_fault_by_windows(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr map_base, uint64_t limit,
                             const std::vector<uint64_t>& pages, std::vector<uint64_t>* rest, uint64_t* new_tables,
                             bool* applied) {
  *applied = false;
  if (vma.is_anon()) return {};  // (its object index is -1)
  const mem_object& obj = k.objects[vma.object];
  const vaddr table0 = k.geo.table_base(map_base);
  const around_windows aw = around_of(k, vma, table0);  // its window size is every table's
  // Windows of whole blocks; fewer pages of the object out of the page cache than one per
  // two tables (with more, few tables would be all cached, and the pass would only add
  // work: under 1% random reads, the 690th reader of a segment is the first to find most
  // of its tables so); a mask per table of the mapping, no more of them than the batch
  // has pages.
  const uint64_t first = k.geo.index(map_base), tables = ((first + limit - 1) >> k.geo.index_bits()) + 1;
  if (!whole_block_windows(k, aw) ||
      (obj.nr_pages - obj.nr_resident) * 2 * k.geo.entries > obj.nr_pages || tables > pages.size())
    return {};
  *applied = true;
  reclaim_point(k, fault_reclaim_need(k));  // a no-op (REQUIRES), once for the pass's faults
  const int window_shift = __builtin_ctz(aw.n);
  const uint8_t index_bits = k.geo.index_bits();
  const uint64_t entry_mask = k.geo.entries - 1;
  // The masks: 4 bytes a table, 600 KiB for a 300 GiB mapping, set at random; each is
  // prefetched a few pages ahead, as the generator does its bitmap's words.
  constexpr size_t kAhead = 16;
  std::vector<uint32_t> windows(tables, 0);
  for (size_t j = 0; j < pages.size(); ++j) {
    if (j + kAhead < pages.size()) __builtin_prefetch(&windows[(first + pages[j + kAhead]) >> index_bits], 1);
    const uint64_t e = first + pages[j];
    windows[e >> index_bits] |= 1u << ((e & entry_mask) >> window_shift);
  }
  // The tables left to read_fault_run, a bit each (19 KiB for 300 GiB: the pass that
  // picks out their pages reads it, not the masks).
  std::vector<uint64_t> left((tables + 63) / 64, 0);
  uint64_t nr_left = 0;
  for (uint64_t t = 0; t < tables; ++t) {
    if (!windows[t]) continue;
    bool done = false;
    if (status s = read_fault_windows(k, mm, vma, table0 + t * k.geo.table_span(), windows[t], new_tables, &done); !s.ok())
      return s;
    if (done) {
      ++k.tables_by_windows;
    } else {
      left[t / 64] |= uint64_t{1} << (t % 64);
      ++nr_left;
    }
  }
  rest->clear();
  if (nr_left)
    for (const uint64_t pg : pages)
      if (const uint64_t t = (first + pg) >> index_bits; left[t / 64] >> (t % 64) & 1) rest->push_back(pg);
  return {};
}

status read_fault_run(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, const uint32_t* idx, size_t n,
                      uint64_t* new_tables) {
  if (!n) return {};
  // REQUIRES (faults_commute_across_tables) leaves anonymous and shm VMAs only: no hugetlb,
  // no file readahead. faults_fit_without_reclaim makes this, and every reclaim point of
  // the run, a no-op: nothing below allocates where it could fail or fall back.
  reclaim_point(k, fault_reclaim_need(k));
  // No huge PMD and no shared table can be met here (REQUIRES): the walk allocates. A
  // table that is not there yet gets no node (t stays null, an empty table) unless it
  // cannot end as a compact value, and is charged by the caller (*new_tables).
  bool oom = false;
  const int above = k.prof.paging.nr_levels - 2;
  pt_dir* d = dir_walk(k, mm, above, base, true, &oom);
  const uint32_t slot = k.prof.paging.index(above, base);
  pte_table* t = nullptr;
  if (d && !d->slot[slot]) ++*new_tables;
  else if (!d || !(t = pte_walk(k, mm, base, true, &oom))) return oom_status(k, "a page-table page", pte_gfp(k));
  // The faults as fault_page takes them, one by one in order, on the table's state as
  // they leave it: `pres` (present entries) and `res` (page-cache residency), each word
  // read when a fault first reaches it (bit x of `seen`). What they add is applied
  // afterwards: `cache` (pages read in) a word at a time, `map` (entries mapped) to the
  // rmap a word at a time and to the table at once.
  const bool anon = vma.is_anon();
  const around_windows aw = around_of(k, vma, base);
  const table_view tv = view_of(k);
  const bool word_windows = one_word_windows(k, aw);
  const uint64_t window_mask = aw.n >= 64 ? ~uint64_t{0} : (uint64_t{1} << aw.n) - 1;
  const uint32_t window_bits = 63 & ~(aw.n - 1);  // entry index within its word -> its window's first
  uint64_t pres[kMaxPteWords], res[kMaxPteWords], cache[kMaxPteWords], map[kMaxPteWords];
  uint32_t seen = 0;
  static_assert(kMaxPteWords <= 32);
  const auto reach = [&](uint32_t x) {
    if (seen >> x & 1) return;
    seen |= 1u << x;
    pres[x] = t ? t->word(x) : 0;
    res[x] = anon ? 0 : resident_word(k, vma, base, x);
    cache[x] = map[x] = 0;
  };
  // When the table's words are the object's words, every word is read at the start
  // instead, the residency a chunk of the bitmap at once.
  const bool whole_words = word_windows && !anon && object_word_aligned(k, vma, base);
  if (whole_words) {
    const bool all_cached = table_residency(k, vma, base, res);
    // A new table whose pages are all cached, with windows of whole 16-entry blocks: its
    // windows decide it (read_fault_windows).
    if (!t && all_cached && whole_block_windows(k, aw)) {
      const int window_shift = __builtin_ctz(aw.n);
      uint32_t windows = 0;  // at most 512 / 16 of them
      for (size_t j = 0; j < n; ++j) windows |= 1u << (idx[j] >> window_shift);
      return windows_table(k, mm, vma, base, d, slot, windows, aw);
    }
    if (t) {
      for (uint32_t x = 0; x < tv.nwords; ++x) pres[x] = t->word(x);
    } else {
      fill_words(pres, tv.nwords, 0);
    }
    fill_words(cache, tv.nwords, 0);
    fill_words(map, tv.nwords, 0);
  }
  uint64_t faults = 0;
  // read_fault_at on an object page p not present, its window an aligned block of word
  // pw: the page read in if it is not cached, then the window's cached pages mapped.
  const auto fault_in_word = [&](uint32_t p, uint32_t pw) {
    cache[pw] |= bit(p) & ~res[pw];
    res[pw] |= bit(p);
    const uint64_t m = window_mask << (p & window_bits) & res[pw] & ~pres[pw];
    pres[pw] |= m;
    map[pw] |= m;
  };
  if (whole_words) {
    // The loop below for an object's words read at the start (so word_windows, not anon).
    for (size_t j = 0; j < n; ++j) {
      const uint32_t p = idx[j], pw = p >> 6;
      seen |= 1u << pw;
      if (pres[pw] & bit(p)) continue;
      ++faults;
      fault_in_word(p, pw);
    }
  }
  for (size_t j = 0; j < (whole_words ? 0 : n); ++j) {
    const uint32_t p = idx[j], pw = p >> 6;
    reach(pw);
    if (pres[pw] & bit(p)) continue;  // present: a read does not fault
    ++faults;
    if (anon) {  // the zero page
      pres[pw] |= bit(p);
      map[pw] |= bit(p);
      continue;
    }
    if (word_windows) {
      fault_in_word(p, pw);
      continue;
    }
    // read_fault_at: the window's cached pages, the faulting page read in if it is not.
    cache[pw] |= bit(p) & ~res[pw];
    res[pw] |= bit(p);
    const auto [from, to] = aw.at(p);
    const uint32_t w0 = from >> 6, w1 = (to - 1) >> 6;
    for (uint32_t x = w0; x <= w1; ++x) {
      reach(x);
      const uint64_t m = bits_in_word(from, to, x) & res[x] & ~pres[x];
      pres[x] |= m;
      map[x] |= m;
    }
  }
  k.faults += faults;
  mm.min_flt += faults;
  if (!anon)
    if (status s = map_object_words(k, mm, vma, base, cache, map, seen, t && t->shared_pt); !s.ok()) return s;
  // The table as the run leaves it: a compact value when it can be one.
  if (!t) {
    d->slot[slot] = k.store.new_table(map, seen);
    ++d->nr_used;
  } else if (void* v = k.store.compact(t, map, seen)) {
    install_compact(k, mm, base, t, v);
  } else {
    k.store.set_present_words(t, map, seen);
  }
  return {};
}

// Why each condition (the rest of fault_page's state is per table or a sum):
//  * no huge PMD: a THP or shmem folio comes from phys's whole free blocks, which the
//    small allocations of earlier faults in the batch use up, so the order would decide
//    which faults get one; hugetlb faults take from a pool.
//  * no shared page tables (a PTSHARE or mshare kernel): a fault may find its table
//    through another mm, or unshare one; a VMA no longer shareable may still sit on
//    shared tables until something unshares them.
//  * anonymous memory or shm: a file's page cache reads ahead, enters reclaim's LRU in
//    fault order and moves the I/O clock; shm pages are read by nobody and evicted by
//    nothing (vmscan.h), and a fault-around window never leaves its PTE table.
//  * an rmap design without per-page allocation: a pte_chain allocation can fail part-way
//    (ENOMEM), and which fault fails would depend on the order.
// And every such fault only allocates, so the lowest free memory seen (MemFree's minimum)
// is where the batch ends in any order: a write-protect fault copies only a page that is
// not anonymous or is mapped elsewhere too (wp_fault), so it never frees the old one.
// Mapped may fall within a batch (a COW replaces a page-cache page) but is only read
// between ops, its maximum before any op that may lower it.
bool faults_commute_across_tables(kernel& k, mm_struct& mm, const vm_area_struct& vma) {
  if (k.rmap->per_page_state || k.prof.ptshare.any()) return false;
  if (!vma.is_anon() && k.objects[static_cast<size_t>(vma.object)].kind != object_kind::shm) return false;
  return !huge_pmd_possible(k, mm, vma);
}

// Each fault allocates at most its page, a table per level below the PGD and its share of
// the page cache's index nodes (a radix or xarray node of under 600 bytes at worst): at
// most 1 + nr_levels pages; and once per VMA an anon_vma's slab pages (the margin of 64
// pages covers the 16 VMAs a batch may span). When every gfp class's preferred zone holds
// that much for the whole batch, no allocation falls back or fails; when free memory stays
// above the reclaim point's threshold after all of it (or nothing is evictable), no fault
// reclaims.
bool faults_fit_without_reclaim(const kernel& k, uint64_t faults) {
  constexpr uint64_t kMargin = 64;
  const uint64_t most = faults * (1 + uint64_t(k.prof.paging.nr_levels)) + kMargin;
  if (!k.pm.preferred_zone_has(gfp_zone::highuser, most) || !k.pm.preferred_zone_has(gfp_zone::kernel, most)) return false;
  if (k.lru.nr_pages == 0) return true;
  const uint64_t free = k.pm.total_pages() - k.pm.used();
  return free >= most + k.lru.wmark_low + fault_reclaim_need(k);
}

bool entries_stateless(const kernel& k, const vm_area_struct& vma) {
  return !vma.is_anon() && !vma.is_hugetlb() && !tracks_writable(k, vma) && !k.rmap->per_page_state;
}

namespace {

// Whether a touch may leave uniform nodes under `vma`: its entries keep no state, and no
// huge PMD can appear (no shmem THP policy that could give it a folio).
bool keeps_no_entry_state(const kernel& k, const vm_area_struct& vma) {
  // Shared page tables are never uniform nodes (pgtable.h invariant 6).
  if (!entries_stateless(k, vma) || pt_shareable_vma(k, vma)) return false;
  return !shmem_huge_possible(k, vma);
}

// Whether object pages [pg, pg + n) are all in the page cache, none of them, or some.
enum class residency { all, none, some };
residency range_residency(const mem_object& obj, uint64_t pg, uint64_t n) {
  if (obj.nr_resident == obj.nr_pages) return residency::all;
  if (obj.nr_resident == 0) return residency::none;
  bool all = true, none = true;
  for_each_bit_word(pg, n, [&](uint64_t w, uint64_t m) {
    const uint64_t r = obj.resident.word(w) & m;
    all = all && r == m;
    none = none && r == 0;
  });
  return all ? residency::all : none ? residency::none : residency::some;
}

// The faults that fill one empty PTE page of `vma` whose pages are all cached: one per
// entry for a write, one per fault-around window for a read (read_fault_object's loop).
uint64_t faults_to_fill_table(const kernel& k, const vm_area_struct& vma, vaddr base, bool write) {
  const uint32_t entries = view_of(k).entries;
  if (write || k.prof.fault_around_bytes <= k.geo.size()) return entries;
  uint64_t n = 0;
  for (uint32_t p = 0; p < entries; p = fault_around_window(k, vma, base, p).second) ++n;
  return n;
}

// touch_range's range operation (issue 11): a touch of every page of the span one node at
// level index idx maps (a whole PTE page, a whole PMD page, ...), inside a VMA that keeps
// no per-entry state, makes that node full whatever it was; when it was absent, the
// uniform full node goes in with one allocation of all the simulated pages below it, and
// the counters move as the faults would move them one by one. The span's pages must be
// all cached (faults as fault-around maps them) or none (each page is read in and faults
// once: fault-around finds no cached neighbour); a mix, or memory that might run out, is
// left to the page-at-a-time path, which fails where the kernel would. Returns the end of
// what it did, or `base` when the slow path must do it.
vaddr touch_uniform(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr base, vaddr end, bool write) {
  const paging_format& f = k.prof.paging;
  for (int idx = 1; idx < f.nr_levels; ++idx) {
    const uint64_t span = f.at(idx - 1).span();  // what the node at idx maps
    if (base & (span - 1) || base + span > end || base + span < base || base < vma.vm_start || base + span > vma.vm_end)
      continue;
    const pt_dir* look = dir_lookup(k, mm, idx - 1, base);
    const uint32_t x = f.index(idx - 1, base);
    if (look && look->is_leaf(x)) return base;
    const void* cur = look ? look->slot[x] : nullptr;
    if (cur == k.store.uniform(idx, true)) return base + span;  // all there: no fault
    // The empty node (a zapped span) has its tables already: they only fill.
    const bool refill = cur == k.store.uniform(idx, false);
    if (cur && !refill) continue;  // something private there: a smaller span, or the slow path
    const uint64_t pages = span >> k.geo.shift, tables = span / k.geo.table_span();
    mem_object& obj = k.objects[static_cast<size_t>(vma.object)];
    const uint64_t pg = vma.pgoff_at(base, k.geo.shift);
    const residency res = range_residency(obj, pg, pages);
    if (res == residency::some) return base;
    // Every page below (tables of every level, and the cache pages to read in) must fit
    // with room to spare, so that nothing is half done.
    const uint64_t need = (res == residency::none ? pages : 0) + 2 * tables + f.nr_levels;
    if (!k.pm.can_alloc(gfp_zone::highuser, need) || !k.pm.can_alloc(gfp_zone::kernel, 2 * tables + f.nr_levels)) return base;
    bool oom = false;
    pt_dir* parent = dir_walk(k, mm, idx - 1, base, true, &oom);
    if (!parent) return base;
    if (refill) {
      parent->slot[x] = k.store.uniform(idx, true);
      k.forget_walks();
    } else if (!pt_install_uniform(k, mm, parent, x, idx, true)) {
      return base;
    }
    uint64_t faults = tables * faults_to_fill_table(k, vma, base, write);
    if (res == residency::none) {
      // shmem_get_folio for every page, one fault each.
      if (!add_to_page_cache_range(k, vma.object, pg, pages)) {
        // Cannot happen after can_alloc; undone all the same.
        if (refill) {
          parent->slot[x] = k.store.uniform(idx, false);
        } else {
          parent->slot[x] = nullptr;
          --parent->nr_used;
          pt_put(k, mm, idx, k.store.uniform(idx, true));
        }
        return base;
      }
      faults = pages;
    }
    k.faults += faults;
    mm.min_flt += faults;
    rss_for_object(k, mm, vma) += pages;
    rmap_add_object_range(k, vma.object, pg, pages);
    return base + span;
  }
  return base;
}

// touch_range's range operation for a shared PTE page (ptshare.h): a touch of its whole
// span, in a VMA whose entries keep no per-page state the touch would set, fills an empty
// shared table in one step, with the faults, the page-cache pages and the rmap counts
// that faulting each page would give (and, as for any shared table, no RSS counter).
// Same residency rule as touch_uniform. false: the page-at-a-time path must do it.
bool touch_shared_table(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, bool write) {
  const vaddr span = k.geo.table_span();
  if (base < vma.vm_start || base + span > vma.vm_end || k.rmap->per_page_state) return false;
  if (write && (!vma.shared || tracks_writable(k, vma))) return false;
  const pte_ref look = pte_lookup(k, mm, base);
  if (look && (!look->shared_pt || look->nr_present)) return false;
  const uint64_t pages = span >> k.geo.shift;
  mem_object& obj = k.objects[static_cast<size_t>(vma.object)];
  const uint64_t pg = vma.pgoff_at(base, k.geo.shift);
  const residency res = range_residency(obj, pg, pages);
  if (res == residency::some) return false;
  if (!k.pm.can_alloc(gfp_zone::highuser, (res == residency::none ? pages : 0) + 1) ||
      !k.pm.can_alloc(gfp_zone::kernel, k.prof.paging.nr_levels))
    return false;
  bool oom = false;
  pte_table* t = pte_walk(k, mm, base, true, &oom);
  if (!t || !t->shared_pt || t->nr_present) return false;  // not a shared table: the slow path
  uint64_t faults = faults_to_fill_table(k, vma, base, write);
  if (res == residency::none) {
    if (!add_to_page_cache_range(k, vma.object, pg, pages)) return false;
    faults = pages;
  }
  k.store.set_full(t);
  k.faults += faults;
  mm.min_flt += faults;
  rmap_add_object_range(k, vma.object, pg, pages);
  return true;
}

}  // namespace

status touch_range(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr start, vaddr end, bytes stride, bool write) {
  if (vma.is_hugetlb()) return hugetlb_fault_range(k, mm, vma, start, end, stride, write);
  const table_view tv = view_of(k);
  const vaddr span = k.geo.table_span();
  const bytes page = k.geo.size();
  if (stride < page) stride = page;
  const paging_format& f = k.prof.paging;
  const bool uniform = stride == page && keeps_no_entry_state(k, vma);
  const bool shareable = stride == page && pt_shareable_vma(k, vma);
  for (vaddr base = k.geo.table_base(start); base < end; base += span) {
    // Between tables nothing points into the page tables: reclaim may run (vmscan.h).
    reclaim_point(k, k.geo.entries + 2 * uint64_t(f.nr_levels));
    // A shared PMD page that another process filled: nothing to fault under it.
    if (vaddr next = 0; shareable && base >= start) {
      if (!pte_lookup(k, mm, base) && !ptshare_prepare(k, mm, vma, base))
        return oom_status(k, "a page-table page", gfp_zone::kernel);
      if (ptshare_span_complete(k, mm, vma, base, end, write, &next)) {
        base = next - span;
        continue;
      }
      if (base + span <= end && touch_shared_table(k, mm, vma, base, write)) continue;
    }
    if (uniform && base >= start) {
      if (const vaddr done = touch_uniform(k, mm, vma, base, end, write); done != base) {
        base = done - span;
        continue;
      }
    }
    uint64_t mask[kMaxPteWords] = {};
    const vaddr lo = std::max(base, start), hi = std::min(base + span, end);
    if (stride == page) {
      set_bits(mask, uint32_t(k.geo.pages(lo - base)), uint32_t(k.geo.pages(hi - base + page - 1)));
    } else {
      // First touched address at or after lo on the stride grid from start.
      vaddr a = start + div_round_up(lo - start, stride) * stride;
      if (a >= hi) {
        // Nothing to touch under this table: go straight to the table of the next touched
        // address, so that a sparse stride costs the tables it touches, not the range.
        if (a >= end) break;
        base = k.geo.table_base(a) - span;
        continue;
      }
      for (; a < hi; a += stride) { const uint32_t i = uint32_t(k.geo.pages(a - base)); mask[i >> 6] |= bit(i); }
      bool any = false;
      for (uint32_t w = 0; w < tv.nwords; ++w) any |= mask[w] != 0;
      if (!any) continue;
    }
    const pte_ref look = pte_lookup(k, mm, base);
    if (look.get() == k.store.uniform(f.nr_levels - 1, true) && entries_stateless(k, vma)) continue;  // all there
    if (!look) {
      // No PTE table: a huge page may map the range, or may be made to (huge.h).
      bool handled = false;
      status s = huge_pmd_fault(k, mm, vma, base, write, &handled);
      if (handled) {
        if (!s.ok()) return s;
        continue;
      }
    }
    if (status s = fault_table(k, mm, vma, base, mask, write); !s.ok()) return s;
  }
  return {};
}

namespace {

// zap_range's range operation (issue 11): the span one node at level index idx maps, all
// inside [start, end), costs O(1) when that node is uniform empty (nothing to zap) or
// uniform full under a VMA whose entries keep no state (it becomes the uniform empty
// node; the counters move as zapping each entry would move them). An absent node is
// pte_walk_skip's, in the per-table loop. With PT_RECLAIM
// the PTE pages of such a span go too, so a full span is left to the per-table path
// below the PTE level. Returns the end of what it did, or `base`.
vaddr zap_uniform(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr base, vaddr start, vaddr end,
                  bool reclaim) {
  const paging_format& f = k.prof.paging;
  const int last = f.nr_levels - 1;
  for (int idx = 1; idx < f.nr_levels; ++idx) {
    const uint64_t span = f.at(idx - 1).span();
    if (base & (span - 1) || base < start || base + span > end || base + span < base) continue;
    const pt_dir* look = dir_lookup(k, mm, idx - 1, base);
    const uint32_t x = f.index(idx - 1, base);
    if (!look) continue;  // absent above, or under a huge leaf: the per-table path knows
    if (look->is_leaf(x)) return base;
    const void* s = look->slot[x];
    if (s == k.store.uniform(idx, false) && !(reclaim && idx == last)) return base + span;
    if (s != k.store.uniform(idx, true) || !entries_stateless(k, vma)) continue;
    if (reclaim && idx < last) continue;
    bool oom = false;
    pt_dir* parent = dir_walk(k, mm, idx - 1, base, false, &oom);
    const uint64_t pages = span >> k.geo.shift;
    rss_for_object(k, mm, vma) -= pages;
    rmap_remove_object_range(k, pages);
    if (reclaim) {  // idx == last: the PTE page goes (PT_RECLAIM), the PMD page stays
      parent->slot[x] = nullptr;
      --parent->nr_used;
      pt_put(k, mm, idx, const_cast<void*>(s));
    } else {
      parent->slot[x] = k.store.uniform(idx, false);
    }
    k.forget_walks();
    return base + span;
  }
  return base;
}

}  // namespace

void zap_range(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr start, vaddr end, bool reclaim_pt) {
  if (vma.is_hugetlb()) return hugetlb_zap(k, mm, vma, start, end);
  // zap_pmd_range: a huge PMD the range covers goes whole, one it cuts through is split.
  split_huge_range_edges(k, mm, vma, start, end);
  zap_huge_pmds(k, mm, vma, start, end);
  // The shared page tables under the range are let go first (pt_unshare_range): the
  // zap below sees only this mm's own tables.
  ptshare_unshare_range(k, mm, start, end);
  const paging_format& f = k.prof.paging;
  const vaddr span = k.geo.table_span();
  const bool reclaim = reclaim_pt && k.prof.pt_reclaim;
  for (vaddr base = k.geo.table_base(start); base < end; base += span) {
    if (const vaddr done = zap_uniform(k, mm, vma, base, start, end, reclaim); done != base) {
      base = done - span;
      continue;
    }
    bool oom = false;
    pte_table* t = pte_walk(k, mm, base, false, &oom);
    if (!t) {
      base = pte_walk_skip(k, mm, base) - span;  // past a missing PMD or PUD table at once
      continue;
    }
    const vaddr lo = std::max(base, start), hi = std::min(base + span, end);
    uint64_t mask[kMaxPteWords] = {};
    set_bits(mask, uint32_t(k.geo.pages(lo - base)), uint32_t(k.geo.pages(hi - base)));
    if (!t->empty()) {
      // The whole table (an exit, a munmap of its span): the presence goes at once below.
      const bool whole = lo == base && hi == base + span;
      for (uint32_t ws = t->words_in_use(); ws; ws &= ws - 1) {
        const auto w = uint32_t(__builtin_ctz(ws));
        const uint64_t m = mask[w] & t->word(w);
        if (!m) continue;
        const uint64_t am = m & t->anon_word(w);
        uint64_t exclusive = uint64_t(popcount64(am)), freed = 0;
        if (t->anon() && am) {
          uint64_t shared = 0;
          freed = rmap_remove_anon_word(k, t->anon() + w * 64, am, shared);
          exclusive -= shared;
        }
        if (exclusive) page_remove_anon_exclusive(k, exclusive);
        if (exclusive + freed) k.pm.free(page_use::anon, exclusive + freed);
        if (!vma.is_anon()) rmap_remove_object_word(k, vma.object, object_pg0(k, vma, base, w), m & ~am);
        const uint64_t anon_n = uint64_t(popcount64(am));
        mm.rss.anon -= anon_n;
        if (t->anonmap()) t->anonmap()[w] &= ~m;
        if (!vma.is_anon()) rss_for_object(k, mm, vma) -= uint64_t(popcount64(m)) - anon_n;
        if (t->writable()) t->writable()[w] &= ~m;
        if (!whole) k.store.clear_present_word(t, w, m);
      }
      if (whole || t->nr_present == 0) {
        k.store.clear_present(t);
        k.store.drop_private(t);
      }
    }
    // PT_RECLAIM: only for a zap covering this PTE page's whole span (reclaim_pt_is_enabled:
    // end - start >= PMD_SIZE), and only if every entry is now none. The PMD page stays.
    if (reclaim_pt && k.prof.pt_reclaim && hi - lo == span && t->nr_present == 0) {
      pt_dir* d = mm.pgd;
      for (int i = 0; i < f.nr_levels - 2; ++i) d = static_cast<pt_dir*>(d->slot[f.index(i, base)]);
      d->slot[f.index(f.nr_levels - 2, base)] = nullptr;
      --d->nr_used;
      pt_put(k, mm, f.nr_levels - 1, t);
    }
  }
}

void wrprotect_range(kernel& k, mm_struct& mm, vaddr start, vaddr end) {
  wrprotect_huge_range(k, mm, start, end);
  const table_view tv = view_of(k);
  const vaddr span = k.geo.table_span();
  for (vaddr base = k.geo.table_base(start); base < end; base += span) {
    const pte_ref look = pte_lookup(k, mm, base);
    if (!look || !look->writable()) continue;  // (a uniform node has no writable bits)
    bool oom = false;
    pte_table* t = pte_walk(k, mm, base, false, &oom);
    uint64_t mask[kMaxPteWords] = {};
    set_bits(mask, uint32_t(k.geo.pages(std::max(base, start) - base)), uint32_t(k.geo.pages(std::min(base + span, end) - base)));
    for (uint32_t w = 0; w < tv.nwords; ++w) t->writable()[w] &= ~mask[w];
  }
}

}  // namespace vmlab
