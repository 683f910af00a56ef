// Shared page tables (PTSHARE and mshare): the share point, unsharing, and the
// accounting of shared subtrees. The rules and what is simplified are in ptshare.h.
#include "model/ptshare.h"

#include "model/kernel.h"

namespace vmlab {
namespace {

// VMFLAG_COMPARE = VM_READ | VM_WRITE | VM_EXEC | VM_SHARED.
uint8_t compare_flags(const vm_area_struct& vma) { return uint8_t(vma.prot | (vma.shared ? 0x80 : 0)); }

// What one node at level index idx maps: the span of its parent's entry.
uint64_t node_span(const kernel& k, int idx) { return k.prof.paging.at(idx - 1).span(); }

ptshare_key key_for(const kernel& k, const vm_area_struct& vma, int idx, vaddr addr) {
  const vaddr base = addr & ~(node_span(k, idx) - 1);
  // mshare: the region's page at this offset, wherever this process maps the region.
  if (is_mshare_vma(k, vma)) return {vma.object, 0, 0, vma.pgoff_at(base, k.geo.shift), 0, uint8_t(idx), 0, true};
  return {vma.object, vma.vm_start, vma.vm_end, vma.pgoff, compare_flags(vma), uint8_t(idx), base, false};
}

// Whether the profile shares nodes of level index idx under vma and vma covers the whole
// span of the one that maps addr. mshare shares the host's PUD table, which each process
// links from its P4D entry (the PGD entry on 4-level x86-64, where the P4D is folded):
// mm/mshare.c find_shared_vma, `set_p4d(guest_p4d, *p4d)` after
// `ptdesc_pud_pts_inc(virt_to_ptdesc(pud))` (v3 and the 2025 versions after it).
bool level_shared(const kernel& k, const vm_area_struct& vma, int idx, vaddr addr) {
  const level l = k.prof.paging.at(idx).lvl;
  if (is_mshare_vma(k, vma) ? l != level::pud : !k.prof.ptshare.shares(l)) return false;
  const uint64_t span = node_span(k, idx);
  const vaddr base = addr & ~(span - 1);
  return vma.vm_start <= base && base + span <= vma.vm_end && base + span > base;
}

// Frees everything below the shared node `node` (level index idx, mapping from `base`),
// zapping the entries of its PTE pages first: the rmap loses them (they are in no mm's
// RSS). `first_pg` is the object page `base` maps.
void release_below(kernel& k, int idx, void* node, vaddr base, int32_t object, int64_t first_pg) {
  const paging_format& f = k.prof.paging;
  const int last = f.nr_levels - 1;
  if (idx == last) {
    auto* t = static_cast<pte_table*>(node);
    t->for_each_word([&](uint32_t w, uint64_t m) {
      if (m) rmap_remove_object_word(k, object, first_pg + int64_t(w) * 64, m);
    });
    k.store.clear_present(t);
    k.store.drop_private(t);
    t->nr_present = 0;
    return;
  }
  auto* d = static_cast<pt_dir*>(node);
  const uint64_t span = f.at(idx).span();
  for (uint32_t i = 0; i < d->entries && d->nr_used; ++i) {
    void* c = d->slot[i];
    if (!c) continue;
    if (d->is_leaf(i)) {  // an mshare region's hugetlb page: it stays in its file
      k.store.clear_leaf(d, i);
      continue;
    }
    const int64_t pg = first_pg + int64_t((vaddr{i} * span) >> k.geo.shift);
    release_below(k, idx + 1, c, base + vaddr{i} * span, object, pg);
    d->slot[i] = nullptr;
    --d->nr_used;
    pt_put_shared(k, idx + 1, c);
  }
}

}  // namespace

bool is_mshare_vma(const kernel& k, const vm_area_struct& vma) {
  return k.prof.ptshare.mshare && !vma.is_anon() && k.objects[static_cast<size_t>(vma.object)].mshare;
}

void ptshare_hold(kernel& k, mm_struct& mm, int idx, void* node) {
  if (k.pts.key_of.at(node).host) ++pt_refcount(k, idx, node);
  else pt_get(k, mm, idx, node);
  ++k.pts.attaches;
}

bool pt_shareable_vma(const kernel& k, const vm_area_struct& vma) {
  if (is_mshare_vma(k, vma)) return true;  // the region's rules are checked at load (op_rules.cc)
  if (!k.prof.ptshare.ptshare() || vma.is_anon() || vma.is_hugetlb()) return false;
  // A nonlinear VMA's pages do not follow from vm_pgoff: no key describes them.
  if (vma.nonlinear) return false;
  if (!vma.shared && vma.writable()) return false;  // only shared or read-only mappings
  const paging_format& f = k.prof.paging;
  if (vma.vm_end - vma.vm_start < f.at(f.nr_levels - 2).span()) return false;  // < PMD_SIZE
  // A huge PMD cannot sit in a shared PMD page (pgtable.h invariant 6): no shmem THP.
  const mem_object& obj = k.objects[static_cast<size_t>(vma.object)];
  if (k.prof.huge.shmem_thp && obj.kind == object_kind::shm && !vma.nohugepage) {
    const shmem_thp_mode m = k.prof.huge.shmem_enabled;
    if (vma.hugepage || (m != shmem_thp_mode::never && m != shmem_thp_mode::deny)) return false;
  }
  return true;
}

bool ptshare_prepare(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr addr) {
  const paging_format& f = k.prof.paging;
  pt_dir* d = mm.pgd;
  for (int idx = 1; idx < f.nr_levels; ++idx) {
    const uint32_t x = f.index(idx - 1, addr);
    if (d->is_leaf(x)) return true;
    void*& s = d->slot[x];
    if (s && is_shared_pt(k, idx, s)) return true;  // in a shared subtree already
    if (!s && level_shared(k, vma, idx, addr)) {
      const ptshare_key key = key_for(k, vma, idx, addr);
      if (auto it = k.pts.shareable.find(key); it != k.pts.shareable.end()) {
        // pt_share_pte / pt_share_pmd: the partner's page, with its entries.
        s = it->second;
        ++d->nr_used;
        ptshare_hold(k, mm, idx, s);
        k.forget_walks();
        return true;
      }
      // No partner yet: this mm's own page (charged to it, as a top node is to each
      // holder) becomes one; under mshare, a page of the host mm, charged to no process.
      void* n = key.host ? pt_alloc_unowned(k, mm, idx) : pt_alloc(k, mm, idx, d);
      if (!n) return false;
      if (idx == f.nr_levels - 1) static_cast<pte_table*>(n)->shared_pt = 1;
      else static_cast<pt_dir*>(n)->shared_pt = 1;
      s = n;
      ++d->nr_used;
      k.pts.shareable.emplace(key, n);
      k.pts.key_of.emplace(n, key);
      k.forget_walks();
      return true;
    }
    if (idx == f.nr_levels - 1) return true;  // a private PTE page, or none to share
    if (!s) {
      s = pt_alloc(k, mm, idx, d);
      if (!s) return false;
      ++d->nr_used;
    }
    if (is_uniform(s)) pt_materialize(k, d, x, idx);
    d = static_cast<pt_dir*>(s);
  }
  return true;
}

void ptshare_drop(kernel& k, mm_struct& mm, pt_dir* parent, uint32_t i, int idx) {
  void* n = parent->slot[i];
  parent->slot[i] = nullptr;
  --parent->nr_used;
  k.forget_walks();
  const ptshare_key key = k.pts.key_of.at(n);  // REQUIRES: a top node is registered
  if (!key.host) {
    ++k.pts.unshares;
    ++k.pts.tlb_flush_all;  // pmd_clear_flush: every CPU, as nobody knows where the entries were cached
  }
  if (pt_refcount(k, idx, n) == 1) {
    // The last holder: the page goes with its entries (mshare: the region is torn down
    // with its last unmap; vmlab has no unlink, as if the file was unlinked once mapped).
    const int64_t pg = int64_t(key.pgoff) + int64_t((key.base - key.vm_start) >> k.geo.shift);
    release_below(k, idx, n, key.base, key.object, pg);
  }
  if (key.host) pt_put_shared(k, idx, n);
  else pt_put(k, mm, idx, n);
}

void ptshare_unshare_range(kernel& k, mm_struct& mm, vaddr start, vaddr end, bool keep_mshare) {
  if (!k.prof.ptshare.any() || start >= end) return;
  const paging_format& f = k.prof.paging;
  auto walk = [&](auto& self, pt_dir* d, int idx, vaddr base) -> void {
    const uint64_t span = f.at(idx).span();
    const vaddr lo = std::max(start, base), hi = std::min<vaddr>(end, base + span * f.at(idx).entries);
    if (lo >= hi || !d->nr_used) return;
    const uint32_t i0 = uint32_t((lo - base) / span), i1 = uint32_t((hi - 1 - base) / span);
    for (uint32_t i = i0; i <= i1 && d->nr_used; ++i) {
      void* s = d->slot[i];
      if (!s || d->is_leaf(i) || is_uniform(s)) continue;
      if (is_shared_pt(k, idx + 1, s)) {
        if (!(keep_mshare && k.pts.key_of.at(s).host)) ptshare_drop(k, mm, d, i, idx + 1);
        continue;
      }
      if (idx + 1 < f.nr_levels - 1) self(self, static_cast<pt_dir*>(s), idx + 1, base + vaddr{i} * span);
    }
  };
  walk(walk, mm.pgd, 0, 0);
}

void mshare_change_protection(kernel& k, int32_t object, bool writable) {
  const int last = k.prof.paging.nr_levels - 1;
  auto clear = [&](auto& self, void* n, int idx) -> void {
    if (idx == last) {
      // A PTE's write bit is set again by the write fault that needs it (write-notify).
      auto* t = static_cast<pte_table*>(n);
      if (t->writable() && !writable) std::fill(t->writable(), t->writable() + t->nwords, uint64_t{0});
      return;
    }
    auto* d = static_cast<pt_dir*>(n);
    for (uint32_t i = 0; i < d->entries && d->nr_used; ++i) {
      if (!d->slot[i]) continue;
      // A hugetlb leaf follows the protection both ways, as hugetlb_change_protection
      // sets it for a shared mapping.
      if (d->is_leaf(i)) k.store.set_leaf_writable(d, i, writable);
      else self(self, d->slot[i], idx + 1);
    }
  };
  for (const auto& [node, key] : k.pts.key_of)
    if (key.host && key.object == object) clear(clear, const_cast<void*>(node), key.idx);
  k.forget_walks();
}

void ptshare_forget(kernel& k, const void* node) {
  auto it = k.pts.key_of.find(node);
  if (it == k.pts.key_of.end()) return;
  k.pts.shareable.erase(it->second);
  k.pts.key_of.erase(it);
}

ptshare_rss_part ptshare_rss(const kernel& k, const mm_struct& mm, std::unordered_map<const void*, uint64_t>* memo) {
  ptshare_rss_part out;
  if (!k.prof.ptshare.any()) return out;
  const paging_format& f = k.prof.paging;
  const int last = f.nr_levels - 1;
  auto present = [&](auto& self, const void* n, int idx) -> uint64_t {
    if (idx == last) return static_cast<const pte_table*>(n)->nr_present;
    // hugetlb leaves (an mshare region's) are in no RSS on the kernels that have mshare.
    const auto* d = static_cast<const pt_dir*>(n);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < d->entries && d->nr_used; ++i)
      if (d->slot[i] && !d->is_leaf(i)) sum += self(self, d->slot[i], idx + 1);
    return sum;
  };
  auto walk = [&](auto& self, const pt_dir* d, int idx) -> void {
    for (uint32_t i = 0; i < d->entries && d->nr_used; ++i) {
      const void* s = d->slot[i];
      if (!s || d->is_leaf(i) || is_uniform(s)) continue;
      if (is_shared_pt(k, idx + 1, s)) {
        const ptshare_key& key = k.pts.key_of.at(s);
        auto [it, fresh] = memo->try_emplace(s, 0);
        if (fresh) it->second = present(present, s, idx + 1);
        const uint64_t n = it->second;
        (k.objects[static_cast<size_t>(key.object)].kind == object_kind::file ? out.file : out.shmem) += n;
        continue;
      }
      if (idx + 1 < last) self(self, static_cast<const pt_dir*>(s), idx + 1);
    }
  };
  walk(walk, mm.pgd, 0);
  return out;
}

