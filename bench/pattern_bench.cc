// The pages of a uniform random touch (workload/pattern.h), drawn as the sim engine draws
// them: the 1,500 x 300 GiB SGA case's op (1% of 300 GiB, 786,432 distinct pages) in one
// batch of up to kTouchBatchMax pages. Each iteration checks the count, so a generator that
// got faster by producing less fails.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <vector>

#include "engine/engine.h"
#include "workload/pattern.h"

namespace vmlab {
namespace {

void BM_TouchGen_Uniform(benchmark::State& state) {
  const bytes page = 4 * KiB;  // x86-64's base page, as linux-6.18 pages the scenario
  op o;
  o.kind = op_kind::touch;
  o.pattern = touch_pattern::uniform;
  o.len = bytes(state.range(0)) * GiB;
  o.count = o.len / page / 100;
  uint64_t seed = 1;
  std::vector<uint64_t> batch;
  for (auto _ : state) {
    o.seed = seed++;
    touch_page_gen g(o, page);
    uint64_t n = 0;
    while (g.next(batch, kTouchBatchMax)) n += batch.size();
    if (n != o.count) std::abort();
    benchmark::DoNotOptimize(batch.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations() * o.count));
}
BENCHMARK(BM_TouchGen_Uniform)->Arg(32)->Arg(300)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace vmlab
