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
      // Seed 003's machine (Linux 2.4.1, January 2001), taken as a Pentium III at 800 MHz
      // with PC133 SDRAM (the common desktop of the time; the seed names neither).
      {"copy", "piii-800", 2.0 * 1e3 / 1066.0, "byte",
       "bound from the memory bus: PC133 SDRAM moves at most 133 MHz x 8 bytes = 1066 MB/s (Intel PC SDRAM "
       "specification), and a memcpy reads and writes every byte: 1.876 ns per byte copied; a lower bound (caches "
       "and the CPU's own limits only add)"},
      {"file_fault", "piii-800", 296.0 * 2596.0 / 800.0, "fault",
       "estimate: the host's file_fault (296 ns, vmlab_io_cost) x its clock over the Pentium III's (2596 MHz, "
       "/proc/cpuinfo of this host, / 800 MHz); ignores the host's higher instructions per clock (the 2001 cost is "
       "higher) and its 16-PTE fault-around (lower)"},
      {"readahead_page", "piii-800", 55.0 * 2596.0 / 800.0, "page",
       "estimate: the host's readahead_page (55 ns, vmlab_io_cost) x 2596 / 800 MHz, as file_fault; per page "
       "submitted for reading or writing (allocation, page-cache insertion, buffer head and request set-up)"},
  };
  return table;
}

const cpu_cost* find_cpu_cost(const std::string& op, const std::string& machine) {
  for (const auto& c : cpu_costs())
    if (c.op == op && c.machine == machine) return &c;
  return nullptr;
}

}  // namespace vmlab::block
