// The kernel-memory accountant: the slab caches of the objects vmlab models, created as
// the profile's kernel creates them, drawing their pages from low memory.
//
// Kernel: kmem_cache_create() calls in mm/rmap.c (pte_chain 2.5; anon_vma, anon_vma_chain),
// kernel/fork.c (vm_area_struct, mm_struct), arch/i386/mm/pgtable.c (the PAE "pgd" cache),
// lib/radix-tree.c radix_tree_init ("radix_tree_node": the page cache's index, filemap.h).
// Each cache is a kmem_cache (slab.h) whose pages are page_use::slab allocations from the
// GFP_KERNEL zonelist: ZONE_NORMAL and ZONE_DMA on i386, never highmem.
//
// Reaping: 2.5/2.6 SLAB keeps free slabs until memory pressure (kmem_cache_reap), so an
// allocation that finds no free page first shrinks every cache and retries. SLUB frees an
// empty slab once a node holds more than min_partial (5) of them; vmlab releases all of a
// cache's free slabs when that count is passed.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "model/slab.h"

namespace vmlab {

struct kernel;

enum class kmem_kind : uint8_t { vm_area_struct, mm_struct, anon_vma, anon_vma_chain, pte_chain, pgd, radix_tree_node };
inline constexpr int kKmemKinds = 7;
const char* kmem_kind_name(kmem_kind k);  // the cache name as /proc/slabinfo prints it

struct kmem {
  // nullptr: the profile's kernel has no such cache.
  std::array<std::unique_ptr<kmem_cache>, kKmemKinds> caches;
  [[nodiscard]] kmem_cache* cache(kmem_kind kind) const { return caches[static_cast<int>(kind)].get(); }
};

// Creates the caches the profile's kernel has. Called once, when the kernel is built.
void kmem_init(kernel& k);
// An object of `kind`, or nullopt when no low-memory page could be had for a new slab.
// REQUIRES: the cache exists.
std::optional<slab_object> kmem_alloc(kernel& k, kmem_kind kind);
void kmem_free(kernel& k, kmem_kind kind, slab_object obj);
// kmem_cache_reap(): every cache gives back its free slabs. Returns pages released.
uint64_t kmem_reap(kernel& k);

}  // namespace vmlab
