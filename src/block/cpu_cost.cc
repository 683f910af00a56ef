#include "block/cpu_cost.h"

namespace vmlab::block {

const std::vector<cpu_cost>& cpu_costs() {
  // Measured 2026-12-03 on this project's host (2 vCPUs, AMD EPYC, Linux 6.18, ext4 on
  // virtio) with `build/vmlab_io_cost /var/tmp` (bench/io_cost.cc: median of 5), while two
  // other builds ran (load average 3.8): treat them as +-30%.
  static const std::vector<cpu_cost> table = {
      {"copy", "host", 0.1623, "byte",
       "vmlab_io_cost: memcpy of 64 MiB, cache-cold (5.9 GB/s); copy_to_user of a page-cache read"},
      {"anon_fault", "host", 2410, "fault",
       "vmlab_io_cost: first write to each 4 KiB page of fresh anonymous memory (zeroing included)"},
      {"file_fault", "host", 296, "fault",
       "vmlab_io_cost: read fault on a cached file page of a MAP_SHARED mapping, fault-around mapping its 64 KiB "
       "window (16 PTEs) in the same fault"},
      {"readahead_page", "host", 55, "page",
       "vmlab_io_cost: posix_fadvise(WILLNEED) of 64 MiB not in the page cache, per 4 KiB page: allocation, "
       "page-cache insertion, bio submission (the reads complete later)"},
      {"rmap_walk_pte", "host", 4 * 425.3, "pte",
       "derived: a cold walk to one PTE of another mm (try_to_unmap_one: PGD, PUD, PMD, PTE entries, 4 dependent "
       "loads) x 425.3 ns per dependent load measured by vmlab_io_cost (pointer chase over 256 MiB, TLB misses "
       "included); an upper bound, a warm walk costs a small fraction"},
  };
  return table;
}

const cpu_cost* find_cpu_cost(const std::string& op, const std::string& machine) {
  for (const auto& c : cpu_costs())
    if (c.op == op && c.machine == machine) return &c;
  return nullptr;
}

}  // namespace vmlab::block
