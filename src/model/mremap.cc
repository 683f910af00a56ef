// mremap(2) and remap_file_pages(2): the model's mm/mremap.c and mm/fremap.c (the 4.0+
// emulation lives in mm/mmap.c).
//
// Kernel (6.x unless noted): do_mremap -> shrink (do_vmi_munmap of the tail), grow in
// place (vma_expandable: nothing mapped after the VMA), or move_vma: copy_vma (a new VMA
// with the same object, anon_vma and linear page index, so every page keeps its identity),
// move_page_tables (move_normal_pud, move_normal_pmd, move_huge_pmd, else move_ptes into
// tables allocated at the new address; each policy of the profile's mremap_policy), then
// the old range's munmap, whose free_pgtables frees the emptied tables with the usual
// floor and ceiling. A move that runs out of memory moves back what it moved and unmaps
// the new range, as move_vma does. 2.4 and 2.5 moved PTE by PTE (move_one_page), a
// destination table allocated as the first present entry of its span moved; 2.6.14+ moves
// a PMD extent at a time and allocates the destination table of every extent whose source
// table exists (mremap_policy::dest_table_per_extent).
//
// PTSHARE (the 2.6.15 posting, the profile's): move_vma unshares the old range first
// (pt_unshare_range): the moved VMA has another key, and the shared pages stay with their
// other holders. Growing in place and shrinking change only the VMA's end (the zap of a
// shrink unshares what it touches). remap_file_pages unshares the whole VMA.
//
// remap_file_pages: on 2.6 (rfp_impl::nonlinear) the range becomes VM_NONLINEAR and its
// PTEs are replaced in place (filemap_populate -> install_page): no table is freed. On 4.0+
// (rfp_impl::emulated) it is mmap(MAP_SHARED | MAP_FIXED | MAP_POPULATE) of the range at
// the new offset: the range is unmapped (its tables freed as munmap frees them) and
// populated again.
//
// Simplifications (docs/decisions.md "Issue 10: mremap and remap_file_pages"): hugetlb
// VMAs are not resized or moved (EINVAL, as before 5.17; 5.17+ moves an aligned hugetlb
// range); a moved mapping goes where get_unmapped_area puts a page-aligned range (no THP
// alignment of the new address); a 2.6 nonlinear range is a VMA of its own here (its
// pages follow from its vm_pgoff) where the kernel kept one VMA on i_mmap_nonlinear, so
// the vm_area_struct count is one or two higher, a later mremap across the pieces needs one
// VMA, and its populate is counted as faults (fork copies its PTEs, as 2.6 did); 2.5's
// pte_chain order in a move (move_entry); after a failed move, huge PMDs beyond the
// failure point go with the new range rather than back; ppc64's huge-page-only areas are
// not consulted for the new place.
#include <algorithm>

#include "model/kernel.h"
#include "vmlab/op_builder.h"

