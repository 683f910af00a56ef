// The live engine on this host, checked against the sim: per-process VmPTE growth must
// agree (within 2 pages) for the basic page-table situations, and a run must leave
// nothing behind — not on success, not on a host error, not on SIGINT.
#include <dirent.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/live_host.h"

#include <iostream>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/live/live_engine.h"
#include "vmlab/op_builder.h"

namespace vmlab {
namespace {

constexpr bytes kPage = 4096;


// A small builder for op streams (no scenario parser involved).
struct stream_builder {
  op_stream s;
  stream_builder() {
    s.machine.profile = "linux-6.18";
    s.machine.overrides = host_profile_overrides();  // e.g. pti=false on this AMD host
    s.source = "live_engine_test";
  }
  int32_t object(object_kind k, bytes size) {
    s.objects.push_back({"obj" + std::to_string(s.objects.size()), k, size});
    return static_cast<int32_t>(s.objects.size() - 1);
  }
  uint32_t map_name(uint32_t m) {
    while (s.map_names.size() <= m) s.map_names.push_back("m" + std::to_string(s.map_names.size()));
    return m;
  }
  stream_builder& add(const op& o) {
    s.ops.push_back(o);
    return *this;
  }
  stream_builder& spawn(uint32_t pid) { return add(ops::spawn(pid)); }
  stream_builder& fork(uint32_t pid, uint32_t child) { return add(ops::fork(pid, child)); }
  stream_builder& exit(uint32_t pid) { return add(ops::exit(pid)); }
  stream_builder& mmap(uint32_t pid, uint32_t map, bytes len, int32_t obj = -1, bool shared = false,
                       bytes align = 2 * MiB) {
    return add(ops::mmap_object(pid, map_name(map), obj, len).shared(shared).align(align));
  }
  // Every page of [off, off+len), or every `stride` bytes of it.
  stream_builder& touch(uint32_t pid, uint32_t map, bytes off, bytes len, bool write, bytes stride = 0) {
    ops::op_builder t = ops::touch(pid, map, off, len).write(write);
    if (stride) t.stride(stride);
    return add(t);
  }
  stream_builder& touch_uniform(uint32_t pid, uint32_t map, bytes len, uint64_t count, uint64_t seed) {
    return add(ops::touch(pid, map, 0, len).write().uniform(count, seed));
  }
  stream_builder& touch_zipf(uint32_t pid, uint32_t map, bytes len, uint64_t count, double theta, uint64_t seed) {
    return add(ops::touch(pid, map, 0, len).write().zipf(count, theta, seed));
  }
  stream_builder& dontneed(uint32_t pid, uint32_t map, bytes off, bytes len) {
    return add(ops::madvise(pid, map, off, len, advice::dontneed));
  }
  stream_builder& phase(const std::string& name) { return add(ops::phase(name)); }
};

const sample& find_sample(const run_result& r, const std::string& name) {
  for (const auto& s : r.samples)
    if (s.name == name) return s;
  static const sample none;
  ADD_FAILURE() << "no sample '" << name << "' in the " << r.engine << " result";
  return none;
}

const proc_sample* find_proc(const sample& s, uint32_t pid) {
  for (const auto& p : s.procs)
    if (p.pid == pid) return &p;
  return nullptr;
}

std::set<std::string> temp_dirs() {
  std::set<std::string> out;
  if (DIR* d = ::opendir("/var/tmp")) {
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name).rfind("vmlab-live-", 0) == 0) out.insert(e->d_name);
    ::closedir(d);
  }
  return out;
}

size_t open_fds() {
  size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (::readdir(d)) ++n;
    ::closedir(d);
  }
  return n;
}

bool no_children() {
  errno = 0;
  return ::waitpid(-1, nullptr, WNOHANG | __WALL) == -1 && errno == ECHILD;
}

struct both {
  run_result sim, live;
};

