#include "model/kmem.h"

#include "model/kernel.h"

namespace vmlab {
namespace {

constexpr uint64_t kSlubMinPartial = 5;  // MIN_PARTIAL

}  // namespace

const char* kmem_kind_name(kmem_kind k) {
  switch (k) {
    case kmem_kind::vm_area_struct: return "vm_area_struct";
    case kmem_kind::mm_struct: return "mm_struct";
    case kmem_kind::anon_vma: return "anon_vma";
    case kmem_kind::anon_vma_chain: return "anon_vma_chain";
    case kmem_kind::pte_chain: return "pte_chain";
    case kmem_kind::pgd: return "pgd";
    case kmem_kind::radix_tree_node: return "radix_tree_node";
  }
  return "?";
}

void kmem_init(kernel& k) {
  const kernel_objects& o = k.prof.objs;
  const slab_policy& sp = o.slab;
  auto make = [&](kmem_kind kind, const cache_decl& d, bool percpu = false) {
    if (!d.object_size) return;
    kmem_cache_options opt;
    opt.allocator = sp.allocator;
    const slab_geometry g = calculate_geometry(sp, d.object_size, d.flags);
    opt.tunables = default_tunables(sp, g.objsize);
    opt.percpu_one_deep = percpu;
    opt.charge_pages = [&k](uint32_t pages) {
      if (k.pm.alloc(page_use::slab, gfp_zone::kernel, pages)) return true;
      kmem_reap(k);
      return k.pm.alloc(page_use::slab, gfp_zone::kernel, pages);
    };
    k.km.caches[static_cast<int>(kind)] = std::make_unique<kmem_cache>(kmem_kind_name(kind), g, std::move(opt));
  };
  make(kmem_kind::vm_area_struct, o.vm_area_struct);
  make(kmem_kind::mm_struct, o.mm_struct);
  make(kmem_kind::anon_vma, o.anon_vma);
  make(kmem_kind::anon_vma_chain, o.anon_vma_chain);
  make(kmem_kind::radix_tree_node, o.radix_tree_node);
  if (k.rmap->per_page_state) {
    // sizeof(struct pte_chain): one cache line from 2.5.35; two pointers before.
    cache_decl pc = o.pte_chain;
    pc.object_size = k.prof.rmap.pte_chain_slots == 1 ? 2 * sp.word_size : sp.cache_line;
    make(kmem_kind::pte_chain, pc, k.prof.rmap.percpu_one_deep);
  }
  // i386 PAE: the 32-byte top-level table comes from its own cache ("pgd").
  if (k.prof.paging.pgd_from_slab)
    make(kmem_kind::pgd, {static_cast<uint32_t>(k.prof.pgd_bytes()), {.align = static_cast<uint32_t>(k.prof.pgd_bytes())}});
}

std::optional<slab_object> kmem_alloc(kernel& k, kmem_kind kind) {
  return k.km.cache(kind)->alloc();
}

void kmem_free(kernel& k, kmem_kind kind, slab_object obj) {
  kmem_cache& c = *k.km.cache(kind);
  c.free(obj);
  if (c.allocator() == slab_allocator::slub && c.free_slabs() > kSlubMinPartial) k.pm.free(page_use::slab, c.shrink());
}

uint64_t kmem_reap(kernel& k) {
  uint64_t n = 0;
  for (auto& c : k.km.caches)
    if (c) n += c->shrink();
  k.pm.free(page_use::slab, n);
  return n;
}

}  // namespace vmlab
