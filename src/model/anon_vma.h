// anon_vma and anon_vma_chain: how the object-based schemes find an anonymous page's
// VMAs, and what that costs in slab objects. The model's half of mm/rmap.c that works on
// VMAs (anon_vma_prepare, anon_vma_clone, anon_vma_fork, unlink_anon_vmas).
//
// anon_vma (2.6.7 - 2.6.33): one anon_vma per fork family. The first anonymous fault of
// a VMA allocates it (or borrows a compatible neighbour's, find_mergeable_anon_vma);
// fork, split and merge only put VMAs on its list (the list node is inside the VMA: no
// allocation). It is freed when its list empties.
//
// anon_vma_chain (2.6.34+): every VMA is linked to each anon_vma it may find pages of by
// an anon_vma_chain object (AVC). anon_vma_prepare allocates an anon_vma (unless a
// neighbour's can be borrowed) and one AVC; anon_vma_clone (split, merge, fork) gives the
// new VMA one AVC per AVC of the old; anon_vma_fork then gives the child its own anon_vma
// and AVC, unless (3.19+, anon_vma_reuse) one of the cloned anon_vmas has no active VMA
// and fewer than two children and can be reused. unlink_anon_vmas frees the VMA's AVCs,
// and anon_vmas left with no VMA: a child's anon_vma holds a reference on its root, so a
// root outlives its last VMA while children remain (__put_anon_vma).
//
// The 6.x counters: num_children (anon_vmas whose parent this is, plus the root's
// self-link), num_active_vmas (VMAs whose vma->anon_vma this is).
//
// Simplifications: the interval tree is a count (the walk in rmap.cc scans the VMAs
// instead of stabbing a tree, and counts the VMAs the tree would yield);
// find_mergeable_anon_vma looks at the neighbours vma_merge would (adjacent, same object,
// same sharing, contiguous pgoff; mempolicy and anon_name are not modelled).
#pragma once

#include <cstdint>
#include <optional>

#include "model/slab.h"
#include "vmlab/status.h"

namespace vmlab {

struct kernel;
struct mm_struct;
struct vm_area_struct;

struct anon_vma {
  uint32_t root = 0;    // the family's first anon_vma
  uint32_t parent = 0;  // the anon_vma this one was forked from (itself for a root)
  uint32_t refcount = 0;
  uint32_t num_children = 0;
  uint32_t num_active_vmas = 0;
  uint32_t nr_vmas = 0;  // VMAs on its list (anon_vma) / AVCs in its tree (anon_vma_chain)
  std::optional<slab_object> obj;
  bool live = false;
};

// Called at the first anonymous page of a private VMA (do_anonymous_page, do_cow_fault,
// do_wp_page). ENOMEM when no anon_vma or AVC object could be allocated.
status anon_vma_prepare(kernel& k, mm_struct& mm, vm_area_struct& vma);
// fork: links child (a copy of parent) as the scheme does. ENOMEM on allocation failure,
// with child left unlinked.
status anon_vma_fork(kernel& k, vm_area_struct& child, const vm_area_struct& parent);
// split / merge: dst (a copy of src, or the VMA growing over src) joins every anon_vma
// src is on.
status anon_vma_clone(kernel& k, vm_area_struct& dst, const vm_area_struct& src);
// The VMA goes away: drop its links and free what nothing else holds.
void unlink_anon_vmas(kernel& k, vm_area_struct& vma);

}  // namespace vmlab