// Runs the stream on both engines; both must succeed and leave nothing behind.
both run_both(const op_stream& s) {
  both b;
  auto sim = run_sim(s);
  EXPECT_TRUE(sim.ok()) << sim.error().to_string();
  if (sim.ok()) b.sim = sim.value();
  const auto dirs = temp_dirs();
  const size_t fds = open_fds();
  auto live = run_live(s);
  EXPECT_TRUE(live.ok()) << live.error().to_string();
  if (live.ok()) b.live = live.value();
  EXPECT_TRUE(no_children()) << "a worker process was left behind";
  EXPECT_EQ(temp_dirs(), dirs) << "a temp dir was left behind";
  EXPECT_EQ(open_fds(), fds) << "a descriptor was left open";
  EXPECT_TRUE(b.live.failures.empty()) << b.live.failures[0].op_text << ": " << b.live.failures[0].error;
  return b;
}

// Per-process VmPTE growth: live within 2 pages of sim, for every process of the sample.
void expect_vmpte_agrees(const both& b, const std::string& name) {
  const sample& s = find_sample(b.sim, name);
  const sample& l = find_sample(b.live, name);
  ASSERT_EQ(s.procs.size(), l.procs.size()) << name;
  for (const auto& sp : s.procs) {
    const proc_sample* lp = find_proc(l, sp.pid);
    ASSERT_NE(lp, nullptr) << "pid " << sp.pid;
    const double diff = double(lp->vmpte_workload) - double(sp.vmpte_workload);
    EXPECT_LE(std::abs(diff), double(2 * kPage))
        << name << " pid " << sp.pid << ": sim " << sp.vmpte_workload / KiB << " KiB, live " << lp->vmpte_workload / KiB
        << " KiB (raw VmPTE " << lp->vmpte / KiB << " KiB)";
  }
}

// System-wide PageTables growth: the live figure also sees whatever else the host does
// meanwhile (other builds and tests on a shared machine), so a disagreement is retried
// with fresh runs; a real error in the method shows up every time.
void expect_page_tables_agree(const op_stream& st, both b, const std::vector<std::string>& names) {
#ifdef VMLAB_SANITIZED
  // Under ASan the instrumented driver and workers grow page tables for shadow memory that
  // no process's VmPTE delta accounts for; the system figure is checked in Release builds.
  std::cout << "[ NOTE ] system PageTables not compared in a sanitizer build\n";
  (void)st; (void)b; (void)names;
  return;
#endif
  std::string why, busy;
  int measured = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (attempt) {
      auto live = run_live(st);
      ASSERT_TRUE(live.ok()) << live.error().to_string();
      b.live = live.value();
    }
    why.clear();
    busy.clear();
    for (const auto& name : names) {
      const sample& s = find_sample(b.sim, name);
      const sample& l = find_sample(b.live, name);
      if (!l.page_tables_busy.empty()) busy += " " + name + ": " + l.page_tables_busy + ";";
      if (std::abs(double(l.page_tables_workload) - double(s.page_tables_workload)) > double(16 * kPage))
        why += " " + name + ": sim " + std::to_string(s.page_tables_workload / KiB) + " KiB, live " +
               std::to_string(l.page_tables_workload / KiB) + " KiB;";
    }
    if (!busy.empty()) {
      std::cout << "[ busy ] not measurable on this host:" << busy << "\n";
      continue;  // another process changed page tables meanwhile: this run measured nothing
    }
    ++measured;
    if (why.empty()) return;
  }
  if (!measured) GTEST_SKIP() << "the host was busy in 4 runs, PageTables not measured:" << busy;
  ADD_FAILURE() << "PageTables workload disagrees in " << measured << " measured runs:" << why;
}

TEST(LiveEngineTest, OneProcess64MiBAnonymous) {
  SKIP_UNLESS_LIVE_HOST();
  stream_builder b;
  b.spawn(1).mmap(1, 0, 64 * MiB).touch(1, 0, 0, 64 * MiB, true).phase("touched");
  both r = run_both(b.s);
  // 32 PTE pages + 1 PMD + 1 PUD.
  EXPECT_EQ(find_sample(r.sim, "touched").procs.at(0).vmpte_workload, 136 * KiB);
  expect_vmpte_agrees(r, "touched");
  expect_vmpte_agrees(r, "end");
  expect_page_tables_agree(b.s, r, {"touched", "end"});
  const proc_sample& p = find_sample(r.live, "touched").procs.at(0);
  EXPECT_EQ(p.rss_anon, 64 * MiB / kPage);
  EXPECT_GE(p.min_flt, 64 * MiB / kPage);
  EXPECT_EQ(r.live.engine, "live");
  EXPECT_EQ(r.live.profile, "linux-6.18");
  EXPECT_EQ(r.live.ops_applied, b.s.ops.size());
  EXPECT_EQ(r.live.peak.vmpte_max_proc, p.vmpte_workload);
  EXPECT_GE(r.live.faults, 64 * MiB / kPage);
  EXPECT_FALSE(r.live.notes.empty());
  EXPECT_GT(r.live.wall_seconds, 0);
}

