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
  bytes hugetlb = 0;         // HugetlbPages: hugetlb pages this process faulted in (live: minus baseline)
};

// One /proc/slabinfo row (the columns every slabinfo version has).
struct slab_row {
  std::string name;
  uint64_t active_objs = 0;
  uint64_t num_objs = 0;
  uint32_t objsize = 0;
  uint32_t objperslab = 0;
  uint32_t pagesperslab = 0;
  uint64_t active_slabs = 0;
  uint64_t num_slabs = 0;
  uint32_t limit = 0, batchcount = 0, sharedfactor = 0;  // SLAB tunables (0 on SLUB)
};

// The /proc/meminfo lines of the profile's kernel that vmlab models, in bytes except
// reverse_maps (a count, as 2.5 printed it). has_* says whether that kernel prints the
// line at all (ReverseMaps: 2.5.30-2.5.67; Low/High: CONFIG_HIGHMEM; Mapped: 2.5.36+).
struct meminfo {
  bytes mem_total = 0;   // MemTotal: managed pages (RAM minus mem_map and the kernel image)
  bytes mem_free = 0;
  bytes low_total = 0, low_free = 0;    // ZONE_DMA + ZONE_NORMAL (i386 highmem kernels)
  bytes high_total = 0, high_free = 0;  // ZONE_HIGHMEM
  bytes page_tables = 0;  // PageTables (the levels the profile counts)
  bytes mapped = 0;       // Mapped: pages mapped by at least one PTE (the profile's rule)
  // Cached: the page cache of files and shm (NR_FILE_PAGES; hugetlb pages are not in it);
  // Dirty (NR_FILE_DIRTY) and Writeback (NR_WRITEBACK). Peaks: their maxima.
  bytes cached = 0, dirty = 0, writeback = 0;
  bytes slab = 0;         // Slab: pages held by every simulated slab cache
  uint64_t reverse_maps = 0;  // ReverseMaps: pte -> page mappings (includes PageDirect)
  bytes mem_map = 0;      // struct page array reserved at boot (not a meminfo line)
  // Huge pages: AnonHugePages, ShmemHugePages, ShmemPmdMapped (bytes); the default
  // hstate's HugePages_Total/Free/Rsvd/Surp (counts) and Hugepagesize; Hugetlb: every
  // hstate's pool, in bytes.
  bytes anon_huge = 0, shmem_huge = 0, shmem_pmd_mapped = 0;
  uint64_t hugepages_total = 0, hugepages_free = 0, hugepages_rsvd = 0, hugepages_surp = 0;
  bytes hugepagesize = 0;
  bytes hugetlb = 0;
  bool has_highmem = false;
  bool has_reverse_maps = false;
  bool has_mapped = false;
  bool has_hugetlb = false;      // HugePages_* and Hugepagesize
  bool has_hugetlb_total = false;  // Hugetlb (4.16+)
  bool has_thp = false;          // AnonHugePages (2.6.38+)
  bool has_shmem_thp = false;    // ShmemHugePages, ShmemPmdMapped (4.8+)
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
  meminfo mi;                      // sim: exact; live: what the host's /proc/meminfo says
  bool mi_known = false;
  // Slab caches of the rmap and VMA objects. Sim: every cache the profile has, counting
  // the workload's objects only. Live: the host's rows for vm_area_struct, anon_vma,
  // anon_vma_chain and mm_struct (whole-system figures); slabs_workload holds their growth
  // since the live engine's baseline, with active_objs/num_objs as signed deltas clamped at 0.
  std::vector<slab_row> slabs;
  std::vector<slab_row> slabs_workload;
  // Live: why a system-wide figure of this sample cannot be trusted, with the evidence
  // ("" = it can). Other processes changed page tables (or slab objects) while the
  // workload's figure was being read, so the workload's share is not measurable here.
  std::string page_tables_busy;
  std::string slabs_busy;
  // The page cache of the workload's own objects, in bytes: the sim's Cached; live, the
  // pages of the objects' files in the host's page cache (cachestat), which no other
  // process's page cache can change. cached_known: the engine measured it.
  bytes cached_workload = 0;
  bool cached_known = false;
};

// The maxima the seeds quote.
struct peaks {
  bytes page_tables = 0;
  bytes page_tables_workload = 0;
  level_counts pt_pages{};
  bytes vmpte_max_proc = 0;  // the largest VmPTE any single process reached
  // Field-wise maxima of meminfo (low_free/high_free/mem_free: minima) and of each slab
  // row (by name, in the order of sample::slabs). Sim only.
  meminfo mi;
  std::vector<slab_row> slabs;
};

// The rmap work a try_to_unmap / page_referenced walk did (sim only), summed over a run.
struct rmap_work {
  uint64_t walks = 0;            // rmap walks started (one per page)
  uint64_t chain_entries = 0;    // pte_chain slots scanned (2.5 pte_chain)
  uint64_t chain_objects = 0;    // pte_chain objects visited
  uint64_t vmas_visited = 0;     // VMAs visited through i_mmap / anon_vma / AVCs
  uint64_t pt_walks = 0;         // page-table walks (page_vma_mapped_walk / ptep_to_mm+find_vma)
  uint64_t ptes_scanned = 0;     // PTEs examined by a page-table scan (2.4 swap_out)
  uint64_t unmapped = 0;         // PTEs cleared
  rmap_work& operator+=(const rmap_work& o) {
    walks += o.walks;
    chain_entries += o.chain_entries;
    chain_objects += o.chain_objects;
    vmas_visited += o.vmas_visited;
    pt_walks += o.pt_walks;
    ptes_scanned += o.ptes_scanned;
    unmapped += o.unmapped;
    return *this;
  }
  bool operator==(const rmap_work&) const = default;
};

