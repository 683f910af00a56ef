// Page-table node allocation and the counters kept at the alloc/free sites, as the
// kernel keeps them: mm_inc_nr_ptes/pmds/puds (VmPTE) in __pte_alloc and friends, and
// NR_PAGETABLE (PageTables) in the page-table constructor, for the levels the profile
// counts. Kernel: mm/memory.c __p*d_alloc, include/linux/mm.h pagetable_*_ctor,
// arch/x86/mm/pgtable.c pgd_alloc/preallocate_pmds.
#include <algorithm>

#include "model/kernel.h"

namespace vmlab {

// Pages one whole-page node at level index `idx` occupies (0 for a slab PGD).
uint64_t pt_node_pages(const kernel_profile& p, int idx) {
  if (idx == 0) return p.paging.pgd_from_slab ? 0 : p.pgd_bytes() / p.paging.page_size();
  return p.paging.at(idx).table_bytes() / p.paging.page_size();
}

bytes pt_node_bytes(const kernel_profile& p, int idx) {
  return idx == 0 ? p.pgd_bytes() : p.paging.at(idx).table_bytes();
}

// The one decision point for tables smaller than a page (arch.h table_alloc): the base
// pages behind `count` tables of level idx. Whole-page tables take pt_node_pages each; a
// slab PGD takes none here (kmem.cc charges its cache). Fragments and slab objects pack
// tables_per_page() to a page: per mm for mm_fragment, where `count` is the mm's tables
// (a fragment page serves one mm), kernel-wide for slab, where it is every mm's.
// Packing is tight: the kernel keeps a fragment page while any of its fragments lives and
// never hands a freed fragment out again, so after partial frees it may hold more pages
// than this (exact while an mm's tables only grow, and at exit; docs/decisions.md,
// issue 10). mm_fragment tables are never shared between mms (no format has both).
uint64_t pt_backing_pages(const kernel_profile& p, int idx, uint64_t count) {
  const pt_level& lv = p.paging.at(idx);
  if (lv.alloc == table_alloc::page || (idx == 0 && p.paging.pgd_from_slab)) return count * pt_node_pages(p, idx);
  return div_round_up(count, p.paging.tables_per_page(idx));
}

namespace {

// Pages that `n` more tables (n < 0: fewer) at level idx of mm add.
int64_t pages_delta(const kernel& k, const mm_struct& mm, int idx, int64_t n) {
  const pt_level& lv = k.prof.paging.at(idx);
  const int l = static_cast<int>(lv.lvl);
  const uint64_t before = lv.alloc == table_alloc::mm_fragment ? mm.nr_tables[l] : k.pm.tables[l];
  return int64_t(pt_backing_pages(k.prof, idx, before + uint64_t(n))) - int64_t(pt_backing_pages(k.prof, idx, before));
}

// PTE pages come from highmem under CONFIG_HIGHPTE; every other level is GFP_KERNEL.
gfp_zone node_gfp(const kernel_profile& p, int idx) {
  return idx == p.paging.nr_levels - 1 && p.zones.highpte ? gfp_zone::highuser : gfp_zone::kernel;
}

// `delta` tables of level idx, backed by `pages` more (or fewer) pages.
void account_node(kernel& k, int idx, int64_t delta, int64_t pages) {
  const level l = k.prof.paging.at(idx).lvl;
  k.pm.tables[static_cast<int>(l)] += static_cast<uint64_t>(delta);
  // PageTables counts page-sized tables and whole fragment pages (the constructor runs per
  // backing page); slab objects (a PAE or powerpc PGD, powerpc PUDs) are excluded even on 6.14+.
  if (k.prof.counts_in_page_tables(l) && k.prof.paging.at(idx).alloc != table_alloc::slab)
    k.pm.nr_pagetable += static_cast<uint64_t>(pages) * k.geo.size();
  if (delta > 0) {
    k.peak.page_tables = std::max(k.peak.page_tables, k.pm.nr_pagetable);
    k.peak.page_tables_workload = k.peak.page_tables;
    uint64_t& pl = k.peak.pt_pages[static_cast<int>(l)];
    pl = std::max(pl, k.pm.tables[static_cast<int>(l)]);
  }
}

void account_mm(kernel& k, mm_struct& mm, int idx, int64_t delta) {
  const level l = k.prof.paging.at(idx).lvl;
  mm.nr_tables[static_cast<int>(l)] += static_cast<uint64_t>(delta);
  // VmPTE never includes the PGD (there is no mm_inc_nr_pgds). It adds PTRS_PER_xxx *
  // sizeof(entry) per table: 2 KiB for a hash-64K PTE fragment, not its 4 KiB.
  if (idx > 0 && k.prof.counts_in_vmpte(l))
    mm.pgtables_bytes += static_cast<uint64_t>(delta) * pt_node_bytes(k.prof, idx);
  if (delta > 0) k.peak.vmpte_max_proc = std::max(k.peak.vmpte_max_proc, mm.pgtables_bytes);
}

}  // namespace

status oom_status(const kernel& k, const char* what, gfp_zone g) {
  const phys& pm = k.pm;
  auto uses = [&](auto pages_of) {
    std::string out;
    for (int u = 0; u < kUses; ++u) {
      const uint64_t n = pages_of(static_cast<page_use>(u));
      if (n) out += std::string(out.empty() ? "" : ", ") + page_use_name(static_cast<page_use>(u)) + " " + std::to_string(n);
    }
    return out;
  };
  std::string msg = std::string("ENOMEM: out of memory allocating ") + what + ": ";
  if (g == gfp_zone::kernel && pm.has_highmem()) {
    // Kernel allocations cannot use highmem: say where low memory went.
    msg += "zone Normal (low memory, " + std::to_string(pm.low_pages()) + " pages) is exhausted, " +
           std::to_string(pm.low_free()) + " pages free; low memory holds " + uses([&](page_use u) {
             return pm.zone_used(zone_type::dma, u) + pm.zone_used(zone_type::normal, u);
           }) + " pages";
    if (pm.zone_free(zone_type::highmem))
      msg += " while HighMem has " + std::to_string(pm.zone_free(zone_type::highmem)) + " pages free";
  } else {
    msg += std::string("every zone is full (") + std::to_string(pm.used()) + " of " + std::to_string(pm.total_pages()) +
           " pages in use: " + uses([&](page_use u) { return pm.used(u); }) + ")";
  }
  return status::refused(msg + "; the kernel would invoke the OOM killer");
}

uint64_t boot_reserved_pages(const kernel_profile& p, uint64_t total_pages) {
  const bytes page = p.paging.page_size();
  return div_round_up(total_pages * p.objs.struct_page, page) + div_round_up(p.objs.kernel_image, page);
}

namespace {

// The pages and counters of n nodes at level index idx (n > 1: as n allocations one by
// one leave them). A node under a shared parent (ptshare.h) is charged to no mm. Shared
// page tables and per-mm fragments never meet (a PTSHARE profile has whole-page tables),
// so its pages follow the kernel-wide count as pages_delta has it for every other
// allocation kind. Inline: GCC stopped inlining it into alloc_node once it had a second
// caller, and a 1 GiB anonymous touch lost a quarter of its speed (BENCHMARKS.md).
inline bool charge_nodes(kernel& k, mm_struct& mm, int idx, bool shared, int64_t n) {
  const int64_t pages = pages_delta(k, mm, idx, n);
  if (!k.pm.alloc(page_use::pgtable, node_gfp(k.prof, idx), uint64_t(pages))) return false;
  account_node(k, idx, n, pages);
  if (!shared) account_mm(k, mm, idx, n);
  return true;
}

void* alloc_node(kernel& k, mm_struct& mm, int idx, bool shared) {
  if (!charge_nodes(k, mm, idx, shared, 1)) return nullptr;
  void* node;
  if (idx == k.prof.paging.nr_levels - 1) {
    pte_table* t = k.store.new_pte_table();
    t->shared_pt = shared;
    node = t;
  } else {
    pt_dir* d = k.store.new_dir(k.prof.paging.at(idx).entries);
    d->shared_pt = shared;
    node = d;
  }
  return node;
}

}  // namespace

bool pt_charge_pte_tables(kernel& k, mm_struct& mm, uint64_t n) {
  return charge_nodes(k, mm, k.prof.paging.nr_levels - 1, false, int64_t(n));
}

void* pt_alloc(kernel& k, mm_struct& mm, int idx, const pt_dir* parent) {
  return alloc_node(k, mm, idx, parent && parent->shared_pt);
}

void* pt_alloc_unowned(kernel& k, mm_struct& mm, int idx) { return alloc_node(k, mm, idx, true); }

void pt_put_shared(kernel& k, int idx, void* node) {
  uint32_t& ref = pt_refcount(k, idx, node);
  if (--ref > 0) return;
  ptshare_forget(k, node);
  // Whole pages or slab objects (sharing profiles have no per-mm fragments: the ptshare
  // overrides refuse them), packed kernel-wide.
  const uint64_t before = k.pm.tables[static_cast<int>(k.prof.paging.at(idx).lvl)];
  const int64_t pages = int64_t(pt_backing_pages(k.prof, idx, before - 1)) - int64_t(pt_backing_pages(k.prof, idx, before));
  account_node(k, idx, -1, pages);
  k.pm.free(page_use::pgtable, uint64_t(-pages));
  if (idx == k.prof.paging.nr_levels - 1)
    k.store.free_pte_table(static_cast<pte_table*>(node));
  else
    k.store.free_dir(static_cast<pt_dir*>(node));
  k.forget_walks();
}

void pt_get(kernel& k, mm_struct& mm, int idx, void* node) {
  uint32_t& ref = pt_refcount(k, idx, node);
  ++ref;
  account_mm(k, mm, idx, +1);
}

namespace {

// The simulated pages a uniform node at level index idx stands for, level by level: one
// node there, entries of the level below under it, and so on down to the PTE level.
template <class F>
void for_each_uniform_level(const kernel& k, int idx, F&& fn) {
  uint64_t n = 1;
  for (int j = idx; j < k.prof.paging.nr_levels; ++j) {
    fn(j, n);
    n *= k.prof.paging.at(j).entries;
  }
}

}  // namespace

bool pt_install_uniform(kernel& k, mm_struct& mm, pt_dir* parent, uint32_t i, int idx, bool full) {
  // Directory pages come from the kernel zones, PTE pages (HIGHPTE) maybe from highmem:
  // all or nothing, so that a refusal leaves the slow path to fail where the kernel would.
  uint64_t got[kLevels] = {};  // pages allocated, by level index
  bool ok = true;
  for_each_uniform_level(k, idx, [&](int j, uint64_t n) {
    const uint64_t pages = uint64_t(pages_delta(k, mm, j, int64_t(n)));
    if (ok && k.pm.alloc(page_use::pgtable, node_gfp(k.prof, j), pages)) got[j] = pages;
    else ok = false;
  });
  if (!ok) {
    for (uint64_t pages : got)
      if (pages) k.pm.free(page_use::pgtable, pages);
    return false;
  }
  for_each_uniform_level(k, idx, [&](int j, uint64_t n) {
    account_node(k, j, int64_t(n), int64_t(got[j]));
    account_mm(k, mm, j, int64_t(n));
  });
  parent->slot[i] = k.store.uniform(idx, full);
  ++parent->nr_used;
  k.forget_walks();
  return true;
}

void* pt_materialize(kernel& k, pt_dir* parent, uint32_t i, int idx) {
  void*& s = parent->slot[i];
  if (is_uniform(s)) {
    s = k.store.materialize(idx, s);
    k.forget_walks();
  } else if (is_compact(s)) {
    s = k.store.expand(s);
    k.forget_walks();
  }
  return s;
}

void pt_put(kernel& k, mm_struct& mm, int idx, void* node) {
  if (is_uniform(node)) {
    // A whole subtree of this mm's own pages goes; the shared node stays.
    for_each_uniform_level(k, idx, [&](int j, uint64_t n) {
      const int64_t pages = pages_delta(k, mm, j, -int64_t(n));
      account_mm(k, mm, j, -int64_t(n));
      account_node(k, j, -int64_t(n), pages);
      k.pm.free(page_use::pgtable, uint64_t(-pages));
    });
    k.forget_walks();
    return;
  }
  // A compact PTE page is a value in its slot: this mm's alone, no node to free.
  uint32_t compact_ref = 1;
  uint32_t& ref = is_compact(node) ? compact_ref : pt_refcount(k, idx, node);
  const int64_t pages = ref == 1 ? pages_delta(k, mm, idx, -1) : 0;
  account_mm(k, mm, idx, -1);
  if (--ref > 0) return;  // still mapped by another address space
  if (idx < k.prof.paging.nr_levels - 1) hugetlb_forget_table(k, node);
  if (is_shared_pt(k, idx, node)) ptshare_forget(k, node);
  account_node(k, idx, -1, pages);
  k.pm.free(page_use::pgtable, uint64_t(-pages));
  if (idx < k.prof.paging.nr_levels - 1)
    k.store.free_dir(static_cast<pt_dir*>(node));
  else if (!is_compact(node))
    k.store.free_pte_table(static_cast<pte_table*>(node));
  k.forget_walks();
}

pt_dir* pgd_alloc(kernel& k, mm_struct& mm) {
  // PAE: the user PMDs come with the PGD (preallocate_pmds), so charge them together.
  const int pre = k.prof.paging.preallocated_pmds;
  if (!k.pm.can_alloc(gfp_zone::kernel, pt_node_pages(k.prof, 0) + uint64_t(pre) * pt_node_pages(k.prof, 1))) return nullptr;
  if (k.prof.paging.pgd_from_slab) {
    auto obj = kmem_alloc(k, kmem_kind::pgd);
    if (!obj) return nullptr;
    mm.pgd_obj = *obj;
  }
  k.pm.alloc(page_use::pgtable, gfp_zone::kernel, pt_node_pages(k.prof, 0));
  pt_dir* pgd = k.store.new_dir(k.prof.paging.at(0).entries);
  account_node(k, 0, +1, int64_t(pt_node_pages(k.prof, 0)));
  account_mm(k, mm, 0, +1);
  mm.pgd = pgd;
  for (int i = 0; i < pre; ++i) {
    pgd->slot[i] = pt_alloc(k, mm, 1);
    ++pgd->nr_used;
  }
  return pgd;
}

void pgd_free(kernel& k, mm_struct& mm) {
  if (!mm.pgd) return;
  for (int i = 0; i < k.prof.paging.preallocated_pmds; ++i)
    if (mm.pgd->slot[i]) pt_put(k, mm, 1, mm.pgd->slot[i]);
  pt_put(k, mm, 0, mm.pgd);
  if (k.prof.paging.pgd_from_slab) kmem_free(k, kmem_kind::pgd, mm.pgd_obj);
  mm.pgd = nullptr;
}

}  // namespace vmlab