namespace vmlab {
namespace {

constexpr uint64_t bit(uint32_t i) { return uint64_t{1} << (i & 63); }

// Moves the PTE at entry si of `st` to entry di of `dt` (empty): the same page, the same
// write permission and anonymous identity. On a design with per-page rmap state (2.5's
// pte_chains) the page gains its new PTE before it loses the old. Simplification: 2.5's
// copy_one_pte does page_remove_rmap first, then page_add_rmap with a pte_chain
// move_one_page preallocated, so a page mapped once never needs a chain on the way; here
// it may, for that moment, so a move can run out of pte_chains one chain earlier than
// the kernel would (the figures after the move are the same). false when a pte_chain
// could not be allocated (nothing moved).
bool move_entry(kernel& k, const vm_area_struct& vma, vaddr old_addr, pte_table* st, uint32_t si, pte_table* dt,
                uint32_t di) {
  const uint32_t sw = si >> 6, dw = di >> 6;
  const bool writable = st->writable_word(sw) & bit(si);
  const bool anon = st->anon_word(sw) & bit(si);
  const uint32_t id = anon && st->anon() ? st->anon()[si] : 0;
  if (k.rmap->per_page_state) {
    if (anon && id) {
      if (!rmap_dup_anon(k, id)) return false;
      rmap_remove_anon(k, id);  // not its last PTE: it was just given another
    } else if (!anon && !vma.is_anon()) {  // (an anonymous VMA's other PTEs map the zero page: no rmap)
      const int64_t pg = int64_t(vma.pgoff_at(old_addr, k.geo.shift));
      uint64_t done = 0;
      if (!rmap_add_object_word(k, vma.object, pg, 1, done)) return false;
      rmap_remove_object_word(k, vma.object, pg, 1);
    }
  }
  k.store.set_present(dt, dw, bit(di));
  if (writable) {
    k.store.ensure_writable(dt);
    dt->writable()[dw] |= bit(di);
  }
  if (anon) {
    k.store.ensure_anonmap(dt);
    dt->anonmap()[dw] |= bit(di);
  }
  if (id) {
    k.store.ensure_anon(dt);
    dt->anon()[di] = id;
    st->anon()[si] = 0;
  }
  if (st->writable()) st->writable()[sw] &= ~bit(si);
  if (st->anonmap()) st->anonmap()[sw] &= ~bit(si);
  k.store.clear_present_word(st, sw, bit(si));
  return true;
}

// Hands the node in the slot for `old_addr` at level index idx (a PTE page: idx = last;
// a PMD page: last - 1) over to the empty slot for `new_addr` (move_normal_pmd /
// move_normal_pud). The node keeps its entries and its owner; no page is allocated or
// freed but the tables above the new slot. false when it cannot (nothing there, a leaf, a
// shared or uniform node's parent, an occupied new slot, or no memory for the tables
// above it): the caller moves the entries instead.
bool move_normal_node(kernel& k, mm_struct& mm, int idx, vaddr old_addr, vaddr new_addr) {
  const paging_format& f = k.prof.paging;
  bool oom = false;
  const pt_dir* look = dir_lookup(k, mm, idx - 1, old_addr);
  const uint32_t si = f.index(idx - 1, old_addr), di = f.index(idx - 1, new_addr);
  if (!look || look->shared_pt || !look->slot[si] || look->is_leaf(si)) return false;
  if (const pt_dir* dl = dir_lookup(k, mm, idx - 1, new_addr); dl && dl->slot[di]) return false;
  pt_dir* dd = dir_walk(k, mm, idx - 1, new_addr, true, &oom);
  if (!dd || dd->slot[di]) return false;
  pt_dir* sd = dir_walk(k, mm, idx - 1, old_addr, false, &oom);
  void* node = sd->slot[si];
  if (is_uniform(node)) node = pt_materialize(k, sd, si, idx);
  sd->slot[si] = nullptr;
  --sd->nr_used;
  dd->slot[di] = node;
  ++dd->nr_used;
  k.forget_walks();
  return true;
}

// move_page_tables(): the entries of [old_addr, old_addr + len) of `vma` to the same
// offsets from new_addr (inside `nv`, which has no entries there). Returns the bytes
// moved: len, or less when memory ran out (the kernel's "how much done").
bytes move_page_tables(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr old_addr, vaddr new_addr, bytes len) {
  const paging_format& f = k.prof.paging;
  const int last = f.nr_levels - 1;
  // (A 2-level format, i386 without PAE, has no PMD page to hand over: pud_span 0.)
  const vaddr old_end = old_addr + len, pmd_span = k.geo.table_span(), pud_span = last >= 2 ? f.at(last - 2).span() : 0;
  const vaddr delta = new_addr - old_addr;  // (mod 2^64: a move down is a wrap-around add)
  // Huge PMDs first (move_huge_pmd): one the range covers and that lands on a PMD
  // boundary with an empty entry moves with its deposit; any other is split and its PTEs
  // move below.
  std::vector<leaf_ref> leaves;
  for_each_leaf(k, mm, old_addr, old_end, [&](const leaf_ref& l) { leaves.push_back(l); });
  for (const leaf_ref& l : leaves) {
    const vaddr na = l.base + delta;
    bool moved = false;
    if (l.base >= old_addr && l.base + l.size <= old_end && !(na & (l.size - 1))) {
      bool oom = false;
      pt_dir* dd = dir_walk(k, mm, l.idx, na, true, &oom);
      const uint32_t di = f.index(l.idx, na);
      if (dd && !dd->slot[di]) {
        const bool w = l.d->leaf_writable(l.i);
        const uint32_t page = l.d->page_of(l.i);
        k.store.set_leaf_page(l.d, l.i, 0);
        void* deposit = k.store.clear_leaf(l.d, l.i);
        k.store.set_leaf(dd, di, deposit, w, page);
        k.forget_walks();
        moved = true;
      }
    }
    if (!moved) split_huge_pmd(k, mm, vma, l.base);
  }
  for (vaddr a = old_addr; a < old_end;) {
    // A whole PMD page, then a whole PTE page, where the profile moves them.
    if (k.prof.mremap.move_pud && pud_span && !(a & (pud_span - 1)) && !((a + delta) & (pud_span - 1)) && old_end - a >= pud_span &&
        move_normal_node(k, mm, last - 1, a, a + delta)) {
      a += pud_span;
      continue;
    }
    if (k.prof.mremap.move_pmd && !(a & (pmd_span - 1)) && !((a + delta) & (pmd_span - 1)) && old_end - a >= pmd_span &&
        move_normal_node(k, mm, last, a, a + delta)) {
      a += pmd_span;
      continue;
    }
    const vaddr base = k.geo.table_base(a), hi = std::min<vaddr>(base + pmd_span, old_end);
    bool oom = false;
    pte_table* st = pte_walk(k, mm, base, false, &oom);
    if (!st) {
      a = std::min<vaddr>(std::max(pte_walk_skip(k, mm, base), hi), old_end);
      continue;
    }
    if (k.prof.mremap.dest_table_per_extent) {
      // 2.6.14+: the destination's PTE pages for this extent (one, or two when the new
      // range straddles a table boundary) exist before any entry moves, present or not.
      for (vaddr d = k.geo.table_base(a + delta); d < hi + delta; d += pmd_span)
        if (!pte_walk(k, mm, std::max(d, a + delta), true, &oom)) return a - old_addr;
      st = pte_walk(k, mm, base, false, &oom);  // (a walk may have materialised a uniform node)
    }
    pte_table* dt = nullptr;
    vaddr dt_base = 1;
    for (vaddr x = a; x < hi; x += k.geo.size()) {
      const uint32_t si = k.geo.index(x);
      if (!st->test(si)) continue;
      const vaddr nx = x + delta;
      if (k.geo.table_base(nx) != dt_base) {
        dt = pte_walk(k, mm, nx, true, &oom);
        // The walk may have materialised a uniform node on the way: look the source up again.
        st = pte_walk(k, mm, base, false, &oom);
        if (!dt) return x - old_addr;
        dt_base = k.geo.table_base(nx);
      }
      if (!move_entry(k, vma, x, st, si, dt, k.geo.index(nx))) return x - old_addr;
    }
    if (st->nr_present == 0) {
      k.store.clear_present(st);
      k.store.drop_private(st);
    }
    a = hi;
  }
  return len;
}

// The VMA containing all of [addr, addr + len), or EFAULT as vma_to_resize() says it.
result<vm_area_struct*> one_vma(mm_struct& mm, vaddr addr, bytes len, const char* call) {
  vm_area_struct* v = find_vma(mm, addr);
  if (!v || v->vm_start > addr)
    return status::refused(std::string("EFAULT: ") + call + " of 0x" + fmt_hex(addr) + ": nothing is mapped there");
  if (len > v->vm_end - addr)
    return status::refused(std::string("EFAULT: ") + call + " of [0x" + fmt_hex(addr) + ", 0x" + fmt_hex(addr + len) +
                           ") spans more than one VMA (vma_to_resize)");
  return v;
}

// move_vma(): [addr, addr + old_len) of `vma` to new_addr, as a VMA of new_len.
result<vaddr> move_vma(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr addr, bytes old_len, bytes new_len,
                       vaddr new_addr) {
  // PTSHARE: the old range's shared tables are let go (pt_unshare_range) before anything
  // moves; only this mm's own tables move.
  ptshare_unshare_range(k, mm, addr, addr + old_len);
  vm_area_struct nv = vma;
  nv.avcs.clear();
  nv.vm_start = new_addr;
  nv.vm_end = new_addr + new_len;
  nv.pgoff = vma.pgoff_at(addr, k.geo.shift);  // anonymous pages keep their linear index
  if (status s = vm_area_alloc(k, nv); !s.ok()) return s;
  if (status s = anon_vma_clone(k, nv, vma); !s.ok()) {
    nv.anon_vma = 0;
    vm_area_free(k, nv);
    return s;
  }
  vm_area_struct& placed = mm.vmas.emplace(new_addr, std::move(nv)).first->second;
  const bytes moved = move_page_tables(k, mm, vma, addr, new_addr, old_len);
  if (moved < old_len) {
    // "On error, move entries back from new area to old, which will succeed since page
    // tables should be available" (move_vma), then the new range goes.
    move_page_tables(k, mm, placed, new_addr, addr, moved);
    do_munmap(k, mm, new_addr, new_addr + new_len);
    return oom_status(k, "page tables for the new place of an mremap", gfp_zone::kernel);
  }
  if (status s = do_munmap(k, mm, addr, addr + old_len); !s.ok()) return s;
  merge_around(k, mm, new_addr);
  return new_addr;
}

}  // namespace

result<vaddr> do_mremap(kernel& k, mm_struct& mm, vaddr addr, bytes old_len, bytes new_len, bool maymove, bool fixed,
                        vaddr new_addr) {
  const bytes page_mask = k.geo.size() - 1;
  // (The kernel rounds the lengths up with PAGE_ALIGN; vmlab's readers give page
  // multiples, and a caller that does not gets EINVAL.)
  if (!new_len || (new_len & page_mask) || (old_len & page_mask))
    return status::refused("EINVAL: mremap lengths must be non-zero multiples of the page size");
  if (fixed && !maymove) return status::refused("EINVAL: MREMAP_FIXED needs MREMAP_MAYMOVE");
  vm_area_struct* v = find_vma(mm, addr);
  if (!v || v->vm_start > addr)
    return status::refused("EFAULT: mremap of 0x" + fmt_hex(addr) + ": nothing is mapped there");
  if (v->is_hugetlb())
    return status::refused("EINVAL: mremap of a hugetlb mapping (vmlab follows the kernels before 5.17, which refused "
                           "it; see docs/decisions.md)");
  if (is_mshare_vma(k, *v))
    return status::refused("EINVAL: mremap of an mshare region: its VMA cannot be split or moved (mshare v3)");
  // vmlab keeps no page beyond an object's end (the kernel would map it and SIGBUS on
  // touch): a mapping of an object grows no further than the object.
  if (new_len > old_len && !v->is_anon() &&
      v->pgoff_at(addr, k.geo.shift) + k.geo.pages(new_len) > k.objects[size_t(v->object)].nr_pages)
    return status::refused("EINVAL: mremap to " + std::to_string(new_len) + " bytes would map past the end of its object "
                           "(vmlab models no pages beyond an object's end)");
  const vaddr task = k.prof.paging.task_size;
  if (fixed) {
    // mremap_to(): the target is checked and unmapped, the old range shrunk, and only
    // then must what is left lie in one VMA (vma_to_resize).
    if ((new_addr & page_mask) || new_len > task || new_addr > task - new_len)
      return status::refused("EINVAL: mremap target [0x" + fmt_hex(new_addr) + ", +" + std::to_string(new_len) +
                             ") lies outside user space");
    if (new_addr < addr + old_len && addr < new_addr + new_len)
      return status::refused("EINVAL: mremap target overlaps the old range");
    if (new_addr < kMmapMinAddr)  // security_mmap_addr, from get_unmapped_area
      return status::refused("EPERM: mremap target 0x" + fmt_hex(new_addr) + " is below vm.mmap_min_addr");
    if (overlaps(mm, new_addr, new_addr + new_len)) {  // MREMAP_FIXED unmaps what is there
      note_mapped_max(k);
      if (status s = do_munmap(k, mm, new_addr, new_addr + new_len); !s.ok()) return s;
    }
    if (old_len > new_len) {
      note_mapped_max(k);
      if (status s = do_munmap(k, mm, addr + new_len, addr + old_len); !s.ok()) return s;
      old_len = new_len;
    }
    auto found = one_vma(mm, addr, old_len, "mremap");
    if (!found.ok()) return found.error();
    const bool locked = found.value()->locked;
    auto r = move_vma(k, mm, *found.value(), addr, old_len, new_len, new_addr);
    if (r.ok() && locked && new_len > old_len)  // do_mremap populates what a locked move grew
      if (status s = mm_populate(k, mm, new_addr + old_len, new_addr + new_len); !s.ok()) return s;
    return r;
  }
  // A shrink unmaps the tail, whatever VMAs the range spans ("old_len >= new_len": no
  // vma_to_resize).
  if (new_len <= old_len) {
    if (new_len < old_len) {
      note_mapped_max(k);
      if (status s = do_munmap(k, mm, addr + new_len, addr + old_len); !s.ok()) return s;
    }
    return addr;
  }
  auto found = one_vma(mm, addr, old_len, "mremap");
  if (!found.ok()) return found.error();
  v = found.value();
  // Grow in place when the old range ends the VMA and nothing is mapped after it
  // (vma_expandable), within TASK_SIZE.
  const bytes delta = new_len - old_len;
  if (addr + old_len == v->vm_end && delta <= task - v->vm_end && !overlaps(mm, v->vm_end, v->vm_end + delta)) {
    const vaddr old_end = v->vm_end;
    v->vm_end += delta;
    const vaddr start = v->vm_start;
    merge_around(k, mm, start);
    if (v = find_vma(mm, old_end); v && v->locked)
      if (status s = mm_populate(k, mm, old_end, old_end + delta); !s.ok()) return s;
    return addr;
  }
  if (!maymove)
    return status::refused("ENOMEM: mremap cannot grow [0x" + fmt_hex(addr) + ", +" + std::to_string(old_len) +
                           ") in place (the next mapping is in the way) and MREMAP_MAYMOVE was not given");
  auto to = get_unmapped_area(k, mm, new_len, 0, 0);
  if (!to.ok()) return to.error();
  const bool locked = v->locked;
  auto r = move_vma(k, mm, *v, addr, old_len, new_len, to.value());
  if (r.ok() && locked)
    if (status s = mm_populate(k, mm, r.value() + old_len, r.value() + new_len); !s.ok()) return s;
  return r;
}

status do_remap_file_pages(kernel& k, mm_struct& mm, vaddr start, bytes size, uint64_t pgoff) {
  const rfp_impl impl = k.prof.mremap.remap_file_pages;
  if (impl == rfp_impl::none)
    return status::refused("ENOSYS: " + k.prof.name + " has no remap_file_pages (it came with 2.5.46)");
  if (!size || (size & (k.geo.size() - 1)) || start + size < start)
    return status::refused("EINVAL: remap_file_pages size must be a non-zero multiple of the page size");
  vm_area_struct* v = find_vma(mm, start);
  if (!v || v->vm_start > start || !v->shared || v->is_anon())
    return status::refused("EINVAL: remap_file_pages needs a MAP_SHARED mapping of a file at 0x" + fmt_hex(start));
  if (is_mshare_vma(k, *v))
    return status::refused("EINVAL: remap_file_pages of an mshare region: its VMA cannot be split (mshare v3)");
  const vaddr end = start + size;
  if (pgoff + k.geo.pages(size) > k.objects[size_t(v->object)].nr_pages)
    return status::refused("EINVAL: remap_file_pages of pages past the end of the object (vmlab models none)");
  if (impl == rfp_impl::nonlinear) {
    // 2.6.15 sys_remap_file_pages: one VMA, with a populate op (hugetlbfs has none).
    if (end > v->vm_end) return status::refused("EINVAL: remap_file_pages range leaves its VMA (2.6: one VMA only)");
    if (v->is_hugetlb()) return status::refused("EINVAL: remap_file_pages of a hugetlb mapping (no ->populate)");
    if (pgoff == v->pgoff_at(start, k.geo.shift) && !v->nonlinear) {
      // Linear already: populate only.
      return mm_populate(k, mm, start, end);
    }
    // PTSHARE (the 2.6.15 posting): pt_unshare_range(vma, vma->vm_start, vma->vm_end),
    // the whole VMA, which becomes VM_NONLINEAR; vmlab's nonlinear part is a VMA of its
    // own, the rest stays linear (and shareable again under its new key).
    ptshare_unshare_range(k, mm, v->vm_start, v->vm_end);
    if (status s = split_at(k, mm, start); !s.ok()) return s;
    if (status s = split_at(k, mm, end); !s.ok()) return s;
    vm_area_struct* piece = find_vma(mm, start);
    note_mapped_max(k);
    zap_range(k, mm, *piece, start, end, false);  // install_page replaces each PTE: no table freed
    piece->pgoff = pgoff;
    piece->nonlinear = true;
    return mm_populate(k, mm, start, end);
  }
  // 4.0+: the range may span VMAs of the same file and flags, without holes; then
  // do_mmap(MAP_SHARED | MAP_FIXED | MAP_POPULATE) at pgoff with the VMA's protection.
  for (const vm_area_struct* w = v; w->vm_end < end;) {
    const vm_area_struct* n = find_vma(mm, w->vm_end);
    if (!n || n->object != v->object || n->prot != v->prot || n->locked != v->locked || n->shared != v->shared)
      return status::refused("EINVAL: remap_file_pages range is not one run of VMAs of the same file and flags");
    w = n;
  }
  if (v->is_hugetlb()) {
    const bytes h = (bytes{1} << v->huge_shift) - 1;
    if ((start | size | (pgoff << k.geo.shift)) & h)
      return status::refused("EINVAL: remap_file_pages of a hugetlb mapping must be in whole huge pages");
  }
  // The mapping keeps its name: do_mmap records a map only for the op's own `map`, which
  // must not be any mapping of this process's.
  const bool locked = v->locked;
  const op o = ops::mmap_object(mm.pid, UINT32_MAX, v->object, size)
                   .shared()
                   .locked(locked)
                   .at(start)
                   .object_offset(pgoff << k.geo.shift)
                   .prot(v->prot);
  note_mapped_max(k);
  if (status s = do_munmap(k, mm, start, end); !s.ok()) return s;
  auto r = do_mmap(k, mm, o);
  mm.maps.erase(UINT32_MAX);
  if (!r.ok()) return r.error();
  return locked ? status{} : mm_populate(k, mm, start, end);
}

}  // namespace vmlab