// Page reclaim (sim; src/model/vmscan.h), as /proc/vmstat counts it: pages scanned on the
// LRU (pgscan), evicted (pgsteal), given a second chance because they were referenced
// (pgrotated), kept because an mlocked VMA or a shared page table maps them, PTEs cleared
// to evict mapped pages, dirty pages written by reclaim (pageout), and the rmap work of
// finding the PTEs (page_referenced and try_to_unmap walks; 2.4: swap_out's scan).
struct reclaim_stats {
  uint64_t scanned = 0, reclaimed = 0, rotated = 0, kept = 0, unmapped = 0, written = 0;
  uint64_t swap_out_calls = 0;  // 2.4: swap_out() passes
  rmap_work work;
};

// An op the kernel refused or that killed a process, reported as the kernel would.
// What the host did with an op the live engine's run ended at (the sim leaves it empty).
enum class host_answer : uint8_t {
  none,          // a sim run
  refused,       // the host refused it (whether or not the model had predicted so)
  not_asked,     // the model refused it first; the host was not asked (an op it cannot undo)
  carried_out,   // the model refused it, yet the host carried it out
};
const char* host_answer_name(host_answer a);  // "", "refused", "not asked", "carried out"

struct op_failure {
  uint64_t op_index = 0;
  std::string op_text;   // the op, in trace syntax
  std::string error;     // e.g. "ENOMEM: out of memory (page-table page, zone Normal)"
  host_answer host = host_answer::none;
};

// A remark an engine attaches to a result, as data: how a figure was measured, what the
// engine could not isolate or chose to simplify, what it saw of the host. `id` is stable
// (tests and tools match on it); `text` is one line; `detail` is the long form
// (--verbose). A finding is something that happened in this run (the host was busy, a
// figure was clamped); the other notes describe the method and are the same every run.
struct note {
  std::string id;
  std::string text;
  std::string detail;
  bool finding = false;
  bool operator==(const note&) const = default;
};

// Appends n unless a note with the same id is already there.
inline void add_note(std::vector<note>& notes, note n) {
  for (const note& x : notes)
    if (x.id == n.id) return;
  notes.push_back(std::move(n));
}

struct run_result {
  // 2: notes are objects {id, text, detail, finding}; live samples may carry
  // page_tables_busy / slabs_busy.
  static constexpr int kSchemaVersion = 2;
  std::string engine;    // "sim" or "live"
  std::string scenario;  // source path or built-in name
  std::string profile;   // kernel profile name
  // The kernel's base page, in which the per-process Rss* figures and slab pages count
  // (sim: the profile's paging format, 64 KiB on ppc64-hash-64k; live: the host's 4 KiB).
  bytes page_size = 4096;
  uint64_t ops_applied = 0;
  uint64_t faults = 0;         // all page faults taken (minor; no I/O is modelled here)
  // The page cache's work (sim): pages written back by fsync/msync, pages read ahead.
  uint64_t pages_written = 0, readahead_pages = 0;
  // The op stream has read, readv or write ops: validate compares faults and the pages
  // each process maps from files and shm, which such ops move.
  bool file_io = false;
  uint64_t cow_faults = 0;     // write faults that broke COW (sim only)
  // Shared page tables (sim, on a profile that shares them: PTSHARE or mshare): pages a
  // process took from a partner or a region, references dropped by unsharing, and the
  // flush_tlb_all() calls those cost (pmd_clear_flush in pt_unshare_range).
  bool shares_page_tables = false;
  uint64_t pt_attaches = 0, pt_unshares = 0, tlb_flush_all = 0;
  reclaim_stats reclaim;  // sim: page reclaim over the run (all zero when none ran)
  std::vector<sample> samples;  // in op order; the last one is "end"
  peaks peak;
  std::vector<op_failure> failures;
  std::vector<note> notes;  // what the engine could not isolate or chose to simplify
  // /proc/slabinfo format of the profile's kernel: "2.0" (2.6.0-2.6.9) or "2.1" (2.6.10+);
  // "1.1" for 2.5 (printed with the 2.0 columns; see docs/decisions.md).
  std::string slabinfo_version;
  std::string rmap;  // the profile's rmap scheme name (sim), or "" (live)
  // Whether the kernel's /proc/PID/status has a VmPTE line (2.6.10+). Before that the
  // per-process figures are the model's per-mm page-table bytes, which no tool printed.
  bool vmpte_line = true;
  // The processes have a process image (text, libraries, heap, stack: a group's `image`),
  // so VmPTE is the whole process's; else it is the workload's mappings' only.
  bool process_image = false;
  double wall_seconds = 0;     // timings: excluded from determinism checks
  double cpu_seconds = 0;
};

}  // namespace vmlab
