// Reverse mapping: from a page to the PTEs that map it. The model's mm/rmap.c.
//
// One interface, four designs. The profile's rmap_scheme picks one operations table
// (rmap_ops) when the kernel is built, as Linux hands an rmap_walk_control to rmap_walk;
// no other code asks which design it runs:
//  * none (2.4): nothing per mapping. try_to_unmap() has no way to a page's PTEs but to
//    scan every mm's page tables, as swap_out() did.
//  * pte_chain (2.5.28 - 2.6.6): struct page holds either one pte pointer (PageDirect) or
//    the head of a chain of pte_chain objects. 2.5.35+ (linux-vm-internals.md section 1.4):
//    a chain object is a cache line with NRPTE slots; only the head has free slots; a new
//    pte goes into the head's last free slot (a new head when it is full); removal moves
//    the head's first used slot onto the victim and frees the head once empty; removal
//    never collapses back to PageDirect - only page_referenced() does. 2.5.28-2.5.34
//    (pte_chain_slots 1): one {next, ptep} object per mapping, both the old direct pte and
//    the new one moved into objects on the second mapping, and a chain left with one
//    entry turned back into PageDirect on removal.
//  * anon_vma (2.6.7) and anon_vma_chain (2.6.34+): nothing per page but the mapcount;
//    the walk goes through the page's anon_vma (anon_vma.h) or its file's i_mmap.
//
// Pages. A page's rmap state lives where struct page keeps it: for shm/file pages in
// their mem_object, for anonymous pages shared since a fork in phys (by anon id). An
// anonymous page mapped only by the PTE that created it has no id: it is mapped once and
// PageDirect by construction, so it needs only counters (page_add_anon_exclusive).
// The zero page is PageReserved and never in any rmap.
//
// Counters: ReverseMaps (2.5.30-2.5.67 nr_reverse_maps: one per page_add_rmap including
// PageDirect), Mapped (pages with at least one PTE; file pages only since 2.6.18).
//
// Per-page state only where the design has it. Under pte_chain every shm/file page keeps
// its mapcount and chain head, as struct page did, because the chain's size depends on
// it. Under the other schemes the kernel's per-page cost is a mapcount increment the
// model does not need for anything but Mapped, and keeping one would cost the model a
// memory access per PTE on its hot paths (a whole word of PTEs is otherwise one store).
// So there Mapped for shm/file pages is counted from the page tables when asked
// (count_mapped_object_pages), and its maximum is taken before every op that can lower
// it: exact at op boundaries. Anonymous pages keep their mapcount under every scheme
// (do_wp_page decides reuse or copy by it).
//
// Invariants (check_invariants() recounts them):
//  1. reverse_maps == the sum of every mm's RSS (each present PTE of a non-zero page).
//  2. mapcount(page) == the PTEs that map it; mapped_* == pages with mapcount >= 1.
//  3. pte_chain: chain(page) != 0 implies mapcount >= 1; the chain has exactly
//     ceil(mapcount / NRPTE) objects (mapcount for the two-pointer generation), and the
//     pte_chain cache's active objects are the sum over pages (plus the per-CPU one).
#pragma once

#include <cstdint>
#include <vector>

#include "model/mm_types.h"
#include "model/profile.h"
#include "vmlab/run_result.h"
#include "vmlab/status.h"

