// Micro-benchmarks of the model on one core: page faults, range touches, fork and exit.
//
// Each benchmark builds its kernels outside the measured region and times only the op
// under test with manual timing (UseManualTime + SetIterationTime), which is far cheaper
// than PauseTiming/ResumeTiming around every setup. items_per_second is faults/s for the
// fault benchmarks and PTEs populated per second for the range touches.
//
// Targets (BENCHMARKS.md): >= 20 M faults/s; >= 1 G PTEs/s for a 1 GiB touch.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "vmlab/op_builder.h"
#include "vmlab/sim_kernel.h"

namespace vmlab {
namespace {

using clk = std::chrono::steady_clock;

std::unique_ptr<sim_kernel> make_kernel(std::vector<std::pair<std::string, std::string>> ov = {},
                                        std::vector<object_decl> objs = {}) {
  machine_decl m;
  m.profile = "linux-6.18";
  m.overrides = std::move(ov);
  m.memory = 64 * GiB;
  auto r = sim_kernel::create(m, objs);
  if (!r.ok()) std::abort();
  return std::move(r.value());
}

void check(const status& s) {
  if (!s.ok()) std::abort();
}

double seconds_since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

// Distinct pages of a `span`-page mapping in random order (a fixed seed).
std::vector<uint64_t> random_pages(uint64_t n, uint64_t span) {
  std::vector<uint64_t> all(span);
  for (uint64_t i = 0; i < span; ++i) all[i] = i;
  std::mt19937_64 rng(42);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(n);
  return all;
}

constexpr bytes kFaultMap = 1 * GiB;
constexpr uint64_t kFaultPages = 1 << 16;  // faults per iteration

// A kernel with process 1 and mapping 0 (1 GiB); shm maps an object, `cached` pre-reads
// it all in process 2 so that process 1's faults find the page cache populated.
std::unique_ptr<sim_kernel> fault_setup(bool shm, bool cached) {
  std::vector<object_decl> objs;
  if (shm) objs.push_back({"seg", object_kind::shm, kFaultMap});
  auto k = make_kernel({}, objs);
  check(k->spawn(1));
  if (!k->mmap(ops::mmap_object(1, 0, shm ? 0 : -1, kFaultMap).shared(shm).align(1 * GiB)).ok()) std::abort();
  if (cached) {
    check(k->spawn(2));
    if (!k->mmap(ops::mmap_object(2, 0, 0, kFaultMap).shared().align(1 * GiB)).ok()) std::abort();
    check(k->touch(2, 0, 0, kFaultMap, 4096, false));
  }
  return k;
}

// Single-page faults, one touch_pages call per fault (the sim engine's random-access path).
void BM_Fault_OnePagePerCall(benchmark::State& state, bool shm, bool write, bool cached) {
  const std::vector<uint64_t> pages = random_pages(kFaultPages, kFaultMap / 4096);
  uint64_t faults = 0;
  for (auto _ : state) {
    auto k = fault_setup(shm, cached);
    const uint64_t f0 = k->faults();
    std::vector<uint64_t> one(1);
    const auto t0 = clk::now();
    for (uint64_t pg : pages) {
      one[0] = pg;
      check(k->touch_pages(1, 0, one, write));
    }
    state.SetIterationTime(seconds_since(t0));
    faults += k->faults() - f0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(faults));
  state.counters["faults_per_iter"] = static_cast<double>(faults) / static_cast<double>(state.iterations());
}

// Many random single pages in one touch_pages call.
void BM_Fault_RandomPagesOneCall(benchmark::State& state, bool shm, bool write, bool cached) {
  const std::vector<uint64_t> pages = random_pages(kFaultPages, kFaultMap / 4096);
  uint64_t faults = 0;
  for (auto _ : state) {
    auto k = fault_setup(shm, cached);
    const uint64_t f0 = k->faults();
    const auto t0 = clk::now();
    check(k->touch_pages(1, 0, pages, write));
    state.SetIterationTime(seconds_since(t0));
    faults += k->faults() - f0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(faults));
  state.counters["faults_per_iter"] = static_cast<double>(faults) / static_cast<double>(state.iterations());
}

// A random 1% of a 32 GiB shm segment that another process has read in full, read in one
// touch_pages call (the sim engine's batch): the 1,500 x 300 GiB SGA case at one client's
// scale. Faulted table by table (the default where faults commute) or in the given order.
void BM_Fault_SparseRandomRead(benchmark::State& state, bool table_order) {
  constexpr bytes kSeg = 32 * GiB;
  const uint64_t span = kSeg / 4096;
  std::vector<uint64_t> pages;
  std::vector<bool> seen(span);
  std::mt19937_64 rng(42);
  while (pages.size() < span / 100) {
    const uint64_t p = rng() % span;
    if (!seen[p]) {
      seen[p] = true;
      pages.push_back(p);
    }
  }
  uint64_t faults = 0;
  for (auto _ : state) {
    auto k = make_kernel({}, {{"seg", object_kind::shm, kSeg}});
    for (uint32_t pid : {1u, 2u}) {
      check(k->spawn(pid));
      if (!k->mmap(ops::mmap_object(pid, 0, 0, kSeg).shared().align(1 * GiB)).ok()) std::abort();
    }
    check(k->touch(2, 0, 0, kSeg, 4096, false));
    k->set_touch_in_table_order(table_order);
    const uint64_t f0 = k->faults();
    const auto t0 = clk::now();
    check(k->touch_pages(1, 0, pages, false));
    state.SetIterationTime(seconds_since(t0));
    faults += k->faults() - f0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(faults));
  state.counters["faults_per_iter"] = static_cast<double>(faults) / static_cast<double>(state.iterations());
}

BENCHMARK_CAPTURE(BM_Fault_SparseRandomRead, table_order, true)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Fault_SparseRandomRead, given_order, false)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Fault_OnePagePerCall, anon_write, false, true, false)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Fault_OnePagePerCall, shm_read_cold, true, false, false)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Fault_OnePagePerCall, shm_read_cached, true, false, true)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Fault_RandomPagesOneCall, anon_write, false, true, false)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Fault_RandomPagesOneCall, shm_read_cold, true, false, false)->UseManualTime()->Unit(benchmark::kMillisecond);

