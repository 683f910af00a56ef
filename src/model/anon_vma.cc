#include "model/anon_vma.h"

#include <iterator>

#include "model/kernel.h"

namespace vmlab {
namespace {

bool has_objects(const kernel& k) { return k.rmap->anon_vma_objects; }
bool chains(const kernel& k) { return k.rmap->anon_vma_chains; }

status enomem(kernel& k, const char* what) { return oom_status(k, what, gfp_zone::kernel); }

// anon_vma_alloc(): refcount 1, its own root and parent.
result<uint32_t> anon_vma_alloc(kernel& k) {
  auto obj = kmem_alloc(k, kmem_kind::anon_vma);
  if (!obj) return enomem(k, "an anon_vma");
  uint32_t id;
  if (!k.free_anon_vmas.empty()) {
    id = k.free_anon_vmas.back();
    k.free_anon_vmas.pop_back();
  } else {
    if (k.anon_vmas.empty()) k.anon_vmas.emplace_back();  // id 0: none
    id = static_cast<uint32_t>(k.anon_vmas.size());
    k.anon_vmas.emplace_back();
  }
  anon_vma& av = k.anon_vmas[id];
  av = anon_vma{};
  av.root = av.parent = id;
  av.refcount = 1;
  av.obj = obj;
  av.live = true;
  return id;
}

void anon_vma_free(kernel& k, uint32_t id) {
  anon_vma& av = k.anon_vmas[id];
  kmem_free(k, kmem_kind::anon_vma, *av.obj);
  av.live = false;
  av.obj.reset();
  k.free_anon_vmas.push_back(id);
}

// put_anon_vma() / __put_anon_vma(): the last reference frees it, and drops the
// reference it held on its root.
void put_anon_vma(kernel& k, uint32_t id) {
  if (--k.anon_vmas[id].refcount) return;
  const uint32_t root = k.anon_vmas[id].root;
  if (root != id && --k.anon_vmas[root].refcount == 0) anon_vma_free(k, root);
  anon_vma_free(k, id);
}

result<slab_object> avc_alloc(kernel& k) {
  auto obj = kmem_alloc(k, kmem_kind::anon_vma_chain);
  if (!obj) return enomem(k, "an anon_vma_chain");
  return *obj;
}

void avc_link(kernel& k, vm_area_struct& vma, uint32_t av, slab_object obj) {
  vma.avcs.push_back({av, obj});
  ++k.anon_vmas[av].nr_vmas;
}

// anon_vma_compatible() + reusable_anon_vma(): a neighbour whose anon_vma a new one can
// borrow (adjacent, same object and sharing, contiguous pgoff; under anon_vma_chain only
// if the neighbour is on that one anon_vma alone, i.e. was not forked).
uint32_t find_mergeable_anon_vma(const kernel& k, const mm_struct& mm, const vm_area_struct& vma) {
  auto reusable = [&](const vm_area_struct& a, const vm_area_struct& b, const vm_area_struct& old) -> uint32_t {
    if (a.vm_end != b.vm_start || a.object != b.object || a.shared != b.shared || a.locked != b.locked) return 0;
    if (b.pgoff != a.pgoff + a.pages(k.geo.shift)) return 0;
    if (!old.anon_vma) return 0;
    if (chains(k) && old.avcs.size() != 1) return 0;
    return old.anon_vma;
  };
  auto it = mm.vmas.find(vma.vm_start);
  if (it == mm.vmas.end()) return 0;
  if (auto nx = std::next(it); nx != mm.vmas.end())
    if (uint32_t av = reusable(vma, nx->second, nx->second)) return av;
  if (it != mm.vmas.begin())
    if (uint32_t av = reusable(std::prev(it)->second, vma, std::prev(it)->second)) return av;
  return 0;
}

}  // namespace

status anon_vma_prepare(kernel& k, mm_struct& mm, vm_area_struct& vma) {
  if (vma.has_anon_vma) return {};
  if (!has_objects(k)) {
    vma.has_anon_vma = true;
    return {};
  }
  uint32_t av = find_mergeable_anon_vma(k, mm, vma);
  if (!chains(k)) {
    if (!av) {
      auto r = anon_vma_alloc(k);
      if (!r.ok()) return r.error();
      av = r.value();
    }
    vma.anon_vma = av;
    ++k.anon_vmas[av].nr_vmas;
    vma.has_anon_vma = true;
    return {};
  }
  auto avc = avc_alloc(k);
  if (!avc.ok()) return avc.error();
  if (!av) {
    auto r = anon_vma_alloc(k);
    if (!r.ok()) {
      kmem_free(k, kmem_kind::anon_vma_chain, avc.value());
      return r.error();
    }
    av = r.value();
    ++k.anon_vmas[av].num_children;  // the self-parent link of a new root
  }
  vma.anon_vma = av;
  avc_link(k, vma, av, avc.value());
  ++k.anon_vmas[av].num_active_vmas;
  vma.has_anon_vma = true;
  return {};
}

status anon_vma_clone(kernel& k, vm_area_struct& dst, const vm_area_struct& src) {
  if (!has_objects(k)) return {};
  if (!chains(k)) {
    if (src.anon_vma) {
      dst.anon_vma = src.anon_vma;
      ++k.anon_vmas[dst.anon_vma].nr_vmas;
    }
    return {};
  }
  // src's list is newest first and the kernel walks it in reverse: oldest (the root)
  // first, which is the order of src.avcs.
  for (const auto& link : src.avcs) {
    auto avc = avc_alloc(k);
    if (!avc.ok()) {
      dst.anon_vma = 0;
      unlink_anon_vmas(k, dst);
      return avc.error();
    }
    avc_link(k, dst, link.av, avc.value());
    const anon_vma& av = k.anon_vmas[link.av];
    // Reuse an existing anon_vma that has no VMA and at most one child (fork only: for a
    // split or merge dst->anon_vma is already set).
    if (k.prof.rmap.anon_vma_reuse && !dst.anon_vma && src.anon_vma && av.num_children < 2 &&
        av.num_active_vmas == 0)
      dst.anon_vma = link.av;
  }
  if (dst.anon_vma) ++k.anon_vmas[dst.anon_vma].num_active_vmas;
  return {};
}

status anon_vma_fork(kernel& k, vm_area_struct& child, const vm_area_struct& parent) {
  child.avcs.clear();
  if (!has_objects(k)) return {};
  child.anon_vma = 0;
  if (!parent.anon_vma) return {};
  if (!chains(k)) return anon_vma_clone(k, child, parent);
  if (status s = anon_vma_clone(k, child, parent); !s.ok()) return s;
  if (child.anon_vma) return {};  // an existing anon_vma was reused
  auto r = anon_vma_alloc(k);
  if (!r.ok()) {
    unlink_anon_vmas(k, child);
    return r.error();
  }
  const uint32_t av = r.value();
  auto avc = avc_alloc(k);
  if (!avc.ok()) {
    put_anon_vma(k, av);
    unlink_anon_vmas(k, child);
    return avc.error();
  }
  anon_vma& a = k.anon_vmas[av];
  a.num_active_vmas = 1;
  a.root = k.anon_vmas[parent.anon_vma].root;
  a.parent = parent.anon_vma;
  ++k.anon_vmas[a.root].refcount;  // get_anon_vma(anon_vma->root)
  child.anon_vma = av;
  avc_link(k, child, av, avc.value());
  ++k.anon_vmas[a.parent].num_children;
  return {};
}

void unlink_anon_vmas(kernel& k, vm_area_struct& vma) {
  if (!has_objects(k)) return;
  if (!chains(k)) {
    if (vma.anon_vma && --k.anon_vmas[vma.anon_vma].nr_vmas == 0) anon_vma_free(k, vma.anon_vma);
    vma.anon_vma = 0;
    return;
  }
  std::vector<uint32_t> emptied;
  for (const auto& link : vma.avcs) {
    anon_vma& av = k.anon_vmas[link.av];
    if (--av.nr_vmas == 0) {
      --k.anon_vmas[av.parent].num_children;
      emptied.push_back(link.av);
    }
    kmem_free(k, kmem_kind::anon_vma_chain, link.obj);
  }
  vma.avcs.clear();
  if (vma.anon_vma) --k.anon_vmas[vma.anon_vma].num_active_vmas;
  vma.anon_vma = 0;
  for (uint32_t av : emptied) put_anon_vma(k, av);
}

}  // namespace vmlab
