// Address-space life cycle: mm creation, fork (dup_mm + copy_page_range) and exit.
//
// Kernel: kernel/fork.c dup_mm/dup_mmap, mm/memory.c copy_page_range/vma_needs_copy/
// copy_pte_range/copy_present_pte, mm/mmap.c exit_mmap.
//
// vma_needs_copy() (2.6.14+, Nick Piggin's "lazy page table copies in fork"): a VMA's
// page tables are copied only if it has an anon_vma (private VMAs that took an anonymous
// page; a private anonymous VMA that was only read maps the zero page and has none), so
// shared mappings are refilled by faults in the child. Before 2.6.14 every VMA was copied.
// copy_p?d_range allocates the child's table whenever the parent has one at that place,
// even if nothing below is present; copy_present_pte write-protects COW pages in both.
//
// Ordering at exit: zap every VMA (unmap_vmas), free every table (free_pgtables with
// floor 0 and ceiling 0), then the PGD (pgd_free, taking PAE's preallocated PMDs with it).
#include "model/kernel.h"

namespace vmlab {
namespace {

uint64_t& object_rss(const kernel& k, mm_struct& mm, const vm_area_struct& v) {
  return k.objects[v.object].kind == object_kind::file ? mm.rss.file : mm.rss.shmem;
}

// copy_pte_range(): the child's PTEs for one table, page_add_rmap (page_dup_rmap) for
// every page they map. On ENOMEM (a pte_chain) the entries copied so far stay.
status copy_pte_table(kernel& k, mm_struct& dst, const vm_area_struct& v, pte_table* s, pte_table* d, vaddr base) {
  if (s->empty()) return {};
  const uint32_t entries = k.geo.entries;
  const vaddr span = k.geo.table_span();
  const uint32_t from = v.vm_start > base ? uint32_t(k.geo.pages(v.vm_start - base)) : 0;
  const uint32_t to = v.vm_end < base + span ? uint32_t(k.geo.pages(v.vm_end - base)) : entries;
  auto obj_pg = [&](uint32_t i) { return v.pgoff_at(base + (vaddr{i} << k.geo.shift), k.geo.shift); };
  // The common shared case: one pointer, no per-entry page-table work (the rmap still
  // counts every page; it cannot fail unless the scheme allocates per mapping).
  if (from == 0 && to == entries && s->is_full() && !s->anonmap() && !s->writable() && d->empty() &&
      !k.rmap->per_page_state) {
    k.store.set_full(d);
    if (!v.is_anon()) {
      object_rss(k, dst, v) += entries;
      uint64_t done = 0;
      for (uint32_t w = 0; w < entries / 64; ++w)
        (void)rmap_add_object_word(k, v.object, int64_t(obj_pg(w * 64)), ~uint64_t{0}, done);
    }
    return {};
  }
  for (uint32_t i = from; i < to; ++i) {
    if (!s->test(i)) continue;
    const uint32_t w = i >> 6;
    const uint64_t b = uint64_t{1} << (i & 63);
    if (s->anon_word(w) & b) {
      // The page becomes mapped twice: give it an identity and a mapcount.
      k.store.ensure_anon(s);
      if (!s->anon()[i]) s->anon()[i] = k.pm.share_anon(v.anon_vma);
      if (!rmap_dup_anon(k, s->anon()[i])) {
        return oom_status(k, "a pte_chain", gfp_zone::kernel);
      }
      k.store.ensure_anon(d);
      k.store.ensure_anonmap(d);
      d->anon()[i] = s->anon()[i];
      d->anonmap()[w] |= b;
      ++dst.rss.anon;
    } else if (!v.is_anon()) {
      uint64_t done = 0;
      if (!rmap_add_object_word(k, v.object, int64_t(obj_pg(i)), 1, done)) {
        return oom_status(k, "a pte_chain", gfp_zone::kernel);
      }
      ++object_rss(k, dst, v);
    }
    k.store.set_present(d, w, b);
    if (s->writable_word(w) & b) {
      if (v.is_cow()) {
        s->writable()[w] &= ~b;  // ptep_set_wrprotect in the parent
      } else {
        k.store.ensure_writable(d);
        d->writable()[w] |= b;
      }
    }
  }
  return {};
}

status copy_level(kernel& k, mm_struct& dst, const vm_area_struct& v, int idx, pt_dir* sd, pt_dir* dd, vaddr addr, vaddr end) {
  const paging_format& f = k.prof.paging;
  const uint64_t span = f.at(idx).span();
  while (addr < end) {
    const vaddr next = std::min<vaddr>((addr + span) & ~(span - 1), end);
    const uint32_t i = f.index(idx, addr);
    if (sd->is_leaf(i)) {
      // copy_huge_pmd: an anonymous THP or huge zero page (a file THP is refaulted).
      if (status st = copy_huge_pmd(k, dst, v, sd, dd, i); !st.ok()) return st;
    } else if (void* s = sd->slot[i]; s && is_shared_pt(k, idx + 1, s)) {
      // PTSHARE at fork (the 2005 posting's pt_copy_pte): the child takes the page.
      if (!dd->slot[i]) {
        dd->slot[i] = s;
        ++dd->nr_used;
        ptshare_hold(k, dst, idx + 1, s);
      }
    } else if (s) {
      void*& d = dd->slot[i];
      // A uniform node whose whole span this VMA maps, on a design whose copy keeps no
      // per-entry state: the child's copy is the same uniform node (its pages counted, its
      // pages' rmap and RSS as copy_pte_range would count them), whatever the size. When
      // memory is short the copy goes table by table, to fail where the kernel would.
      const bool full = s == k.store.uniform(idx + 1, true);
      if (!d && is_uniform(s) && entries_stateless(k, v) && (addr & (span - 1)) == 0 && addr + span <= end &&
          addr + span > addr && pt_install_uniform(k, dst, dd, i, idx + 1, full)) {
        if (full) {
          object_rss(k, dst, v) += span >> k.geo.shift;
          rmap_add_object_range(k, v.object, v.pgoff_at(addr, k.geo.shift), span >> k.geo.shift);
        }
        addr = next;
        continue;
      }
      if (!d) {
        d = pt_alloc(k, dst, idx + 1);
        if (!d) return oom_status(k, "a page-table page (fork)", gfp_zone::kernel);
        ++dd->nr_used;
      }
      pt_materialize(k, dd, i, idx + 1);
      if (is_compact(s)) s = pt_materialize(k, sd, i, idx + 1);  // copy_pte_table works on a node
      if (idx + 1 == f.nr_levels - 1) {
        if (status st = copy_pte_table(k, dst, v, static_cast<pte_table*>(s), static_cast<pte_table*>(d), addr & ~(span - 1));
            !st.ok())
          return st;
      } else if (status st = copy_level(k, dst, v, idx + 1, static_cast<pt_dir*>(s), static_cast<pt_dir*>(d), addr, next); !st.ok())
        return st;
    }
    addr = next;
  }
  return {};
}

}  // namespace

result<mm_struct*> mm_create(kernel& k, uint32_t pid) {
  auto mm = std::make_unique<mm_struct>();
  mm->pid = pid;
  auto obj = kmem_alloc(k, kmem_kind::mm_struct);
  if (!obj) return oom_status(k, "an mm_struct", gfp_zone::kernel);
  mm->obj = *obj;
  if (!pgd_alloc(k, *mm)) {
    kmem_free(k, kmem_kind::mm_struct, mm->obj);
    return oom_status(k, "a PGD", gfp_zone::kernel);
  }
  mm_struct* raw = mm.get();
  k.mms[pid] = std::move(mm);
  return raw;
}

status copy_page_range(kernel& k, mm_struct& dst, mm_struct& src, const vm_area_struct& v) {
  k.forget_walks();
  return copy_level(k, dst, v, 0, src.pgd, dst.pgd, v.vm_start, v.vm_end);
}

status dup_mm(kernel& k, mm_struct& parent, uint32_t child_pid) {
  auto r = mm_create(k, child_pid);
  if (!r.ok()) return r.error();
  mm_struct& child = *r.value();
  child.maps = parent.maps;
  child.low_htlb_areas = parent.low_htlb_areas;
  child.high_htlb_areas = parent.high_htlb_areas;
  for (const auto& [start, v] : parent.vmas) {
    // dup_mmap(): vm_area_dup, anon_vma_fork, then copy_page_range if vma_needs_copy.
    vm_area_struct cv = v;
    cv.locked = false;  // VM_LOCKED is not inherited across fork
    cv.avcs.clear();
    cv.anon_vma = 0;
    cv.resv.reset();  // a private hugetlb child owns no reservation (reset_vma_resv_huge_pages)
    status s = vm_area_alloc(k, cv);
    if (!s.ok()) {
      exit_mmap(k, child_pid);  // dup_mmap failed: the half-built mm is torn down (mmput)
      return s;
    }
    if (s = anon_vma_fork(k, cv, v); !s.ok()) {
      vm_area_free(k, cv);
      exit_mmap(k, child_pid);
      return s;
    }
    child.vmas.emplace(start, cv);
    // vma_needs_copy(): hugetlb VMAs were always copied until 6.0's lazy copy; a 2.6
    // VM_NONLINEAR VMA always is, as its PTEs cannot be faulted back from vm_pgoff.
    const bool needs_copy = !k.prof.fork_skips_shared || v.has_anon_vma || v.nonlinear ||
                            (v.is_hugetlb() && !k.prof.huge.fork_lazy);
    if (needs_copy) {
      status st = v.is_hugetlb() ? copy_hugetlb_range(k, child, parent, v) : copy_page_range(k, child, parent, v);
      if (!st.ok()) {
        exit_mmap(k, child_pid);
        return st;
      }
    }
  }
  return {};
}

void exit_mmap(kernel& k, uint32_t pid) {
  auto it = k.mms.find(pid);
  if (it == k.mms.end()) return;
  mm_struct& mm = *it->second;
  for (const auto& [start, v] : mm.vmas) zap_range(k, mm, v, v.vm_start, v.vm_end, false);
  for (auto& [start, v] : mm.vmas) vm_area_free(k, v);
  mm.vmas.clear();
  mm.mmap_cache = nullptr;
  free_all_tables(k, mm);
  pgd_free(k, mm);
  kmem_free(k, kmem_kind::mm_struct, mm.obj);
  k.forget_walks();
  k.mms.erase(it);
}

}  // namespace vmlab
