// Transparent huge pages, anonymous and shmem: the model's mm/huge_memory.c and the huge
// folio half of mm/shmem.c (see huge.h for the rules and what is simplified).
#include <algorithm>

#include "model/kernel.h"

namespace vmlab {
namespace {

int pmd_level(const kernel& k) { return k.prof.paging.nr_levels - 2; }
int pte_level(const kernel& k) { return k.prof.paging.nr_levels - 1; }
uint32_t pmd_pages(const kernel& k) { return k.geo.entries; }

uint64_t& shmem_rss(const kernel& k, mm_struct& mm, const vm_area_struct& vma) {
  return k.objects[static_cast<size_t>(vma.object)].kind == object_kind::file ? mm.rss.file : mm.rss.shmem;
}

// thp_vma_allowable_order() for an anonymous VMA: the enabled policy and the advice.
bool anon_thp_allowed(const kernel& k, const vm_area_struct& vma) {
  const huge_policy& h = k.prof.huge;
  if (!h.thp || vma.nohugepage || !vma.is_anon() || vma.shared) return false;
  return h.enabled == thp_mode::always || (h.enabled == thp_mode::madvise && vma.hugepage);
}

// shmem_is_huge(): whether the page cache allocates a 2 MiB folio at `index`.
bool shmem_huge_allowed(const kernel& k, const vm_area_struct& vma, const mem_object& obj, uint64_t index) {
  const huge_policy& h = k.prof.huge;
  if (!h.shmem_thp || obj.kind != object_kind::shm || vma.nohugepage) return false;
  switch (h.shmem_enabled) {
    case shmem_thp_mode::deny:
    case shmem_thp_mode::never: return false;
    case shmem_thp_mode::force:
    case shmem_thp_mode::always: return true;
    case shmem_thp_mode::within_size: {
      // index = round_up(index + 1, HPAGE_PMD_NR): the folio must end inside i_size...
      const uint64_t end = (index / pmd_pages(k) + 1) * pmd_pages(k);
      if (end <= obj.nr_pages) return true;
      return vma.hugepage;  // ... else as advise
    }
    case shmem_thp_mode::advise: return vma.hugepage;
  }
  return false;
}

// thp_vma_suitable_order(): the aligned range inside the VMA, and for a file VMA the file
// offset congruent with the address modulo the huge page.
bool range_suitable(const kernel& k, const vm_area_struct& vma, vaddr base) {
  const vaddr span = k.geo.table_span();
  if (base < vma.vm_start || base + span > vma.vm_end) return false;
  if (vma.is_anon()) return true;
  return ((vma.vm_start >> k.geo.shift) - vma.pgoff) % pmd_pages(k) == 0;
}

// The PMD table and slot for base (allocating the levels above).
pt_dir* pmd_table(kernel& k, mm_struct& mm, vaddr base, bool alloc, bool* oom, uint32_t* slot) {
  pt_dir* d = dir_walk(k, mm, pmd_level(k), base, alloc, oom);
  *slot = k.prof.paging.index(pmd_level(k), base);
  return d;
}

// The object pages under a shmem leaf gain or lose their PMD mapping: per page for the
// rmap counters and Mapped, per folio for ShmemPmdMapped.
void shmem_pmd_map(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr base, int delta) {
  mem_object& obj = k.objects[static_cast<size_t>(vma.object)];
  const uint64_t pg = vma.pgoff_at(base, k.geo.shift), chunk = pg / pmd_pages(k);
  uint64_t done = 0;
  for (uint32_t w = 0; w < pmd_pages(k) / 64; ++w) {
    if (delta > 0) (void)rmap_add_object_word(k, vma.object, int64_t(pg + w * 64), ~uint64_t{0}, done);
    else rmap_remove_object_word(k, vma.object, int64_t(pg + w * 64), ~uint64_t{0});
  }
  if (obj.pmd_maps.size() <= chunk) obj.pmd_maps.resize(chunk + 1, 0);
  uint32_t& n = obj.pmd_maps[chunk];
  if (delta > 0 && n++ == 0) k.huge.shmem_pmdmapped += pmd_pages(k);
  if (delta < 0 && --n == 0) k.huge.shmem_pmdmapped -= pmd_pages(k);
  shmem_rss(k, mm, vma) += delta > 0 ? pmd_pages(k) : -uint64_t(pmd_pages(k));
}

// A THP is mapped by one more (or one fewer) PMD: the entire mapcount, and for a THP that
// is PTE-mapped somewhere its subpages' mapcounts, which include every PMD mapper.
void thp_pmd_ref(kernel& k, uint32_t id, int delta) {
  huge_anon& h = k.huge.anons[id];
  if (delta > 0) {
    if (h.entire++ == 0) k.huge.anon_thps += pmd_pages(k);
    if (h.subpages)
      for (uint32_t j = 0; j < pmd_pages(k); ++j) (void)rmap_dup_anon(k, h.subpages + j);
    return;
  }
  if (--h.entire == 0) k.huge.anon_thps -= pmd_pages(k);
}

// A new THP at slot i of d, for a write fault; false when no pageblock is free.
bool thp_alloc(kernel& k, mm_struct& mm, vm_area_struct& vma, pt_dir* d, uint32_t i, status& st) {
  if (!vma.has_anon_vma)
    if (status s = anon_vma_prepare(k, mm, vma); !s.ok()) {
      st = s;
      return true;
    }
  if (!k.pm.alloc_huge(page_use::anon, 1)) {
    ++k.huge.thp_fallbacks;
    return false;
  }
  const uint32_t id = huge_anon_new(k, -1);
  --k.huge.anons[id].entire;  // thp_pmd_ref counts the mapping below
  thp_pmd_ref(k, id, +1);
  if (d->is_leaf(i)) {
    // Over the huge zero page: the deposited table stays (do_huge_zero_wp_pmd).
    k.store.set_leaf_page(d, i, id);
    k.store.set_leaf_writable(d, i, true);
  } else {
    void* deposit = pt_alloc(k, mm, pte_level(k));
    if (!deposit) {
      k.pm.free_huge(page_use::anon, 1);
      thp_pmd_ref(k, id, -1);
      huge_anon_release(k, id);
      st = oom_status(k, "a page-table page (THP deposit)", gfp_zone::kernel);
      return true;
    }
    k.store.set_leaf(d, i, deposit, true, id);
  }
  page_add_anon_exclusive(k, pmd_pages(k));
  mm.rss.anon += pmd_pages(k);
  ++k.faults;
  ++mm.min_flt;
  return true;
}

// A shmem folio for the PMD range at `base`: the page cache's huge folio, allocated now
// if the policy wants one and no page of the range is cached yet. false: 4 KiB pages.
bool shmem_huge_folio(kernel& k, const vm_area_struct& vma, vaddr base) {
  mem_object& obj = k.objects[static_cast<size_t>(vma.object)];
  const uint64_t pg = vma.pgoff_at(base, k.geo.shift), chunk = pg / pmd_pages(k);
  if (mem_object::test_bit(obj.huge_folio, chunk)) return true;
  if (!shmem_huge_allowed(k, vma, obj, pg)) return false;
  const uint64_t first = chunk * pmd_pages(k);
  if (first + pmd_pages(k) > obj.nr_pages) return false;  // a folio past EOF
  for (uint64_t w = first / 64; w < (first + pmd_pages(k)) / 64; ++w)
    if (obj.resident.word(w)) return false;  // small pages there already
  if (!k.pm.alloc_huge(page_use::cache, 1)) {
    ++k.huge.thp_fallbacks;
    return false;
  }
  mem_object::put_bit(obj.huge_folio, chunk, true);
  if (!add_huge_folio(k, vma.object, first, pmd_pages(k))) {  // no radix_tree_node for it
    mem_object::put_bit(obj.huge_folio, chunk, false);
    k.pm.free_huge(page_use::cache, 1);
    return false;
  }
  k.huge.shmem_thps += pmd_pages(k);
  return true;
}

}  // namespace

bool thp_suitable(const kernel& k, const vm_area_struct& vma, vaddr base) {
  if (vma.is_hugetlb() || !k.prof.paging.pmd_huge_size() || k.prof.paging.pmd_huge_size() != k.geo.table_span())
    return false;
  if (!range_suitable(k, vma, base)) return false;
  if (vma.is_anon()) return anon_thp_allowed(k, vma);
  return k.prof.huge.shmem_thp && k.objects[static_cast<size_t>(vma.object)].kind == object_kind::shm;
}

bool shmem_huge_possible(const kernel& k, const vm_area_struct& vma) {
  if (vma.is_anon() || vma.is_hugetlb() || !k.prof.huge.shmem_thp) return false;
  const mem_object& obj = k.objects[static_cast<size_t>(vma.object)];
  return obj.kind == object_kind::shm && (obj.huge_folio.any() || shmem_huge_allowed(k, vma, obj, 0));
}

bool huge_pmd_possible(kernel& k, mm_struct& mm, const vm_area_struct& vma) {
  if (vma.is_hugetlb()) return true;
  if (!k.prof.huge.thp && !k.prof.huge.shmem_thp) return false;
  if (vma.is_anon() ? anon_thp_allowed(k, vma) : shmem_huge_possible(k, vma)) return true;
  bool leaf = false;
  for_each_leaf(k, mm, vma.vm_start, vma.vm_end, [&](const leaf_ref&) { leaf = true; });
  return leaf;
}

status huge_pmd_fault(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, bool write, bool* handled) {
  *handled = false;
  bool oom = false;
  uint32_t i = 0;
  const bool leaf_may_exist = k.prof.huge.thp || k.prof.huge.shmem_thp;
  if (!leaf_may_exist) return {};
  pt_dir* d = pmd_table(k, mm, base, false, &oom, &i);
  const bool present = d && d->is_leaf(i);
  if (!present) {
    if ((d && d->slot[i]) || !thp_suitable(k, vma, base)) return {};  // a PTE table is there already
    d = pmd_table(k, mm, base, true, &oom, &i);
    if (!d) {
      *handled = oom;
      return oom ? oom_status(k, "a page-table page", gfp_zone::kernel) : status{};
    }
    if (vma.is_anon()) {
      // do_huge_pmd_anonymous_page: anon_vma_prepare (vmf_anon_prepare) comes first, read
      // fault or not, so even a VMA that only maps the huge zero page has an anon_vma
      // (and fork copies its page tables).
      if (!vma.has_anon_vma)
        if (status s = anon_vma_prepare(k, mm, vma); !s.ok()) {
          *handled = true;
          return s;
        }
      if (!write && k.prof.huge.huge_zero_page) {
        // The huge zero page, with a deposited table as for a THP (set_huge_zero_folio).
        void* deposit = pt_alloc(k, mm, pte_level(k));
        if (!deposit) {
          *handled = true;
          return oom_status(k, "a page-table page (THP deposit)", gfp_zone::kernel);
        }
        k.store.set_leaf(d, i, deposit, false, 0);
        ++k.faults;
        ++mm.min_flt;
        *handled = true;
        return {};
      }
      status st;
      *handled = thp_alloc(k, mm, vma, d, i, st);
      return st;
    }
    // shmem: a huge folio mapped by PMD (do_set_pmd); writable from the start in a shared
    // writable VMA (no write-notify for shmem), read-only in a private one.
    if (write && !vma.shared) return {};  // do_cow_fault: a 4 KiB copy
    if (!shmem_huge_folio(k, vma, base)) return {};
    k.store.set_leaf(d, i, no_deposit(), vma.shared && vma.writable(), 0);
    shmem_pmd_map(k, mm, vma, base, +1);
    ++k.faults;
    ++mm.min_flt;
    *handled = true;
    return {};
  }
  // A huge leaf is there.
  if (!write || d->leaf_writable(i)) {
    *handled = true;
    return {};
  }
  if (vma.is_anon()) {
    const uint32_t id = d->page_of(i);
    if (id == 0 && k.prof.huge.zero_wp_allocates) {  // a write to the huge zero page
      status st;
      if (thp_alloc(k, mm, vma, d, i, st)) {
        *handled = true;
        return st;
      }
    } else if (id && k.huge.anons[id].entire == 1 && !k.huge.anons[id].subpages) {
      // do_huge_pmd_wp_page: the THP is this mapping's alone: reuse it.
      k.store.set_leaf_writable(d, i, true);
      ++k.faults;
      ++mm.min_flt;
      *handled = true;
      return {};
    }
  }
  // COW of a shared THP, a write to the huge zero page before 6.13, or a write to a
  // read-only shmem PMD: split, and fault at PTE level.
  split_huge_pmd(k, mm, vma, base);
  return {};
}

void split_huge_pmd(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr base) {
  bool oom = false;
  uint32_t i = 0;
  pt_dir* d = pmd_table(k, mm, base, false, &oom, &i);
  if (!d || !d->is_leaf(i) || vma.is_hugetlb()) return;
  k.forget_walks();
  if (!vma.is_anon()) {  // a file THP's split zaps the PMD; later faults map PTEs
    k.store.clear_leaf(d, i);
    shmem_pmd_map(k, mm, vma, base, -1);
    return;
  }
  const uint32_t id = d->page_of(i);
  const bool writable = d->leaf_writable(i);
  auto* t = static_cast<pte_table*>(k.store.clear_leaf(d, i));  // withdraw the deposit
  d->slot[i] = t;
  ++d->nr_used;
  k.store.set_full(t);
  if (id == 0) return;  // the huge zero page: 512 zero-page PTEs
  huge_anon& h = k.huge.anons[id];
  const uint32_t n = pmd_pages(k);
  k.store.ensure_anonmap(t);
  k.store.ensure_writable(t);
  for (uint32_t w = 0; w < n / 64; ++w) {
    t->anonmap()[w] = ~uint64_t{0};
    t->writable()[w] = writable ? ~uint64_t{0} : 0;
  }
  if (h.entire == 1 && !h.subpages) {
    // The only mapping: 512 exclusive small pages.
    k.pm.split_huge(1);
    thp_pmd_ref(k, id, -1);
    huge_anon_release(k, id);
    return;
  }
  if (!h.subpages) {
    // The first PTE mapping of a shared THP: its subpages get an identity each, mapped by
    // every PMD that maps the THP (the rmap counters already count those mappings).
    k.pm.split_huge(1);
    h.subpages = k.pm.share_anon_range(n, h.entire, vma.anon_vma);
  }
  k.store.ensure_anon(t);
  for (uint32_t j = 0; j < n; ++j) t->anon()[j] = h.subpages + j;
  thp_pmd_ref(k, id, -1);  // this PMD mapping became 512 PTE mappings of the same pages
  if (h.entire == 0) huge_anon_release(k, id);
}

void split_huge_range_edges(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr start, vaddr end) {
  if (vma.is_hugetlb() || (!k.prof.huge.thp && !k.prof.huge.shmem_thp)) return;
  const vaddr span = k.geo.table_span();
  for (vaddr edge : {start, end})
    if (edge & (span - 1)) split_huge_pmd(k, mm, vma, edge & ~(span - 1));
}

void zap_huge_pmds(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr start, vaddr end) {
  if (vma.is_hugetlb() || (!k.prof.huge.thp && !k.prof.huge.shmem_thp)) return;
  const vaddr span = k.geo.table_span();
  const vaddr dir_span = span * k.prof.paging.at(pmd_level(k)).entries;  // what one PMD page maps
  for (vaddr base = (start + span - 1) & ~(span - 1); base + span <= end; base += span) {
    const pt_dir* look = dir_lookup(k, mm, pmd_level(k), base);
    if (!look || !look->nr_leaves) {
      // No huge PMD in this PMD page (or no PMD page): on to the next one.
      const vaddr next = (base & ~(dir_span - 1)) + dir_span;
      if (next == 0) break;  // the top of the address space
      base = next - span;
      continue;
    }
    if (!look->is_leaf(k.prof.paging.index(pmd_level(k), base))) continue;
    bool oom = false;
    uint32_t i = 0;
    pt_dir* d = pmd_table(k, mm, base, false, &oom, &i);
    k.forget_walks();
    if (!vma.is_anon()) {
      k.store.clear_leaf(d, i);
      shmem_pmd_map(k, mm, vma, base, -1);
      continue;
    }
    const uint32_t id = d->page_of(i);
    void* deposit = k.store.clear_leaf(d, i);
    pt_put(k, mm, pte_level(k), deposit);  // zap_deposited_table
    if (!id) continue;                     // the huge zero page
    const uint32_t n = pmd_pages(k);
    mm.rss.anon -= n;
    huge_anon& h = k.huge.anons[id];
    if (h.subpages) {
      uint64_t freed = 0;
      for (uint32_t j = 0; j < n; ++j) freed += rmap_remove_anon(k, h.subpages + j);
      k.pm.free(page_use::anon, freed);
      thp_pmd_ref(k, id, -1);
      if (h.entire == 0) huge_anon_release(k, id);
      continue;
    }
    k.rm.reverse_maps -= n;
    thp_pmd_ref(k, id, -1);
    if (h.entire == 0) {  // its last mapping: the THP is freed whole
      k.pm.free_huge(page_use::anon, 1);
      k.rm.mapped_anon -= n;
      huge_anon_release(k, id);
    }
  }
}

status copy_huge_pmd(kernel& k, mm_struct& dst, const vm_area_struct& vma, pt_dir* sd, pt_dir* dd, uint32_t i) {
  if (!vma.is_anon() || dd->slot[i]) return {};  // a file THP is not copied: the child refaults
  void* deposit = pt_alloc(k, dst, pte_level(k));
  if (!deposit) return oom_status(k, "a page-table page (fork)", gfp_zone::kernel);
  const uint32_t id = sd->page_of(i);
  k.store.set_leaf(dd, i, deposit, false, id);
  if (!id) return {};  // the huge zero page
  k.store.set_leaf_writable(sd, i, false);
  thp_pmd_ref(k, id, +1);  // a PTE-mapped THP's subpages count the new mapping each
  if (!k.huge.anons[id].subpages) {
    k.rm.reverse_maps += pmd_pages(k);
    k.rm.max_reverse_maps = std::max(k.rm.max_reverse_maps, k.rm.reverse_maps);
  }
  dst.rss.anon += pmd_pages(k);
  return {};
}

void wrprotect_huge_range(kernel& k, mm_struct& mm, vaddr start, vaddr end) {
  for_each_leaf(k, mm, start, end, [&](const leaf_ref& l) {
    if (l.base >= start && l.base + l.size <= end) k.store.set_leaf_writable(l.d, l.i, false);
  });
}

leaf_ref find_leaf(kernel& k, mm_struct& mm, vaddr addr) {
  const paging_format& f = k.prof.paging;
  pt_dir* d = mm.pgd;
  for (int i = 0; i < f.nr_levels - 1 && d; ++i) {
    // A leaf sits in the entry of its huge page's aligned address (arch.h 5).
    const bytes size = f.at(i).leaf_size();
    if (const uint32_t y = f.index(i, addr & ~(size - 1)); d->is_leaf(y)) return {d, y, i, addr & ~(size - 1), size};
    const uint32_t x = f.index(i, addr);
    if (i == f.nr_levels - 2) break;
    d = static_cast<pt_dir*>(d->slot[x]);
  }
  return {};
}

}  // namespace vmlab
