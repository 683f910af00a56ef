// Huge pages at database scale (issue 7): 1,000 processes attach one 256 GiB hugetlb
// segment of 2 MiB pages, each at a 1 GiB boundary, and read all of it, after the first
// has written it; on linux-6.18 with PMD sharing (the default) and without. And a 1 GiB
// anonymous THP write, with and without MADV_HUGEPAGE's effect (enabled=always/never).
//
// The measured region is the whole workload (spawns, mmaps with their reservations,
// faults, attaches): what `vmlab run` spends in the model. Each iteration asserts the
// figures worked out below, so a benchmark that got faster by doing less fails.
//
// Target (BENCHMARKS.md): the 1,000 x 256 GiB attach with PMD sharing in under 1 s.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "vmlab/op_builder.h"
#include "vmlab/sim_kernel.h"

namespace vmlab {
namespace {

using clk = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "huge_bench: %s\n", what.c_str());
  std::abort();
}

void must(const status& s, const char* what) {
  if (!s.ok()) die(std::string(what) + ": " + s.to_string());
}

void BM_HugetlbAttach(benchmark::State& state, bool pmd_share) {
  const uint32_t procs = static_cast<uint32_t>(state.range(0));
  constexpr bytes kSegment = 256 * GiB, kPage = 2 * MiB;
  constexpr uint64_t kPages = kSegment / kPage;
  for (auto _ : state) {
    machine_decl m;
    m.profile = "linux-6.18";
    m.memory = 320 * GiB;
    m.hugepages = {{kPage, kPages}};
    if (!pmd_share) m.overrides = {{"hugetlb_pmd_share", "false"}};
    auto r = sim_kernel::create(m, {{"sga", object_kind::hugetlb, kSegment, kPage}});
    if (!r.ok()) die(r.error().to_string());
    sim_kernel& k = *r.value();
    const auto t0 = clk::now();
    for (uint32_t pid = 1; pid <= procs; ++pid) {
      must(k.spawn(pid), "spawn");
      if (auto a = k.mmap(ops::mmap_object(pid, 0, 0, kSegment).shared().align(GiB)); !a.ok()) die(a.error().to_string());
      must(apply_op(k, ops::touch(pid, 0, 0, kSegment).write(pid == 1)), "touch");
    }
    state.SetIterationTime(std::chrono::duration<double>(clk::now() - t0).count());
    // Worked out: every process has a PUD page (one per 512 GiB); the 256 PMD tables
    // (one per GiB) exist once with sharing, once per process without. The first process
    // faults 131,072 pages; with sharing each other attaches with one fault per table.
    const sample s = k.snapshot("end");
    const uint64_t pmd = pmd_share ? kSegment / GiB : uint64_t{procs} * (kSegment / GiB);
    const uint64_t faults = pmd_share ? kPages + uint64_t{procs - 1} * (kSegment / GiB) : uint64_t{procs} * kPages;
    if (s.pt_pages[3] != pmd || s.pt_pages[2] != procs || s.pt_pages[4] != 0 || k.faults() != faults)
      die("figures differ: pmd " + std::to_string(s.pt_pages[3]) + " (expected " + std::to_string(pmd) + "), faults " +
          std::to_string(k.faults()) + " (expected " + std::to_string(faults) + ")");
    state.counters["page_tables_MiB"] = double(s.page_tables) / double(MiB);
    state.counters["faults"] = double(k.faults());
  }
}
BENCHMARK_CAPTURE(BM_HugetlbAttach, pmd_share, true)->Arg(1000)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_HugetlbAttach, no_share, false)->Arg(1000)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_ThpWrite1GiB(benchmark::State& state, const char* enabled) {
  constexpr bytes kLen = 1 * GiB;
  for (auto _ : state) {
    machine_decl m;
    m.profile = "linux-6.18";
    m.memory = 8 * GiB;
    m.overrides = {{"thp_enabled", enabled}};
    auto r = sim_kernel::create(m, {});
    if (!r.ok()) die(r.error().to_string());
    sim_kernel& k = *r.value();
    must(k.spawn(1), "spawn");
    if (auto a = k.mmap(ops::mmap_anon(1, 0, kLen).align(2 * MiB)); !a.ok()) die(a.error().to_string());
    const auto t0 = clk::now();
    must(apply_op(k, ops::touch(1, 0, 0, kLen).write()), "touch");
    state.SetIterationTime(std::chrono::duration<double>(clk::now() - t0).count());
    // always: 512 THPs, each with its deposited PTE page; never: 262,144 faults, 512 PTE pages.
    const sample s = k.snapshot("end");
    if (s.pt_pages[4] != 512) die("PTE pages " + std::to_string(s.pt_pages[4]) + ", expected 512");
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(kLen / (4 * KiB)));
}
BENCHMARK_CAPTURE(BM_ThpWrite1GiB, always, "always")->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ThpWrite1GiB, never, "never")->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace vmlab
