// run_live: the op stream on the host kernel. See live_engine.h for the method and the
// notes the result carries for what the measurement cannot isolate.
#include "engine/live/live_engine.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/live/driver.h"
#include "engine/live/procfs.h"
#include "engine/live/worker.h"
#include "model/profile.h"
#include "vmlab/sim_kernel.h"
#include "workload/pattern.h"
#include "workload/trace.h"

namespace vmlab {
namespace live {
namespace {

bool frees_memory(op_kind k) { return k == op_kind::exit || k == op_kind::munmap || k == op_kind::madvise; }

bytes sat_sub(bytes a, bytes b) { return a > b ? a - b : 0; }

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

std::string mib(bytes b) { return std::to_string((b + MiB - 1) / MiB); }

int host_prot(uint8_t p) { return ((p & prot_read) ? PROT_READ : 0) | ((p & prot_write) ? PROT_WRITE : 0); }

status stat_refresh() {
  int fd = ::open("/proc/sys/vm/stat_refresh", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return status::io_error("cannot open /proc/sys/vm/stat_refresh: " + errno_text(errno));
  ssize_t n = ::write(fd, "1\n", 2);
  const int e = errno;
  ::close(fd);
  // EINVAL: the kernel found a negative per-CPU counter and said so in dmesg; the
  // counters were folded all the same.
  if (n < 0 && e != EINVAL) return status::io_error("cannot write /proc/sys/vm/stat_refresh: " + errno_text(e));
  return {};
}

double cpu_seconds() {
  rusage self{}, kids{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &kids);
  auto sec = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  return sec(self.ru_utime) + sec(self.ru_stime) + sec(kids.ru_utime) + sec(kids.ru_stime);
}

class live_run {
 public:
  live_run(const op_stream& s, sim_kernel& shadow, driver& d, proc_source& src)
      : s_(s), shadow_(shadow), d_(d), src_(src) {}

  result<run_result> run() {
    r_.engine = "live";
    r_.scenario = s_.source;
    r_.profile = shadow_.profile().name;
    // Before anything exists: the host's page tables without the workload.
    auto before = settled_page_tables();
    if (!before.ok()) return before.error();
    pt_before_ = before.value();
    auto self = read_self_vmpte();
    if (!self.ok()) return self.error();
    self_before_ = self.value();
    if (status st = d_.create_objects(s_.objects); !st.ok()) return st;
    for (size_t i = 0; i < s_.ops.size(); ++i) {
      if (d_.interrupted()) return d_.sleep_ms(0);  // the interrupted status
      bool stop = false;
      if (status st = step(i, s_.ops[i], stop); !st.ok()) return st;
      if (stop) break;
      ++r_.ops_applied;
    }
    sample end;
    if (status st = take_sample("end", r_.ops_applied, end); !st.ok()) return st;
    note_peaks(end);
    r_.faults = faults_exited_;
    for (const auto& p : end.procs) r_.faults += p.min_flt;
    r_.samples.push_back(std::move(end));
    add_notes();
    return std::move(r_);
  }

 private:
  // Records an op failure and stops the run, as the sim engine does.
  status fail(size_t i, const op& o, const std::string& error, bool& stop) {
    r_.failures.push_back({i, format_op(s_, o), error});
    stop = true;
    return {};
  }
  // The model refused the op: a malformed stream is an error, a kernel refusal a failure.
  status model_refused(size_t i, const op& o, const status& st, bool& stop) {
    if (st.code() == status_code::invalid_argument) return st;
    return fail(i, o, st.message() + " (predicted by the model; not attempted on the host)", stop);
  }
  // A driver error: a dead worker is an op failure, anything else ends the run.
  status host_error(size_t i, const op& o, const status& st, bool& stop) {
    if (d_.interrupted()) return st;
    if (d_.died()) return fail(i, o, st.message(), stop);
    return st;
  }

  status step(size_t i, const op& o, bool& stop) {
    if (frees_memory(o.kind) && grown_) {
      // Peaks: memory only falls at these ops, so a reading now catches every maximum.
      sample probe;
      if (status st = take_sample("", i, probe); !st.ok()) return st;
      note_peaks(probe);
      grown_ = false;
    }
    const vaddr base = shadow_.map_addr(o.pid, o.map);
    if (o.kind == op_kind::exit) {
      // The exiting process's faults, before it takes them with it.
      auto it = d_.workers().find(o.pid);
      if (it != d_.workers().end()) {
        auto mf = read_minflt(src_, it->second.host);
        if (!mf.ok()) return mf.error();
        faults_exited_ += sat_sub(mf.value(), it->second.minflt0);
      }
    }
    if (o.kind == op_kind::mmap) return do_mmap(i, o, stop);
    if (status st = apply_op(shadow_, o); !st.ok()) return model_refused(i, o, st, stop);

    int err = 0;
    status st;
    reply rep;
    command c;
    c.addr = base + o.off;
    c.len = o.len;
    switch (o.kind) {
      case op_kind::spawn: st = d_.spawn(o.pid, &err); grown_ = true; break;
      case op_kind::fork: st = d_.fork(o.pid, o.child, &err); grown_ = true; break;
      case op_kind::exit: st = d_.exit(o.pid); break;
      case op_kind::munmap:
        c.kind = cmd_kind::munmap;
        st = d_.call(o.pid, c, rep);
        err = rep.err;
        break;
      case op_kind::mprotect:
        c.kind = cmd_kind::mprotect;
        c.prot = static_cast<uint32_t>(host_prot(o.prot));
        st = d_.call(o.pid, c, rep);
        err = rep.err;
        break;
      case op_kind::madvise:
        c.kind = cmd_kind::dontneed;
        st = d_.call(o.pid, c, rep);
        err = rep.err;
        break;
      case op_kind::touch:
        grown_ = true;
        if (o.pattern == touch_pattern::all || o.pattern == touch_pattern::stride) {
          c.kind = cmd_kind::touch_range;
          c.stride = o.pattern == touch_pattern::all ? 4096 : std::max<bytes>(o.stride, 1);
          c.write = o.write;
          st = d_.call(o.pid, c, rep);
        } else {
          st = d_.touch_pages(o.pid, base, touch_page_list(o), o.write, rep);
        }
        err = rep.err;
        break;
      case op_kind::phase: {
        sample smp;
        if (status ss = take_sample(o.name, i + 1, smp); !ss.ok()) return ss;
        note_peaks(smp);
        r_.samples.push_back(std::move(smp));
        break;
      }
      case op_kind::mmap: break;  // above
    }
    if (!st.ok()) return host_error(i, o, st, stop);
    if (err) return fail(i, o, errno_text(err), stop);
    return {};
  }

  status do_mmap(size_t i, const op& o, bool& stop) {
    auto a = shadow_.mmap(o);
    if (!a.ok()) return model_refused(i, o, a.error(), stop);
    command c;
    c.kind = cmd_kind::mmap;
    c.addr = a.value();
    c.len = o.len;
    c.prot = static_cast<uint32_t>(host_prot(o.prot));
    c.map_flags = (o.shared ? MAP_SHARED : MAP_PRIVATE) | (o.object < 0 ? MAP_ANONYMOUS : 0) | (o.locked ? MAP_LOCKED : 0);
    c.fd = o.object < 0 ? -1 : d_.object_fd(o.object);
    c.off = o.object < 0 ? 0 : o.obj_off;
    reply rep;
    if (status st = d_.call(o.pid, c, rep); !st.ok()) return host_error(i, o, st, stop);
    grown_ = grown_ || o.locked;
    if (rep.err == EEXIST) {
      auto it = d_.workers().find(o.pid);
      return status::io_error("address range [" + hex(c.addr) + ", " + hex(c.addr + c.len) +
                              ") is in use on the host (mmap EEXIST in host pid " +
                              std::to_string(it == d_.workers().end() ? -1 : it->second.host) + ", op " +
                              std::to_string(i) + ": " + format_op(s_, o) +
                              "): the live engine maps the workload where the model places it");
    }
    if (rep.err) return fail(i, o, errno_text(rep.err), stop);
    return {};
  }

  // PageTables once the per-CPU deltas are folded and the RCU-deferred frees of our own
  // page tables have landed. Allocation is synchronous, so only frees lag: wait for a
  // grace period (membarrier GLOBAL is synchronize_rcu()), then read every ~20 ms until
  // the figure stops falling (on a quiet host: two equal readings), at most ~1 s. Other
  // processes on a busy host move the figure all the time, so "stops falling" rather than
  // "stands still" keeps a reading from always taking the full second.
  result<bytes> settled_page_tables() {
    auto read = [&]() -> result<bytes> {
      if (status st = stat_refresh(); !st.ok()) return st;
      auto mi = read_meminfo(src_);
      if (!mi.ok()) return mi.error();
      return mi->page_tables;
    };
    ::syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);  // best effort: ENOSYS/EINVAL are fine
    auto prev = read();
    if (!prev.ok()) return prev;
    for (int n = 0; n < 50; ++n) {
      if (status st = d_.sleep_ms(20); !st.ok()) return st;
      auto cur = read();
      if (!cur.ok()) return cur;
      if (cur.value() >= prev.value()) return cur;
      prev = cur;
    }
    unsettled_ = true;
    return prev;
  }

  status take_sample(const std::string& name, uint64_t op_index, sample& out) {
    auto pt = settled_page_tables();
    if (!pt.ok()) return pt.error();
    out.name = name;
    out.op_index = op_index;
    out.page_tables = pt.value();
    out.pt_pages_known = false;
    bytes baselines = 0;
    for (const auto& [pid, w] : d_.workers()) {
      auto st = read_status(src_, w.host);
      if (!st.ok()) return st.error();
      auto mf = read_minflt(src_, w.host);
      if (!mf.ok()) return mf.error();
      proc_sample p;
      p.pid = pid;
      p.vmpte = st->vmpte;
      p.vmpte_workload = sat_sub(st->vmpte, w.base.vmpte);
      p.rss_anon = sat_sub(st->rss_anon, w.base.rss_anon);
      p.rss_file = sat_sub(st->rss_file, w.base.rss_file);
      p.rss_shmem = sat_sub(st->rss_shmem, w.base.rss_shmem);
      p.min_flt = sat_sub(mf.value(), w.minflt0);
      baselines += w.base.vmpte;
      out.procs.push_back(p);
    }
    out.nr_procs = out.procs.size();
    // The driver's own page tables (its heap grows with the shadow and the results).
    auto self = read_self_vmpte();
    if (!self.ok()) return self.error();
    const bytes self_growth = sat_sub(self.value(), self_before_);
    if (pt_before_ + baselines + self_growth > out.page_tables) clamped_ = true;
    out.page_tables_workload = sat_sub(out.page_tables, pt_before_ + baselines + self_growth);
    return {};
  }

  result<bytes> read_self_vmpte() {
    auto st = read_status(src_, static_cast<int>(::getpid()));
    if (!st.ok()) return st.error();
    return st->vmpte;
  }

  void note_peaks(const sample& smp) {
    peaks& pk = r_.peak;
    pk.page_tables = std::max(pk.page_tables, smp.page_tables);
    pk.page_tables_workload = std::max(pk.page_tables_workload, smp.page_tables_workload);
    for (const auto& p : smp.procs) pk.vmpte_max_proc = std::max(pk.vmpte_max_proc, p.vmpte_workload);
  }

  void add_notes() {
    auto& n = r_.notes;
    n.push_back("page_tables_workload = PageTables now - PageTables before the run - the baseline VmPTE of each live "
                "worker - the growth of the driver's own VmPTE; it includes each worker's PGD (as the model does), and any page-table activity of other "
                "processes on the host during the run");
    n.push_back("vmpte_workload = VmPTE - the worker's VmPTE when it was spawned (its copy of the driver's address "
                "space); a forked child's baseline is the VmPTE of a probe child forked from its spawned ancestor "
                "before any workload op (what fork copies of the runtime)");
    n.push_back("rss_* are RssAnon/RssFile/RssShmem minus the same baselines (the worker's own stack, buffer and "
                "libraries)");
    n.push_back("min_flt includes the few faults a worker takes outside workload ops (its control loop); pages that "
                "MAP_LOCKED populates are faulted through GUP and not counted in minflt");
    n.push_back("peaks are readings at each phase, before each exit/munmap/madvise and at the end, not at every "
                "allocation; vmpte_max_proc is the largest vmpte_workload");
    n.push_back("page-table pages per level are not observable on the host (pt_pages_known = false)");
    n.push_back("workers run with PR_SET_THP_DISABLE and MADV_NOHUGEPAGE on every workload mapping");
    if (unsettled_) n.push_back("PageTables kept falling for 1 s at some reading (other activity on the host?)");
    if (clamped_) n.push_back("PageTables fell below the run's starting point at some reading: host activity freed page tables; page_tables_workload was clamped at 0");
  }

  const op_stream& s_;
  sim_kernel& shadow_;
  driver& d_;
  proc_source& src_;
  run_result r_;
  bytes pt_before_ = 0;
  bytes self_before_ = 0;  // the driver's VmPTE when pt_before_ was read
  uint64_t faults_exited_ = 0;
  bool grown_ = false;
  bool unsettled_ = false;
  bool clamped_ = false;
};

}  // namespace

result<bytes> estimate_peak_memory(const op_stream& s) {
  auto kr = sim_kernel::create(s.machine, s.objects);
  if (!kr.ok()) return kr.error();
  sim_kernel& k = *kr.value();
  bytes objects = 0;
  for (const auto& o : s.objects) objects += round_up(o.size, 4096);
  bytes most = 0;
  auto measure = [&] {
    const sample smp = k.snapshot("");
    bytes anon = 0, cache = 0;
    for (const auto& p : smp.procs) {
      anon += p.rss_anon * 4096;  // COW-shared pages count once per process: an upper bound
      cache += (p.rss_file + p.rss_shmem) * 4096;
    }
    most = std::max(most, anon + std::min(cache, objects));
  };
  for (const op& o : s.ops) {
    if (frees_memory(o.kind)) measure();
    if (status st = apply_op(k, o); !st.ok()) {
      if (st.code() == status_code::invalid_argument) return st;
      break;  // the live run stops here too
    }
  }
  measure();
  return most + k.peak().page_tables;
}

}  // namespace live

result<run_result> run_live(const op_stream& s, const live_options& opt) {
#if !defined(__linux__) || !defined(__x86_64__)
  (void)s;
  (void)opt;
  return status::not_supported("the live engine runs only on Linux x86-64 hosts");
#else
  using namespace live;
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = cpu_seconds();
  auto kr = sim_kernel::create(s.machine, s.objects);
  if (!kr.ok()) return kr.error();
  sim_kernel& shadow = *kr.value();
  const kernel_profile& prof = shadow.profile();
  if (prof.paging.name != "x86-64-4level")
    return status::not_supported("profile '" + prof.name + "' uses " + prof.paging.name +
                                 " paging; the live engine runs only x86-64-4level profiles on this x86-64 host");
  if (::geteuid() != 0)
    return status::not_supported("the live engine needs root: it writes /proc/sys/vm/stat_refresh to fold the "
                                 "per-CPU counters into /proc/meminfo before every reading");
  host_proc_source src;
  auto mi = read_meminfo(src);
  if (!mi.ok()) return mi.error();
  if (!mi->has_page_tables) return status::not_supported("/proc/meminfo has no PageTables line");
  if (status st = stat_refresh(); !st.ok()) return status::not_supported(st.message());
  auto need = estimate_peak_memory(s);
  if (!need.ok()) return need.error();
  const bytes limit = opt.max_memory ? opt.max_memory : (mi->has_mem_available ? mi->mem_available : mi->mem_total) / 2;
  if (need.value() > limit)
    return status::invalid_argument("scenario needs ~" + mib(need.value()) + " MiB, more than --max-memory " +
                                    mib(limit) + " MiB" + (opt.max_memory ? "" : " (half of MemAvailable)"));

  signal_guard sig;
  if (status st = sig.install(); !st.ok()) return st;
  result<run_result> r = status::io_error("live run did not start");
  {
    driver d(src, sig);
    live_run run(s, shadow, d, src);
    r = run.run();
    d.shutdown();  // kill and reap every worker, remove every object, before the handlers go
  }
  if (!r.ok()) return r;
  r->wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r->cpu_seconds = cpu_seconds() - c0;
  return r;
#endif
}

std::vector<std::pair<std::string, std::string>> host_profile_overrides() {
  live::host_proc_source src;
  auto t = src.read("/sys/devices/system/cpu/vulnerabilities/meltdown");
  if (!t.ok()) return {};
  const std::string& v = t.value();
  // "Not affected": no PTI. "Mitigation: PTI": PTI on. "Vulnerable": PTI off (nopti).
  if (v.rfind("Not affected", 0) == 0 || v.rfind("Vulnerable", 0) == 0) return {{"pti", "false"}};
  return {{"pti", "true"}};
}

}  // namespace vmlab
