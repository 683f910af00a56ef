// The two engines. Both take an op stream and return a RunResult; reports never know
// which engine produced what they print.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "vmlab/op.h"
#include "vmlab/run_result.h"
#include "vmlab/status.h"

namespace vmlab {

class sim_kernel;

// Applies one op to a simulated kernel (the sim engine's step; the live engine's shadow
// uses it too, so both engines resolve every op identically).
status apply_op(sim_kernel& k, const op& o);
// A uniform or zipf touch op, applied a batch at a time; `between` (when set) is called
// after each batch with the accesses done and their total, and a status it returns ends
// the op (the host-memory guard and progress use it). A batch of a random touch is
// faulted table by table where that changes nothing (sim_kernel::touch_pages), and the
// more of its pages share a PTE table the cheaper each fault: a range of at most
// kTouchBatchMax / 2 PTE tables takes batches of kTouchBatchMax pages (8 MiB of page
// indices), a larger one, whose pages a batch spreads thinly anyway, kTouchBatch
// (progress and the guard four times as often). On scale/sga-1500x300g-1pct (153,600
// tables, 786,432 pages a process), 2^20 against 2^18 took 3.8-4.1 s against 4.8-5.0 at
// 64 processes; 2^16 had taken 1.9x as long as 2^18 before.
inline constexpr size_t kTouchBatch = size_t{1} << 18;
inline constexpr size_t kTouchBatchMax = size_t{1} << 20;
status touch_random(sim_kernel& k, const op& o, const std::function<status(uint64_t, uint64_t)>& between);

// Where a sim run is: passed to sim_options::progress after every op and after every
// batch of a long random touch.
struct sim_progress {
  size_t ops_done = 0;   // ops applied
  size_t ops_total = 0;  // ops in the stream
  const op* current = nullptr;   // the op being applied (nullptr between ops)
  uint64_t op_done = 0, op_total = 0;  // within a random touch: accesses done / in all
  size_t host_bytes = 0;  // sim_kernel::model_host_bytes()
};

struct sim_options {
  // Run check_invariants() after every op (slow; tests and --check).
  bool check_invariants = false;
  // Stop the run (status host_memory, exit 1) once the model's host bytes
  // (sim_kernel::model_host_bytes) exceed this; 0: no limit. Checked after every op and
  // after every batch of a random touch, so one range op may overshoot it by what it adds.
  bytes max_host_memory = 0;
  // Called often (after every op): the engine has no clock or terminal of its own; the
  // caller decides what to show and how often (the CLI's progress line).
  std::function<void(const sim_progress&)> progress;
};

// Applies every op to a fresh sim_kernel. An op the simulated kernel refuses ends the run:
// the result then has completed() == false and names the op in `failures`.
result<run_result> run_sim(const op_stream& s, const sim_options& opt = {});

struct live_options {
  // Refuse a workload whose simulated peak memory exceeds this (0 = half of MemAvailable).
  bytes max_memory = 0;
  // When another live run holds the host (live/host_state.h): wait for it, or refuse.
  bool no_wait = false;
  // Where file objects are created (unnamed: O_TMPFILE). Must be on a disk filesystem for
  // file pages to be file pages (on tmpfs they are shmem).
  std::string file_dir = "/var/tmp";
  // Messages for the user while the run goes on (waiting for the lock, what a killed
  // earlier run left that this one put back); nullptr: none.
  std::function<void(const std::string&)> say;
};

// Runs the op stream as real processes on this host (see live/live_engine.h).
result<run_result> run_live(const op_stream& s, const live_options& opt = {});

// Kernel-profile overrides that make the sim describe this host as the live engine finds
// it (e.g. {"pti", "false"} on a CPU that does not need PTI). Empty off Linux.
std::vector<std::pair<std::string, std::string>> host_profile_overrides();

}  // namespace vmlab

namespace vmlab {

struct validate_case;

// Tolerances of `vmlab validate` (issue 2): per-process page-table growth within 1% or
// two pages, whichever is larger; system PageTables growth within 3%.
// Issue 3: the objects of vm_area_struct, anon_vma and anon_vma_chain at the end sample
// (the live workload's growth against the sim's active_objs) within 5%, or
// slab_slabs_per_cpu slabs of the cache per CPU, whichever is larger. Why that slack: the
// live engine flushes every CPU's slabs and sheaves before it reads slabinfo, but an
// allocation racing the flush can take a fresh cpu slab or refill a sheaf (32 objects for
// vm_area_struct), whose free objects slabinfo counts as active: up to about one slab per
// CPU in each reading. The live workload's figure (slabs_workload) is made of four
// readings: the run's baseline and sample, less the image pass's baseline and sample.
struct tolerances {
  double proc_rel = 0.01;
  bytes proc_abs = 2 * 4096;
  double system_rel = 0.03;
  bytes system_abs = 0;
  // min_flt of a run with file I/O: the faults a process takes outside the workload's
  // ops (its own stack, the C runtime) are a few at most.
  uint64_t fault_abs = 8;
  double slab_rel = 0.05;
  uint32_t slab_slabs_per_cpu = 4;
  uint32_t cpus = 0;  // CPUs of the live host; 0 = this machine's (std::thread::hardware_concurrency())
};

// Compares a sim and a live result sample by sample (they come from one op stream, so
// samples and pids correspond). A sample the live run did not reach is a failed case.
std::vector<validate_case> compare_results(const std::string& scenario, const run_result& sim, const run_result& live,
                                           const tolerances& tol = {});

}  // namespace vmlab
