// RunResult: what one run of a workload produced, whichever engine ran it.
//
// Why one type: every report (meminfo table, JSON, validate) reads this and nothing else,
// so a figure the live engine measures and one the sim engine computes are the same field
// and can be put side by side. Figures are in the units the kernel reports: bytes for
// VmPTE/PageTables (the kernel prints kB), pages for RSS and page-table pages.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "vmlab/units.h"

namespace vmlab {

// Page-table levels, top to bottom, with the kernel's names.
enum class level : uint8_t { pgd = 0, p4d, pud, pmd, pte };
inline constexpr int kLevels = 5;
const char* level_name(level l);

// Page-table pages per level (a PAE 32-byte PGD counts as one table here; bytes are
// reported separately).
using level_counts = std::array<uint64_t, kLevels>;

// One process's figures at one moment.
struct proc_sample {
  uint32_t pid = 0;
  bytes vmpte = 0;           // /proc/PID/status VmPTE, in bytes
  bytes vmpte_workload = 0;  // the share of VmPTE the workload caused (live: minus baseline)
  uint64_t rss_anon = 0;     // pages (RssAnon)
  uint64_t rss_file = 0;     // pages (RssFile)
  uint64_t rss_shmem = 0;    // pages (RssShmem)
  uint64_t min_flt = 0;      // minor faults taken while running workload ops
};

// The system at one moment (a `phase` op, or the end of the run).
struct sample {
  std::string name;          // phase name, or "end"
  uint64_t op_index = 0;     // ops applied before this sample
  bytes page_tables = 0;     // /proc/meminfo PageTables (what the profile counts), bytes
  bytes page_tables_workload = 0;  // growth caused by the workload (live: baseline removed)
  level_counts pt_pages{};   // page-table pages per level (sim exact; live: not observable)
  bool pt_pages_known = false;
  uint64_t nr_procs = 0;
  std::vector<proc_sample> procs;  // live processes, by pid
};

// The maxima the seeds quote.
struct peaks {
  bytes page_tables = 0;
  bytes page_tables_workload = 0;
  level_counts pt_pages{};
  bytes vmpte_max_proc = 0;  // the largest VmPTE any single process reached
};

// An op the kernel refused or that killed a process, reported as the kernel would.
struct op_failure {
  uint64_t op_index = 0;
  std::string op_text;   // the op, in trace syntax
  std::string error;     // e.g. "ENOMEM: out of memory (page-table page, zone Normal)"
};

struct run_result {
  static constexpr int kSchemaVersion = 1;
  std::string engine;    // "sim" or "live"
  std::string scenario;  // source path or built-in name
  std::string profile;   // kernel profile name
  uint64_t ops_applied = 0;
  uint64_t faults = 0;         // all page faults taken (minor; no I/O is modelled here)
  uint64_t cow_faults = 0;     // write faults that broke COW (sim only)
  std::vector<sample> samples;  // in op order; the last one is "end"
  peaks peak;
  std::vector<op_failure> failures;
  std::vector<std::string> notes;  // what the engine could not isolate or chose to simplify
  double wall_seconds = 0;     // timings: excluded from determinism checks
  double cpu_seconds = 0;
};

}  // namespace vmlab
