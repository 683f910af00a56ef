// The rest of the host: every process that is not one of a live run's workers, and what
// it does to the system-wide figures the run measures.
//
// Why: PageTables (/proc/meminfo) and the slab caches (/proc/slabinfo) are system-wide,
// and on a real machine other processes (a compiler, a browser, a second vmlab) allocate
// and free page tables and VMAs while a live run measures. Their page tables are visible
// per process: VmPTE (/proc/PID/status) plus the PGD every mm has, which PageTables counts
// from 6.14 and VmPTE never does. So the live engine reads every other process next to
// each PageTables reading and subtracts what they changed. Their slab objects are not
// visible per process (only their VMA counts are, in /proc/PID/maps); a change there makes
// the run's slab figures "not measurable here: host busy" rather than a wrong number.
//
// What stays invisible: the kernel's own page tables (vmalloc, counted in PageTables from
// 6.16), the RCU-deferred frees of a process that just exited, and the PGD of an exited
// process whose mm someone still holds (khugepaged's scan cursor, for up to its 10 s sleep;
// a CPU's lazy-TLB reference). The reader of the figures (live_engine.cc) has those frees
// done (settle_deferred_frees) before its starting reading and before the first reading
// after a worker exits, waits for them to settle, and calls the host busy when they do not.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "engine/live/procfs.h"
#include "vmlab/units.h"

namespace vmlab::live {

struct process_figures {
  bytes vmpte = 0;
  uint64_t vmas = 0;  // only when read with VMAs
};

// Every process with an mm (a VmPTE line) but those in `exclude`, by host pid. Processes
// that exit while /proc is read are skipped: they are gone by the next reading.
struct others_snapshot {
  std::map<int, process_figures> procs;
  bool with_vmas = false;
};
result<others_snapshot> read_others(proc_source& src, const std::set<int>& exclude, bool with_vmas);

// What changed between two snapshots of the others.
struct others_change {
  int64_t page_tables = 0;  // bytes: VmPTE deltas, plus pgd_bytes for each process started (minus gone)
  int64_t vmpte = 0;        // bytes: the VmPTE part of that
  int64_t vmas = 0;         // VMAs (snapshots with VMAs)
  uint32_t started = 0, gone = 0;
  uint32_t changed = 0;     // processes in both whose VmPTE or VMAs changed
  uint32_t vmas_changed = 0;  // ... whose VMA count changed
  [[nodiscard]] bool any() const { return started || gone || changed; }
  // Whether the others may have changed the slab caches: a process started or exited, or
  // one's VMA count changed (a fault that only fills page tables allocates no slab object).
  [[nodiscard]] bool slab_activity() const { return started || gone || vmas_changed; }
  // "2 processes started, 1 exited, 3 changed: VmPTE +48 kB, VMAs +130".
  [[nodiscard]] std::string describe() const;
};
others_change compare_others(const others_snapshot& before, const others_snapshot& after, bytes pgd_bytes);

// Has the host finish what it holds of processes that already exited, so that a reading
// taken next does not count page tables the kernel is about to free:
//  * wakes khugepaged twice (a wake is lost on a khugepaged mid-pass) and waits, up to a
//    second each, for the pass to end (its voluntary context switches move; it runs at
//    nice 19, and a pass here began 12-698 ms after its wake): scan_sleep_millisecs
//    written back unchanged
//    (the store handler wakes it at once since 4.7, "mm, thp: khugepaged should scan when
//    sleep value is written"). An exited mm its scan cursor rests on keeps its PGD, in
//    PageTables, until khugepaged next runs (mm/khugepaged.c: __khugepaged_exit leaves
//    the slot being scanned to collect_mm_slot). A write by someone else between this
//    read and write would be undone: a window of microseconds, taken as acceptable;
//  * runs this thread once on every CPU it may use, so no CPU keeps an exited mm as its
//    lazy-TLB active_mm;
//  * then waits for every pending RCU callback (rcutree's do_rcu_barrier, which calls
//    rcu_barrier()): page tables freed by munmap or exit, and what khugepaged let go,
//    reach PageTables only in one, and lazy RCU (enable_rcu_lazy) may hold them for up
//    to 10 s.
// Each step needs root and is skipped where the host lacks its file. No setting changes.
// Measured on this host (6.18, Firecracker): the PGD of an exited process whose mm
// khugepaged had scanned stayed in PageTables 8 s, and left at once after this.
void settle_deferred_frees();

// Wakes khugepaged for a scan pass (scan_sleep_millisecs written back unchanged) and waits,
// up to a second, until it sleeps again between passes (its voluntary_ctxt_switches move
// and its wchan is where it waits for the next pass, not a sleep part-way through this
// one), n times. It runs at nice 19: measured here, a pass began 12-698 ms after its wake.
// Nothing when THP is off (no khugepaged thread) or the file cannot be read or written.
void khugepaged_passes(proc_source& src, int n);

// The bytes of PageTables one process's PGD accounts for on this host: 0 before 6.14
// ("Account page tables at all levels", upstream 68c601de75d8), else the PGD's size:
// 8 KiB with PTI (PGD_ALLOCATION_ORDER 1), 4 KiB without.
bytes host_pgd_page_table_bytes(proc_source& src);

}  // namespace vmlab::live