TEST(LiveEngineTest, Shm256MiBSharedByFourProcesses) {
  SKIP_UNLESS_LIVE_HOST();
  stream_builder b;
  const int32_t shm = b.object(object_kind::shm, 256 * MiB);
  for (uint32_t pid = 1; pid <= 4; ++pid) b.spawn(pid).mmap(pid, 0, 256 * MiB, shm, true);
  b.touch(1, 0, 0, 256 * MiB, true);
  for (uint32_t pid = 2; pid <= 4; ++pid) b.touch(pid, 0, 0, 256 * MiB, false);
  b.phase("attached");
  both r = run_both(b.s);
  // 128 PTE pages + 1 PMD + 1 PUD in each process.
  for (const auto& p : find_sample(r.sim, "attached").procs) EXPECT_EQ(p.vmpte_workload, 130 * kPage);
  expect_vmpte_agrees(r, "attached");
  expect_page_tables_agree(b.s, r, {"attached"});
  for (const auto& p : find_sample(r.live, "attached").procs) EXPECT_EQ(p.rss_shmem, 256 * MiB / kPage) << p.pid;
}

TEST(LiveEngineTest, StrideTouchOneBytePer2MiBOf1GiB) {
  SKIP_UNLESS_LIVE_HOST();
  stream_builder b;
  b.spawn(1).mmap(1, 0, 1 * GiB).touch(1, 0, 0, 1 * GiB, true, 2 * MiB).phase("strided");
  both r = run_both(b.s);
  EXPECT_GE(find_sample(r.sim, "strided").procs.at(0).vmpte_workload, 514 * kPage);
  expect_vmpte_agrees(r, "strided");
  expect_page_tables_agree(b.s, r, {"strided"});
  EXPECT_EQ(find_sample(r.live, "strided").procs.at(0).rss_anon, 512u);
}

TEST(LiveEngineTest, ForkCopiesWrittenAnonymousMemory) {
  SKIP_UNLESS_LIVE_HOST();
  stream_builder b;
  b.spawn(1).mmap(1, 0, 64 * MiB).touch(1, 0, 0, 64 * MiB, true).fork(1, 2).phase("forked");
  b.exit(1).phase("parent-gone");
  both r = run_both(b.s);
  const sample& s = find_sample(r.sim, "forked");
  ASSERT_EQ(s.procs.size(), 2u);
  EXPECT_EQ(s.procs[1].vmpte_workload, 136 * KiB);  // the child has the parent's tables
  expect_vmpte_agrees(r, "forked");
  expect_vmpte_agrees(r, "parent-gone");
  expect_page_tables_agree(b.s, r, {"forked", "parent-gone"});
}

TEST(LiveEngineTest, ForkOfSharedOnlyMemoryCopiesNothing) {
  SKIP_UNLESS_LIVE_HOST();
  stream_builder b;
  const int32_t shm = b.object(object_kind::shm, 64 * MiB);
  b.spawn(1).mmap(1, 0, 64 * MiB, shm, true).touch(1, 0, 0, 64 * MiB, true).fork(1, 2).phase("forked");
  both r = run_both(b.s);
  const sample& s = find_sample(r.sim, "forked");
  ASSERT_EQ(s.procs.size(), 2u);
  EXPECT_EQ(s.procs[1].vmpte_workload, 0u);  // vma_needs_copy() is false: faults refill it
  expect_vmpte_agrees(r, "forked");
  expect_page_tables_agree(b.s, r, {"forked"});
  const proc_sample* child = find_proc(find_sample(r.live, "forked"), 2);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(child->vmpte_workload, 0u);
}

