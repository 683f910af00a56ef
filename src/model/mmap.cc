// The VMA tree: mmap, munmap, mprotect, MADV_DONTNEED. The model's mm/mmap.c + mm/vma.c +
// mm/mprotect.c + mm/madvise.c.
//
// Kernel: do_mmap/get_unmapped_area (arch_get_unmapped_area_topdown, or bottom-up from
// TASK_UNMAPPED_BASE on the legacy layout), vma_merge (same flags, same object, contiguous
// pgoff, compatible anon_vma), __split_vma, do_vmi_munmap -> unmap_region ->
// free_pgtables(floor = prev->vm_end, ceiling = next->vm_start), mprotect_fixup,
// madvise_dontneed_single_vma (zap with reclaim_pt).
//
// Simplifications: no stack guard gap and no mmap randomisation (vmlab is deterministic;
// the live engine uses the addresses the model picks); mmap_min_addr is 64 KiB.
#include <algorithm>
#include <iterator>

#include "model/kernel.h"

namespace vmlab {
namespace {

// An align request of at most this is no request: every mapping is page aligned.
constexpr bytes kMmapMinAlign = 4 * KiB;

// is_mergeable_anon_vma(): the same anon_vma, or one side without; under anon_vma_chain
// a VMA that is on several anon_vmas (forked) does not merge with one that has none.
bool anon_compatible(const kernel& k, const vm_area_struct& a, const vm_area_struct& b) {
  if (a.anon_vma && b.anon_vma) return a.anon_vma == b.anon_vma;
  const vm_area_struct& with = a.anon_vma ? a : b;
  return !k.rmap->anon_vma_chains || with.avcs.size() <= 1;
}

bool can_merge(const kernel& k, const vm_area_struct& a, const vm_area_struct& b) {
  if (a.vm_end != b.vm_start) return false;
  if (a.prot != b.prot || a.shared != b.shared || a.locked != b.locked || a.object != b.object) return false;
  // VM_HUGETLB VMAs are VM_DONTEXPAND (VM_SPECIAL): vma_merge never merges them.
  if (a.is_hugetlb() || b.is_hugetlb()) return false;
  if (a.hugepage != b.hugepage || a.nohugepage != b.nohugepage || a.noreserve != b.noreserve) return false;
  if (a.seq_read != b.seq_read || a.rand_read != b.rand_read) return false;
  if (a.nonlinear || b.nonlinear) return false;
  if (a.pgoff + a.pages(k.geo.shift) != b.pgoff) return false;
  return anon_compatible(k, a, b);
}

// `keep` grows over `gone` (adjacent, can_merge): keep inherits gone's anon_vma if it had
// none (dup_anon_vma), then gone is freed. false (nothing changed) on ENOMEM.
bool absorb(kernel& k, mm_struct& mm, vm_area_struct& keep, std::map<vaddr, vm_area_struct>::iterator gone) {
  vm_area_struct& g = gone->second;
  if (!keep.anon_vma && g.anon_vma) {
    keep.anon_vma = g.anon_vma;
    if (!anon_vma_clone(k, keep, g).ok()) return false;  // anon_vma_clone reset keep.anon_vma
  }
  keep.vm_start = std::min(keep.vm_start, g.vm_start);
  keep.vm_end = std::max(keep.vm_end, g.vm_end);
  keep.has_anon_vma |= g.has_anon_vma;
  vm_area_free(k, g);
  if (mm.mmap_cache == &g) mm.mmap_cache = nullptr;
  mm.vmas.erase(gone);
  return true;
}

}  // namespace

// Merges the VMA starting at `start` with its neighbours where vma_merge would.
void merge_around(kernel& k, mm_struct& mm, vaddr start) {
  auto it = mm.vmas.find(start);
  if (it == mm.vmas.end()) return;
  if (it != mm.vmas.begin()) {
    auto prev = std::prev(it);
    if (can_merge(k, prev->second, it->second) && absorb(k, mm, prev->second, it)) it = prev;
  }
  auto next = std::next(it);
  if (next != mm.vmas.end() && can_merge(k, it->second, next->second)) absorb(k, mm, it->second, next);
}

// __split_vma at addr when addr falls strictly inside a VMA: a new vm_area_struct for the
// tail, on every anon_vma of the head.
status split_at(kernel& k, mm_struct& mm, vaddr addr) {
  vm_area_struct* v = find_vma(mm, addr);
  if (!v || v->vm_start == addr) return {};
  // A hugetlb VMA splits only on a huge page boundary (hugetlb_vm_op_split: -EINVAL), and
  // unshares the PMD of the window it splits (hugetlb_split); a THP the split goes
  // through is split first (vma_adjust_trans_huge).
  if (v->is_hugetlb()) {
    if (addr & ((vaddr{1} << v->huge_shift) - 1))
      return status::refused("EINVAL: " + fmt_hex(addr) + " is not aligned to the hugetlb mapping's " +
                             std::to_string((bytes{1} << v->huge_shift) >> 20) + " MiB pages");
    hugetlb_split(k, mm, *v, addr);
  } else {
    split_huge_range_edges(k, mm, *v, addr, addr);
  }
  vm_area_struct tail = *v;
  tail.avcs.clear();
  tail.vm_start = addr;
  tail.pgoff = v->pgoff_at(addr, k.geo.shift);
  if (status s = vm_area_alloc(k, tail); !s.ok()) return s;
  if (status s = anon_vma_clone(k, tail, *v); !s.ok()) {
    tail.anon_vma = 0;
    vm_area_free(k, tail);
    return s;
  }
  v->vm_end = addr;
  mm.vmas.emplace(addr, std::move(tail));
  return {};
}

bool overlaps(const mm_struct& mm, vaddr start, vaddr end) {
  auto it = mm.vmas.lower_bound(end);
  if (it == mm.vmas.begin()) return false;
  return std::prev(it)->second.vm_end > start;
}

namespace {

// First aligned address >= a with addr % align == phase (align 0, or at most a page: a).
vaddr align_up(vaddr a, bytes align, bytes phase) {
  if (align <= kMmapMinAlign) return a;
  vaddr x = (a & ~(align - 1)) + phase;
  return x < a ? x + align : x;
}
// Last aligned address <= a.
vaddr align_down(vaddr a, bytes align, bytes phase) {
  if (align <= kMmapMinAlign) return a;
  vaddr x = (a & ~(align - 1)) + phase;
  return x > a ? x - align : x;
}

// Highest aligned fit below `high` (arch_get_unmapped_area_topdown); 0 when none.
vaddr area_topdown(const mm_struct& mm, vaddr high, bytes len, bytes align, bytes phase) {
  // The walk resumes below the gaps the last search with this high, align and phase
  // found too small for a request no larger than this one (mm_struct::topdown).
  mm_struct::topdown_memo& memo = mm.topdown;
  const bool resume = memo.below && memo.high == high && memo.align == align && memo.phase == phase && len >= memo.len;
  vaddr hi = resume ? memo.below : high;
  for (;;) {
    auto p = mm.vmas.lower_bound(hi);
    const bool has_below = p != mm.vmas.begin();
    vaddr lo = kMmapMinAddr;
    if (has_below) {
      const vm_area_struct& q = std::prev(p)->second;
      if (q.vm_end > hi) { hi = q.vm_start; continue; }
      lo = std::max(q.vm_end, kMmapMinAddr);
    }
    if (hi > lo && hi - lo >= len) {
      const vaddr a = align_down(hi - len, align, phase);
      if (a >= lo && a <= hi - len) {
        memo = {high, hi, len, align, phase};  // every gap above this one was too small
        return a;
      }
    }
    if (!has_below) return 0;
    hi = std::prev(p)->second.vm_start;
    if (hi <= kMmapMinAddr) return 0;
  }
}

// Lowest aligned fit at or above `low` (arch_get_unmapped_area, bottom-up); 0 when none.
vaddr area_bottomup(const mm_struct& mm, vaddr low, vaddr limit, bytes len, bytes align, bytes phase) {
  vaddr a = align_up(std::max(low, kMmapMinAddr), align, phase);
  for (auto it = mm.vmas.upper_bound(a);; ++it) {
    if (it != mm.vmas.begin()) {
      auto p = std::prev(it);
      if (p->second.vm_end > a) a = align_up(p->second.vm_end, align, phase);
    }
    const vaddr next = it == mm.vmas.end() ? limit : it->second.vm_start;
    if (a + len <= next && a + len <= limit && a + len > a) return a;
    if (it == mm.vmas.end()) return 0;
  }
}

}  // namespace

result<vaddr> get_unmapped_area(const kernel& k, const mm_struct& mm, bytes len, bytes align, bytes phase) {
  const vaddr task_size = k.prof.paging.task_size;
  vaddr a = 0;
  if (k.prof.layout == mmap_layout::topdown) {
    a = area_topdown(mm, k.prof.mmap_base, len, align, phase);
    // "A failed mmap() very likely causes application failure, so fall back to the
    // bottom-up function here" (arch_get_unmapped_area_topdown): from TASK_UNMAPPED_BASE.
    if (!a) a = area_bottomup(mm, round_up(task_size / 3, k.geo.size()), task_size, len, align, phase);
  } else {
    a = area_bottomup(mm, k.prof.mmap_base, task_size, len, align, phase);
  }
  if (a) return a;
  std::string why = "ENOMEM: no free range of " + std::to_string(len) + " bytes in the address space";
  if (k.prof.layout == mmap_layout::legacy)
    why += " (the legacy layout searches upwards from TASK_UNMAPPED_BASE 0x" + fmt_hex(k.prof.mmap_base) +
           " to TASK_SIZE 0x" + fmt_hex(task_size) + "; a larger mapping needs a fixed address)";
  return status::refused(why);
}

// mm_populate() for MAP_LOCKED: write faults on private writable VMAs, read faults else.
status mm_populate(kernel& k, mm_struct& mm, vaddr start, vaddr end) {
  vm_area_struct* v = find_vma(mm, start);
  while (v && v->vm_start < end) {
    const bool write = !v->shared && v->writable();
    const vaddr lo = std::max(start, v->vm_start), hi = std::min(end, v->vm_end);
    if (status s = touch_range(k, mm, *v, lo, hi, k.geo.size(), write); !s.ok()) return s;
    v = hi < end ? find_vma(mm, hi) : nullptr;
  }
  return {};
}

vm_area_struct* find_vma(mm_struct& mm, vaddr addr) {
  if (vm_area_struct* c = mm.mmap_cache; c && c->vm_start <= addr && addr < c->vm_end) return c;
  auto it = mm.vmas.upper_bound(addr);
  if (it == mm.vmas.begin()) return nullptr;
  --it;
  if (addr >= it->second.vm_end) return nullptr;
  return mm.mmap_cache = &it->second;
}

namespace {

// 2.6.15 ppc64's huge-page-only areas (huge_policy::htlb_areas; include/asm-powerpc/
// page_64.h): SID_SHIFT 28 segments below 4 GiB, HTLB_AREA_SHIFT 40 areas above.
constexpr int kSidShift = 28, kHtlbAreaShift = 40;
constexpr vaddr kLowAreasEnd = vaddr{1} << 32;

// Bits first..last of a 16-area mask; areas past the 16th (an x86-64 address above
// 16 TiB, where the mask is never used) are left out rather than shifted past the word.
uint16_t area_bits(vaddr first, vaddr last) {
  if (first > 15) return 0;
  last = std::min<vaddr>(last, 15);
  return static_cast<uint16_t>(((uint32_t{1} << (last + 1)) - (uint32_t{1} << first)) & 0xffff);
}

// LOW_ESID_MASK and HTLB_AREA_MASK: the areas [addr, addr + len) touches.
uint16_t low_area_mask(vaddr addr, bytes len) {
  if (addr >= kLowAreasEnd) return 0;
  const vaddr last = std::min<vaddr>(addr + len, kLowAreasEnd) - 1;
  return area_bits(addr >> kSidShift, last >> kSidShift);
}
uint16_t high_area_mask(vaddr addr, bytes len) {
  if (addr + len <= kLowAreasEnd) return 0;
  const vaddr first = std::max(addr, kLowAreasEnd), last = addr + len - 1;
  return area_bits(first >> kHtlbAreaShift, last >> kHtlbAreaShift);
}

// The start of the area addr lies in: its 256 MiB segment below 4 GiB, its 1 TiB area
// above (the first of which starts at 4 GiB).
vaddr htlb_area_start(vaddr addr) {
  if (addr < kLowAreasEnd) return addr & ~((vaddr{1} << kSidShift) - 1);
  return std::max(addr & ~((vaddr{1} << kHtlbAreaShift) - 1), kLowAreasEnd);
}

// High area i: its 1 TiB clipped to the task size, area 0 from 4 GiB
// (prepare_high_area_for_htlb: "the first high area starts at 4GB, not 0").
std::pair<vaddr, vaddr> high_area(const kernel_profile& p, int i) {
  return {std::max(vaddr(i) << kHtlbAreaShift, kLowAreasEnd), std::min(p.paging.task_size, vaddr(i + 1) << kHtlbAreaShift)};
}

int high_areas(const kernel_profile& p) {
  return static_cast<int>(std::min<vaddr>(16, div_round_up(p.paging.task_size, vaddr{1} << kHtlbAreaShift)));
}

bool htlb_area_busy(const mm_struct& mm, vaddr lo, vaddr hi) {
  auto it = mm.vmas.lower_bound(lo);
  if (it != mm.vmas.begin() && std::prev(it)->second.vm_end > lo) return true;
  return it != mm.vmas.end() && it->first < hi;
}

// get_unmapped_area on 2.6.15 ppc64 with huge-page areas, for a 64-bit process.
// Another mapping: arch_get_unmapped_area_topdown, which goes on below an open area the
// candidate touches (touches_hugepage_low/high_range: addr = area start - len).
// A hugetlb one: hugetlb_get_unmapped_area, first the lowest fit in the areas already
// open (htlb_get_high_area), else an area opened from the top down (the areamask loop
// from TASK_SIZE_USER64 - len), the first that holds no mapping, at its lowest address.
// Simplifications: a hugetlb mapping lies in one 1 TiB area (the kernel lets it span
// adjacent ones), and the legacy layout and 32-bit processes' low segments are left
// out. 0 when nothing fits.
vaddr htlb_unmapped_area(const kernel& k, const mm_struct& mm, bytes len, bytes align, bytes phase, bool huge) {
  if (huge) {
    uint16_t taken = mm.high_htlb_areas;
    for (int i = 0; i < high_areas(k.prof); ++i) {
      const auto [lo, hi] = high_area(k.prof, i);
      if (!(mm.high_htlb_areas >> i & 1)) {
        if (htlb_area_busy(mm, lo, hi)) taken |= uint16_t(1u << i);
      } else if (const vaddr a = area_bottomup(mm, lo, hi, len, align, phase)) {
        return a;
      }
    }
    const auto opened = htlb_open_area(k.prof, len, align, phase, taken);
    return opened ? opened->addr : 0;
  }
  vaddr high = k.prof.mmap_base;
  for (;;) {
    const vaddr a = area_topdown(mm, high, len, align, phase);
    if (!a || !((low_area_mask(a, len) & mm.low_htlb_areas) || (high_area_mask(a, len) & mm.high_htlb_areas)))
      return a;
    high = htlb_area_start(a);
  }
}

// Whether a mapping may go at [addr, addr + len) under the huge-page areas, and for a
// hugetlb one the areas it opens (prepare_hugepage_range: open_low/high_hpage_areas,
// each area checked for VMAs, EBUSY; is_hugepage_only_range for any other mapping,
// EINVAL). A fixed address is checked as given; htlb_unmapped_area places the others.
status hugetlb_area_check(const kernel& k, const mm_struct& mm, vaddr addr, bytes len, bool huge, uint16_t* low,
                          uint16_t* high) {
  *low = low_area_mask(addr, len);
  *high = high_area_mask(addr, len);
  if (!k.prof.huge.htlb_areas) return {};
  if (!huge) {
    if ((*low & mm.low_htlb_areas) || (*high & mm.high_htlb_areas))
      return status::refused("EINVAL: [0x" + fmt_hex(addr) + ", 0x" + fmt_hex(addr + len) +
                             ") lies in a huge-page-only area of this process (2.6.15 ppc64: a 256 MiB segment "
                             "below 4 GiB or a 1 TiB area above that a hugetlb mapping opened)");
    return {};
  }
  auto busy = [&](vaddr lo, vaddr hi) { return htlb_area_busy(mm, lo, hi); };
  for (int i = 0; i < 16; ++i) {
    const vaddr lo = vaddr(i) << kSidShift, hi_lo = std::max(vaddr(i) << kHtlbAreaShift, kLowAreasEnd);
    if ((*low >> i & 1) && !(mm.low_htlb_areas >> i & 1) && busy(lo, lo + (vaddr{1} << kSidShift)))
      return status::refused("EBUSY: the 256 MiB segment at 0x" + fmt_hex(lo) +
                             " holds other mappings, so it cannot become a huge-page segment (2.6.15 ppc64 "
                             "prepare_low_area_for_htlb)");
    if ((*high >> i & 1) && !(mm.high_htlb_areas >> i & 1) && busy(hi_lo, (vaddr(i) + 1) << kHtlbAreaShift))
      return status::refused("EBUSY: the 1 TiB area at 0x" + fmt_hex(vaddr(i) << kHtlbAreaShift) +
                             " holds other mappings, so it cannot become a huge-page area (2.6.15 ppc64 "
                             "prepare_high_area_for_htlb)");
  }
  return {};
}

}  // namespace

std::optional<htlb_area_place> htlb_open_area(const kernel_profile& p, bytes len, bytes align, bytes phase,
                                              uint16_t taken) {
  for (int i = high_areas(p) - 1; i >= 0; --i) {
    if (taken >> i & 1) continue;
    const auto [lo, hi] = high_area(p, i);
    if (const vaddr a = align_up(lo, align, phase); a + len <= hi) return htlb_area_place{a, lo, hi};
  }
  return std::nullopt;
}

result<vaddr> do_mmap(kernel& k, mm_struct& mm, const op& o) {
  const bytes page_mask = k.geo.size() - 1;
  if (o.len == 0 || (o.len & page_mask))
    return status::refused("EINVAL: mmap length must be a non-zero multiple of the page size, " + std::to_string(k.geo.size()));
  // A hugetlb file (or MAP_HUGETLB): the length rounds up to its huge pages, which the
  // address and the file offset must be aligned to (ksys_mmap_pgoff, hugetlbfs_file_mmap).
  const uint8_t huge_shift = o.object >= 0 ? k.objects[static_cast<size_t>(o.object)].huge_shift : 0;
  bytes len = o.len, align = o.align, phase = o.phase_off;
  if (huge_shift) {
    const bytes hsize = bytes{1} << huge_shift;
    len = round_up(len, hsize);
    if (o.obj_off & (hsize - 1))
      return status::refused("EINVAL: the offset into a hugetlb file must be a multiple of its " +
                             std::to_string(hsize >> 20) + " MiB pages");
    if (o.fixed && (o.addr & (hsize - 1)))
      return status::refused("EINVAL: a fixed hugetlb mapping must start on a " + std::to_string(hsize >> 20) +
                             " MiB boundary");
    if (align < hsize) { align = hsize; phase = 0; }  // hugetlb_get_unmapped_area
  }
  if (o.object >= 0 && k.objects[static_cast<size_t>(o.object)].mshare && k.prof.ptshare.mshare) {
    // An msharefs region is mapped on a P4D_SIZE boundary, whole and shared
    // (msharefs_get_unmapped_area; the scenario readers check the same rules with the
    // file's position: op_rules.cc).
    const bytes unit = mshare_align(k.prof.paging);
    const mem_object& obj = k.objects[static_cast<size_t>(o.object)];
    if (!unit || !o.shared || o.obj_off || len != obj.nr_pages << k.geo.shift || (o.fixed && o.addr % unit))
      return status::refused("EINVAL: an mshare region is mapped whole, MAP_SHARED, on a P4D_SIZE boundary");
    if (align < unit) { align = unit; phase = 0; }
  }
  if (len > k.prof.paging.task_size - kMmapMinAddr)
    return status::refused("ENOMEM: mapping of " + std::to_string(len) + " bytes is larger than the address space");
  vaddr addr;
  if (o.fixed) {
    if ((o.addr & page_mask) || o.addr < kMmapMinAddr || o.addr + len > k.prof.paging.task_size || o.addr + len < o.addr)
      return status::refused("EINVAL: fixed mapping [" + std::to_string(o.addr) + ", +" + std::to_string(len) +
                              ") lies outside user space");
    if (overlaps(mm, o.addr, o.addr + len)) return status::refused("EEXIST: fixed mapping overlaps an existing mapping");
    addr = o.addr;
  } else if (k.prof.huge.htlb_areas && k.prof.layout == mmap_layout::topdown) {
    addr = htlb_unmapped_area(k, mm, len, align, phase, huge_shift != 0);
    if (!addr)
      return status::refused("ENOMEM: no free range of " + std::to_string(len) + " bytes outside (or, for hugetlb, "
                             "inside) this process's huge-page-only areas");
  } else {
    auto r = get_unmapped_area(k, mm, len, align, phase);
    if (!r.ok()) return r.error();
    addr = r.value();
  }
  uint16_t low_areas = 0, high_areas = 0;
  if (status s = hugetlb_area_check(k, mm, addr, len, huge_shift != 0, &low_areas, &high_areas); !s.ok()) return s;
  vm_area_struct v;
  v.vm_start = addr;
  v.vm_end = addr + len;
  v.prot = o.prot;
  v.shared = o.shared;
  v.locked = o.locked;
  v.object = o.object;
  v.huge_shift = huge_shift;
  v.noreserve = o.noreserve;
  v.pgoff = o.object < 0 ? addr >> k.geo.shift : o.obj_off >> k.geo.shift;
  if (status s = vm_area_alloc(k, v); !s.ok()) return s;
  if (huge_shift)
    if (status s = hugetlb_reserve(k, v); !s.ok()) {
      vm_area_free(k, v);
      return s;
    }
  if (huge_shift && k.prof.huge.htlb_areas) {
    mm.low_htlb_areas |= low_areas;
    mm.high_htlb_areas |= high_areas;
  }
  mm.vmas.emplace(addr, v);
  mm.maps[o.map] = {addr, o.len};
  merge_around(k, mm, addr);
  if (o.has_hint)
    if (status s = do_madvise(k, mm, addr, addr + len, o.hint); !s.ok()) return s;
  if (o.locked)
    if (status s = mm_populate(k, mm, addr, addr + len); !s.ok()) return s;
  return addr;
}


// An mshare region's mapping is changed whole or not at all: the patches' may_split op
// refuses every split of a process's region VMA (mm/mshare.c mshare_vm_op_split), so a
// munmap, mprotect or madvise that would split one is EINVAL.
status mshare_whole(const kernel& k, mm_struct& mm, vaddr start, vaddr end, const char* what) {
  if (!k.prof.ptshare.mshare) return {};
  // The VMAs that overlap [start, end): from the one containing start, if any.
  auto it = mm.vmas.upper_bound(start);
  if (it != mm.vmas.begin()) --it;
  for (; it != mm.vmas.end() && it->second.vm_start < end; ++it) {
    const vm_area_struct& v = it->second;
    if (v.vm_end <= start || !is_mshare_vma(k, v)) continue;
    if (start > v.vm_start || end < v.vm_end)
      return status::refused(std::string("EINVAL: ") + what + " of part of an mshare region: its VMA cannot be split "
                             "(mshare v3's msharefs_vm_ops.may_split returns -EINVAL, \"Disallow partial unmaps of "
                             "an mshare region for now\")" +
                             (std::string(what) == "mprotect"
                                  ? "; mprotect through a region VMA is -EINVAL in the patches (mshare_vm_op_mprotect): "
                                    "vmlab takes a whole-region one as the host mm's change of the region"
                                  : ""));
  }
  return {};
}

status do_munmap(kernel& k, mm_struct& mm, vaddr start, vaddr end) {
  if (status s = mshare_whole(k, mm, start, end, "munmap"); !s.ok()) return s;
  if (status s = split_at(k, mm, start); !s.ok()) return s;
  if (status s = split_at(k, mm, end); !s.ok()) return s;
  std::vector<std::pair<vaddr, vaddr>> removed;
  mm.topdown = {};  // a gap grows: the top-down search's memo no longer holds
  for (auto it = mm.vmas.lower_bound(start); it != mm.vmas.end() && it->second.vm_start < end;) {
    zap_range(k, mm, it->second, it->second.vm_start, it->second.vm_end, false);
    removed.emplace_back(it->second.vm_start, it->second.vm_end);
    vm_area_free(k, it->second);
    if (mm.mmap_cache == &it->second) mm.mmap_cache = nullptr;
    it = mm.vmas.erase(it);
  }
  if (removed.empty()) return {};
  // unmap_region(): floor = prev->vm_end, ceiling = next->vm_start (0 = none: the top).
  auto nx = mm.vmas.lower_bound(end);
  const vaddr ceiling = nx == mm.vmas.end() ? 0 : nx->second.vm_start;
  vaddr floor = 0;
  if (nx != mm.vmas.begin()) {
    auto pv = std::prev(nx);
    if (pv->second.vm_end <= start) floor = pv->second.vm_end;
  }
  // free_pgtables(): gather removed VMAs closer than one PTE page's span into one call.
  const uint64_t pmd_size = k.prof.paging.at(k.prof.paging.nr_levels - 2).span();
  for (size_t i = 0; i < removed.size();) {
    size_t j = i;
    while (j + 1 < removed.size() && removed[j + 1].first <= removed[j].second + pmd_size) ++j;
    const vaddr ceil = j + 1 < removed.size() ? removed[j + 1].first : ceiling;
    free_pgtables(k, mm, removed[i].first, removed[j].second, floor, ceil);
    i = j + 1;
  }
  return {};
}

status do_mprotect(kernel& k, mm_struct& mm, vaddr start, vaddr end, uint8_t prot) {
  for (vaddr a = start; a < end;) {
    vm_area_struct* v = find_vma(mm, a);
    if (!v) return status::refused("ENOMEM: mprotect range includes unmapped pages");
    a = v->vm_end;
  }
  if (status s = mshare_whole(k, mm, start, end, "mprotect"); !s.ok()) return s;
  if (status s = split_at(k, mm, start); !s.ok()) return s;
  if (status s = split_at(k, mm, end); !s.ok()) return s;
  // PTSHARE: mprotect unshares (pt_unshare_range); the range refaults into tables of its
  // own, shareable again with partners of the new permissions. mshare: the region's
  // protection changes for every process that maps it ("mprotect affects all sharers").
  ptshare_unshare_range(k, mm, start, end, /*keep_mshare=*/true);
  for (auto it = mm.vmas.lower_bound(start); it != mm.vmas.end() && it->second.vm_start < end; ++it) {
    vm_area_struct& v = it->second;
    if (is_mshare_vma(k, v)) {
      for (auto& [pid, other] : k.mms)
        for (auto& [os, ov] : other->vmas)
          if (ov.object == v.object && &ov != &v) ov.prot = prot;
      if ((v.prot & prot_write) && !(prot & prot_write)) mshare_change_protection(k, v.object, false);
    }
    if (v.is_hugetlb())
      hugetlb_change_protection(k, mm, v, v.vm_start, v.vm_end, prot & prot_write);
    else if ((v.prot & prot_write) && !(prot & prot_write))
      wrprotect_range(k, mm, v.vm_start, v.vm_end);
    v.prot = prot;
  }
  // vma_modify_flags merges the changed range with its neighbours where it can.
  std::vector<vaddr> starts;
  for (auto it = mm.vmas.lower_bound(start); it != mm.vmas.end() && it->second.vm_start <= end; ++it)
    starts.push_back(it->second.vm_start);
  for (auto it = starts.rbegin(); it != starts.rend(); ++it) merge_around(k, mm, *it);
  return {};
}

status do_madvise(kernel& k, mm_struct& mm, vaddr start, vaddr end, advice adv) {
  bool unmapped = false;
  if (adv != advice::dontneed) {
    if (status s = mshare_whole(k, mm, start, end, "madvise"); !s.ok()) return s;  // it would split the VMA
    // MADV_HUGEPAGE / MADV_NOHUGEPAGE, MADV_SEQUENTIAL / MADV_RANDOM: the flags of the
    // range, VMAs split and merged as
    // for mprotect (madvise_update_vma). Pages already mapped stay as they are.
    for (vaddr a = start; a < end;) {
      vm_area_struct* v = find_vma(mm, a);
      if (!v) {
        auto it = mm.vmas.upper_bound(a);
        if (it == mm.vmas.end()) break;
        a = it->second.vm_start;
        unmapped = true;
        continue;
      }
      a = v->vm_end;
    }
    if (status s = split_at(k, mm, start); !s.ok()) return s;
    if (status s = split_at(k, mm, end); !s.ok()) return s;
    std::vector<vaddr> starts;
    for (auto it = mm.vmas.lower_bound(start); it != mm.vmas.end() && it->second.vm_start < end; ++it) {
      vm_area_struct& v = it->second;
      if (adv == advice::hugepage || adv == advice::nohugepage) {
        v.hugepage = adv == advice::hugepage;
        v.nohugepage = adv == advice::nohugepage;
      } else {  // MADV_SEQUENTIAL / MADV_RANDOM: VM_SEQ_READ / VM_RAND_READ, one or the other
        v.seq_read = adv == advice::sequential;
        v.rand_read = adv == advice::random;
      }
      starts.push_back(it->second.vm_start);
    }
    for (auto it = starts.rbegin(); it != starts.rend(); ++it) merge_around(k, mm, *it);
    if (unmapped) return status::refused("ENOMEM: madvise range includes unmapped pages");
    return {};
  }
  for (vaddr a = start; a < end;) {
    vm_area_struct* v = find_vma(mm, a);
    if (!v) {
      unmapped = true;
      auto it = mm.vmas.upper_bound(a);
      if (it == mm.vmas.end()) break;
      a = it->second.vm_start;
      continue;
    }
    if (v->locked) return status::refused("EINVAL: MADV_DONTNEED on a locked (VM_LOCKED) mapping");
    const vaddr lo = std::max(a, v->vm_start), hi = std::min(end, v->vm_end);
    if (is_mshare_vma(k, *v)) {
      // mshare: the zap goes to the region VMA's unmap_page_range op (mm/mshare.c,
      // mshare_vm_op_unshare_page_range: "Unlink any shared page tables in the range and
      // ensure TLBs are flushed. Pages in the mshare region itself are not unmapped."):
      // this process drops every shared table whose entry the range touches, whole, and
      // later faults link it again. The host mm's entries and pages stay.
      ptshare_unshare_range(k, mm, lo, hi, /*keep_mshare=*/false);
      a = v->vm_end;
      continue;
    }
    if (v->is_hugetlb() && ((lo | hi) & ((vaddr{1} << v->huge_shift) - 1)))
      return status::refused("EINVAL: MADV_DONTNEED of a hugetlb mapping must cover whole huge pages");
    zap_range(k, mm, *v, lo, hi, /*reclaim_pt=*/true);
    a = v->vm_end;
  }
  if (unmapped) return status::refused("ENOMEM: madvise range includes unmapped pages");
  return {};
}

}  // namespace vmlab
