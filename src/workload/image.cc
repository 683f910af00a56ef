#include "workload/image.h"

#include <algorithm>

namespace vmlab {

namespace {

// Where an image's parts go on a format (image.h says where each address comes from).
struct layout {
  vaddr exe, heap_gap, libs_end, stack_end;
};

layout layout_of(const paging_format& f, bytes libs) {
  if (f.name.rfind("ppc64", 0) == 0) {
    // ppc64: the executable at 0x10000000, where the 64-bit PowerPC ELF ABI links it, the
    // brk heap right after its bss, the stack at the top of user space (STACK_TOP =
    // TASK_SIZE_USER64 without randomisation) and the libraries just under mmap_base,
    // which arch/powerpc/mm/mmap.c puts the minimum gap (128 MiB) below the stack.
    return {0x10000000, 0, f.task_size - (128ull << 20), f.task_size};
  }
  if (f.task_size > (vaddr{1} << 32)) return {0x505bb9483000, 742ull << 20, 0x7c5bafe8c000, 0x7cfdd7897000};
  return {0x08048000, 0, 0x40000000 + libs, 0xbffff000};
}

}  // namespace

std::vector<image_map> image_maps(const image_spec& img, const paging_format& f) {
  const bytes page = f.page_size();
  auto up = [page](bytes b) { return (b + page - 1) / page * page; };
  const layout l = layout_of(f, up(img.libraries));
  const vaddr exe = l.exe;
  const vaddr text_end = exe + up(img.text);
  const vaddr data_end = text_end + up(img.data);
  const vaddr heap = data_end + l.heap_gap;
  const vaddr libs_end = l.libs_end;
  const vaddr stack_end = l.stack_end;
  const bytes stack_vma = up(std::max<bytes>(img.stack, 132 << 10));  // the initial 128 KiB + a guard page
  std::vector<image_map> m;
  if (img.text) m.push_back({"image.text", "image.exe", exe, up(img.text), 0, up(img.text), false});
  if (img.data) m.push_back({"image.data", "anon", text_end, up(img.data), 0, up(img.data), true});
  if (img.heap) m.push_back({"image.heap", "anon", heap, up(img.heap), 0, up(img.heap), true});
  if (img.libraries)
    m.push_back({"image.libs", "image.libs", libs_end - up(img.libraries), up(img.libraries), 0, up(img.libraries), false});
  if (img.stack)
    m.push_back({"image.stack", "anon", stack_end - stack_vma, stack_vma, stack_vma - up(img.stack), up(img.stack), true});
  return m;
}

}  // namespace vmlab