TEST(LiveEngineTest, DontneedOfAligned2MiBRangesFreesPtePages) {
  SKIP_UNLESS_LIVE_HOST();
  stream_builder b;
  b.spawn(1).mmap(1, 0, 64 * MiB).touch(1, 0, 0, 64 * MiB, true).phase("touched");
  b.dontneed(1, 0, 0, 32 * MiB).phase("dontneed");
  both r = run_both(b.s);
  EXPECT_EQ(find_sample(r.sim, "dontneed").procs.at(0).vmpte_workload, 72 * KiB);  // 16 PTE pages freed
  expect_vmpte_agrees(r, "touched");
  expect_vmpte_agrees(r, "dontneed");
  expect_page_tables_agree(b.s, r, {"touched", "dontneed"});
  EXPECT_EQ(find_sample(r.live, "dontneed").procs.at(0).rss_anon, 32 * MiB / kPage);
  // The peak is the reading before the madvise, not the end.
  EXPECT_EQ(r.live.peak.vmpte_max_proc, find_sample(r.live, "touched").procs.at(0).vmpte_workload);
}

TEST(LiveEngineTest, UniformAndZipfTouchTheSimsPages) {
  SKIP_UNLESS_LIVE_HOST();
  stream_builder b;
  b.spawn(1).mmap(1, 0, 256 * MiB).touch_uniform(1, 0, 256 * MiB, 3000, 7).phase("uniform");
  b.mmap(1, 1, 256 * MiB).touch_zipf(1, 1, 256 * MiB, 20000, 0.99, 9).phase("zipf");
  both r = run_both(b.s);
  expect_vmpte_agrees(r, "uniform");
  expect_vmpte_agrees(r, "zipf");
  for (const char* name : {"uniform", "zipf"})
    EXPECT_EQ(find_sample(r.live, name).procs.at(0).rss_anon, find_sample(r.sim, name).procs.at(0).rss_anon) << name;
}

TEST(LiveEngineTest, FileObjectsAndExitLeaveNothingBehind) {
  SKIP_UNLESS_LIVE_HOST();
  stream_builder b;
  const int32_t f = b.object(object_kind::file, 32 * MiB);
  b.spawn(1).mmap(1, 0, 32 * MiB, f, true).touch(1, 0, 0, 32 * MiB, true).fork(1, 2).spawn(3);
  b.mmap(3, 1, 32 * MiB, f, false).touch(3, 1, 0, 32 * MiB, false).phase("all").exit(2).exit(1);
  both r = run_both(b.s);  // checks children, temp dir and descriptors
  expect_vmpte_agrees(r, "all");
  EXPECT_EQ(find_sample(r.live, "end").procs.size(), 1u);
}

