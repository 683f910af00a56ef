// `vmlab inspect`: where the page tables of processes running on this host go.
//
// What the kernel tells: /proc/PID/status has one figure, VmPTE (mm_pgtables_bytes(): the
// PTE, PMD and PUD pages the mm allocated, since 4.15), and /proc/meminfo's PageTables sums
// every table page of the machine. Nothing says which mapping made them. vmlab works it out
// from what each mapping has mapped: /proc/PID/smaps gives the VMAs (and a hugetlb VMA's
// page size), and the PAGEMAP_SCAN ioctl on /proc/PID/pagemap (6.7+; fs/proc/task_mmu.c)
// gives the ranges whose entries are present or swapped, and which of them are huge
// (PMD- or PUD-mapped). A table exists where an entry below it does, so:
//   * a PTE table for every PMD span (2 MiB on x86-64) with a present or swapped 4 KiB
//     entry, and for every anonymous THP (do_huge_pmd_anonymous_page() deposits one,
//     counted in nr_ptes; file and shmem THPs deposit none on x86-64);
//   * a PMD table for every PUD span (1 GiB) with a PTE table or a PMD leaf (a THP, a
//     2 MiB hugetlb page);
//   * a PUD table for every P4D/PGD span (512 GiB) with a PMD table or a 1 GiB leaf.
// Each table's bytes are shared equally between the VMAs whose entries need it, so the
// per-VMA figures sum to the process's total; what VmPTE holds beyond that total (tables
// emptied by MADV_DONTNEED or by reclaim of file pages, which stay until munmap) is the
// residual, shown and not hidden.
//
// A hugetlb PMD table covering a whole 1 GiB window of a shared hugetlb mapping is
// shareable (huge_pmd_share(), mm/hugetlb.c): every sharer counts it in its own VmPTE
// (mm_inc_nr_pmds) but PageTables counts the page once. Such tables are marked, and the
// reconciliation with PageTables counts them once per (file, offset).
//
// Kernels before 6.7 have no PAGEMAP_SCAN: the pagemap file is read entry by entry instead
// (bits 63 present and 62 swapped); THPs are then not told from 4 KiB pages, a limitation
// the result states.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/live/procfs.h"
#include "model/arch.h"
#include "model/profile.h"
#include "vmlab/status.h"
#include "vmlab/units.h"

