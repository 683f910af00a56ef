// vm_area_struct objects: every VMA the model creates holds one from the profile's
// vm_area_struct cache (kernel/fork.c vm_area_alloc / vm_area_dup / vm_area_free), so
// splits, merges and forks show in the slab figures exactly as often as the kernel
// allocates.
#include "model/kernel.h"

namespace vmlab {

status vm_area_alloc(kernel& k, vm_area_struct& vma) {
  auto obj = kmem_alloc(k, kmem_kind::vm_area_struct);
  if (!obj) return oom_status(k, "a vm_area_struct", gfp_zone::kernel);
  vma.obj = *obj;
  return {};
}

void vm_area_free(kernel& k, vm_area_struct& vma) {
  if (vma.is_hugetlb()) hugetlb_unreserve(k, vma);
  unlink_anon_vmas(k, vma);
  kmem_free(k, kmem_kind::vm_area_struct, vma.obj);
}

}  // namespace vmlab
