// The simulated kernel's state and the internal entry points of each mm/ concept.
//
// Why one struct: the model is a set of free functions over one state, grouped in files
// the way Linux groups mm/ (memory.cc: faults, zap, copy_page_range, free_pgtables;
// mmap.cc: the VMA tree; madvise.cc; fork.cc). sim_kernel (the public face) owns it.
//
// Ordering (as in the kernel): munmap = split VMAs, zap the PTEs (unmap_vmas), remove the
// VMAs, then free_pgtables with the floor/ceiling of the surviving neighbours. exit =
// zap everything, free every table, then the PGD.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "model/anon_vma.h"
#include "model/huge.h"
#include "model/kmem.h"
#include "model/mm_types.h"
#include "model/phys.h"
#include "model/rmap.h"
#include "model/profile.h"
#include "model/ptshare.h"
#include "model/vmscan.h"
#include "vmlab/status.h"

namespace vmlab {

// The base page geometry of the paging format, as the arithmetic of every mm/ file reads
// it (PAGE_SHIFT, PTRS_PER_PTE), rather than literal 12s and 4096s.
struct page_geometry {
  uint8_t shift = 12;      // PAGE_SHIFT
  uint32_t entries = 512;  // PTRS_PER_PTE
  explicit page_geometry(const paging_format& f) : shift(f.page_shift), entries(f.pte().entries) {}
  [[nodiscard]] bytes size() const { return bytes{1} << shift; }
  [[nodiscard]] uint64_t pages(bytes b) const { return b >> shift; }
  [[nodiscard]] vaddr table_span() const { return vaddr{entries} << shift; }  // what one PTE table maps
  [[nodiscard]] vaddr word_span() const { return vaddr{64} << shift; }        // what one bitmap word maps
  [[nodiscard]] vaddr table_base(vaddr a) const { return a & ~(table_span() - 1); }
  [[nodiscard]] uint32_t index(vaddr a) const { return uint32_t((a >> shift) & (entries - 1)); }
  [[nodiscard]] uint8_t index_bits() const { return uint8_t(__builtin_ctz(entries)); }  // PTRS_PER_PTE's log2
};

struct kernel {
  // A machine of total_pages page frames, `fragmentation` of its pageblocks pinned (phys.h);
  // the caches are made by kmem_init(), the hugetlb pools by hugetlb_init().
  kernel(kernel_profile p, uint64_t total_pages, double fragmentation);
  kernel(const kernel&) = delete;  // the slab caches' page callbacks point at it
  kernel& operator=(const kernel&) = delete;
  kernel_profile prof;
  const page_geometry geo;  // of prof.paging
  const rmap_ops* rmap;  // the profile's rmap design, chosen once here
  phys pm;
  kmem km;
  rmap_counters rm;
  std::vector<anon_vma> anon_vmas;  // by id; 0 unused
  std::vector<uint32_t> free_anon_vmas;
  pt_store store;
  huge_state huge;
  ptshare_state pts;  // shared page tables (ptshare.h)
  // Host bytes of the objects' per-page chunks (sparse.h), kept as they come and go.
  // Declared before `objects`, which point at it: it outlives them.
  size_t object_host_bytes = 0;
  std::vector<mem_object> objects;
  std::map<uint32_t, std::unique_ptr<mm_struct>> mms;
  uint64_t faults = 0;
  uint64_t cow_faults = 0;
  filemap_stat fm;  // the page cache's counters (filemap.h)
  lru_state lru;    // reclaim's list and watermarks (vmscan.h)
  peaks peak;  // maxima over the run, kept at the alloc sites
  // Whether sim_kernel::touch_pages may fault a batch in the order of its PTE tables
  // where that changes nothing (faults_commute_across_tables). Off: always in the given
  // order (the reference the differential test compares with).
  bool touch_in_table_order = true;
  uint64_t touch_batches_in_table_order = 0;  // batches that did
  uint64_t tables_compacted = 0;  // PTE tables made compact slot values (pgtable.h)
  uint64_t tables_by_windows = 0;  // tables read_fault_by_windows took
  // One-entry walk caches: the PTE table last found for (mm, table-aligned address), and
  // the directory above PTE tables last found for (mm, address aligned to what it maps),
  // so that a walk to the next PTE table of the same directory starts there. Both are
  // forgotten whenever any table is freed or replaced.
  mm_struct* cache_mm = nullptr;
  vaddr cache_base = 1;
  pte_table* cache_pte = nullptr;
  mm_struct* cache_dir_mm = nullptr;
  vaddr cache_dir_base = 1;
  pt_dir* cache_dir = nullptr;
  void forget_walks() { cache_mm = cache_dir_mm = nullptr; }
};

std::string fmt_hex(uint64_t v);

// A safe point for reclaim (vmscan.h): the next step may allocate up to `need` pages, and
// nothing the caller holds points into page tables another mm's reclaim could change.
// Nothing at all happens while no page is evictable (no file object cached).
inline void reclaim_point(kernel& k, uint64_t need) {
  if (k.lru.nr_pages == 0) return;
  if (k.pm.total_pages() - k.pm.used() >= k.lru.wmark_low + need) return;
  balance_pgdat(k, need);
}

// PG_referenced for the object pages bit b of m: pg0 + b (vmscan.h): a PTE now maps them
// (the young bit a fault leaves). File objects only: the pages on reclaim's list.
inline void mark_referenced_word(kernel& k, int32_t obj, int64_t pg0, uint64_t m) {
  mem_object& o = k.objects[static_cast<size_t>(obj)];
  if (o.kind != object_kind::file || !m) return;
  if (pg0 < 0) {  // the word starts before the object (a VMA not aligned to 64 pages)
    m >>= uint64_t(-pg0);
    pg0 = 0;
  }
  o.referenced.or_window(uint64_t(pg0), m);
}
void mark_referenced_range(kernel& k, int32_t obj, uint64_t pg, uint64_t n);

// ENOMEM as the kernel would report it from a page fault or an allocation: what was being
// allocated, from which zonelist, and where low memory went.
status oom_status(const kernel& k, const char* what, gfp_zone g);
// Pages mem_map and the kernel image take at boot.
uint64_t boot_reserved_pages(const kernel_profile& p, uint64_t total_pages);

// --- vma.cc: vm_area_struct objects (kernel/fork.c vm_area_alloc/dup/free) ---
// Gives vma its slab object. ENOMEM when low memory is out.
status vm_area_alloc(kernel& k, vm_area_struct& vma);
// Unlinks the VMA from its anon_vmas and frees its object.
void vm_area_free(kernel& k, vm_area_struct& vma);

// --- pgalloc.cc: allocation and accounting of page-table nodes ---
pt_dir* pgd_alloc(kernel& k, mm_struct& mm);       // nullptr on ENOMEM
void pgd_free(kernel& k, mm_struct& mm);
// idx: level index 1..n-1. Under a `parent` in a shared subtree (ptshare.h) the node is
// part of that subtree: marked shared_pt and charged to no mm.
void* pt_alloc(kernel& k, mm_struct& mm, int idx, const pt_dir* parent = nullptr);
void pt_put(kernel& k, mm_struct& mm, int idx, void* node);  // drop this mm's reference
// A node inside a shared subtree goes (its parent's last holder let go): no mm is charged.
void pt_put_shared(kernel& k, int idx, void* node);
// A shared node that no process owns (an mshare region's, in its host mm): marked
// shared_pt and charged to no mm, as a node below a shared parent is.
void* pt_alloc_unowned(kernel& k, mm_struct& mm, int idx);
// The pages and counters of n private PTE pages, as pt_alloc charges them one by one,
// without their nodes: for the new tables of read_fault_run, which become compact values
// (pgtable.h) or nodes of pt_store::new_table in their slots. false (nothing changed)
// when memory ran out.
bool pt_charge_pte_tables(kernel& k, mm_struct& mm, uint64_t n);
// Where a PTE page comes from: highmem under CONFIG_HIGHPTE, else the kernel's zones.
gfp_zone pte_gfp(const kernel& k);
// The reference count of the node at level index idx (a pte_table or a pt_dir; not a
// compact PTE page, which is a value of refcount 1).
inline uint32_t& pt_refcount(const kernel& k, int idx, void* node) {
  return idx == k.prof.paging.nr_levels - 1 ? static_cast<pte_table*>(node)->refcount
                                            : static_cast<pt_dir*>(node)->refcount;
}
// Whether the node at level index idx is part of a shared subtree (ptshare.h).
inline bool is_shared_pt(const kernel& k, int idx, const void* node) {
  if (!node || is_compact(node) || is_uniform(node) || node == no_deposit()) return false;
  return idx == k.prof.paging.nr_levels - 1 ? static_cast<const pte_table*>(node)->shared_pt != 0
                                            : static_cast<const pt_dir*>(node)->shared_pt != 0;
}
// Slot i of `parent` holds the top of a shared subtree (level index idx) for mm: mm lets
// go of it (pt_unshare): the slot is cleared, and the subtree, if mm held it last, is
// freed with its entries.
void ptshare_drop(kernel& k, mm_struct& mm, pt_dir* parent, uint32_t i, int idx);
// This mm points at an existing node too (a shared page table): its reference and VmPTE,
// no new page (huge_pmd_share: get_page / ptdesc_pmd_pts_inc, then mm_inc_nr_pmds).
void pt_get(kernel& k, mm_struct& mm, int idx, void* node);
// Slot i of `parent` (empty) gets the uniform node of level index idx (pgtable.h): every
// simulated page of the subtree it stands for is allocated and counted for mm, as
// pt_alloc would one by one. false (nothing changed) when memory would run out.
bool pt_install_uniform(kernel& k, mm_struct& mm, pt_dir* parent, uint32_t i, int idx, bool full);
// Slot i of `parent` (level index idx) made private if it holds a uniform node: a node
// of the same value, no simulated page allocated. Returns the slot's node.
void* pt_materialize(kernel& k, pt_dir* parent, uint32_t i, int idx);

// --- memory.cc ---
// The PTE table for `addr`, allocating missing levels when `alloc`; nullptr when absent,
// when a huge leaf maps the address, or (alloc) when memory ran out — *oom tells which.
// The caller may change the table: uniform nodes on the way are made private.
pte_table* pte_walk(kernel& k, mm_struct& mm, vaddr addr, bool alloc, bool* oom);
// The PTE table for `addr` to read only (it may be a uniform node, or a compact one
// decoded); null when absent or under a huge leaf.
pte_ref pte_lookup(const kernel& k, const mm_struct& mm, vaddr addr);
// Where no PTE table maps addr (pte_walk found none): the first address past the entry,
// at the highest level, that is empty or a huge leaf there; so that walks over a sparse
// range skip a missing PMD (1 GiB) or PUD table (512 GiB) in one step, not 2 MiB at a
// time. addr + the PTE table span when only the PTE table is missing.
vaddr pte_walk_skip(const kernel& k, const mm_struct& mm, vaddr addr);
// The table at level index idx (its slots are level-idx entries) for `addr`, allocating
// the levels above when `alloc`; nullptr when absent, under a huge leaf, or on ENOMEM
// (*oom). idx 0 is the PGD. As pte_walk, made private on the way.
pt_dir* dir_walk(kernel& k, mm_struct& mm, int idx, vaddr addr, bool alloc, bool* oom);
// The same to read only.
const pt_dir* dir_lookup(const kernel& k, const mm_struct& mm, int idx, vaddr addr);
// Whether the PTEs under `vma` keep no per-entry state, so that its tables may be uniform
// nodes (pgtable.h): a shared mapping of an object without write-notify (no writable
// bits), on an rmap design without per-page state (no pte_chain per entry).
bool entries_stateless(const kernel& k, const vm_area_struct& vma);
// Faults in the pages selected by `mask` (bit i = entry i) of the PTE table at `base`,
// which lie inside `vma`, for a read or a write.
status fault_table(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, const uint64_t* mask, bool write);
// One access at addr inside vma: the fast path for single-page faults.
status fault_page(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr addr, bool write);
// Reads at entries idx[0..n) of the PTE table at `base`, in that order, all inside
// `vma`: fault_page on each, taken together. Each fault is decided on the table's state
// as the ones before it left it; what they read in and map is applied at the end, a word
// at a time (the page cache, the rmap) and for the table at once (its PTEs). REQUIRES:
// faults_commute_across_tables(vma) and faults_fit_without_reclaim for the run, so that
// no allocation of the run can fail, fall back or reclaim, and its order within the table
// is all that decides it. A PTE table the run must add that can be a compact value is not
// charged here but counted in *new_tables, for the caller to charge
// (pt_charge_pte_tables) before anything reads the counters: no allocation can fail or fall
// back, and the counters' maxima are taken over sums that only grow, so charging the
// batch's tables together leaves every figure as charging them one by one would.
status read_fault_run(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, const uint32_t* idx, size_t n,
                      uint64_t* new_tables);
// A read batch under one VMA that maps [map_base, + limit pages), `pages` relative to
// map_base, with read_fault_run's REQUIRES for every table it reaches. A PTE table not there
// yet, under the VMA end to end, whose object pages are all in the page cache, with
// fault-around windows of whole 16-entry blocks, does not depend on the order of its
// faults, only on which windows they reach: each is one fault that maps all of its window,
// and the table is a compact value of full blocks. One pass sets each table's windows, the
// tables that are such tables are taken in address order, and the pages of the others are
// left in *rest, in batch order, for read_fault_run. A table's faults touch only that
// table, its object pages and sums (faults_commute_across_tables), so taking some tables
// before the others leaves what taking them in address order would. *applied false
// (nothing changed, *rest untouched) where the pass would not pay: windows that are not
// whole blocks, more than one page of the object uncached per two tables, more tables
// than pages.
status read_fault_by_windows(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr map_base, uint64_t limit,
                             const std::vector<uint64_t>& pages, std::vector<uint64_t>* rest, uint64_t* new_tables,
                             bool* applied);
// Whether faults in `vma` commute across PTE tables: a fault then reads and changes only its own PTE table, the tables above it
// (allocated if missing), the object pages that table maps and counters that are sums,
// so faults under different tables may run in any order as long as those under one table
// keep theirs (issue 11: a random touch is faulted table by table). memory.cc says why
// each condition is needed. A batch must also pass faults_fit_without_reclaim, and two
// such VMAs of one batch must not map the same object page.
bool faults_commute_across_tables(kernel& k, mm_struct& mm, const vm_area_struct& vma);
// Whether `faults` faults of such VMAs can run with no reclaim, no zone fallback and no
// failed allocation on the way, whatever their order.
bool faults_fit_without_reclaim(const kernel& k, uint64_t faults);
// Faults in every page of [start, end) (inside one VMA), stepping `stride` bytes.
status touch_range(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr start, vaddr end, bytes stride, bool write);
// Clears the PTEs of [start, end) inside `vma` (zap_page_range); with `reclaim_pt`, PTE
// pages left empty are freed (CONFIG_PT_RECLAIM, madvise path only).
void zap_range(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr start, vaddr end, bool reclaim_pt);
// free_pgtables() for the gap left by removed VMAs spanning [start, end).
void free_pgtables(kernel& k, mm_struct& mm, vaddr start, vaddr end, vaddr floor, vaddr ceiling);
// copy_page_range() at fork for one VMA. Returns ENOMEM status on failure.
status copy_page_range(kernel& k, mm_struct& dst, mm_struct& src, const vm_area_struct& vma);
// Frees every table of mm (exit), but not the PGD.
void free_all_tables(kernel& k, mm_struct& mm);
// Write-protects the PTEs of [start, end) (mprotect removing PROT_WRITE).
void wrprotect_range(kernel& k, mm_struct& mm, vaddr start, vaddr end);

// --- mmap.cc ---
result<vaddr> do_mmap(kernel& k, mm_struct& mm, const op& o);
status do_munmap(kernel& k, mm_struct& mm, vaddr start, vaddr end);
status do_mprotect(kernel& k, mm_struct& mm, vaddr start, vaddr end, uint8_t prot);
// madvise(): MADV_DONTNEED zaps (reclaiming empty PTE pages under PT_RECLAIM),
// MADV_HUGEPAGE / MADV_NOHUGEPAGE set the range's THP flags.
status do_madvise(kernel& k, mm_struct& mm, vaddr start, vaddr end, advice adv);
// The VMA containing addr, or nullptr.
vm_area_struct* find_vma(mm_struct& mm, vaddr addr);
// The VMA tree's own steps, for mremap.cc: __split_vma at addr (when it falls inside a
// VMA), vma_merge of the VMA at `start` with its neighbours, whether any VMA overlaps
// [start, end), get_unmapped_area, mm_populate (MAP_LOCKED, MAP_POPULATE), and the
// mshare rule that a region's VMA is changed whole or not at all (`what`: the call).
status split_at(kernel& k, mm_struct& mm, vaddr addr);
void merge_around(kernel& k, mm_struct& mm, vaddr start);
bool overlaps(const mm_struct& mm, vaddr start, vaddr end);
result<vaddr> get_unmapped_area(const kernel& k, const mm_struct& mm, bytes len, bytes align, bytes phase);
status mm_populate(kernel& k, mm_struct& mm, vaddr start, vaddr end);
status mshare_whole(const kernel& k, mm_struct& mm, vaddr start, vaddr end, const char* what);

// --- mremap.cc ---
// mremap(addr, old_len, new_len, flags, new_addr) of one mapping: shrink, grow in place,
// or (maymove) move to a free range or (fixed) to new_addr. Returns the new address.
result<vaddr> do_mremap(kernel& k, mm_struct& mm, vaddr addr, bytes old_len, bytes new_len, bool maymove, bool fixed,
                        vaddr new_addr);
// remap_file_pages(start, size, 0, pgoff, 0) as the profile's kernel has it (rfp_impl).
status do_remap_file_pages(kernel& k, mm_struct& mm, vaddr start, bytes size, uint64_t pgoff);

// --- fork.cc ---
result<mm_struct*> mm_create(kernel& k, uint32_t pid);
status dup_mm(kernel& k, mm_struct& parent, uint32_t child_pid);
void exit_mmap(kernel& k, uint32_t pid);

// Calls f(base, table, lo, hi) for every PTE table present under VMA v of mm: the table
// at `base` and the part [lo, hi) of v it maps. The scans that look at every PTE of a VMA
// (2.4's rmap walk, Mapped, sim_kernel::mappings) go through here.
// Directories are walked top-down, so absent subtrees cost nothing. `full`, when given,
// is offered every part [lo, hi) of v that a uniform full node above the PTE level maps
// (pgtable.h) and returns whether it took it; when it does not, the node's tables are
// visited one by one.
// `shared_seen`, when given, makes the walk skip a shared page-table subtree
// (ptshare.h) already in it, and adds those it enters: a scan of what the page tables map
// kernel-wide (Mapped) visits each shared table once, not once per holder.
template <class F, class Full>
void for_each_pte_table(const kernel& k, const mm_struct& mm, const vm_area_struct& v, F&& f, Full&& full,
                        std::unordered_set<const void*>* shared_seen = nullptr) {
  const paging_format& pf = k.prof.paging;
  const int last = pf.nr_levels - 1;
  auto walk = [&](auto& self, const pt_dir* d, int idx, vaddr base) -> void {
    const uint64_t span = pf.at(idx).span();
    const vaddr lo = std::max(v.vm_start, base), hi = std::min<vaddr>(v.vm_end, base + span * pf.at(idx).entries);
    if (lo >= hi) return;
    const uint32_t i0 = uint32_t((lo - base) / span), i1 = uint32_t((hi - 1 - base) / span);
    for (uint32_t i = i0; i <= i1 && d->nr_used; ++i) {
      const void* s = d->slot[i];
      if (!s || d->is_leaf(i)) continue;
      if (shared_seen && is_shared_pt(k, idx + 1, s) && !shared_seen->insert(s).second) continue;
      const vaddr b = base + vaddr{i} * span;
      if (idx + 1 == last) {
        const pte_ref t(k.store, s);
        f(b, t.get(), std::max(b, v.vm_start), std::min(b + span, v.vm_end));
        continue;
      }
      // (A uniform empty node's tables are visited: they exist, and 2.4's scan walks them.)
      if (s == k.store.uniform(idx + 1, true) && full(std::max(b, v.vm_start), std::min(b + span, v.vm_end))) continue;
      self(self, static_cast<const pt_dir*>(s), idx + 1, b);
    }
  };
  walk(walk, mm.pgd, 0, 0);
}

template <class F>
void for_each_pte_table(const kernel& k, const mm_struct& mm, const vm_area_struct& v, F&& f) {
  for_each_pte_table(k, mm, v, std::forward<F>(f), [](vaddr, vaddr) { return false; });
}

template <class F>
void for_each_leaf(kernel& k, mm_struct& mm, vaddr start, vaddr end, F&& f, bool into_shared) {
  const paging_format& pf = k.prof.paging;
  // Depth-first over the directories under [start, end): one level at a time.
  struct frame {
    pt_dir* d;
    int idx;
    vaddr base;
  };
  std::vector<frame> stack{{mm.pgd, 0, 0}};
  while (!stack.empty()) {
    const frame fr = stack.back();
    stack.pop_back();
    if (!fr.d || fr.d->nr_used == 0) continue;
    const uint64_t span = pf.at(fr.idx).span();
    const vaddr lo = std::max(start, fr.base);
    const vaddr hi = std::min<vaddr>(end, fr.base + span * pf.at(fr.idx).entries);
    if (lo >= hi) continue;
    const uint32_t i0 = uint32_t((lo - fr.base) / span), i1 = uint32_t((hi - 1 - fr.base) / span);
    // Directories below only above the last directory level; leaves only where it has any
    // (invariant 2 of pgtable.h): O(directories), not O(slots), for a range without them.
    const bool dirs_below = fr.idx + 1 < pf.nr_levels - 1;
    for (uint32_t i = i1 + 1; dirs_below && i-- > i0;) {  // pushed backwards: visited in address order
      if (!fr.d->slot[i]) continue;
      const vaddr b = fr.base + vaddr{i} * span;
      // A uniform node has no leaves (pgtable.h 5); a shared subtree only an mshare
      // region's hugetlb ones (6).
      if (fr.d->is_leaf(i) || is_uniform(fr.d->slot[i])) continue;
      if (!into_shared && is_shared_pt(k, fr.idx + 1, fr.d->slot[i])) continue;
      stack.push_back({static_cast<pt_dir*>(fr.d->slot[i]), fr.idx + 1, b});
    }
    if (!fr.d->nr_leaves) continue;
    // A leaf larger than its entry sits in the entry of its aligned address (arch.h 5),
    // which may lie before lo.
    const uint32_t stride = pf.at(fr.idx).leaf_stride();
    for (uint32_t i = i0 & ~(stride - 1); i <= i1; ++i)
      if (fr.d->is_leaf(i)) f(leaf_ref{fr.d, i, fr.idx, fr.base + vaddr{i} * span, pf.at(fr.idx).leaf_size()});
  }
}

// --- rmap hot path (rmap.h): the object pages of one PTE word gain or lose a mapping.
// A design that keeps per-page state goes through its table; for every other design
// ReverseMaps is counted here, inline, and Mapped left to be counted from the page tables.

// false when a pte_chain could not be allocated (ENOMEM: "a pte_chain", GFP_KERNEL).
inline bool rmap_add_object_word(kernel& k, int32_t obj, int64_t pg0, uint64_t m, uint64_t& done) {
  if (k.lru.nr_pages) mark_referenced_word(k, obj, pg0, m);
  if (k.rmap->per_page_state) return k.rmap->add_object_word(k, obj, pg0, m, done);
  k.rm.mapped_may_have_grown |= m != 0;
  ++k.rm.object_map_changes;
  k.rm.reverse_maps += uint64_t(popcount64(m));
  if (k.rm.reverse_maps > k.rm.max_reverse_maps) k.rm.max_reverse_maps = k.rm.reverse_maps;
  done = m;
  return true;
}

// n object pages, pg .. pg + n - 1 of obj, gain (or lose) a PTE each, on a design
// without per-page state.
inline void rmap_add_object_range(kernel& k, int32_t obj, uint64_t pg, uint64_t n) {
  if (k.lru.nr_pages) mark_referenced_range(k, obj, pg, n);
  k.rm.mapped_may_have_grown |= n != 0;
  ++k.rm.object_map_changes;
  k.rm.reverse_maps += n;
  if (k.rm.reverse_maps > k.rm.max_reverse_maps) k.rm.max_reverse_maps = k.rm.reverse_maps;
}
inline void rmap_remove_object_range(kernel& k, uint64_t n) {
  k.rm.reverse_maps -= n;
  ++k.rm.object_map_changes;
}

inline void rmap_remove_object_word(kernel& k, int32_t obj, int64_t pg0, uint64_t m) {
  if (k.rmap->per_page_state) return k.rmap->remove_object_word(k, obj, pg0, m);
  k.rm.reverse_maps -= uint64_t(popcount64(m));
  ++k.rm.object_map_changes;
}

// fork: one more PTE maps shared anonymous page `id`. false when a pte_chain could not be
// allocated.
inline bool rmap_dup_anon(kernel& k, uint32_t id) { return k.rmap->dup_anon(k, id); }

// One PTE less maps shared anonymous page `id`. Returns true when that was its last: the
// id is released and the caller frees the page (page_use::anon).
inline bool rmap_remove_anon(kernel& k, uint32_t id) { return k.rmap->remove_anon(k, id); }
inline uint64_t rmap_remove_anon_word(kernel& k, uint32_t* ids, uint64_t m, uint64_t& removed) {
  return k.rmap->remove_anon_word(k, ids, m, removed);
}

// An exclusive anonymous page (no id): n such pages gain or lose their only PTE.
inline void page_add_anon_exclusive(kernel& k, uint64_t n) {
  k.rm.mapped_anon += n;
  k.rm.reverse_maps += n;
  if (k.rm.reverse_maps > k.rm.max_reverse_maps) k.rm.max_reverse_maps = k.rm.reverse_maps;
  if (k.prof.meminfo.mapped_counts_anon) note_mapped_growth(k);
}

inline void page_remove_anon_exclusive(kernel& k, uint64_t n) {
  k.rm.mapped_anon -= n;
  k.rm.reverse_maps -= n;
}

}  // namespace vmlab
