#include "engine/live/host_activity.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

namespace vmlab::live {
namespace {

bool is_pid(const std::string& name) {
  return !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
}

std::string signed_kb(int64_t b) { return fmt::format("{:+} kB", b / 1024); }

}  // namespace

result<others_snapshot> read_others(proc_source& src, const std::set<int>& exclude, bool with_vmas) {
  auto names = src.list("/proc");
  if (!names.ok()) return names.error();
  others_snapshot out;
  out.with_vmas = with_vmas;
  for (const std::string& name : names.value()) {
    if (!is_pid(name)) continue;
    const int pid = static_cast<int>(std::strtol(name.c_str(), nullptr, 10));
    if (exclude.count(pid)) continue;
    // A process that exits meanwhile, or a kernel thread or zombie (no mm, no VmPTE line),
    // does not count: it holds no user page tables.
    auto st = read_status(src, pid);
    if (!st.ok()) continue;
    process_figures f;
    f.vmpte = st->vmpte;
    if (with_vmas) {
      auto v = read_vma_count(src, pid);
      if (!v.ok()) continue;
      f.vmas = v.value();
    }
    out.procs[pid] = f;
  }
  return out;
}

others_change compare_others(const others_snapshot& before, const others_snapshot& after, bytes pgd_bytes) {
  others_change c;
  for (const auto& [pid, a] : after.procs) {
    auto it = before.procs.find(pid);
    if (it == before.procs.end()) {
      ++c.started;
      c.vmpte += int64_t(a.vmpte);
      c.page_tables += int64_t(a.vmpte + pgd_bytes);
      c.vmas += int64_t(a.vmas);
      continue;
    }
    const process_figures& b = it->second;
    if (a.vmpte == b.vmpte && a.vmas == b.vmas) continue;
    ++c.changed;
    c.vmas_changed += a.vmas != b.vmas;
    c.vmpte += int64_t(a.vmpte) - int64_t(b.vmpte);
    c.page_tables += int64_t(a.vmpte) - int64_t(b.vmpte);
    c.vmas += int64_t(a.vmas) - int64_t(b.vmas);
  }
  for (const auto& [pid, b] : before.procs) {
    if (after.procs.count(pid)) continue;
    ++c.gone;
    c.vmpte -= int64_t(b.vmpte);
    c.page_tables -= int64_t(b.vmpte + pgd_bytes);
    c.vmas -= int64_t(b.vmas);
  }
  return c;
}

std::string others_change::describe() const {
  if (!any()) return "no other process changed";
  std::string who;
  auto add = [&](uint32_t n, const char* what) {
    if (n) who += fmt::format("{}{} {}", who.empty() ? "" : ", ", n, what);
  };
  add(started, started == 1 ? "other process started" : "other processes started");
  add(gone, "exited");
  add(changed, "changed");
  std::string what;
  if (vmpte) what += "VmPTE " + signed_kb(vmpte);
  if (vmas) what += fmt::format("{}VMAs {:+}", what.empty() ? "" : ", ", vmas);
  return what.empty() ? who : who + " (" + what + ")";
}

namespace {

// Writes `value` to a sysfs file; false if it cannot (no such file, not root).
bool write_sysfs(const char* path, const std::string& value) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, value.data(), value.size()) == ssize_t(value.size());
  ::close(fd);
  return ok;
}

// khugepaged's pid (the kernel thread of that name), 0 when it is not running (THP off).
// Looked up each time: the thread stops and a new one starts when THP is turned off and on.
int khugepaged_pid(proc_source& src) {
  auto names = src.list("/proc");
  if (!names.ok()) return 0;
  for (const std::string& name : names.value()) {
    if (!is_pid(name)) continue;
    auto comm = src.read("/proc/" + name + "/comm");
    if (comm.ok() && *comm == "khugepaged\n") return static_cast<int>(std::strtol(name.c_str(), nullptr, 10));
  }
  return 0;
}

// How many times the thread went to sleep of its own accord: khugepaged does at the end
// of each scan pass. 0 when it cannot be read.
uint64_t voluntary_switches(proc_source& src, int pid) {
  auto st = src.read("/proc/" + std::to_string(pid) + "/status");
  if (!st.ok()) return 0;
  const char* key = "\nvoluntary_ctxt_switches:";
  const size_t at = st->find(key);
  return at == std::string::npos ? 0 : std::strtoull(st->c_str() + at + std::strlen(key), nullptr, 10);
}

// Whether the thread sleeps where khugepaged waits between passes: its wchan is the
// thread function, into which 6.x inlines khugepaged_wait_work (or that function, where
// it is not inlined). A pass can also sleep part-way, and each such sleep is a voluntary
// switch too: lru_add_drain_all's flush at the start of every pass, a collapse's
// allocation in reclaim or compaction; its wchan then names that callee. true when wchan
// says nothing (no symbols for this reader: "0"), where the switch count alone decides.
bool between_passes(proc_source& src, int pid) {
  auto w = src.read("/proc/" + std::to_string(pid) + "/wchan");
  if (!w.ok()) return true;
  std::string_view at = *w;
  while (!at.empty() && std::isspace(static_cast<unsigned char>(at.back()))) at.remove_suffix(1);
  return at.empty() || at == "0" || at == "khugepaged" || at == "khugepaged_wait_work";
}

}  // namespace

void khugepaged_passes(proc_source& src, int n) {
  constexpr const char* kScanSleep = "/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs";
  const int pid = khugepaged_pid(src);
  auto sleep_ms = read_count(src, kScanSleep);
  if (!pid || !sleep_ms.ok()) return;
  for (int i = 0; i < n; ++i) {
    const uint64_t before = voluntary_switches(src, pid);
    if (!write_sysfs(kScanSleep, std::to_string(sleep_ms.value()))) return;
    for (int ms = 0; ms < 1000 && (voluntary_switches(src, pid) == before || !between_passes(src, pid)); ++ms)
      ::usleep(1000);
  }
}

void settle_deferred_frees() {
  host_proc_source host;
  // Two: a wake that finds khugepaged mid-pass is lost (the pass ends by setting its next
  // wake-up a full scan_sleep_millisecs ahead, over the wake's), and that pass's end looks
  // like the end of the one asked for. The second wake finds it asleep.
  khugepaged_passes(host, 2);
  cpu_set_t allowed;
  if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &allowed)) continue;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      if (::sched_setaffinity(0, sizeof one, &one) == 0) ::sched_yield();
    }
    (void)::sched_setaffinity(0, sizeof allowed, &allowed);
  }
  // Last, so that what khugepaged and the lazy-TLB switches let go through RCU is done too.
  (void)write_sysfs("/sys/module/rcutree/parameters/do_rcu_barrier", "1");
}

bytes host_pgd_page_table_bytes(proc_source& src) {
  auto rel = src.read("/proc/sys/kernel/osrelease");
  if (!rel.ok()) return 0;
  const char* p = rel->c_str();
  char* end = nullptr;
  const long major = std::strtol(p, &end, 10);
  const long minor = *end == '.' ? std::strtol(end + 1, nullptr, 10) : 0;
  if (major < 6 || (major == 6 && minor < 14)) return 0;
  auto m = src.read("/sys/devices/system/cpu/vulnerabilities/meltdown");
  const bool pti = m.ok() && m->find("PTI") != std::string::npos;
  return pti ? 8192 : 4096;
}

}  // namespace vmlab::live