bool ptshare_span_complete(const kernel& k, const mm_struct& mm, const vm_area_struct& vma, vaddr base, vaddr end,
                           bool write, vaddr* next) {
  const paging_format& f = k.prof.paging;
  const int last = f.nr_levels - 1;
  const pt_dir* d = mm.pgd;
  for (int idx = 1; idx < last && d; ++idx) {
    const uint32_t x = f.index(idx - 1, base);
    const void* s = d->slot[x];
    if (!s || d->is_leaf(x)) return false;
    if (!is_shared_pt(k, idx, s)) {
      d = static_cast<const pt_dir*>(s);
      continue;
    }
    // A shared directory above the PMD pages (mshare's PUD table): go down to the PMD
    // page that maps base, which is shared with it.
    if (idx != last - 1) {
      d = static_cast<const pt_dir*>(s);
      continue;
    }
    // A shared PMD page: complete when every PTE page below is full.
    const uint64_t span = node_span(k, idx);
    if ((base & (span - 1)) || base + span > end) return false;
    if (write && !vma.shared) return false;
    const auto* dir = static_cast<const pt_dir*>(s);
    if (dir->nr_used != dir->entries) return false;
    const bool need_writable = write && !vma.is_anon() && k.objects[size_t(vma.object)].kind == object_kind::file;
    for (uint32_t i = 0; i < dir->entries; ++i) {
      const auto* t = static_cast<const pte_table*>(dir->slot[i]);
      if (!t->is_full()) return false;
      if (need_writable) {
        for (uint32_t w = 0; w < t->nwords; ++w)
          if (t->writable_word(w) != ~uint64_t{0}) return false;
      }
    }
    *next = base + span;
    return true;
  }
  return false;
}

}  // namespace vmlab
