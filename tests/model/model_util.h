// Helpers shared by the model tests: a kernel from a profile name and the compact
// "pgd,p4d,pud,pmd,pte" view of page-table pages per level. Ops come from
// vmlab/op_builder.h (ops::mmap_anon, ops::mmap_object, ...).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vmlab/op_builder.h"
#include "vmlab/sim_kernel.h"

namespace vmlab {

struct kernel;

// The model's state behind a sim_kernel, for tests that damage it (check_test.cc) or call
// an internal entry point (filemap_test.cc). sim_kernel names it a friend.
struct sim_kernel_internals {
  static kernel& of(sim_kernel& k) { return *k.k_; }
};

}  // namespace vmlab

namespace vmlab::testing {

// A kernel on machine m; a failure to build it fails the test (and gives nullptr).
inline std::unique_ptr<sim_kernel> make(const machine_decl& m, const std::vector<object_decl>& objs = {}) {
  auto r = sim_kernel::create(m, objs);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
  return r.ok() ? std::move(r.value()) : nullptr;
}

inline std::unique_ptr<sim_kernel> make(const std::string& profile,
                                        std::vector<std::pair<std::string, std::string>> ov = {}, bytes memory = 0,
                                        std::vector<object_decl> objs = {}) {
  machine_decl m;
  m.profile = profile;
  m.overrides = std::move(ov);
  m.memory = memory;
  return make(m, objs);
}

inline const proc_sample& proc(const sample& s, uint32_t pid) {
  for (const auto& p : s.procs)
    if (p.pid == pid) return p;
  static proc_sample none;
  ADD_FAILURE() << "no pid " << pid;
  return none;
}

inline uint64_t pages(const sample& s, level l) { return s.pt_pages[static_cast<int>(l)]; }

// "pgd,p4d,pud,pmd,pte" page counts as a compact string, ChampSim style.
inline std::string levels(const sample& s) {
  std::string out;
  for (int i = 0; i < kLevels; ++i) out += (i ? "," : "") + std::to_string(s.pt_pages[i]);
  return out;
}

}  // namespace vmlab::testing
