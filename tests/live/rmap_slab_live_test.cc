// The live engine's slab measurement on its own, against counts worked out by hand from
// the 6.18 sources (the comments of each scenario): run a validate/rmap-* scenario live and
// check that the workload's growth of vm_area_struct, anon_vma and anon_vma_chain (the
// host's growth minus the workers' own images) is what the kernel code says the workload
// allocates. This proves the method independently of the sim.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include "engine/engine.h"
#include "tests/live_host.h"
#include "workload/scenario.h"

namespace vmlab {
namespace {

bool slabinfo_readable() {
  FILE* f = std::fopen("/proc/slabinfo", "r");
  if (!f) return false;
  std::fclose(f);
  return true;
}

#define SKIP_UNLESS_SLABS()                                                                      \
  SKIP_UNLESS_LIVE_HOST();                                                                       \
  if (!slabinfo_readable()) GTEST_SKIP() << "/proc/slabinfo is not readable (needs root and a " \
                                            "kernel with CONFIG_SLUB_DEBUG)"

const slab_row* row(const std::vector<slab_row>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}

using counts = std::map<std::string, uint64_t>;  // cache -> objects

// Runs the scenario live (up to 3 times: the rows are whole-system figures, and other
// processes on a shared host create and free VMAs meanwhile) until every cache of
// `expected` is within the validate tolerance of its hand count at `at`.
void expect_live_counts(const std::string& scenario, const std::map<std::string, counts>& expected) {
  auto s = load_scenario(scenario);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  const tolerances tol;
  const double cpus = std::max(1u, std::thread::hardware_concurrency());
  std::string why, busy;
  int measured = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto r = run_live(s.value());
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_TRUE(r->failures.empty()) << r->failures[0].op_text << ": " << r->failures[0].error;
    why.clear();
    busy.clear();
    for (const auto& [at, want] : expected) {
      const sample* smp = nullptr;
      for (const auto& x : r->samples)
        if (x.name == at) smp = &x;
      ASSERT_NE(smp, nullptr) << "no sample " << at;
      // Another process changed the caches meanwhile: this run measured nothing.
      if (!smp->slabs_busy.empty()) busy += " " + at + ": " + smp->slabs_busy + ";";
      ASSERT_EQ(smp->slabs.size(), 4u) << at;
      ASSERT_EQ(smp->slabs_workload.size(), 4u) << at << ": the image pass did not measure this sample";
      for (const auto& [cache, n] : want) {
        const slab_row* w = row(smp->slabs_workload, cache);
        const slab_row* host = row(smp->slabs, cache);
        ASSERT_NE(w, nullptr) << cache;
        ASSERT_NE(host, nullptr) << cache;
        const double slack = std::max(tol.slab_rel * double(n), tol.slab_slabs_per_cpu * host->objperslab * cpus);
        const double diff = double(w->active_objs) - double(n);
        std::cout << "[ live ] " << scenario << " @" << at << " " << cache << ": workload " << w->active_objs
                  << ", by hand " << n << " (host row " << host->active_objs << "/" << host->num_objs << ")\n";
        if (std::abs(diff) > slack)
          why += " " + at + " " + cache + ": live " + std::to_string(w->active_objs) + ", by hand " + std::to_string(n) + ";";
      }
    }
    for (const auto& n : r->notes)
      if (n.id == "live.slabs_workload") std::cout << "[ note ] " << n.detail << "\n";
    if (!busy.empty()) {
      std::cout << "[ busy ] " << scenario << ":" << busy << "\n";
      continue;
    }
    ++measured;
    if (why.empty()) return;
  }
  if (!measured) GTEST_SKIP() << scenario << ": the host was busy in 3 runs, nothing measured:" << busy;
  ADD_FAILURE() << scenario << " outside tolerance in " << measured << " measured runs:" << why;
}

TEST(RmapSlabLive, ForkChainOfDepthFiveMatchesHandCounts) {
  SKIP_UNLESS_SLABS();
  // validate/rmap-fork-deep: 512 written VMAs per process. After the first fork: 2
  // processes, 1 + 2 AVCs per VMA; at the end 6 processes, 1 + 2 + ... + 6 = 21.
  expect_live_counts("validate/rmap-fork-deep",
                     {{"w-heap1", {{"vm_area_struct", 512}, {"anon_vma", 512}, {"anon_vma_chain", 512}}},
                      {"fork1", {{"vm_area_struct", 1024}, {"anon_vma", 1024}, {"anon_vma_chain", 1536}}},
                      {"end", {{"vm_area_struct", 3072}, {"anon_vma", 3072}, {"anon_vma_chain", 10752}}}});
}

TEST(RmapSlabLive, AnonVmasOutliveAnExitedParent) {
  SKIP_UNLESS_SLABS();
  // validate/rmap-cow: 256 written VMAs; 8 children; the parent exits at the end but its
  // 256 anon_vmas stay, linked from the children's chains.
  expect_live_counts("validate/rmap-cow",
                     {{"kids-heap1", {{"vm_area_struct", 2304}, {"anon_vma", 2304}, {"anon_vma_chain", 4352}}},
                      {"end", {{"vm_area_struct", 2048}, {"anon_vma", 2304}, {"anon_vma_chain", 4096}}}});
}

}  // namespace
}  // namespace vmlab
