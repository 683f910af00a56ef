#include "workload/op_rules.h"

#include <fmt/format.h>

#include "model/ptshare.h"

namespace vmlab {
namespace {

std::string sizes_of(const kernel_profile& p) {
  std::string out;
  for (bytes b : hugetlb_page_sizes(p)) out += (out.empty() ? "" : ", ") + huge_size_text(b);
  return out;
}

// "linux-x has no hugetlb pages", and why when the profile says (kernel_profile::hugetlb_missing).
std::string no_hugetlb(const kernel_profile& p) {
  return p.name + " has no hugetlb pages" + (p.hugetlb_missing.empty() ? "" : " (" + p.hugetlb_missing + ")");
}

std::optional<rule_error> size_known(const kernel_profile& p, bytes size, const std::string& field, const std::string& what) {
  const auto sizes = hugetlb_page_sizes(p);
  if (sizes.empty()) return rule_error{field, what + ": " + no_hugetlb(p)};
  if (size == 0) return std::nullopt;
  for (bytes b : sizes)
    if (b == size) return std::nullopt;
  return rule_error{field, fmt::format("{}: {} has no hugetlb pages of {} bytes (it has {})", what, p.name, size, sizes_of(p))};
}

}  // namespace

std::string huge_size_text(bytes b) {
  return b >= GiB ? fmt::format("{} GiB", b / GiB) : b >= MiB ? fmt::format("{} MiB", b / MiB) : fmt::format("{} KiB", b / KiB);
}

// An mshare region's alignment and size unit, P4D_SIZE (mshare_align, ptshare.h), or 0
// when the format has no PUD level. mm/mshare.c (2025): msharefs_set_size (ftruncate,
// fallocate) refuses a size that is not a multiple (`size & (mshare_align - 1)`: -EINVAL,
// no rounding); msharefs_get_unmapped_area refuses MAP_PRIVATE, a length other than the
// size and a MAP_FIXED address not IS_ALIGNED to it, and otherwise aligns the hint or the
// search (vm_unmapped_area with align_mask = mshare_align - 1).
bytes mshare_unit(const kernel_profile& p) { return mshare_align(p.paging); }

std::optional<rule_error> check_object(const kernel_profile& p, const object_decl& d) {
  // Its pages are counted rounded up: a size within a page of 2^64 would round to 0.
  if (const bytes page = p.paging.page_size(); d.size > ~bytes{0} - (page - 1))
    return rule_error{"size", fmt::format("object '{}': {} bytes is past the largest size whose pages can be counted "
                                          "({} bytes, the last whole {}-byte page below 2^64)",
                                          d.name, d.size, ~bytes{0} - (page - 1), page)};
  if (d.mshare) {
    if (!p.ptshare.mshare)
      return rule_error{"mshare", fmt::format("object '{}': {} has no mshare (msharefs regions are in linux-6.18-mshare)",
                                              d.name, p.name)};
    const bytes unit = mshare_unit(p);
    if (!unit) return rule_error{"mshare", fmt::format("object '{}': {} paging has no PUD level to share at", d.name, p.paging.name)};
    if (d.size % unit)
      return rule_error{"size", fmt::format("object '{}': an mshare region's size must be a multiple of {} (mshare_align, "
                                            "P4D_SIZE: msharefs_set_size), not {} bytes",
                                            d.name, huge_size_text(unit), d.size)};
  }
  // A hugetlb region (mshare v3 20/22, "support mapping files and anon hugetlb in an mshare
  // region"): msharefs_create_mapping rounds the mapping up to whole huge pages (ALIGN(size,
  // huge_page_size)) and refuses one that then passes the region's end (-EINVAL), so the
  // whole-pages rule below is the patch's; P4D_SIZE is a multiple of every x86-64 size.
  if (d.kind != object_kind::hugetlb) {
    if (d.page_size) return rule_error{"page_size", "page_size applies to hugetlb objects only"};
    return std::nullopt;
  }
  if (auto e = size_known(p, d.page_size, "page_size", "hugetlb object '" + d.name + "'")) return e;
  const bytes hsize = d.page_size ? d.page_size : hugetlb_page_sizes(p).front();
  if (d.size % hsize)
    return rule_error{"size", fmt::format("hugetlb object '{}' must be a whole number of its {} pages, not {} bytes", d.name,
                                          huge_size_text(hsize), d.size)};
  return std::nullopt;
}

std::optional<rule_error> check_pool(const kernel_profile& p, bytes size, const char* what) {
  return size_known(p, size, what, what);
}

std::optional<rule_error> check_mmap(const kernel_profile& p, const std::vector<object_decl>& objects, const op& o) {
  const object_decl* obj = o.object >= 0 ? &objects[static_cast<size_t>(o.object)] : nullptr;
  const bool hugetlb = (obj && obj->kind == object_kind::hugetlb) || o.hugetlb;
  if (o.hugetlb && obj) return rule_error{"hugetlb", "hugetlb (MAP_HUGETLB) applies to anonymous mappings; map a hugetlb object instead"};
  if (o.page_size && !o.hugetlb) return rule_error{"page_size", "page_size applies to anonymous hugetlb mappings only"};
  if (o.noreserve && !hugetlb) return rule_error{"noreserve", "noreserve (MAP_NORESERVE) applies to hugetlb mappings only"};
  if (obj && obj->mshare) {
    const bytes unit = mshare_unit(p);
    if (!o.shared)
      return rule_error{"private", fmt::format("mshare region '{}' is mapped MAP_SHARED only (\"mshare won't support "
                                               "mapping objects in it with MAP_PRIVATE\", Yznaga, 2026-02-23)", obj->name)};
    if (o.obj_off || (o.len && o.len != obj->size))
      return rule_error{o.obj_off ? "off" : "len",
                        fmt::format("mshare region '{}' is mapped whole ({} bytes at offset 0), as its processes mmap "
                                    "the msharefs file",
                                    obj->name, obj->size)};
    if (o.fixed && o.addr % unit)
      return rule_error{"addr", fmt::format("mshare region '{}' must be mapped on a {} (P4D_SIZE) boundary, not at {:#x}", obj->name,
                                            huge_size_text(unit), o.addr)};
    if (!o.fixed && o.align && unit % o.align && o.align % unit)
      return rule_error{"align", fmt::format("mshare region '{}' is mapped on a {} boundary; align {} contradicts it",
                                             obj->name, huge_size_text(unit), o.align)};
    if (!o.fixed && o.phase_off % unit)
      return rule_error{"phase", fmt::format("mshare region '{}' is mapped on a {} boundary: its phase must be a multiple "
                                             "of that", obj->name, huge_size_text(unit))};
  }
  if (!hugetlb) return std::nullopt;
  if (o.hugetlb)
    if (auto e = size_known(p, o.page_size, "page_size", "MAP_HUGETLB"); e) return e;
  const auto sizes = hugetlb_page_sizes(p);
  bytes hsize = o.hugetlb ? (o.page_size ? o.page_size : sizes.empty() ? 0 : sizes.front())
                          : (obj->page_size ? obj->page_size : sizes.empty() ? 0 : sizes.front());
  if (!hsize) return rule_error{"obj", no_hugetlb(p)};
  if (o.obj_off % hsize)
    return rule_error{"off", fmt::format("the offset into hugetlb object '{}' must be a multiple of its {} pages, not {}",
                                         obj ? obj->name : "", huge_size_text(hsize), o.obj_off)};
  if (o.len % hsize)
    return rule_error{"len", fmt::format("a hugetlb mapping's length must be a multiple of its {} pages, not {}",
                                         huge_size_text(hsize), o.len)};
  if (!o.fixed && o.phase_off % hsize)
    return rule_error{"phase", fmt::format("a hugetlb mapping starts on a {} boundary (hugetlb_get_unmapped_area): its "
                                           "phase must be a multiple of that, not {}",
                                           huge_size_text(hsize), o.phase_off)};
  if (o.fixed && o.addr % hsize)
    return rule_error{"addr", fmt::format("a fixed hugetlb mapping must start on a {} boundary, not {:#x}",
                                          huge_size_text(hsize), o.addr)};
  return std::nullopt;
}

std::optional<rule_error> check_mremap(const kernel_profile& p, const op& o) {
  const bytes page = p.paging.page_size();
  if (o.len == 0 || o.len % page)
    return rule_error{"len", fmt::format("mremap: the new length must be a non-zero multiple of {}, not {}", page, o.len)};
  if (o.len > p.paging.task_size - kMmapMinAddr)
    return rule_error{"len", fmt::format("mremap: {} bytes is larger than the address space", o.len)};
  if (o.fixed && (o.addr % page || o.addr < kMmapMinAddr || o.addr > p.paging.task_size - o.len))
    return rule_error{"addr", fmt::format("mremap: the target [{:#x}, {:#x}) must start on a page boundary inside the user "
                                          "address space [{:#x}, {:#x})",
                                          o.addr, o.addr + o.len, kMmapMinAddr, p.paging.task_size)};
  return std::nullopt;
}

std::optional<rule_error> check_io(const std::vector<object_decl>& objects, const op& o, bytes buffer_size) {
  constexpr bytes kPage = 4096;
  const char* what = o.kind == op_kind::readv ? "readv" : o.kind == op_kind::read ? "read" : "write";
  const object_decl& d = objects[size_t(o.object)];
  if (d.kind == object_kind::hugetlb)
    return rule_error{"obj", fmt::format("{} of hugetlb object '{}' is not modelled (files and shm objects are)", what, d.name)};
  if (o.obj_off % kPage) return rule_error{"off", fmt::format("{}: the file offset must be a multiple of 4096, not {}", what, o.obj_off)};
  if (o.len == 0 || o.len % kPage) return rule_error{"len", fmt::format("{}: the length must be a non-zero multiple of 4096, not {}", what, o.len)};
  if (o.obj_off > d.size || o.len > d.size - o.obj_off)
    return rule_error{"len", fmt::format("{}: [{}, +{}) is beyond the end of object '{}' ({} bytes)", what, o.obj_off, o.len, d.name, d.size)};
  if (o.kind == op_kind::readv) {
    if (!o.buffer) return rule_error{"buf", "readv needs a buffer mapping (buf=MAP): its iovecs are pages of a mapping"};
    if (o.count == 0 || o.len % o.count || (o.len / o.count) % kPage)
      return rule_error{"iovecs", fmt::format("readv: {} bytes do not split into {} iovecs of whole pages", o.len, o.count)};
    if (o.count > 1024) return rule_error{"iovecs", fmt::format("readv: at most 1024 iovecs (UIO_MAXIOV), not {}", o.count)};
  }
  const bytes iov = o.len / std::max<uint64_t>(1, o.count);
  if (o.stride && (o.stride % kPage || o.stride < iov))
    return rule_error{"stride", fmt::format("{}: the iovec stride must be a multiple of 4096 and at least the iovec's {} bytes, not {}",
                                            what, iov, o.stride)};
  if (!o.buffer) return std::nullopt;
  if (o.off % kPage) return rule_error{"bufoff", fmt::format("{}: the buffer offset must be a multiple of 4096, not {}", what, o.off)};
  const uint64_t n = std::max<uint64_t>(1, o.count);
  bytes span = 0;  // (n - 1) strides and an iovec, unless that passes 2^64
  if (__builtin_mul_overflow(n - 1, o.stride ? o.stride : iov, &span) || __builtin_add_overflow(span, iov, &span))
    return rule_error{"stride", fmt::format("{}: {} iovecs {} bytes apart reach past 2^64 bytes", what, n, o.stride)};
  if (o.off > buffer_size || span > buffer_size - o.off)
    return rule_error{"bufoff", fmt::format("{}: the buffer [{}, +{}) is beyond the end of its mapping ({} bytes)", what, o.off, span,
                                            buffer_size)};
  return std::nullopt;
}

std::optional<rule_error> check_machine_count(const char* key, int64_t v) {
  const std::string_view k = key;
  if (k == "cpus" && (v < 1 || v > 65536))
    return rule_error{key, fmt::format("'cpus' of the machine must be between 1 and 65536, not {}", v)};
  if (k == "cache_line" && (v < 16 || v > 4096 || (v & (v - 1))))
    return rule_error{key, fmt::format("'cache_line' of the machine must be a power of two between 16 and 4096, not {}", v)};
  return std::nullopt;
}

}  // namespace vmlab
