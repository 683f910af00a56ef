// End-to-end scale check: N processes each map and touch all of one shm segment on a
// linux-6.18 machine, and the host memory that costs vmlab.
//
//   vmlab_scale                         64 x 16 GiB on 64 GiB (issue 2's target: < 64 MiB)
//   vmlab_scale PROCS SEGMENT_GIB [HOST_MIB [SECONDS]]
//                                       e.g. 1500 300 1024 10 (issue 11: the mshare SGA)
//
// Prints wall time, the simulated PageTables against the closed form, sim_kernel::
// host_bytes(), and the host process's peak RSS (getrusage ru_maxrss and VmHWM). Exit
// status: 0 when the figures are exact and the host peak (and, when given, the wall time)
// is under its target, 1 otherwise.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "vmlab/op_builder.h"
#include "vmlab/sim_kernel.h"

namespace {

using namespace vmlab;


// VmHWM from /proc/self/status, in bytes (0 if unavailable).
bytes vm_hwm() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * KiB;
  return 0;
}

double mib(bytes b) { return static_cast<double>(b) / static_cast<double>(MiB); }

}  // namespace

int main(int argc, char** argv) {
  const uint32_t kProcs = argc > 1 ? uint32_t(std::stoul(argv[1])) : 64;
  const bytes kSegment = (argc > 2 ? std::stoull(argv[2]) : 16) * GiB;
  const bytes kTargetHost = (argc > 3 ? std::stoull(argv[3]) : 64) * MiB;
  const double kTargetSeconds = argc > 4 ? std::stod(argv[4]) : 0;
  // A machine that holds the page tables (4 KiB of them per 2 MiB per process) with the
  // segment, rounded up to a power of two as real machines come.
  bytes kMachine = 64 * GiB;
  while (kMachine < kSegment + uint64_t{kProcs} * (kSegment / 512) + 8 * GiB) kMachine *= 2;
  const auto t0 = std::chrono::steady_clock::now();
  machine_decl m;
  m.profile = "linux-6.18";
  m.memory = kMachine;
  auto r = sim_kernel::create(m, {{"sga", object_kind::shm, kSegment}});
  if (!r.ok()) {
    std::fprintf(stderr, "create: %s\n", r.error().to_string().c_str());
    return 1;
  }
  std::unique_ptr<sim_kernel> k = std::move(r.value());
  uint64_t pud = 0;  // PUD pages: the 512 GiB spans each mapping crosses
  for (uint32_t pid = 1; pid <= kProcs; ++pid) {
    status s = k->spawn(pid);
    // As a database SGA: aligned to 1 GiB, so that no table straddles the segment's ends.
    auto a = s.ok() ? k->mmap(ops::mmap_object(pid, 0, 0, kSegment).shared().align(1 * GiB)) : result<vaddr>(s);
    if (a.ok()) s = k->touch(pid, 0, 0, kSegment, 4096, false);
    if (!a.ok() || !s.ok()) {
      std::fprintf(stderr, "pid %u: %s\n", pid, (a.ok() ? s : a.error()).to_string().c_str());
      return 1;
    }
    pud += (a.value() + kSegment - 1) / (512 * GiB) - a.value() / (512 * GiB) + 1;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const sample s = k->snapshot("end");

  // Expected, from the x86-64 4-level format: SEGMENT / 2 MiB PTE pages and SEGMENT / 1 GiB
  // PMD pages per process, the PUD pages counted above; 6.18 PageTables also counts the
  // 8 KiB PTI PGD. Faults: the first process reads every page in (one fault each, nothing
  // cached around it), the others map 64 KiB fault-around windows of cached pages.
  const uint64_t pte = kSegment / (2 * MiB), pmd = kSegment / GiB;
  const bytes tables = (uint64_t{kProcs} * (pte + pmd) + pud) * 4096;
  const bytes expect_page_tables = tables + uint64_t{kProcs} * 8192;
  const uint64_t expect_faults = kSegment / 4096 + (kProcs - 1) * (kSegment / (64 * KiB));

  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const bytes maxrss = static_cast<bytes>(ru.ru_maxrss) * KiB;
  const bytes hwm = vm_hwm();
  const bytes host_peak = std::max(maxrss, hwm);

  std::printf("vmlab scale: %u processes x %llu GiB shm segment, every page touched (linux-6.18, %llu GiB machine)\n",
              kProcs, static_cast<unsigned long long>(kSegment / GiB), static_cast<unsigned long long>(kMachine / GiB));
  std::printf("  wall time                      %10.3f s\n", wall);
  std::printf("  page faults                    %10llu (expected %llu)\n", static_cast<unsigned long long>(k->faults()),
              static_cast<unsigned long long>(expect_faults));
  std::printf("  page-table pages (pgd,p4d,pud,pmd,pte) %llu,%llu,%llu,%llu,%llu\n",
              static_cast<unsigned long long>(s.pt_pages[0]), static_cast<unsigned long long>(s.pt_pages[1]),
              static_cast<unsigned long long>(s.pt_pages[2]), static_cast<unsigned long long>(s.pt_pages[3]),
              static_cast<unsigned long long>(s.pt_pages[4]));
  std::printf("  simulated tables below the PGD %10llu bytes = %.2f MiB  (N x (SEGMENT/2 MiB PTE + SEGMENT/1 GiB PMD) + PUDs, x 4 KiB)\n",
              static_cast<unsigned long long>(tables), mib(tables));
  std::printf("  simulated PageTables           %10llu bytes = %.2f MiB  (expected %llu: + N x 8 KiB PTI PGD)\n",
              static_cast<unsigned long long>(s.page_tables), mib(s.page_tables),
              static_cast<unsigned long long>(expect_page_tables));
  std::printf("  sim_kernel::host_bytes()       %10llu bytes = %.2f MiB\n", static_cast<unsigned long long>(k->host_bytes()),
              mib(k->host_bytes()));
  std::printf("  host peak RSS (ru_maxrss)      %10llu bytes = %.2f MiB\n", static_cast<unsigned long long>(maxrss), mib(maxrss));
  std::printf("  host peak RSS (VmHWM)          %10llu bytes = %.2f MiB\n", static_cast<unsigned long long>(hwm), mib(hwm));
  std::printf("  ratio simulated / host peak    %10.1f x\n", static_cast<double>(s.page_tables) / static_cast<double>(host_peak));

  int rc = 0;
  if (s.page_tables != expect_page_tables || s.pt_pages[4] != kProcs * pte || s.pt_pages[3] != kProcs * pmd ||
      s.pt_pages[2] != pud) {
    std::printf("FAIL: simulated page-table figures differ from the expected ones\n");
    rc = 1;
  }
  if (k->faults() != expect_faults) {
    std::printf("FAIL: fault count differs from the expected one\n");
    rc = 1;
  }
  if (host_peak >= kTargetHost) {
    std::printf("FAIL: host peak RSS %.2f MiB is not under the %.0f MiB target\n", mib(host_peak), mib(kTargetHost));
    rc = 1;
  } else {
    std::printf("OK: host peak RSS %.2f MiB < %.0f MiB target\n", mib(host_peak), mib(kTargetHost));
  }
  if (kTargetSeconds > 0) {
    std::printf("%s: wall time %.3f s %s %.0f s target\n", wall < kTargetSeconds ? "OK" : "FAIL", wall,
                wall < kTargetSeconds ? "<" : "is not under the", kTargetSeconds);
    if (wall >= kTargetSeconds) rc = 1;
  }
  return rc;
}
