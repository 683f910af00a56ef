// Reading input at datacenter scale (issue 11): a scenario of 200,000 objects, each mapped
// by one process (22 MB of TOML), and a trace of 1,000,000 lines (100,000 objects, then
// mmap and touch lines). Both are generated in memory and parsed as `vmlab run` would read
// them (parse_scenario / parse_trace: the TOML reader, the checks, the op stream), so the
// time is the reading alone, not the simulation. Before issue 11 every name lookup was a
// scan of the names so far: the scenario took minutes.
//
// Each iteration asserts the op count, so a reader that got faster by reading less fails.
// Target (BENCHMARKS.md): under 2 s each.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "workload/scenario.h"
#include "workload/trace.h"

namespace vmlab {
namespace {

constexpr size_t kObjects = 200000;
constexpr size_t kTraceLines = 1000000;
constexpr size_t kTraceObjects = 100000;

std::string many_objects_scenario() {
  std::string s = "name = \"bench/many-objects\"\n[machine]\nmemory = \"4TiB\"\n";
  for (size_t i = 0; i < kObjects; ++i) s += "[[object]]\nname = \"o" + std::to_string(i) + "\"\nsize = \"4KiB\"\n";
  s += "[[group]]\nname = \"g\"\n";
  for (size_t i = 0; i < kObjects; ++i)
    s += "  [[group.map]]\n  name = \"m" + std::to_string(i) + "\"\n  object = \"o" + std::to_string(i) + "\"\n  shared = true\n";
  return s;
}

// Lines: a header, the objects, one spawn, then mmap/touch pairs up to kTraceLines.
std::string million_line_trace() {
  std::string s = "# vmlab trace v1\nmachine profile=linux-6.18 memory=4398046511104 cpus=2\n";
  size_t lines = 2;
  for (size_t i = 0; i < kTraceObjects; ++i, ++lines) s += "object o" + std::to_string(i) + " shm size=4096\n";
  s += "spawn 1\n";
  ++lines;
  for (size_t i = 0; lines + 2 <= kTraceLines; ++i) {
    const std::string m = "m" + std::to_string(i);
    s += "mmap 1 " + m + " obj=o" + std::to_string(i % kTraceObjects) + " off=0 len=4096 prot=rw shared\n";
    s += "touch 1 " + m + " off=0 len=4096 read\n";
    lines += 2;
  }
  if (lines < kTraceLines) s += "spawn 2\n";  // exactly kTraceLines lines
  return s;
}

void check(const result<op_stream>& r, size_t ops, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "input_bench: %s: %s\n", what, r.error().to_string().c_str());
    std::exit(1);
  }
  if (r.value().ops.size() != ops) {
    std::fprintf(stderr, "input_bench: %s: %zu ops, expected %zu\n", what, r.value().ops.size(), ops);
    std::exit(1);
  }
}

void BM_Read_Scenario200kObjects(benchmark::State& state) {
  const std::string text = many_objects_scenario();
  for (auto _ : state) {
    auto r = parse_scenario(text, "many-objects.toml");
    check(r, 1 + kObjects, "200,000-object scenario");  // a spawn, then one mmap per object
    benchmark::DoNotOptimize(r);
  }
  state.counters["bytes"] = double(text.size());
}
BENCHMARK(BM_Read_Scenario200kObjects)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_Read_Trace1MLines(benchmark::State& state) {
  const std::string text = million_line_trace();
  for (auto _ : state) {
    auto r = parse_trace(text, "million.trace");
    check(r, kTraceLines - 2 - kTraceObjects, "1,000,000-line trace");  // every line after the objects is an op
    benchmark::DoNotOptimize(r);
  }
  state.counters["bytes"] = double(text.size());
}
BENCHMARK(BM_Read_Trace1MLines)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace vmlab