// mremap and remap_file_pages (issue 10: PTSHARE's other unshare triggers) on a shared
// memory object: the host kernel's page tables and RSS follow the sim's after a shrink, a
// grow in place, a grow that must move (to the place the model chose, reserved on the host
// first), a move to a fixed address and a remap_file_pages (the 4.0+ emulation: the range
// is unmapped and populated again from the new file offset).
TEST(LiveEngineTest, MremapAndRemapFilePagesFollowTheSim) {
  SKIP_UNLESS_LIVE_HOST();
  stream_builder b;
  const int32_t shm = b.object(object_kind::shm, 16 * MiB);
  // 32 TiB and 48 TiB: below the model's mmap_base, far from a worker's own mappings.
  const vaddr at = vaddr{1} << 45, to = vaddr{3} << 44;
  b.map_name(1);
  b.spawn(1);
  b.s.ops.push_back(ops::mmap_object(1, 0, shm, 8 * MiB).shared().at(at));
  b.s.ops.push_back(ops::mmap_anon(1, 1, 2 * MiB).at(at + 8 * MiB));  // in the way of a grow past 8 MiB
  b.touch(1, 0, 0, 8 * MiB, false).phase("touched");
  b.s.ops.push_back(ops::mremap(1, 0, 4 * MiB));
  b.phase("shrunk");
  b.s.ops.push_back(ops::mremap(1, 0, 8 * MiB));
  b.touch(1, 0, 0, 8 * MiB, false).phase("grown");
  b.s.ops.push_back(ops::mremap(1, 0, 12 * MiB).maymove());
  b.phase("maymoved");
  b.s.ops.push_back(ops::mremap(1, 0, 12 * MiB).to(to));
  b.phase("moved");
  b.s.ops.push_back(ops::remap_file_pages(1, 0, 0, 2 * MiB, 8 * MiB));
  b.phase("remapped");
  both r = run_both(b.s);
  // The sim's own figures, from the format: 8 MiB is 4 PTE pages + 1 PMD + 1 PUD; the
  // shrink frees 2 PTE pages (free_pgtables of the tail); after each move the 4 tables
  // sit under a PUD and PMD page of their own and the old ones are gone (the peak in
  // between is not sampled); remap_file_pages refills the range it unmapped.
  const bytes pte_span = 2 * MiB;
  auto vmpte = [&](const char* name) { return find_sample(r.sim, name).procs.at(0).vmpte_workload; };
  EXPECT_EQ(vmpte("touched"), (8 * MiB / pte_span + 2) * kPage);
  EXPECT_EQ(vmpte("shrunk"), (4 * MiB / pte_span + 2) * kPage);
  EXPECT_EQ(vmpte("grown"), vmpte("touched"));
  // Moved away, the 4 tables get a PMD and a PUD page of their own, and the old ones stay
  // for mapping 1. (The live worker shows one page more from here on, within the 2 pages
  // the comparison below allows; a bare C program making the same calls at the same
  // addresses shows 32 KiB after the move, as the sim does, so the page is the worker's.)
  for (const char* name : {"maymoved", "moved", "remapped"})
    EXPECT_EQ(vmpte(name), (8 * MiB / pte_span + 4) * kPage) << name;
  const char* phases[] = {"touched", "shrunk", "grown", "maymoved", "moved", "remapped"};
  for (const char* name : phases) {
#ifdef VMLAB_SANITIZED
    // Under ASan the worker's VmPTE grows by 3 pages at its first mremap and keeps them
    // (measured: 12 KiB in every later phase), the sanitizer runtime's own; the Release
    // build compares every phase.
    if (std::string(name) != "touched") {
      std::cout << "[ NOTE ] " << name << ": VmPTE not compared in a sanitizer build (ASan's shadow)\n";
    } else {
      expect_vmpte_agrees(r, name);
    }
#else
    expect_vmpte_agrees(r, name);
#endif
    const proc_sample& sp = find_sample(r.sim, name).procs.at(0);
    const proc_sample& lp = find_sample(r.live, name).procs.at(0);
    EXPECT_EQ(lp.rss_shmem, sp.rss_shmem) << name;
  }
  EXPECT_EQ(find_sample(r.sim, "shrunk").procs.at(0).rss_shmem, 4 * MiB / kPage);
  expect_page_tables_agree(b.s, r, {std::begin(phases), std::end(phases)});
}

TEST(LiveEngineTest, ModelRefusalIsAnOpFailure) {
  SKIP_UNLESS_LIVE_HOST();
  stream_builder b;
  b.spawn(1).mmap(1, 0, 2 * MiB).touch(1, 0, 0, 2 * MiB, true);
  b.s.ops.push_back(b.s.ops[1]);  // the same mapping again, at the same fixed address
  b.s.ops.back().fixed = true;
  b.s.ops.back().addr = 0x3fffffe00000ull;
  b.s.ops.back().map = b.map_name(1);
  b.phase("never");
  auto sim = run_sim(b.s);
  ASSERT_TRUE(sim.ok());
  auto live = run_live(b.s);
  ASSERT_TRUE(live.ok()) << live.error().to_string();
  EXPECT_TRUE(no_children());
  ASSERT_EQ(live->failures.size(), 1u);
  EXPECT_EQ(live->failures[0].op_index, 3u);
  EXPECT_EQ(live->ops_applied, 3u);
  ASSERT_EQ(sim->failures.size(), 1u);
  EXPECT_EQ(live->failures[0].op_index, sim->failures[0].op_index);
  EXPECT_EQ(live->samples.back().name, "end");
}