namespace vmlab::live {

// One line of /proc/PID/smaps with the fields inspect uses.
struct vma_info {
  vaddr start = 0, end = 0;
  std::string perms;          // "rw-s"
  bytes offset = 0;           // file offset of `start`
  uint32_t dev_major = 0, dev_minor = 0;
  uint64_t inode = 0;
  std::string path;           // "" for anonymous memory; "[heap]", "/SYSV00000000 (deleted)", ...
  bytes kernel_page_size = 0; // KernelPageSize: a hugetlb VMA's huge page size
  bytes rss = 0, pss = 0;
  [[nodiscard]] bool shared() const { return perms.size() > 3 && perms[3] == 's'; }
  [[nodiscard]] bool anonymous() const { return inode == 0; }  // private or shared anonymous memory
  [[nodiscard]] bool hugetlb(bytes base_page) const { return kernel_page_size > base_page; }
};

// Parses a /proc/PID/smaps text; io_error naming the line of anything malformed.
result<std::vector<vma_info>> parse_smaps(std::string_view text);

// A range of pages whose entries share categories (a PAGEMAP_SCAN page_region).
struct page_run {
  vaddr start = 0, end = 0;
  bool huge = false;    // PMD- or PUD-mapped (a THP or a hugetlb page)
  bool file = false;    // not anonymous (file or shmem)
};

// Where the present/swapped runs of a process come from (the seam tests fake).
class pagemap_source {
 public:
  virtual ~pagemap_source() = default;
  // The runs with a present or swapped entry in [start, end), in address order. `exact_huge`
  // is cleared when the source cannot tell huge entries (the pre-6.7 fallback).
  virtual result<std::vector<page_run>> scan(int pid, vaddr start, vaddr end, bool& exact_huge) = 0;
};

// PAGEMAP_SCAN on /proc/PID/pagemap, or the pagemap file where the ioctl is missing.
class host_pagemap_source final : public pagemap_source {
 public:
  result<std::vector<page_run>> scan(int pid, vaddr start, vaddr end, bool& exact_huge) override;
};

// The page-table pages one VMA needs, as its share of each table (a table needed by k VMAs
// counts 1/k to each). Levels as in run_result.h.
struct vma_tables {
  vma_info vma;
  uint64_t present_pages = 0;  // base pages under present or swapped entries (huge ones included)
  uint64_t huge_entries = 0;   // PMD or PUD leaves
  std::array<double, kLevels> tables{};  // table pages attributed, per level
  double table_bytes = 0;      // the same in bytes, levels VmPTE counts
  // PUD-aligned windows whose hugetlb PMD table huge_pmd_share() can share with other mms.
  std::vector<vaddr> shared_pmd_windows;
  std::vector<page_run> runs;  // its present runs (for the what-if scenario)
};

// What of a process is its image (workload/image.h), resident bytes: the executable's
// read-only mappings (text) and writable ones with the anonymous bss after them (data),
// [heap], shared libraries' mappings (*.so*), [stack]. The executable is the file mapped
// lowest (where PIE and non-PIE executables are). For `image = { ... }` in a scenario.
struct image_resident {
  bytes text = 0, data = 0, heap = 0, libraries = 0, stack = 0;
};

struct process_inspection {
  int pid = 0;
  std::string comm;
  proc_status status;          // VmPTE, VmRSS, Rss*
  bytes pss = 0;               // Pss (the sum of smaps' Pss lines)
  std::vector<vma_tables> vmas;
  std::array<uint64_t, kLevels> tables{};  // table pages the process needs, per level (counted once)
  bytes attributed = 0;        // what the VMAs account for, levels VmPTE counts
  int64_t residual = 0;        // VmPTE - attributed
  bytes shared_pmd_bytes = 0;  // of `attributed`, hugetlb PMD tables that can be shared
  image_resident image;
};

// A segment several processes map: the same file, SysV segment or memfd (device, inode).
struct shared_segment {
  uint32_t dev_major = 0, dev_minor = 0;
  uint64_t inode = 0;
  std::string path;
  bytes size = 0;              // the largest extent mapped (offset + length)
  std::vector<int> pids;
  double table_bytes = 0;      // page tables attributed to its VMAs, all processes
  uint64_t present_pages = 0;  // summed over the processes' mappings
};

struct unreadable {
  int pid = 0;
  std::string reason;
};

struct inspection {
  std::string paging;                 // the paging format the attribution used
  bytes page_size = 0;                // its base page
  level_mask vmpte_levels = 0;        // levels VmPTE counts on this kernel
  bool exact_huge = true;             // PAGEMAP_SCAN told huge entries apart
  std::vector<process_inspection> processes;
  std::vector<shared_segment> segments;  // mapped by two or more processes, largest first
  std::vector<unreadable> skipped;
  meminfo mem;                        // PageTables now
  // The host's THP policies ("madvise", "never"; empty when the kernel has none): what a
  // scenario reproducing these processes must run under.
  std::string thp_enabled, shmem_enabled;
  bytes pgd_bytes = 0;                // one process's top-level table
  bool all = false;                   // every process of the host was asked for
  // Reconciliation with PageTables: the inspected processes' tables counted once (shared
  // hugetlb PMD tables once, each PGD added), and what PageTables holds besides.
  bytes processes_page_tables = 0;
  int64_t page_tables_residual = 0;
};

struct inspect_options {
  std::vector<int> pids;
  bool all = false;                   // every process with an mm
  std::string cgroup;                 // cgroup v2 path (absolute or under /sys/fs/cgroup)
  bool keep_runs = false;             // keep each VMA's present runs (the scenario writer needs them)
};

// Reads the processes `o` names and attributes their page tables. The paging format and
// the levels VmPTE counts come from `host` (the host kernel's profile). invalid_argument
// for a PID that does not exist when named explicitly or a cgroup that cannot be read;
// processes that vanish or cannot be read under --all/--cgroup are listed in `skipped`.
result<inspection> inspect(const inspect_options& o, const vmlab::kernel_profile& host, proc_source& src,
                           pagemap_source& pm);

// The attribution alone, for tests: `vmas` with their runs filled, on format `f`.
void attribute_tables(const paging_format& f, level_mask vmpte_levels, process_inspection& p);

}  // namespace vmlab::live