namespace vmlab {

struct kernel;
struct rmap_page;  // the page a walk is about (rmap.cc)

// One PTE an rmap walk found: the address space and the address.
struct rmap_mapping {
  mm_struct* mm;
  vaddr addr;
};

// One rmap design's entry points and the per-page and per-VMA state it keeps. The hot
// paths (kernel.h) branch on per_page_state inline and call through the table only for
// the design that keeps per-page state.
struct rmap_ops {
  rmap_scheme scheme;
  // struct page carries a mapcount and a pte_chain head for every shm/file page.
  bool per_page_state;
  // The per-VMA objects the design allocates: anon_vma (2.6.7+), anon_vma_chain (2.6.34+).
  bool anon_vma_objects;
  bool anon_vma_chains;
  // page_add_rmap / page_remove_rmap for the object pages of one 64-entry word: bit b of m
  // is page pg0 + b of object obj. The add stops at the first ENOMEM (returns false);
  // `done` gets what was added.
  bool (*add_object_word)(kernel& k, int32_t obj, int64_t pg0, uint64_t m, uint64_t& done);
  void (*remove_object_word)(kernel& k, int32_t obj, int64_t pg0, uint64_t m);
  // Shared anonymous page `id` gains a PTE (fork: page_dup_rmap; false on ENOMEM) or loses
  // one (true when that was its last: the id is released).
  bool (*dup_anon)(kernel& k, uint32_t id);
  bool (*remove_anon)(kernel& k, uint32_t id);
  // remove_anon for the shared anonymous pages of one 64-entry word (zap, exit): bit b of
  // m selects ids[b]; ids that are 0 (pages never shared) are skipped, the others are
  // removed and zeroed. Returns how many were released; `removed` gets how many had an id.
  // One call per word rather than per page: exit and munmap of a forked child spend most
  // of their time here.
  uint64_t (*remove_anon_word)(kernel& k, uint32_t* ids, uint64_t m, uint64_t& removed);
  // rmap_walk()'s design-specific part: finds page p's PTEs the way the design reaches
  // them, appending them to `found` and counting the work into w.
  void (*walk)(kernel& k, const rmap_page& p, rmap_work& w, std::vector<rmap_mapping>& found);
  // Shm/file pages mapped by at least one PTE.
  uint64_t (*mapped_object_pages)(const kernel& k);
  // The work one walk of object page pg of obj does (page_referenced, try_to_unmap), from
  // what it meets: `covering` VMAs whose range holds the page's offset and `ptes` PTEs that
  // map it. Reclaim (vmscan.h) counts its walks through this, a run of pages at a time.
  // nullptr: the design cannot walk from a page (2.4), so reclaim scans page tables.
  void (*object_walk_work)(const kernel& k, int32_t obj, uint64_t pg, uint64_t covering, uint64_t ptes, rmap_work& w);
};

// The table of a design; called once, when the kernel is built.
const rmap_ops& rmap_ops_for(rmap_scheme s);
// Works out what the profile leaves to the machine (pte_chain: sizeof(pte_addr_t) and
// NRPTE from the cache line and HIGHPTE); invalid_argument when the machine cannot hold
// the design.
status rmap_policy_finish(kernel_profile& p);

// One page's rmap state, by pointer into where struct page keeps it.
struct page_rmap {
  uint32_t* mapcount = nullptr;  // PTEs mapping the page (page_mapcount)
  uint32_t* chain = nullptr;     // pte_chain head object + 1; 0 = PageDirect or unmapped
};

struct rmap_counters {
  uint64_t reverse_maps = 0;
  uint64_t mapped_file = 0;  // pte_chain only: shm and file pages with mapcount >= 1
  uint64_t mapped_anon = 0;  // anonymous pages with mapcount >= 1
  uint64_t max_reverse_maps = 0;
  uint64_t max_mapped = 0;   // of the profile's Mapped figure, in pages
  bool mapped_may_have_grown = false;  // object schemes: a page got mapped since the last count
  // Object schemes: bumped whenever a PTE of a shm/file page is added or removed (the
  // rmap_*_object_* hooks in kernel.h), so that Mapped's count from the page tables is
  // kept until a PTE changes: a run's snapshots, peak and report between two ops scan the
  // tables once, not once each (a scan of 1,500 processes' tables takes minutes).
  uint64_t object_map_changes = 0;
  mutable uint64_t counted_at_change = ~uint64_t{0}, counted_object_pages = 0;
  rmap_work work;            // what try_to_unmap / page_referenced walks did
  // pte_chain: the next object of each chain object (by object id + 1; 0 = end).
  std::vector<uint32_t> chain_next;
};

// page_add_rmap(): one more PTE maps the page. ENOMEM (nothing changed) when a pte_chain
// object cannot be allocated.
status page_add_rmap(kernel& k, page_rmap p, bool anon);
// page_remove_rmap(): one PTE less.
void page_remove_rmap(kernel& k, page_rmap p, bool anon);
// Mapped may have grown: record its maximum (pte_chain) or mark it for the next count.
void note_mapped_growth(kernel& k);
// The rmap state of page `pg` of object `obj`, and of shared anonymous page `id`.
page_rmap object_page(kernel& k, int32_t obj, uint64_t pg);
page_rmap anon_page(kernel& k, uint32_t id);

// page_referenced() on one page: walks its mappings like try_to_unmap (counting the work)
// and, for pte_chain, turns a chain holding one pte back into PageDirect (2.5.35+ does
// it only here). Returns the number of PTEs found.
uint64_t page_referenced(kernel& k, mm_struct& mm, vaddr addr);
// try_to_unmap() on the page mapped at addr in mm: finds every PTE mapping it the way the
// profile's scheme does, counts the work (rmap_work), and clears them. A page that is
// only in the page cache stays there; an anonymous page is dropped with its last PTE
// (there is no swap: the model treats it as clean). A page any VM_LOCKED VMA maps is
// left mapped (unmapped == 0), as reclaim leaves mlocked pages. Returns the work of this one walk;
// a non-present or zero page gives an empty result.
rmap_work try_to_unmap(kernel& k, mm_struct& mm, vaddr addr);

// Shm/file pages mapped by at least one PTE, and the profile's Mapped figure (pages).
uint64_t count_mapped_object_pages(const kernel& k);
uint64_t mapped_pages(const kernel& k);
// Takes Mapped's maximum now; called before every op that may unmap pages.
void note_mapped_max(kernel& k);
// PTEs mapping page pg of object obj (from the mapcount, or counted from page tables).
uint64_t object_page_mapcount(const kernel& k, int32_t obj, uint64_t pg);

// The number of pte_chain objects a page mapped `n` times holds in chain mode.
uint64_t pte_chain_objects(const kernel& k, uint64_t n);

}  // namespace vmlab
