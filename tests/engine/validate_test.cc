// compare_results on RunResults built in code: the slab cases of issue 3.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/engine.h"
#include "report/report.h"

namespace vmlab {
namespace {

slab_row row(const std::string& name, uint64_t active, uint32_t per_slab) {
  slab_row r;
  r.name = name;
  r.active_objs = active;
  r.num_objs = active;
  r.objperslab = per_slab;
  return r;
}

// One "end" sample each; the sim's rows are its processes' objects, the live result has
// the host's rows and the workload's growth.
struct results {
  run_result sim, live;
  results() {
    sim.samples.resize(1);
    live.samples.resize(1);
    sim.samples[0].name = live.samples[0].name = "end";
    sim.samples[0].slabs = {row("vm_area_struct", 3072, 21), row("anon_vma", 3072, 39),
                            row("anon_vma_chain", 10752, 64), row("mm_struct", 6, 20)};
    live.samples[0].slabs = {row("vm_area_struct", 9000, 21), row("anon_vma", 5000, 39),
                             row("anon_vma_chain", 20000, 64), row("mm_struct", 60, 20)};
    live.samples[0].slabs_workload = {row("vm_area_struct", 3075, 21), row("anon_vma", 3072, 39),
                                      row("anon_vma_chain", 10700, 64), row("mm_struct", 6, 20)};
  }
};

std::vector<validate_case> slab_cases(const std::vector<validate_case>& all) {
  std::vector<validate_case> out;
  for (const auto& c : all)
    if (c.figure.rfind("slab ", 0) == 0) out.push_back(c);
  return out;
}

TEST(CompareSlabs, OneCasePerRmapCacheAtTheEnd) {
  results p;
  tolerances tol;
  tol.cpus = 2;
  const auto cases = slab_cases(compare_results("s", p.sim, p.live, tol));
  ASSERT_EQ(cases.size(), 3u);  // mm_struct is not compared
  EXPECT_EQ(cases[0].figure, "slab vm_area_struct");
  EXPECT_EQ(cases[1].figure, "slab anon_vma");
  EXPECT_EQ(cases[2].figure, "slab anon_vma_chain");
  for (const auto& c : cases) {
    EXPECT_EQ(c.unit, "objects");
    EXPECT_EQ(c.at, "end");
    EXPECT_EQ(c.pid, 0u);
    EXPECT_EQ(c.v, verdict::ok) << c.figure;
  }
  EXPECT_EQ(cases[0].sim, 3072);
  EXPECT_EQ(cases[0].live, 3075);
  // 5% of the live figure, or 4 slabs per CPU (objperslab of the host's row): 4 x 21 x 2
  // = 168 objects is more than 5% of 3075 vm_area_structs, 5% of 10700 more than 4 x 64 x 2.
  EXPECT_DOUBLE_EQ(cases[0].tolerance, 4.0 * 21 * 2);
  EXPECT_DOUBLE_EQ(cases[2].tolerance, 0.05 * 10700);
  tol.cpus = 64;
  const auto wide = slab_cases(compare_results("s", p.sim, p.live, tol));
  EXPECT_DOUBLE_EQ(wide[0].tolerance, 4.0 * 21 * 64);
}

TEST(CompareSlabs, OutsideFivePercentFails) {
  results p;
  p.live.samples[0].slabs_workload[1].active_objs = 3500;  // anon_vma: 428 over, slack 312
  tolerances tol;
  tol.cpus = 2;
  const auto cases = slab_cases(compare_results("s", p.sim, p.live, tol));
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0].v, verdict::ok);
  EXPECT_EQ(cases[1].v, verdict::fail);
  // A small count is judged by the absolute slack: 1 against 40 is within 4 x 39 x 2.
  results q;
  q.sim.samples[0].slabs[1].active_objs = 1;
  q.live.samples[0].slabs_workload[1].active_objs = 40;
  EXPECT_TRUE(slab_cases(compare_results("s", q.sim, q.live, tol))[1].v == verdict::ok);
}

TEST(CompareSlabs, MissingWorkloadShareIsAFailedCase) {
  results p;
  p.live.samples[0].slabs_workload.clear();  // the image pass did not reach this sample
  const auto cases = slab_cases(compare_results("s", p.sim, p.live));
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& c : cases) {
    EXPECT_EQ(c.v, verdict::fail);
    EXPECT_EQ(c.live, -1);
  }
}

TEST(CompareSlabs, NotComparedWithoutBothSidesOrUnderAnotherRmapDesign) {
  results p;
  p.live.samples[0].slabs.clear();  // the host's caches could not be read
  p.live.samples[0].slabs_workload.clear();
  EXPECT_TRUE(slab_cases(compare_results("s", p.sim, p.live)).empty());
  results q;
  q.sim.samples[0].slabs.clear();  // a sim without slab rows
  EXPECT_TRUE(slab_cases(compare_results("s", q.sim, q.live)).empty());
  results r;  // 2.6.15's anon_vma scheme: no anon_vma_chain cache; the host's counts mean other things
  r.sim.samples[0].slabs = {row("vm_area_struct", 10, 21), row("anon_vma", 1, 39)};
  EXPECT_TRUE(slab_cases(compare_results("s", r.sim, r.live)).empty());
}

TEST(CompareSlabs, OnlyAtTheEndSample) {
  results p;
  for (run_result* r : {&p.sim, &p.live}) {
    sample mid = r->samples[0];
    mid.name = "fork";
    r->samples.insert(r->samples.begin(), mid);
  }
  const auto cases = slab_cases(compare_results("s", p.sim, p.live));
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& c : cases) EXPECT_EQ(c.at, "end");
}

// A host that would not hold still: the system-wide figures of that sample are neither ok
// nor failed, and say why; the per-process figures are still compared (nobody else can
// move a process's VmPTE).
TEST(CompareBusyHost, SystemFiguresOfABusySampleAreNotMeasurable) {
  results p;
  for (run_result* r : {&p.sim, &p.live}) {
    proc_sample ps;
    ps.pid = 1;
    ps.vmpte_workload = 2052 * KiB;
    r->samples[0].procs = {ps};
    r->samples[0].page_tables_workload = 2056 * KiB;
  }
  p.live.samples[0].page_tables_workload = 9000 * KiB;  // what a busy host would make of it
  p.live.samples[0].page_tables_busy = "PageTables changed while vmlab read the other processes' page tables";
  p.live.samples[0].slabs_busy = "1 other process started";
  const auto cases = compare_results("s", p.sim, p.live);
  size_t seen = 0;
  for (const auto& c : cases) {
    if (c.figure == "VmPTE_growth") {
      EXPECT_EQ(c.v, verdict::ok);
    } else {
      EXPECT_EQ(c.v, verdict::not_measurable) << c.figure;
      EXPECT_FALSE(c.failed());
      EXPECT_EQ(c.why, c.figure == "PageTables_growth" ? p.live.samples[0].page_tables_busy : "1 other process started");
    }
    ++seen;
  }
  EXPECT_EQ(seen, 1u + 1u + 3u);
}

}  // namespace
}  // namespace vmlab
