// Freeing page-table pages when VMAs go away: free_pgtables() and its two historic rules.
//
// Kernel: mm/memory.c free_pgd_range/free_p4d_range/free_pud_range/free_pmd_range/
// free_pte_range (2.6.12+, unchanged in spirit through 6.18), and for 2.4-2.6.11 the
// free_pgtables()/clear_page_tables() pair in mm/mmap.c and mm/memory.c.
//
// The floor/ceiling rule, generalised over the levels a format has (folded levels have no
// table and no test): a table is freed when the whole span it maps lies in the gap
// [floor, ceiling) left between the surviving neighbours. As in the kernel, the start is
// rounded down and the ceiling rounded down "by different masks at different levels",
// and every comparison subtracts 1 so that a ceiling of 0 means the top of the address
// space. The PGD itself is freed only at exit; PAE's preallocated PMDs likewise (their
// pmd_free was a no-op: "we free the pmds as part of the pgd").
#include "model/kernel.h"

namespace vmlab {
namespace {

bool is_preallocated(const kernel& k, int idx, uint32_t slot) {
  return idx == 1 && slot < k.prof.paging.preallocated_pmds;
}

// Frees every table below `node` (at level index idx), then `node` itself unless it is a
// preallocated PMD.
void free_subtree(kernel& k, mm_struct& mm, int idx, void* node, bool keep) {
  const int last = k.prof.paging.nr_levels - 1;
  if (is_uniform(node)) {  // the whole subtree at once (never a preallocated PMD)
    pt_put(k, mm, idx, node);
    return;
  }
  if (idx < last) {
    auto* d = static_cast<pt_dir*>(node);
    for (uint32_t i = 0; i < d->entries && d->nr_used; ++i) {
      if (!d->slot[i]) continue;
      if (d->is_leaf(i)) {
        // Leaves are zapped before free_pgtables runs; a deposited table still goes.
        if (void* dep = k.store.clear_leaf(d, i); dep != no_deposit()) pt_put(k, mm, last, dep);
        continue;
      }
      if (is_shared_pt(k, idx + 1, d->slot[i])) {  // a shared subtree: this mm lets go
        ptshare_drop(k, mm, d, i, idx + 1);
        continue;
      }
      free_subtree(k, mm, idx + 1, d->slot[i], is_preallocated(k, idx + 1, i) && idx == 0);
      if (!(idx == 0 && is_preallocated(k, 1, i))) { d->slot[i] = nullptr; --d->nr_used; }
    }
  }
  if (!keep) pt_put(k, mm, idx, node);
}

// pX_addr_end(): the end of the entry containing addr, or end, whichever comes first.
vaddr entry_end(vaddr addr, vaddr end, uint64_t span) {
  const vaddr boundary = (addr + span) & ~(span - 1);
  return (boundary - 1 < end - 1) ? boundary : end;
}

// free_p?d_range at level index idx for directory d covering [addr, end).
void free_level(kernel& k, mm_struct& mm, int idx, pt_dir* d, vaddr addr, vaddr end, vaddr floor, vaddr ceiling) {
  const paging_format& f = k.prof.paging;
  const uint64_t span = f.at(idx).span();
  const int child = idx + 1;
  do {
    const vaddr next = entry_end(addr, end, span);
    const uint32_t i = f.index(idx, addr);
    void* s = d->slot[i];
    if (s && !d->is_leaf(i)) {  // a leaf there belongs to a neighbour (the gap's were zapped)
      if (is_shared_pt(k, child, s)) {
        // A surviving neighbour's shared page: the zap let go of every one the removed
        // VMAs overlapped, and a shared page's VMA covers its whole span.
      } else if (child == f.nr_levels - 1) {
        // free_pte_range: the PTE page goes unconditionally (its span is inside the gap).
        d->slot[i] = nullptr;
        --d->nr_used;
        pt_put(k, mm, child, s);
      } else {
        // The tail of free_pmd_range/free_pud_range: free the child table itself only if
        // the whole span of this entry lies in [floor, ceiling).
        vaddr start = addr & ~(span - 1);
        vaddr ceil = ceiling;
        bool keep = start < floor || is_preallocated(k, child, i);
        if (!keep && ceil) { ceil &= ~(span - 1); keep = ceil == 0; }
        if (!keep && next - 1 > ceil - 1) keep = true;
        // A uniform child that goes whole goes at once; one that stays is made private
        // before its tables in range are freed.
        if (!(is_uniform(s) && !keep))
          free_level(k, mm, child, static_cast<pt_dir*>(pt_materialize(k, d, i, child)), addr, next, floor, ceiling);
        if (!keep) {
          free_subtree(k, mm, child, d->slot[i], false);
          d->slot[i] = nullptr;
          --d->nr_used;
        }
      }
    }
    addr = next;
  } while (addr != end);
}

// free_pgd_range(): the 2.6.12+ rule.
void free_pgd_range(kernel& k, mm_struct& mm, vaddr addr, vaddr end, vaddr floor, vaddr ceiling) {
  const paging_format& f = k.prof.paging;
  const uint64_t pmd_size = f.at(f.nr_levels - 2).span();  // what one PTE page maps
  addr &= ~(pmd_size - 1);
  if (addr < floor) {
    addr += pmd_size;
    if (!addr) return;
  }
  if (ceiling) {
    ceiling &= ~(pmd_size - 1);
    if (!ceiling) return;
  }
  if (end - 1 > ceiling - 1) end -= pmd_size;
  if (addr > end - 1) return;
  free_level(k, mm, 0, mm.pgd, addr, end, floor, ceiling);
}

// 2.4-2.6.11: clear_page_tables() over the PGD entries that lie wholly in the gap and
// overlap [start, end): everything beneath them goes; nothing else does.
void free_pgd_gap(kernel& k, mm_struct& mm, vaddr start, vaddr end, vaddr floor, vaddr ceiling) {
  const paging_format& f = k.prof.paging;
  const uint64_t span = f.at(0).span();
  vaddr first = start & ~(span - 1);
  if (floor > first) first = floor + span - 1;
  vaddr last = end + span - 1;
  if (ceiling && last > ceiling) last = ceiling;
  if (last < first) return;
  const uint64_t lo = first >> f.at(0).shift, hi = std::min<uint64_t>(last >> f.at(0).shift, f.at(0).entries);
  for (uint64_t i = lo; i < hi; ++i) {
    void* s = mm.pgd->slot[i];
    if (!s || mm.pgd->is_leaf(uint32_t(i))) continue;
    const bool keep = is_preallocated(k, 1, uint32_t(i));
    free_subtree(k, mm, 1, s, keep);
    if (!keep) { mm.pgd->slot[i] = nullptr; --mm.pgd->nr_used; }
  }
}

}  // namespace

void free_pgtables(kernel& k, mm_struct& mm, vaddr start, vaddr end, vaddr floor, vaddr ceiling) {
  if (k.prof.pgtable_free == pgtable_free_policy::floor_ceiling)
    free_pgd_range(k, mm, start, end, floor, ceiling);
  else
    free_pgd_gap(k, mm, start, end, floor, ceiling);
}

void free_all_tables(kernel& k, mm_struct& mm) {
  if (!mm.pgd) return;
  free_subtree(k, mm, 0, mm.pgd, /*keep=*/true);
}

}  // namespace vmlab