// Range touch of a 1 GiB mapping; items = PTEs populated (pages / stride pages).
void BM_Touch1GiB(benchmark::State& state, bool shm, bool write, bool cached, bytes stride) {
  uint64_t ptes = 0;
  for (auto _ : state) {
    auto k = fault_setup(shm, cached);
    const auto t0 = clk::now();
    check(k->touch(1, 0, 0, kFaultMap, stride, write));
    state.SetIterationTime(seconds_since(t0));
    ptes += kFaultMap / stride;
  }
  state.SetItemsProcessed(static_cast<int64_t>(ptes));
}

BENCHMARK_CAPTURE(BM_Touch1GiB, anon_write, false, true, false, bytes{4096})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Touch1GiB, anon_read_zero_page, false, false, false, bytes{4096})->UseManualTime()->Unit(benchmark::kMillisecond);
// The resident cases install uniform nodes (about a microsecond) after a setup of ~0.2 ms
// that reads 1 GiB into the page cache: Google Benchmark's 0.5 s of manual time would take
// half a million setups, so their iterations are fixed.
BENCHMARK_CAPTURE(BM_Touch1GiB, shm_read_resident, true, false, true, bytes{4096})->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(2000);
BENCHMARK_CAPTURE(BM_Touch1GiB, shm_read_cold, true, false, false, bytes{4096})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Touch1GiB, shm_write_resident, true, true, true, bytes{4096})->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(2000);
BENCHMARK_CAPTURE(BM_Touch1GiB, anon_write_stride_64k, false, true, false, bytes{64 * KiB})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Touch1GiB, anon_write_stride_2m, false, true, false, bytes{2 * MiB})->UseManualTime()->Unit(benchmark::kMillisecond);

// Fork and exit of a process with 1 GiB of shm (all mapped) and 256 MiB of anon written.
std::unique_ptr<sim_kernel> fork_setup(bool copy_all) {
  std::vector<std::pair<std::string, std::string>> ov;
  if (copy_all) ov.push_back({"fork_skips_shared", "false"});
  auto k = make_kernel(ov, {{"seg", object_kind::shm, 1 * GiB}});
  check(k->spawn(1));
  if (!k->mmap(ops::mmap_object(1, 0, 0, 1 * GiB).shared().align(1 * GiB)).ok()) std::abort();
  if (!k->mmap(ops::mmap_anon(1, 1, 256 * MiB).align(1 * GiB)).ok()) std::abort();
  check(k->touch(1, 0, 0, 1 * GiB, 4096, false));
  check(k->touch(1, 1, 0, 256 * MiB, 4096, true));
  return k;
}

constexpr uint32_t kForksPerIter = 16;

void BM_Fork(benchmark::State& state, bool copy_all) {
  auto k = fork_setup(copy_all);
  uint32_t next = 2;
  for (auto _ : state) {
    double t = 0;
    for (uint32_t i = 0; i < kForksPerIter; ++i) {
      const uint32_t child = next++;
      const auto t0 = clk::now();
      check(k->fork(1, child));
      t += seconds_since(t0);
      check(k->exit(child));  // not timed
    }
    state.SetIterationTime(t / kForksPerIter);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_Exit(benchmark::State& state, bool copy_all) {
  auto k = fork_setup(copy_all);
  uint32_t next = 2;
  for (auto _ : state) {
    double t = 0;
    for (uint32_t i = 0; i < kForksPerIter; ++i) {
      const uint32_t child = next++;
      check(k->fork(1, child));  // not timed
      // The child maps the shm (refilled by faults, as after exec-less fork in a DB).
      check(k->touch(child, 0, 0, 1 * GiB, 4096, false));
      const auto t0 = clk::now();
      check(k->exit(child));
      t += seconds_since(t0);
    }
    state.SetIterationTime(t / kForksPerIter);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

BENCHMARK_CAPTURE(BM_Fork, skip_shared, false)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Fork, copy_all, true)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Exit, child_1g_shm_256m_anon, false)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace vmlab
