// What-if: the scenario that reproduces processes `vmlab inspect` saw, so that the sim can
// replay them under other kernel designs (`vmlab whatif`, `vmlab inspect --scenario`).
//
// Each process becomes a group of one; each of its mappings with something mapped becomes
// a fixed mapping at the address it has (so every table falls where the real one is), of
// the segment it maps (one [[object]] per file, SysV segment or memfd: shm, file or
// hugetlb) or anonymous; each is touched over the runs the process has present, in
// page-aligned [offset, length] ranges (a mapping with more than kMaxRanges runs is
// touched per PTE-table window instead: as many pages as were present there, from the
// window's start, which keeps every table and every page count). The kernel is the host's
// profile with the host's PTI and THP policies. What is not reproduced, and why:
//   * mappings with nothing present (they need no table);
//   * who forked whom: every process is spawned, so pages a fork shares copy-on-write are
//     each process's own in the sim (RSS and PSS differ; the page tables do not);
//   * tables emptied by MADV_DONTNEED or reclaim (inspect's residual);
//   * VMA flags: MADV_HUGEPAGE/NOHUGEPAGE advice is not in smaps' perms, so under a THP
//     design private anonymous memory gets THPs only where the enabled policy alone gives
//     them, and only the shared segments are moved to huge-page-aligned addresses (a
//     private mapping stays at its address, where the kernel would have aligned a new one).
#pragma once

#include <string>
#include <vector>

#include "engine/live/inspect.h"
#include "model/profile.h"

namespace vmlab {

inline constexpr size_t kMaxRanges = 512;

struct inspected_scenario {
  std::string toml;
  // [[object]] names of the shm and hugetlb segments two or more processes share, largest
  // first: what a design such as "hugetlb for the shared segments" changes.
  std::vector<std::string> shared_objects;
};

// How the shared segments (the shm segments two or more processes map) are placed and
// backed in the scenario written.
struct segment_backing {
  // Placed by the kernel at a multiple of `align` instead of at the address read: a
  // design whose pages need aligned mappings (a THP or hugetlb page is mapped by a PMD
  // only where the mapping covers its whole aligned span; shmem_get_unmapped_area() and
  // hugetlb_get_unmapped_area() align such mappings). 0: at the address read.
  bytes align = 0;
  // Non-zero: the segments become hugetlb objects of this page size (the pool holds them).
  bytes huge_page = 0;
};

// `host` must be the profile inspect used (its paging format). `profile_overrides` are
// written to [kernel.overrides] after the THP policies (e.g. the host's pti).
inspected_scenario inspection_scenario(const live::inspection& in, const kernel_profile& host,
                                       const std::vector<std::pair<std::string, std::string>>& profile_overrides,
                                       const segment_backing& backing = {});

}  // namespace vmlab
