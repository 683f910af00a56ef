// Kernel profiles: a named Linux design as a bundle of policies and sizes.
//
// Why: vmlab compares kernel designs side by side, so a design is a value, never a
// scattering of `if (version < ...)`. Code asks the profile a question
// (counts_in_page_tables(l), vma_needs_copy policy, pt_reclaim) and the preset answers it.
// Presets are built as parent + deltas, as gem5 builds its policy variants; a scenario
// may override single keys (see apply_override for the list).
//
// Later issues add rmap, huge-page and sharing policies to this same struct.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/arch.h"
#include "vmlab/status.h"

namespace vmlab {

// How munmap/exit decide which page-table pages to free.
enum class pgtable_free_policy : uint8_t {
  // 2.6.12+ free_pgtables(): every table whose whole span lies in the gap [floor, ceiling)
  // between the neighbouring VMAs is freed, at every level (mm/memory.c, Hugh Dickins).
  floor_ceiling,
  // 2.4 - 2.6.11 free_pgtables() in mm/mmap.c: only PTE pages under PGD entries whose
  // whole span lies in the gap are freed; upper levels are freed at exit only.
  pgd_gap,
};

// Which address the kernel picks for an mmap without a fixed address.
enum class mmap_layout : uint8_t {
  topdown,  // arch_get_unmapped_area_topdown (x86-64; i386 since 2.6.9)
  legacy,   // bottom-up from TASK_UNMAPPED_BASE = TASK_SIZE / 3 (i386 before 2.6.9)
};

using level_mask = uint8_t;  // bit (1 << level) set = the level is counted
constexpr level_mask mask_of(level l) { return static_cast<level_mask>(1u << static_cast<int>(l)); }

struct kernel_profile {
  std::string name;
  std::string description;
  paging_format paging;

  // x86 PTI: the PGD is an order-1 allocation (PGD_ALLOCATION_ORDER 1), 8 KiB.
  bool pti = false;
  // Levels /proc/meminfo PageTables (NR_PAGETABLE) counts: PTE always (2.5.28+), PMD since
  // 5.10, PUD since 6.7, P4D and PGD since 6.14 (only page-sized ones, not slab PGDs).
  level_mask page_tables_levels = mask_of(level::pte);
  // Levels VmPTE counts: PTE (2.6.x nr_ptes); PTE+PMD+PUD since 4.15 (pgtables_bytes).
  level_mask vmpte_levels = mask_of(level::pte);
  bool reports_vmpte = true;  // /proc/PID/status has a VmPTE line (2.6.10+)
  pgtable_free_policy pgtable_free = pgtable_free_policy::floor_ceiling;
  // CONFIG_PT_RECLAIM (6.14+, x86-64): MADV_DONTNEED frees PTE pages it empties.
  bool pt_reclaim = false;
  // fork: copy_page_range() skips VMAs for which vma_needs_copy() is false (shared, no
  // anon_vma). Before 2.6.14 fork copied every VMA's page tables.
  bool fork_skips_shared = true;
  // do_fault_around() (3.15+): read faults on file/shmem VMAs map up to this many bytes of
  // already-cached pages around the fault. 0 = no fault-around.
  bytes fault_around_bytes = 0;
  mmap_layout layout = mmap_layout::topdown;
  // Where vmlab's top-down allocator starts (see docs/decisions.md: the workload window is
  // placed where the live engine's C runtime has no mappings).
  vaddr mmap_base = 0;
  bytes default_memory = 0;  // machine memory when the scenario gives none

  [[nodiscard]] bool counts_in_page_tables(level l) const { return page_tables_levels & mask_of(l); }
  [[nodiscard]] bool counts_in_vmpte(level l) const { return vmpte_levels & mask_of(l); }
  // Bytes of the top-level table as allocated (32 B PAE, 8 KiB PTI, else one table).
  [[nodiscard]] bytes pgd_bytes() const;
};

// The preset profile called `name`, or invalid_argument listing the known ones.
result<kernel_profile> find_profile(const std::string& name);
std::vector<std::string> profile_names();

// Applies one scenario override ("pti" = "false", "paging" = "i386-pae", ...). Keys:
// paging, pti, pt_reclaim, fault_around_bytes, fork_skips_shared, page_tables_levels,
// vmpte_levels, pgtable_free, mmap_layout. Errors name the key.
status apply_override(kernel_profile& p, const std::string& key, const std::string& value);

}  // namespace vmlab
