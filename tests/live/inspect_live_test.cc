// vmlab inspect on real processes this test starts: a memfd shared by ten processes, each
// touching a different part of it, each with a private region, one of them forked.
// Asserted: every process's per-mapping attribution sums to its VmPTE (within 1%, as the
// issue asks; on a quiet process it is exact), the memfd is one segment with every
// process in it, and the PTE tables attributed to each process's memfd mapping are the
// 2 MiB windows it touched (the workers read their part of the memfd at the same time,
// so fault-around may map a few cached pages more).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/live/inspect.h"
#include "tests/live_host.h"
#include "model/profile.h"
#include "report/whatif.h"
#include "workload/scenario.h"

namespace vmlab {
namespace {

constexpr bytes kMiB = bytes{1} << 20;
constexpr bytes kSegment = 64 * kMiB;
// Fixed, 1 GiB-aligned places away from the test binary and its libraries, so each
// mapping's tables are its own: the memfd at kSegBase + i GiB, the private region 512 MiB
// above it.
constexpr vaddr kSegBase = vaddr{0x3e} << 40;
constexpr bytes kGiB = bytes{1} << 30;

// Processes started for one test; on any exit the go pipe closes and every one of them
// exits (a killed test closes it too), and they are reaped here.
struct fleet {
  int ready[2] = {-1, -1};
  int go[2] = {-1, -1};
  std::vector<pid_t> children;
  std::vector<int> pids;  // every process, the grandchild included
  ~fleet() {
    if (go[1] >= 0) ::close(go[1]);
    for (pid_t c : children) ::waitpid(c, nullptr, 0);
    for (int fd : {ready[0], ready[1], go[0]})
      if (fd >= 0) ::close(fd);
  }
};

// What one process does: map the memfd and touch `touched` bytes of it, write `priv`
// bytes of a private region; then wait for the go pipe to close.
[[noreturn]] void worker(int memfd, int index, bytes touched, bytes priv, int ready_fd, int go_fd, bool fork_one) {
  const vaddr seg = kSegBase + vaddr(index) * kGiB;
  auto* s = static_cast<volatile char*>(
      ::mmap(reinterpret_cast<void*>(seg), kSegment, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, memfd, 0));
  auto* p = static_cast<char*>(::mmap(reinterpret_cast<void*>(seg + kGiB / 2), 8 * kMiB, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0));
  if (s == MAP_FAILED || p == MAP_FAILED) ::_exit(2);
  for (bytes o = 0; o < touched; o += 4096) (void)s[o];
  std::memset(p, 1, priv);
  if (fork_one) {
    const pid_t g = ::fork();
    if (g == 0) {
      std::memset(p, 2, kMiB);  // copy-on-write of a part of the inherited region
      const int me = ::getpid();
      if (::write(ready_fd, &me, sizeof me) != sizeof me) ::_exit(2);
      char c;
      while (::read(go_fd, &c, 1) > 0) {}
      ::_exit(0);
    }
  }
  const int me = ::getpid();
  if (::write(ready_fd, &me, sizeof me) != sizeof me) ::_exit(2);
  char c;
  while (::read(go_fd, &c, 1) > 0) {}
  while (::wait(nullptr) > 0) {}
  ::_exit(0);
}

TEST(InspectLive, MemfdSharedByTenProcessesAttributesEveryPageTable) {
  SKIP_UNLESS_LIVE_HOST();
  fleet f;
  ASSERT_EQ(::pipe2(f.ready, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(f.go, O_CLOEXEC), 0);
  const int memfd = ::memfd_create("vmlab-inspect-test", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  ASSERT_EQ(::ftruncate(memfd, off_t(kSegment)), 0);
  constexpr int kProcs = 10;
  for (int i = 0; i < kProcs; ++i) {
    const pid_t c = ::fork();
    ASSERT_GE(c, 0);
    if (c == 0) {
      ::close(f.go[1]);
      ::close(f.ready[0]);
      worker(memfd, i, bytes(i + 1) * 6 * kMiB + 4096 * bytes(i), bytes(i + 1) * 512 * 1024, f.ready[1], f.go[0], i == 0);
    }
    f.children.push_back(c);
  }
  ::close(memfd);
  ::close(f.ready[1]);
  f.ready[1] = -1;
  for (int i = 0; i < kProcs + 1; ++i) {
    int pid = 0;
    ASSERT_EQ(::read(f.ready[0], &pid, sizeof pid), ssize_t(sizeof pid)) << "a worker did not start";
    f.pids.push_back(pid);
  }

  auto prof = find_profile("linux-6.18");
  ASSERT_TRUE(prof.ok());
  for (const auto& [k, v] : host_profile_overrides()) ASSERT_TRUE(apply_override(prof.value(), k, v).ok());
  live::host_proc_source src;
  live::host_pagemap_source pm;
  live::inspect_options o;
  o.pids = f.pids;
  o.keep_runs = true;
  auto in = live::inspect(o, prof.value(), src, pm);
  ASSERT_TRUE(in.ok()) << in.error().to_string();
  ASSERT_EQ(in->processes.size(), f.pids.size());
  EXPECT_TRUE(in->skipped.empty());

  const bytes window = prof->paging.pte().table_span();
  for (const live::process_inspection& p : in->processes) {
    SCOPED_TRACE("pid " + std::to_string(p.pid));
    ASSERT_GT(p.status.vmpte, 0u);
    EXPECT_LE(std::abs(double(p.residual)), 0.01 * double(p.status.vmpte))
        << "VmPTE " << p.status.vmpte << ", attributed " << p.attributed;
    double sum = 0;
    for (const live::vma_tables& vt : p.vmas) sum += vt.table_bytes;
    EXPECT_NEAR(sum, double(p.attributed), 1e-6 * double(p.attributed));
    // The memfd mapping of worker i needs one PTE table per 2 MiB window it touched
    // (unless this host maps shmem with huge pages).
    const bool grandchild = std::find(f.children.begin(), f.children.end(), p.pid) == f.children.end();
    for (const live::vma_tables& vt : p.vmas) {
      if (vt.vma.path.find("memfd:vmlab-inspect-test") == std::string::npos || vt.huge_entries) continue;
      const int i = int((vt.vma.start - kSegBase) / kGiB);
      const bytes touched = bytes(i + 1) * 6 * kMiB + 4096 * bytes(i);
      if (grandchild) {  // fork copies no tables of a shared mapping without anon_vma
        EXPECT_EQ(vt.present_pages, 0u);
        continue;
      }
      // Read faults map the cached pages around them too (do_fault_around(), up to
      // fault_around_bytes, never across a PTE table).
      const bytes around = std::max<bytes>(prof->fault_around_bytes, 4096);
      EXPECT_GE(vt.present_pages, touched / 4096);
      EXPECT_LE(vt.present_pages, (touched + around - 1) / around * around / 4096);
      EXPECT_DOUBLE_EQ(vt.tables[size_t(level::pte)], double((touched + window - 1) / window));
    }
  }
  // One segment: the memfd, in all eleven processes.
  auto seg = std::find_if(in->segments.begin(), in->segments.end(), [](const live::shared_segment& s) {
    return s.path.find("memfd:vmlab-inspect-test") != std::string::npos;
  });
  ASSERT_NE(seg, in->segments.end());
  EXPECT_EQ(seg->pids.size(), f.pids.size());
  EXPECT_EQ(seg->size, kSegment);

  // The what-if scenario of these processes, replayed by the sim: each process's VmPTE
  // within 2% of what inspect read (the whole process: its image is in the scenario).
  const inspected_scenario sc = inspection_scenario(in.value(), prof.value(), host_profile_overrides());
  ASSERT_EQ(sc.shared_objects.size(), 1u);  // the memfd (libraries are files, not segments)
  EXPECT_NE(sc.shared_objects[0].find("vmlab-inspect-test"), std::string::npos);
  auto ops = parse_scenario(sc.toml, "inspected");
  ASSERT_TRUE(ops.ok()) << ops.error().to_string();
  auto r = run_sim(ops.value());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_TRUE(r->failures.empty());
  const sample& end = r->samples.back();
  ASSERT_EQ(end.procs.size(), in->processes.size());
  for (size_t i = 0; i < in->processes.size(); ++i) {
    SCOPED_TRACE("pid " + std::to_string(in->processes[i].pid));
    const double real = double(in->processes[i].status.vmpte), sim = double(end.procs[i].vmpte);
    EXPECT_LE(std::abs(sim - real), 0.02 * real) << "sim " << sim << ", inspected " << real;
  }
}

TEST(InspectLive, NamedProcessThatDoesNotExistIsAnError) {
  auto prof = find_profile("linux-6.18");
  live::host_proc_source src;
  live::host_pagemap_source pm;
  live::inspect_options o;
  o.pids = {4194305};  // above PID_MAX_LIMIT: no such process can exist
  auto in = live::inspect(o, prof.value(), src, pm);
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.error().message(), "no process 4194305 on this host");
}

}  // namespace
}  // namespace vmlab
