// `vmlab estimate` (issue 12): the closed form of every design of linux-6.18 for 1,500
// processes on a 300 GiB segment, as the command computes it (the profile, every design,
// the figures), without the printing. Each iteration asserts the 4 KiB page tables of the
// issue (1,500 x 601.18 MiB), so an estimate that got faster by doing less fails.
//
// Target (BENCHMARKS.md): the whole command under 50 ms.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "report/estimate.h"

namespace vmlab {
namespace {

void BM_Estimate_1500x300GiB(benchmark::State& state) {
  const estimate_shape s{1500, 300 * GiB, 0, 1.0};
  for (auto _ : state) {
    auto p = estimate_profile("linux-6.18");
    auto all = p.ok() ? estimate_all(p.value(), s) : result<std::vector<estimate_figures>>(p.error());
    // 300 GiB / 2 MiB PTE pages, 300 GiB / 1 GiB PMD pages, one PUD page.
    const paging_format& f = p->paging;
    const bytes per_proc =
        (s.shared / f.pte().table_span() + s.shared / f.at(f.nr_levels - 2).table_span() + 1) * f.page_size();
    if (!all.ok() || all->front().vmpte != per_proc) {
      std::fprintf(stderr, "estimate_bench: wrong 4 KiB figure\n");
      std::exit(1);
    }
    benchmark::DoNotOptimize(all);
  }
}
BENCHMARK(BM_Estimate_1500x300GiB)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace vmlab