TEST(LiveEngineTest, AddressInUseOnTheHostIsAnIoError) {
  SKIP_UNLESS_LIVE_HOST();
  // Occupy, in this (the driver's) process, the place the model gives the first 2 MiB
  // mapping: every worker inherits it.
  void* want = reinterpret_cast<void*>(0x400000000000ull - 2 * MiB);
  void* p = ::mmap(want, 2 * MiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  ASSERT_EQ(p, want);
  stream_builder b;
  b.spawn(1).mmap(1, 0, 2 * MiB);
  auto live = run_live(b.s);
  ::munmap(p, 2 * MiB);
  ASSERT_FALSE(live.ok());
  EXPECT_EQ(live.error().code(), status_code::io_error);
  EXPECT_NE(live.error().message().find("is in use on the host"), std::string::npos) << live.error().message();
  EXPECT_TRUE(no_children());
}

TEST(LiveEngineTest, RefusesWhatTheHostCannotRun) {
  stream_builder b;
  b.s.machine.profile = "linux-2.6.15";  // i386 PAE
  b.s.machine.overrides.clear();
  b.spawn(1);
  auto r = run_live(b.s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), status_code::not_supported);
  if (testing::live_host()) {
    EXPECT_NE(r.error().message().find("x86-64-4level"), std::string::npos) << r.error().message();
  }
}

TEST(LiveEngineTest, RefusesMoreThanMaxMemory) {
  SKIP_UNLESS_LIVE_HOST();
  stream_builder b;
  b.spawn(1).mmap(1, 0, 64 * MiB).touch(1, 0, 0, 64 * MiB, true);
  auto est = live::estimate_peak_memory(b.s);
  ASSERT_TRUE(est.ok());
  EXPECT_GE(est.value(), 64 * MiB + 136 * KiB);
  live_options lo;
  lo.max_memory = 32 * MiB;
  auto r = run_live(b.s, lo);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), status_code::invalid_argument);
  EXPECT_NE(r.error().message().find("more than --max-memory 32 MiB"), std::string::npos) << r.error().message();
  EXPECT_TRUE(no_children());
}

TEST(LiveEngineTest, SigintMidRunCleansUpAndReturnsAnError) {
  SKIP_UNLESS_LIVE_HOST();
  // Should the signal land outside run_live, it must not kill the test binary.
  struct sigaction ign{}, old{};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ign, &old);

  stream_builder b;
  const int32_t f = b.object(object_kind::file, 16 * MiB);
  b.spawn(1).mmap(1, 0, 16 * MiB, f, true).touch(1, 0, 0, 16 * MiB, true).fork(1, 2);
  b.mmap(2, 1, 2 * GiB);
  for (int i = 0; i < 8; ++i) b.touch(2, 1, 0, 2 * GiB, true).dontneed(2, 1, 0, 2 * GiB);
  b.phase("never");

  const auto dirs = temp_dirs();
  const size_t fds = open_fds();
  std::atomic<bool> done{false};
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    if (!done) ::kill(::getpid(), SIGINT);
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_live(b.s);
  done = true;
  killer.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  ASSERT_FALSE(r.ok()) << "the run finished before the signal (" << secs << " s)";
  EXPECT_EQ(r.error().code(), status_code::interrupted);
  EXPECT_EQ(r.error().exit_code(), 130);
  EXPECT_NE(r.error().message().find("interrupted by SIGINT"), std::string::npos) << r.error().message();
  EXPECT_LT(secs, 5.0);
  EXPECT_TRUE(no_children());
  EXPECT_EQ(temp_dirs(), dirs);
  EXPECT_EQ(open_fds(), fds);
  struct sigaction now{};
  ::sigaction(SIGINT, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_IGN) << "run_live did not restore the SIGINT disposition";
  ::sigaction(SIGINT, &old, nullptr);
}

TEST(LiveEngineTest, HostProfileOverridesFollowMeltdownStatus) {
  auto o = host_profile_overrides();
#if defined(__linux__)
  if (o.empty()) GTEST_SKIP() << "no /sys/devices/system/cpu/vulnerabilities/meltdown";
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0].first, "pti");
  EXPECT_TRUE(o[0].second == "true" || o[0].second == "false");
#endif
}

}  // namespace
}  // namespace vmlab
