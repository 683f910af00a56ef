// The sim engine end to end on op streams built in code: determinism, samples, peaks,
// and a run the simulated kernel cuts short.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "report/report.h"
#include "vmlab/op_builder.h"

namespace vmlab {
namespace {

op mk(op_kind kind, uint32_t pid) {
  op o;
  o.kind = kind;
  o.pid = pid;
  return o;
}

// Four processes share a 256 MiB segment and each has 64 MiB of private memory; they
// touch randomly, fork, write (COW) and unmap part of the segment.
op_stream workload(bytes memory = 0) {
  op_stream s;
  s.source = "test/workload";
  s.machine.memory = memory;
  s.objects.push_back({"seg", object_kind::shm, 256 * MiB});
  s.map_names = {"seg", "heap"};
  for (uint32_t pid = 1; pid <= 4; ++pid) {
    s.ops.push_back(mk(op_kind::spawn, pid));
    op m = mk(op_kind::mmap, pid);
    m.map = 0; m.object = 0; m.shared = true; m.len = 256 * MiB; m.align = 2 * MiB;
    s.ops.push_back(m);
    op h = mk(op_kind::mmap, pid);
    h.map = 1; h.len = 64 * MiB;
    s.ops.push_back(h);
  }
  for (uint32_t pid = 1; pid <= 4; ++pid) {
    op t = mk(op_kind::touch, pid);
    t.map = 0; t.len = 256 * MiB; t.pattern = touch_pattern::uniform; t.count = 20000; t.seed = 100 + pid;
    s.ops.push_back(t);
    op w = mk(op_kind::touch, pid);
    w.map = 1; w.len = 64 * MiB; w.write = true; w.pattern = touch_pattern::zipf; w.theta = 0.9; w.count = 30000; w.seed = 200 + pid;
    s.ops.push_back(w);
  }
  op ph = mk(op_kind::phase, 0);
  ph.name = "load";
  s.ops.push_back(ph);
  op f = mk(op_kind::fork, 1);
  f.child = 5;
  s.ops.push_back(f);
  op cw = mk(op_kind::touch, 5);
  cw.map = 1; cw.len = 32 * MiB; cw.write = true;
  s.ops.push_back(cw);
  op um = mk(op_kind::munmap, 2);
  um.map = 0; um.off = 64 * MiB; um.len = 64 * MiB;
  s.ops.push_back(um);
  ph.name = "after-fork";
  s.ops.push_back(ph);
  return s;
}

TEST(SimEngine, SameStreamGivesByteIdenticalJson) {
  auto a = run_sim(workload());
  auto b = run_sim(workload());
  ASSERT_TRUE(a.ok() && b.ok());
  auto ja = to_json(a.value()), jb = to_json(b.value());
  ja.erase("timing");
  jb.erase("timing");
  EXPECT_EQ(ja.dump(), jb.dump());
  EXPECT_EQ(a->samples.size(), 3u);  // load, after-fork, end
  EXPECT_EQ(a->samples[0].name, "load");
  EXPECT_EQ(a->samples[2].name, "end");
  EXPECT_GT(a->cow_faults, 0u);
}

TEST(SimEngine, InvariantsHoldAfterEveryOp) {
  sim_options opt;
  opt.check_invariants = true;
  auto r = run_sim(workload(), opt);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->failures.empty());
}

TEST(SimEngine, PeaksAreMaximaOverTheRun) {
  auto r = run_sim(workload());
  ASSERT_TRUE(r.ok());
  uint64_t max_pt = 0;
  for (const auto& s : r->samples) max_pt = std::max(max_pt, s.page_tables);
  EXPECT_GE(r->peak.page_tables, max_pt);
  // Process 2 unmapped 64 MiB of the segment after "load": the peak keeps the earlier value.
  EXPECT_GT(r->peak.page_tables, r->samples.back().page_tables - 1);
}

TEST(SimEngine, ExhaustedMemoryEndsTheRunAtTheFailingOp) {
  auto r = run_sim(workload(300 * MiB));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->failures.size(), 1u);
  EXPECT_NE(r->failures[0].error.find("ENOMEM: out of memory"), std::string::npos) << r->failures[0].error;
  EXPECT_LT(r->ops_applied, workload().ops.size());
  EXPECT_EQ(r->failures[0].op_index, r->ops_applied);
  const auto j = to_json(r.value());
  EXPECT_FALSE(j["completed"].get<bool>());
  EXPECT_NE(format_table(r.value()).find("RUN ENDED EARLY at op"), std::string::npos);
}

// Before 2.6.10 /proc/PID/status had no VmPTE line: the run says so instead of printing one.
TEST(SimEngine, VmPTELineOnlyOnKernelsThatHaveIt) {
  op_stream s = workload();
  auto today = run_sim(s);
  s.machine.profile = "linux-2.5.26";
  s.machine.memory = 4 * GiB;
  auto old = run_sim(s);
  ASSERT_TRUE(today.ok() && old.ok());
  EXPECT_TRUE(today->vmpte_line);
  EXPECT_FALSE(old->vmpte_line);
  const std::string t = format_table(old.value());
  EXPECT_EQ(t.find("VmPTE (max"), std::string::npos) << t;
  EXPECT_NE(t.find("   pid  mm PT bytes   (workload)"), std::string::npos) << t;
  EXPECT_NE(t.find("page tables (no VmPTE line before 2.6.10) (max, one process):"), std::string::npos) << t;
  EXPECT_FALSE(to_json(old.value())["vmpte_line"].get<bool>());
  EXPECT_FALSE(to_json(today.value()).contains("vmpte_line"));
  EXPECT_NE(format_table(today.value()).find("VmPTE (max, one process):"), std::string::npos);
}

// A random touch draws the kernel's pages. On ppc64's 64 KiB pages, 1,000 distinct pages
// of a 1 GiB mapping (16,384 of them) are 1,000 write faults and 1,000 pages of RssAnon;
// 4 KiB page indices (262,144 of them) would lie outside the mapping and end the run.
TEST(SimEngine, RandomTouchesDrawTheKernelsPages) {
  op_stream s;
  s.source = "test/ppc64-64k-uniform";
  s.machine.profile = "linux-6.18-ppc64";
  s.map_names = {"heap"};
  s.ops = {ops::spawn(1), ops::mmap_anon(1, 0, GiB), ops::touch(1, 0, 0, GiB).write().uniform(1000, 7)};
  auto r = run_sim(s);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_TRUE(r->failures.empty()) << r->failures.front().error;
  EXPECT_EQ(r->page_size, 64 * KiB);
  EXPECT_EQ(r->faults, 1000u);
  ASSERT_FALSE(r->samples.empty());
  ASSERT_EQ(r->samples.back().procs.size(), 1u);
  EXPECT_EQ(r->samples.back().procs[0].rss_anon, 1000u);
}

}  // namespace
}  // namespace vmlab
