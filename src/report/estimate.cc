#include "report/estimate.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "model/rmap.h"
#include "workload/scenario_spec.h"

namespace vmlab {
namespace {

// mmap.cc's mmap_min_addr and the alignment below which an align request is none.

// A mapping of the shape: where it lies in every address space.
struct placed {
  vaddr start = 0, end = 0;
};

// The PMD-sharing window (the span of one PMD table: 1 GiB on x86-64 and PAE), which the
// shared mapping is aligned to; on a 2-level format, the span of a PTE table.
bytes shared_align(const paging_format& f) {
  return f.nr_levels >= 3 ? f.at(f.nr_levels - 2).table_span() : f.pte().table_span();
}

vaddr align_down(vaddr a, bytes align) { return a & ~(align - 1); }
vaddr align_up(vaddr a, bytes align) { return round_up(a, align); }

// get_unmapped_area() of mm/mmap.c as mmap.cc models it (area_topdown, area_bottomup), for
// an address space holding only `taken` (sorted, at most one mapping): the highest aligned
// fit below mmap_base, else (or on the legacy layout) the lowest at or above the base.
vaddr place(const kernel_profile& p, const std::vector<placed>& taken, bytes len, bytes align) {
  if (p.layout == mmap_layout::topdown) {
    vaddr hi = p.mmap_base;
    for (size_t i = taken.size() + 1; i-- > 0;) {  // the gaps below hi, top down
      const vaddr lo = i ? std::max(taken[i - 1].end, kMmapMinAddr) : kMmapMinAddr;
      if (i && taken[i - 1].end > hi) { hi = taken[i - 1].start; continue; }
      if (hi > lo && hi - lo >= len) {
        const vaddr a = align_down(hi - len, align);
        if (a >= lo) return a;
      }
      if (i) hi = taken[i - 1].start;
    }
  }
  const vaddr base = p.layout == mmap_layout::topdown ? round_up(p.paging.task_size / 3, p.paging.page_size()) : p.mmap_base;
  vaddr a = align_up(std::max(base, kMmapMinAddr), align);
  for (const placed& t : taken)
    if (t.end > a && t.start < a + len) a = align_up(t.end, align);
  return a;
}

// One run of touched addresses, all mapped at level index `leaf` (the PTE level for base
// pages, the PMD level for a THP or a 2 MiB hugetlb page, ...).
struct piece {
  vaddr start = 0, end = 0;
  int leaf = 0;
};

// Distinct table windows at level index idx that the pieces pass through: a table at idx
// exists for every window of table_span() below which some piece's leaf lies (__pte_alloc,
// __pmd_alloc, __pud_alloc allocate one per window on the first fault under it).
uint64_t windows(const paging_format& f, int idx, const std::vector<piece>& pieces, uint64_t prealloc) {
  const bytes w = f.at(idx).table_span();
  std::vector<std::pair<uint64_t, uint64_t>> iv;  // [first, last] window numbers
  if (prealloc) iv.emplace_back(0, prealloc - 1);  // PAE: preallocate_pmds() at pgd_alloc
  for (const piece& x : pieces)
    if (x.leaf >= idx && x.end > x.start) iv.emplace_back(x.start / w, (x.end - 1) / w);
  std::sort(iv.begin(), iv.end());
  uint64_t n = 0, next = 0;  // windows counted, first window not yet counted
  for (const auto& [a, b] : iv) {
    const uint64_t from = std::max(a, next);
    if (b >= from) n += b - from + 1;
    next = std::max(next, b + 1);
  }
  return n;
}

// The ranges one address space touches under spec, and the anon THPs' deposited PTE pages.
struct layout {
  std::vector<piece> pieces;
  uint64_t deposits = 0;     // pgtable_trans_huge_deposit(): one PTE page per anon THP
  uint64_t shared_pmds = 0;  // PMD pages of windows huge_pmd_share() shares
  uint64_t small_shared_pages = 0;  // shared pages mapped by PTEs (pte_chain: rmap entries)
  placed shared, priv;
  int shared_leaf = 0;
  bytes shared_unit = 0;     // the shared segment's page
};

// Pages of the shared object a sequential touch of fraction f covers (at least one).
uint64_t touched_pages(const estimate_shape& s, bytes page) {
  const uint64_t pages = div_round_up(s.shared, page);
  if (s.touched >= 1.0) return pages;
  const auto t = static_cast<uint64_t>(std::llround(s.touched * double(pages)));
  return std::clamp<uint64_t>(t, 1, pages);
}

// The shared segment's pieces. mm/shmem.c: a huge folio only where the whole 2 MiB lies
// inside i_size (shmem_huge_folio: "a folio past EOF"), mapped by PMD when the VMA covers
// it (do_set_pmd); the rest by PTEs. hugetlb: the mapping rounds up to its pages, each a
// leaf at the level whose span it is (huge_pte_alloc).
void shared_pieces(const kernel_profile& p, const estimate_shape& s, const design_spec& d, layout& L) {
  const paging_format& f = p.paging;
  const bytes page = f.page_size(), t = touched_pages(s, page) * page;
  const int pte = f.nr_levels - 1;
  const vaddr s0 = L.shared.start;
  L.shared_leaf = pte;
  L.shared_unit = page;
  if (d.shared == shared_pages::hugetlb) {
    const bytes hp = d.hugetlb_page;
    L.shared_leaf = f.leaf_index(hp);
    L.shared_unit = hp;
    L.pieces.push_back({s0, s0 + div_round_up(t, hp) * hp, L.shared_leaf});
    if (d.pmd_share && L.shared_leaf == pte - 1 && L.shared_leaf >= 1) {
      // want_pmd_share(): a window inside the VMA; the first process's table is every one's.
      const bytes w = f.at(L.shared_leaf).table_span();
      const vaddr last = std::min(L.pieces.back().end, L.shared.end);
      for (vaddr a = round_up(s0, w); a + w <= L.shared.end && a < last; a += w) ++L.shared_pmds;
    }
    return;
  }
  bytes huge_end = 0;
  if (d.shared == shared_pages::shmem_thp && f.pmd_huge_size()) {
    const bytes h = f.pmd_huge_size();
    huge_end = std::min(div_round_up(t, h), (L.shared.end - s0) / h) * h;
    if (huge_end) L.pieces.push_back({s0, s0 + huge_end, pte - 1});
  }
  if (t > huge_end) L.pieces.push_back({s0 + huge_end, s0 + t, pte});
  L.small_shared_pages = t > huge_end ? (t - huge_end) / page : 0;
}

layout make_layout(const kernel_profile& p, const estimate_shape& s, const design_spec& d) {
  const paging_format& f = p.paging;
  const bytes page = f.page_size();
  layout L;
  bytes len = round_up(s.shared, page), align = shared_align(f);
  if (d.shared == shared_pages::hugetlb) {  // hugetlb_get_unmapped_area: its page's alignment
    len = round_up(s.shared, d.hugetlb_page);
    align = std::max(align, d.hugetlb_page);
  }
  // What the private mapping must keep out of: the shared one, or on 2.6.15 ppc64 the
  // whole huge-page-only area a hugetlb mapping opened.
  placed keep_out;
  if (d.shared == shared_pages::hugetlb && p.huge.htlb_areas) {
    // hugetlb_get_unmapped_area with no area open and no mapping yet; another mapping
    // then goes below the area it opens (touches_hugepage_high_range).
    if (const auto a = htlb_open_area(p, len, align, 0, 0)) {
      L.shared.start = a->addr;
      keep_out = {a->lo, a->hi};
    }
  } else {
    L.shared.start = place(p, {}, len, align);
  }
  L.shared.end = L.shared.start + len;
  if (!keep_out.end) keep_out = L.shared;
  shared_pieces(p, s, d, L);
  if (!s.private_bytes) return L;
  const bytes plen = round_up(s.private_bytes, page), palign = f.pte().table_span();
  L.priv.start = place(p, {keep_out}, plen, palign);
  L.priv.end = L.priv.start + plen;
  const int pte = f.nr_levels - 1;
  bytes huge = 0;
  if (d.anon_thp && f.pmd_huge_size()) {
    // do_huge_pmd_anonymous_page(): a THP per aligned 2 MiB inside the VMA, each with its
    // deposited PTE page; the tail by PTEs.
    const bytes h = f.pmd_huge_size();
    huge = plen / h * h;
    L.deposits = plen / h;
    if (huge) L.pieces.push_back({L.priv.start, L.priv.start + huge, pte - 1});
  }
  if (plen > huge) L.pieces.push_back({L.priv.start + huge, L.priv.end, pte});
  return L;
}

// Expected windows at level idx over the shared mapping if its touched units were spread
// uniformly at random: a window of k units is touched with probability 1 - (1 - f)^k
// (sampling with replacement; the hypergeometric is within a fraction of a window of it).
double scattered_windows(const paging_format& f, int idx, const layout& L, double frac) {
  const bytes w = f.at(idx).table_span();
  const uint64_t n = (L.shared.end - 1) / w - L.shared.start / w + 1;
  const double k = double(std::min<uint64_t>(w / L.shared_unit, div_round_up(L.shared.end - L.shared.start, L.shared_unit)));
  return double(n) * (1.0 - std::pow(1.0 - frac, k));
}

void count_tables(const kernel_profile& p, const estimate_shape& s, const layout& L, estimate_figures& e) {
  const paging_format& f = p.paging;
  const uint64_t n = s.processes;
  for (int idx = 0; idx < f.nr_levels; ++idx) {
    const auto l = static_cast<size_t>(f.at(idx).lvl);
    const uint64_t pre = idx == 1 ? f.preallocated_pmds : 0;
    uint64_t own = idx == 0 ? 1 : windows(f, idx, L.pieces, pre);
    if (idx == f.nr_levels - 1) own += L.deposits;
    // Scattered: the prefix's windows over the shared mapping replaced by the expected
    // number (never fewer: a prefix touches the fewest windows).
    double scat = double(own);
    if (idx > 0 && idx <= L.shared_leaf && s.touched < 1) {
      std::vector<piece> shared_only;
      for (const piece& x : L.pieces)
        if (x.start >= L.shared.start && x.end <= L.shared.end) shared_only.push_back(x);
      scat += std::max(0.0, scattered_windows(f, idx, L, s.touched) - double(windows(f, idx, shared_only, 0)));
    }
    const uint64_t shared = idx == L.shared_leaf ? L.shared_pmds : 0;
    e.tables_per_proc[l] = own;
    e.tables_shared[l] = shared;
    e.tables_total[l] = n * own - (n - 1) * shared;  // huge_pmd_share: one page for all
    e.scattered_tables[l] = static_cast<uint64_t>(std::llround(double(n) * scat - double(n - 1) * double(shared)));
    // NR_PAGETABLE: the levels the profile counts, in the pages that back their tables
    // (pgalloc.cc account_node): whole pages, or each mm's PTE fragments packed into pages;
    // never slab objects.
    if (p.counts_in_page_tables(f.at(idx).lvl) && f.at(idx).alloc != table_alloc::slab) {
      const auto backing = [&](uint64_t total, double per_proc) -> bytes {
        if (f.at(idx).alloc != table_alloc::mm_fragment) return pt_backing_pages(p, idx, total) * f.page_size();
        return n * pt_backing_pages(p, idx, uint64_t(std::llround(per_proc))) * f.page_size();
      };
      e.page_tables += backing(e.tables_total[l], double(own));
      e.scattered_page_tables += backing(e.scattered_tables[l], scat);
    }
    e.table_bytes += e.tables_total[l] * pt_node_bytes(p, idx);
    e.proc_table_bytes += own * pt_node_bytes(p, idx);
    // pgtables_bytes (VmPTE): mm_inc_nr_ptes/pmds/puds, never the PGD; a sharer counts
    // a shared PMD page too (huge_pmd_share -> mm_inc_nr_pmds).
    if (idx > 0 && p.counts_in_vmpte(f.at(idx).lvl)) e.vmpte += own * pt_node_bytes(p, idx);
  }
}

// The slab objects of the shape (kmem.cc caches; objects allocated, none freed, so a
// cache holds ceil(objects / objperslab) slabs): an mm_struct and a VMA per mapping per
// process; anon_vma_prepare() on the first write to private memory (an anon_vma, and an
// anon_vma_chain on 2.6.34+); under pte_chain (2.5) ceil(mapcount / NRPTE) chain objects
// for every shared page mapped by PTEs in two or more processes (PageDirect when in one;
// one object per mapping for the two-pointer generation); the PAE PGD from its cache.
void count_slabs(const kernel_profile& p, const estimate_shape& s, const layout& L, estimate_figures& e) {
  const kernel_objects& o = p.objs;
  const uint64_t n = s.processes;
  const bool anon = s.private_bytes > 0;
  const uint64_t slots = std::max<uint32_t>(1, p.rmap.pte_chain_slots);
  const uint64_t per_page = n < 2 ? 0 : slots == 1 ? n : div_round_up(n, slots);
  const bool chains = rmap_ops_for(p.rmap.scheme).per_page_state;
  struct row {
    const char* name;
    cache_decl decl;
    bool rmap;
    uint64_t objects;
  };
  cache_decl pte_chain = o.pte_chain;
  pte_chain.object_size = p.rmap.pte_chain_slots == 1 ? 2 * o.slab.word_size : o.slab.cache_line;
  const auto pgd_size = static_cast<uint32_t>(p.pgd_bytes());
  const row rows[] = {
      {"vm_area_struct", o.vm_area_struct, false, n * (anon ? 2 : 1)},
      {"mm_struct", o.mm_struct, false, n},
      {"anon_vma", o.anon_vma, true, anon ? n : 0},
      {"anon_vma_chain", o.anon_vma_chain, true, anon ? n : 0},
      {"pte_chain", chains ? pte_chain : cache_decl{}, true, L.small_shared_pages * per_page},
      {"pgd", p.paging.pgd_from_slab ? cache_decl{pgd_size, {.align = pgd_size}} : cache_decl{}, false, n},
  };
  for (const row& r : rows) {
    if (!r.decl.object_size) continue;  // the profile's kernel has no such cache
    const slab_geometry g = calculate_geometry(o.slab, r.decl.object_size, r.decl.flags);
    e.caches.push_back({r.name, r.rmap, r.objects, g.objsize, div_round_up(r.objects, g.objperslab) * g.pagesperslab});
  }
}

}  // namespace

bytes estimate_figures::rmap_bytes() const {
  bytes b = 0;
  for (const auto& c : caches)
    if (c.rmap) b += c.object_bytes();
  return b;
}

bytes estimate_figures::slab_bytes() const {
  bytes b = 0;
  for (const auto& c : caches) b += c.slab_pages;
  return b * page_size;
}

result<kernel_profile> estimate_profile(const std::string& name) {
  auto p = find_profile(name);
  if (!p.ok()) return p;
  // NRPTE and sizeof(pte_addr_t), as sim_kernel::create works them out.
  if (status st = rmap_policy_finish(p.value()); !st.ok()) return st;
  return p;
}

design_target estimate_target(const estimate_shape& s) { return {"sga", s.shared}; }

namespace {
status too_big(const estimate_shape& s) {
  return status::invalid_argument(fmt::format("{} processes with {} bytes shared and {} private each need more than "
                                              "4 EiB of memory and page tables: no machine, and past vmlab's 64-bit "
                                              "byte counts",
                                              s.processes, s.shared, s.private_bytes));
}
}  // namespace

status estimate_check_shape(const kernel_profile& p, const estimate_shape& s) {
  if (s.processes == 0) return status::invalid_argument("--processes must be at least 1");
  if (s.shared == 0) return status::invalid_argument("--shared must be more than 0 bytes");
  if (!(s.touched > 0 && s.touched <= 1))
    return status::invalid_argument(fmt::format("--touched must be more than 0% and at most 100%, not {}%", s.touched * 100));
  if (s.processes > kPidMaxLimit)
    return status::invalid_argument(fmt::format("--processes {}: Linux runs at most {} processes (PID_MAX_LIMIT, "
                                                "include/linux/threads.h)", s.processes, kPidMaxLimit));
  // Checked before anything rounds them up, which would wrap past 2^64.
  if (s.shared > p.paging.task_size || s.private_bytes > p.paging.task_size)
    return status::invalid_argument(fmt::format("{} bytes shared and {} private do not fit in {}'s user address space "
                                                "({} bytes)", s.shared, s.private_bytes, p.name, p.paging.task_size));
  // The memory estimate_scenario sizes a machine for stays below 2^62 (a bound, in long
  // double: no exact sum needed); the figures' own bound is estimate_design's.
  const auto n = static_cast<long double>(s.processes);
  if (n * static_cast<long double>(s.private_bytes) + static_cast<long double>(s.shared) >= 0x1p62L)
    return too_big(s);
  return {};
}

result<estimate_figures> estimate_design(const kernel_profile& p, const estimate_shape& s, const design& d) {
  if (status st = estimate_check_shape(p, s); !st.ok()) return st;
  if (d.spec.shared == shared_pages::hugetlb && p.paging.leaf_index(d.spec.hugetlb_page) < 0)
    return status::invalid_argument(p.name + " has no hugetlb pages of " + page_size_label(d.spec.hugetlb_page));
  // PTSHARE shares the segment's page tables between the processes by rules of its own
  // (ptshare.h: which spans qualify, who is charged, when they unshare): the sim runs
  // them; this closed form has no PTSHARE term and would bill every process its own.
  if (p.ptshare.ptshare())
    return status::not_supported(p.name + " shares page tables between processes (PTSHARE), which the estimate's "
                                 "closed form does not model: run its scenario on the sim engine (`vmlab estimate ... "
                                 "--profile " + p.name + " --scenario > shape.toml; vmlab run shape.toml`)");
  estimate_figures e;
  e.d = d;
  e.page_size = p.paging.page_size();
  const layout L = make_layout(p, s, d.spec);
  if (L.shared.end > p.paging.task_size || L.priv.end > p.paging.task_size || L.shared.start < kMmapMinAddr)
    return status::invalid_argument(fmt::format("{} bytes shared and {} private do not fit in {}'s user address space "
                                                "({} bytes)", s.shared, s.private_bytes, p.name, p.paging.task_size));
  // Every total must fit the 64-bit byte counts (and the machine estimate_scenario sizes
  // for it, below 2^62): N address spaces, N private areas, N pte_chains per shared page.
  count_tables(p, s, L, e);
  const auto n = static_cast<long double>(s.processes);  // a bound: no need for exact sums
  const long double need = n * static_cast<long double>(e.proc_table_bytes) +
                           n * static_cast<long double>(round_up(s.private_bytes, p.paging.pte().table_span())) +
                           static_cast<long double>(round_up(s.shared, GiB)) +
                           n * static_cast<long double>(L.small_shared_pages) * p.objs.slab.cache_line;
  if (need >= 0x1p62L) return too_big(s);
  count_slabs(p, s, L, e);
  return e;
}

result<std::vector<estimate_figures>> estimate_all(const kernel_profile& p, const estimate_shape& s) {
  std::vector<estimate_figures> out;
  for (const design& d : designs_for(p, estimate_target(s))) {
    auto e = estimate_design(p, s, d);
    if (!e.ok()) return e.error();
    out.push_back(std::move(e.value()));
  }
  return out;
}

std::string estimate_scenario(const kernel_profile& p, const estimate_shape& s) {
  const paging_format& f = p.paging;
  const bytes page = f.page_size();
  // Machine memory for every design: the 4 KiB page tables (the most), the segment rounded
  // to the largest hugetlb page, private memory in whole THPs, then a power of two with an
  // eighth to spare for mem_map and the slabs.
  bytes need = round_up(s.shared, GiB) + s.processes * round_up(s.private_bytes, f.pte().table_span());
  if (auto e = estimate_design(p, s, designs_for(p, estimate_target(s)).front()); e.ok())
    need += e->table_bytes + e->slab_bytes();
  bytes memory = p.default_memory;
  while (memory < need + need / 8) memory *= 2;
  const uint64_t pages = div_round_up(s.shared, page);
  std::string out = fmt::format(
      "# Written by `vmlab estimate`: {} processes each map a {}-byte shared object (aligned to {}) and write\n"
      "# {} bytes of private memory; `vmlab estimate` computes this run's figures in closed form.\n"
      "name = \"estimate\"\n"
      "description = \"vmlab estimate --processes {} --shared {} --private {} --touched {}%\"\n"
      "seed = 1\n\n[machine]\nmemory = {}\n\n[kernel]\nprofile = \"{}\"\n\n"
      "[[object]]\nname = \"sga\"\nkind = \"shm\"\nsize = {}\n\n"
      "[[group]]\nname = \"proc\"\ncount = {}\n"
      "  [[group.map]]\n  name = \"sga\"\n  object = \"sga\"\n  shared = true\n  align = {}\n",
      s.processes, s.shared, shared_align(f), s.private_bytes, s.processes, s.shared, s.private_bytes, s.touched * 100,
      memory, p.name, s.shared, s.processes, shared_align(f));
  if (s.private_bytes)
    out += fmt::format("  [[group.map]]\n  name = \"private\"\n  object = \"anon\"\n  size = {}\n  align = {}\n",
                       s.private_bytes, f.pte().table_span());
  out += "\n[[phase]]\nname = \"attach\"\ngroup = \"proc\"\naction = \"touch\"\nmap = \"sga\"\n";
  if (touched_pages(s, page) < pages) out += fmt::format("length = {}\n", touched_pages(s, page) * page);
  if (s.private_bytes)
    out += "\n[[phase]]\nname = \"write\"\ngroup = \"proc\"\naction = \"touch\"\nmap = \"private\"\nwrite = true\n";
  return out;
}

}  // namespace vmlab
