#include "workload/image.h"

#include <algorithm>

namespace vmlab {

std::vector<image_map> image_maps(const image_spec& img, const paging_format& f) {
  const bytes page = f.page_size();
  auto up = [page](bytes b) { return (b + page - 1) / page * page; };
  const bool wide = f.task_size > (vaddr{1} << 32);
  // See image.h for where each address comes from.
  const vaddr exe = wide ? 0x505bb9483000 : 0x08048000;
  const vaddr text_end = exe + up(img.text);
  const vaddr data_end = text_end + up(img.data);
  const vaddr heap = wide ? data_end + (742ull << 20) : data_end;
  const vaddr libs_end = wide ? 0x7c5bafe8c000 : 0x40000000 + up(img.libraries);
  const vaddr stack_end = wide ? 0x7cfdd7897000 : 0xbffff000;
  const bytes stack_vma = std::max<bytes>(up(img.stack), 132 << 10);  // the kernel's initial 128 KiB + guard
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
