// End-to-end scale check: 64 processes each map and touch all of one 16 GiB shm segment
// on a 64 GiB linux-6.18 machine. That is 2 GiB of simulated page tables; vmlab must hold
// them in < 64 MiB of host memory (DESIGN.md, "simulate the metadata, not the data").
//
// Prints wall time, the simulated PageTables, sim_kernel::host_bytes(), and the host
// process's peak RSS (getrusage ru_maxrss and VmHWM from /proc/self/status). Exit status:
// 0 when the figures are exact and the host peak is under the target, 1 otherwise.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "vmlab/sim_kernel.h"

namespace {

using namespace vmlab;

constexpr uint32_t kProcs = 64;
constexpr bytes kSegment = 16 * GiB;
constexpr bytes kMachine = 64 * GiB;
constexpr bytes kTargetHost = 64 * MiB;

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

int main() {
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
  for (uint32_t pid = 1; pid <= kProcs; ++pid) {
    op o;
    o.kind = op_kind::mmap;
    o.pid = pid;
    o.map = 0;
    o.object = 0;
    o.shared = true;
    o.len = kSegment;
    o.align = 1 * GiB;  // as a database SGA: no straddling tables
    status s = k->spawn(pid);
    auto a = s.ok() ? k->mmap(o) : result<vaddr>(s);
    if (a.ok()) s = k->touch(pid, 0, 0, kSegment, 4096, false);
    if (!a.ok() || !s.ok()) {
      std::fprintf(stderr, "pid %u: %s\n", pid, (a.ok() ? s : a.error()).to_string().c_str());
      return 1;
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const sample s = k->snapshot("end");

  // Expected, from the x86-64 4-level format: 16 GiB / 2 MiB = 8192 PTE pages,
  // 16 GiB / 1 GiB = 16 PMD pages, 1 PUD page per process; 6.18 PageTables also counts the
  // 8 KiB PTI PGD.
  const uint64_t pte = kSegment / (2 * MiB), pmd = kSegment / GiB, pud = 1;
  const bytes tables = uint64_t{kProcs} * (pte + pmd + pud) * 4096;
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
  std::printf("  simulated tables below the PGD %10llu bytes = %.2f MiB  (64 x (8192 PTE + 16 PMD + 1 PUD) x 4 KiB)\n",
              static_cast<unsigned long long>(tables), mib(tables));
  std::printf("  simulated PageTables           %10llu bytes = %.2f MiB  (expected %llu: + 64 x 8 KiB PTI PGD)\n",
              static_cast<unsigned long long>(s.page_tables), mib(s.page_tables),
              static_cast<unsigned long long>(expect_page_tables));
  std::printf("  sim_kernel::host_bytes()       %10llu bytes = %.2f MiB\n", static_cast<unsigned long long>(k->host_bytes()),
              mib(k->host_bytes()));
  std::printf("  host peak RSS (ru_maxrss)      %10llu bytes = %.2f MiB\n", static_cast<unsigned long long>(maxrss), mib(maxrss));
  std::printf("  host peak RSS (VmHWM)          %10llu bytes = %.2f MiB\n", static_cast<unsigned long long>(hwm), mib(hwm));
  std::printf("  ratio simulated / host peak    %10.1f x\n", static_cast<double>(s.page_tables) / static_cast<double>(host_peak));

  int rc = 0;
  if (s.page_tables != expect_page_tables || s.pt_pages[4] != kProcs * pte || s.pt_pages[3] != kProcs * pmd ||
      s.pt_pages[2] != kProcs * pud) {
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
  return rc;
}
