// run_live: the op stream on the host kernel. See live_engine.h for the method and the
// notes the result carries for what the measurement cannot isolate.
#include "engine/live/live_engine.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fcntl.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include "engine/engine.h"
#include "engine/live/driver.h"
#include "engine/live/host_activity.h"
#include "engine/live/host_huge.h"
#include "engine/live/host_state.h"
#include "engine/live/procfs.h"
#include "engine/live/worker.h"
#include "model/profile.h"
#include "vmlab/sim_kernel.h"
#include "workload/pattern.h"
#include "workload/trace.h"

namespace vmlab {
namespace live {
namespace {

bool frees_memory(op_kind k) {
  return k == op_kind::exit || k == op_kind::munmap || k == op_kind::madvise || k == op_kind::mremap ||
         k == op_kind::remap_file_pages;
}

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

// The slab caches of the rmap and VMA objects that the live engine reads (issue 3).
const std::vector<std::string>& slab_caches() {
  static const std::vector<std::string> v = {"vm_area_struct", "anon_vma", "anon_vma_chain", "mm_struct"};
  return v;
}

// kmem_cache_shrink() through sysfs: flushes every CPU's slab, partial slabs and sheaves
// back to the node lists, so that slabinfo's active_objs (total minus the free objects on
// the node partial lists) counts the objects in use and not the free ones per-CPU caches
// hold. False when the file cannot be written.
bool flush_slab_cache(const std::string& cache) {
  const std::string path = "/sys/kernel/slab/" + cache + "/shrink";
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, "1\n", 2) == 2;
  ::close(fd);
  return ok;
}

// One reading of the slab caches, with the driver's own VMA count at that moment.
struct slab_reading {
  std::vector<slab_row> rows;  // slab_caches(), in that order
  uint64_t self_vmas = 0;      // VMAs of the driver (its heap and malloc mappings come and go)
  others_snapshot others;      // every other process (not the workers, not the driver), with VMAs
  std::string busy;            // the rows never held still: why, else ""
};

// Objects per cache: `now` minus `then`, signed; vm_area_struct without the change in the
// driver's own VMAs.
std::vector<int64_t> object_growth(const slab_reading& now, const slab_reading& then) {
  std::vector<int64_t> d(now.rows.size());
  for (size_t i = 0; i < now.rows.size() && i < then.rows.size(); ++i) {
    d[i] = int64_t(now.rows[i].active_objs) - int64_t(then.rows[i].active_objs);
    if (now.rows[i].name == "vm_area_struct") d[i] -= int64_t(now.self_vmas) - int64_t(then.self_vmas);
  }
  return d;
}

uint64_t clamp0(int64_t v) { return v > 0 ? uint64_t(v) : 0; }

double cpu_seconds() {
  rusage self{}, kids{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &kids);
  auto sec = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  return sec(self.ru_utime) + sec(self.ru_stime) + sec(kids.ru_utime) + sec(kids.ru_stime);
}

// The ids of the notes a live result carries (run_result.h: note).
namespace note_id {
constexpr const char* page_tables = "live.page_tables";
constexpr const char* vmpte = "live.vmpte";
constexpr const char* rss = "live.rss";
constexpr const char* min_flt = "live.min_flt";
constexpr const char* peaks = "live.peaks";
constexpr const char* pt_levels = "live.pt_levels";
constexpr const char* thp = "live.thp";
constexpr const char* slabs = "live.slabs";
constexpr const char* slabs_workload = "live.slabs_workload";
constexpr const char* slabs_crosscheck = "live.slabs_crosscheck";
constexpr const char* others = "live.others";
constexpr const char* page_tables_busy = "live.page_tables_busy";
constexpr const char* settle = "live.settle";
constexpr const char* slabs_busy = "live.slabs_busy";
constexpr const char* slabs_unavailable = "live.slabs_unavailable";
constexpr const char* image_stopped = "live.image_stopped";
constexpr const char* no_image = "live.no_image";
constexpr const char* unflushed = "live.unflushed";
constexpr const char* slabs_clamped = "live.slabs_clamped";
constexpr const char* clamped = "live.clamped";
}  // namespace note_id

// One reading of PageTables and of every other process's page tables, taken between two
// equal PageTables readings so that the two belong together.
struct pt_reading {
  bytes page_tables = 0;
  others_snapshot others;
  std::string busy;  // "" when the reading is a measurement; else why not, with the evidence
};

// How long a PageTables reading must hold still (live_run::read_page_tables).
struct pt_window {
  int interval_ms = 20;  // between readings
  int readings = 2;      // with the same residual, in a row
};

class live_run {
 public:
  live_run(const op_stream& s, sim_kernel& shadow, driver& d, proc_source& src, const live_options& opt)
      : s_(s), shadow_(shadow), d_(d), src_(src), opt_(opt), pgd_bytes_(host_pgd_page_table_bytes(src)) {}

  // The notes of what an earlier, killed run left behind and this run undid.
  void add_recovered(const recovery& rec) {
    for (const auto& line : rec.done) recovered_.push_back(line);
    for (const auto& line : rec.failed) recovered_.push_back("could not undo: " + line);
  }

  result<run_result> run() {
    r_.engine = "live";
    r_.scenario = s_.source;
    r_.process_image = s_.has_process_image();
    r_.profile = shadow_.profile().name;
    std::vector<bytes> huge_sizes;
    const auto sizes = hugetlb_page_sizes(shadow_.profile());
    for (const auto& o : s_.objects)
      huge_sizes.push_back(o.kind != object_kind::hugetlb ? 0 : o.page_size ? o.page_size : sizes.front());
    if (status st = d_.create_objects(s_.objects, huge_sizes, opt_.file_dir); !st.ok()) return st;
    if (status st = d_.start_zygote(); !st.ok()) return st;
    // The slab caches: readable here, and what the workers' own images cost them.
    if (status st = start_slabs(); !st.ok()) return st;
    // Before any workload process exists: the host's page tables and slabs without the
    // workload (the idle zygote included).
    settle_deferred_frees();
    auto before = read_page_tables({.interval_ms = 100, .readings = 3});
    if (!before.ok()) return before.error();
    pt_base_ = std::move(before.value());
    if (slabs_on_) {
      auto sb = settled_slabs();
      if (!sb.ok()) return sb.error();
      slab_base_ = std::move(sb.value());
    }
    for (size_t i = 0; i < s_.ops.size(); ++i) {
      if (d_.interrupted()) return d_.sleep_ms(0);  // the interrupted status
      status st = step(i, s_.ops[i]);
      // The kernel (the model, or the host's) refused the op: a finding, and the end of the run.
      if (st.code() == status_code::refused) {
        r_.failures.push_back({i, format_op(s_, s_.ops[i]), st.message(), answer_});
        break;
      }
      if (!st.ok()) return st;
      ++r_.ops_applied;
    }
    sample end;
    if (status st = take_sample("end", r_.ops_applied, end, true); !st.ok()) return st;
    note_peaks(end);
    r_.faults = faults_exited_;
    for (const auto& p : end.procs) r_.faults += p.min_flt;
    r_.samples.push_back(std::move(end));
    add_notes();
    return std::move(r_);
  }

 private:
  // A driver error: interrupted stays so; a dead worker is the op's failure (the host
  // killed the process doing it); anything else ends the run.
  status host_error(const status& st) {
    if (d_.interrupted() || !d_.died()) return st;
    return status::refused(st.message());
  }

  status step(size_t i, const op& o) {
    answer_ = host_answer::refused;  // what a refusal from here on means, unless said otherwise
    if (frees_memory(o.kind) && grown_) {
      // Peaks: memory only falls at these ops, so a reading now catches every maximum.
      sample probe;
      if (status st = take_sample("", i, probe, false); !st.ok()) return st;
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
    if (o.kind == op_kind::mmap) return do_mmap(i, o);
    const bytes old_len = o.kind == op_kind::mremap ? shadow_.map_len(o.pid, o.map) : 0;
    if (status st = apply_op(shadow_, o); !st.ok()) {
      if (st.code() != status_code::refused) return st;
      // A fault the model answers with SIGBUS is safe to try: the worker catches it. The
      // host's own answer goes beside the model's (the run ends here either way).
      if (o.kind == op_kind::touch && st.message().rfind("SIGBUS", 0) == 0) return touch_expecting_sigbus(o, base, st);
      answer_ = host_answer::not_asked;
      return status::refused(st.message() + " (predicted by the model; not attempted on the host)");
    }

    int err = 0;
    status st;
    reply rep;
    command c;
    c.addr = base + o.off;
    c.len = o.len;
    switch (o.kind) {
      case op_kind::spawn: st = d_.spawn(o.pid, &err); grown_ = true; break;
      case op_kind::fork: st = d_.fork(o.pid, o.child, &err); grown_ = true; break;
      case op_kind::exit:
        st = d_.exit(o.pid);
        exited_ = true;
        break;
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
        c.kind = o.adv == advice::dontneed ? cmd_kind::dontneed : cmd_kind::advise;
        c.advice = o.adv == advice::hugepage ? cmd_advice::hugepage : cmd_advice::nohugepage;
        st = d_.call(o.pid, c, rep);
        err = rep.err;
        break;
      case op_kind::touch:
        st = touch_on_host(o, base, rep);
        err = rep.err;
        break;
      case op_kind::phase: {
        sample smp;
        if (status ss = take_sample(o.name, i + 1, smp, true); !ss.ok()) return ss;
        note_peaks(smp);
        r_.samples.push_back(std::move(smp));
        break;
      }
      case op_kind::read:
      case op_kind::readv:
      case op_kind::write:
        st = file_io_on_host(o, base, rep);
        err = rep.err;
        break;
      case op_kind::fsync:
        c.kind = cmd_kind::fsync;
        c.fd = d_.object_fd(o.object);
        st = d_.call(o.pid, c, rep);
        err = rep.err;
        break;
      case op_kind::msync:
        c.kind = cmd_kind::msync;
        st = d_.call(o.pid, c, rep);
        err = rep.err;
        break;
      case op_kind::mremap: {
        const vaddr to = shadow_.map_addr(o.pid, o.map);
        c.kind = cmd_kind::mremap;
        c.addr = base;
        c.len = old_len;
        c.off = o.len;
        c.stride = to == base ? 0 : to;
        c.prot = o.fixed ? 1 : 0;  // the op's own MREMAP_FIXED (worker.cc)
        st = d_.call(o.pid, c, rep);
        err = rep.err;
        grown_ = true;
        if (st.ok() && err == EEXIST && to != base)
          return status::io_error("address range [" + hex(to) + ", " + hex(to + o.len) +
                                  ") is in use on the host (mremap target, op " + std::to_string(i) + ": " +
                                  format_op(s_, o) + "): the live engine moves the mapping where the model moves it");
        break;
      }
      case op_kind::remap_file_pages:
        c.kind = cmd_kind::remap_file_pages;
        c.off = o.obj_off / shadow_.profile().paging.page_size();  // the syscall's pgoff: pages
        st = d_.call(o.pid, c, rep);
        err = rep.err;
        grown_ = true;
        break;
      case op_kind::mmap: break;  // above
      case op_kind::reclaim: break;  // refused before the run (run_live)
    }
    if (!st.ok()) return host_error(st);
    if (err) return status::refused(errno_text(err));
    if (is_process_op(o.kind)) ++epoch_;
    return {};
  }

  status touch_expecting_sigbus(const op& o, vaddr base, const status& model) {
    reply rep;
    status st = touch_on_host(o, base, rep);
    if (!st.ok()) return host_error(st);
    if (rep.err == kErrSigbus)
      return status::refused(model.message() + " (the host: SIGBUS as well, after " + std::to_string(rep.value) +
                             " of the op's touches)");
    if (rep.err) return status::refused(model.message() + " (the host: " + errno_text(rep.err) + " instead)");
    answer_ = host_answer::carried_out;
    return status::refused(model.message() + " (the model's prediction; the host completed the touch without SIGBUS)");
  }

  // The worker's touch of op `o` (a touch op) at `base`.
  status touch_on_host(const op& o, vaddr base, reply& rep) {
    grown_ = true;
    if (o.pattern == touch_pattern::all || o.pattern == touch_pattern::stride) {
      command c;
      c.addr = base + o.off;
      c.len = o.len;
      c.kind = cmd_kind::touch_range;
      c.stride = o.pattern == touch_pattern::all ? shadow_.profile().paging.page_size() : std::max<bytes>(o.stride, 1);
      c.write = o.write;
      return d_.call(o.pid, c, rep);
    }
    const bytes page = shadow_.profile().paging.page_size();
    return d_.touch_pages(o.pid, base, page, touch_page_list(o, page), o.write, rep);
  }

  // read/readv/write for real: pread/preadv/pwrite on the object's file into the mapping
  // the model placed at `base` (or the worker's own buffer), O_DIRECT when the op says.
  status file_io_on_host(const op& o, vaddr base, reply& rep) {
    grown_ = true;
    command c;
    c.kind = cmd_kind::file_io;
    c.fd = d_.object_fd(o.object);
    c.off = o.obj_off;
    c.len = o.len;
    c.write = o.kind == op_kind::write;
    c.prot = o.direct ? kFileIoDirect : 0;
    if (!o.buffer) return d_.call(o.pid, c, rep);
    if (o.kind != op_kind::readv) {
      c.addr = base + o.off;
      return d_.call(o.pid, c, rep);
    }
    const bytes iov = o.len / o.count, stride = o.stride ? o.stride : iov;
    std::vector<iovec> v(o.count);
    for (uint64_t i = 0; i < o.count; ++i) v[i] = {reinterpret_cast<void*>(base + o.off + i * stride), iov};
    c.count = static_cast<uint32_t>(o.count);
    return d_.call(o.pid, c, v.data(), v.size() * sizeof(iovec), rep);
  }

  status do_mmap(size_t i, const op& o) {
    auto a = shadow_.mmap(o);
    if (!a.ok()) {
      if (a.error().code() != status_code::refused) return a.error();
      answer_ = host_answer::not_asked;
      return status::refused(a.error().message() + " (predicted by the model; not attempted on the host)");
    }
    command c;
    c.kind = cmd_kind::mmap;
    c.addr = a.value();
    c.len = o.len;
    c.prot = static_cast<uint32_t>(host_prot(o.prot));
    c.map_flags = (o.shared ? MAP_SHARED : MAP_PRIVATE) | (o.object < 0 ? MAP_ANONYMOUS : 0) | (o.locked ? MAP_LOCKED : 0) |
                  (o.noreserve ? MAP_NORESERVE : 0);
    if (o.hugetlb) {
      const bytes size = o.page_size ? o.page_size : hugetlb_page_sizes(shadow_.profile()).front();
      c.map_flags |= MAP_HUGETLB | int32_t(unsigned(__builtin_ctzll(size)) << MAP_HUGE_SHIFT);
    }
    c.advice = !o.has_hint ? cmd_advice::none : o.hint == advice::hugepage ? cmd_advice::hugepage : cmd_advice::nohugepage;
    // The model's page cache holds 4 KiB pages. The host's may hold large folios (ext4
    // and xfs grow them in readahead), and a PMD-sized one is mapped by a PMD whatever the
    // THP policy (do_set_pmd), which the model does not do: VM_NOHUGEPAGE keeps the host's
    // regular-file mappings on PTEs, as it keeps the model's (docs/decisions.md).
    if (o.object >= 0 && s_.objects[size_t(o.object)].kind == object_kind::file && !o.has_hint)
      c.advice = cmd_advice::nohugepage;
    c.fd = o.object < 0 ? -1 : d_.object_fd(o.object);
    c.off = o.object < 0 ? 0 : o.obj_off;
    reply rep;
    if (status st = d_.call(o.pid, c, rep); !st.ok()) return host_error(st);
    grown_ = grown_ || o.locked;
    if (rep.err == EEXIST) {
      auto it = d_.workers().find(o.pid);
      return status::io_error("address range [" + hex(c.addr) + ", " + hex(c.addr + c.len) +
                              ") is in use on the host (mmap EEXIST in host pid " +
                              std::to_string(it == d_.workers().end() ? -1 : it->second.host) + ", op " +
                              std::to_string(i) + ": " + format_op(s_, o) +
                              "): the live engine maps the workload where the model places it");
    }
    if (rep.err) return status::refused(errno_text(rep.err));
    return {};
  }

  std::set<int> worker_pids() const {
    std::set<int> out;
    for (const auto& [pid, w] : d_.workers()) out.insert(w.host);
    return out;
  }

  result<bytes> page_tables_now() {
    if (status st = stat_refresh(); !st.ok()) return st;
    auto mi = read_meminfo(src_);
    if (!mi.ok()) return mi.error();
    return mi->page_tables;
  }

  // PageTables less what every other process's page tables account for in it: the
  // workload's, the kernel's own and what RCU has yet to free.
  int64_t residual(const pt_reading& r) const {
    int64_t v = int64_t(r.page_tables);
    for (const auto& [pid, f] : r.others.procs) v -= int64_t(f.vmpte + pgd_bytes_);
    return v;
  }

  // PageTables with every other process's page tables beside it. Each try reads
  // PageTables, then /proc for every other process, then PageTables again; the two must
  // agree, or someone allocated or freed page tables during the scan. A freed page table
  // leaves VmPTE at once but PageTables only after an RCU grace period (membarrier GLOBAL
  // waits for one; the callbacks may still lag), so PageTables less every other process's
  // page tables (the residual: the workload's, the kernel's own, and frees still in
  // flight) must be the same in two such readings ~20 ms apart: then nothing is in flight
  // (a process that only allocated meanwhile moved both sides alike). On a quiet host that
  // is the second try. A host where no two tries in 50 agree is busy: the reading
  // is then not a measurement, and says why.
  //
  // The starting reading asks more (`span`): every reading of the residual over 200 ms
  // the same. A free the kernel defers by seconds (an exited mm's PGD that khugepaged
  // holds, lazy RCU) would otherwise be in the base and leave during the run, and the
  // workload would seem to have freed it: seen once in CI beside stress-ng, rmap-cow's
  // 48 KiB came out 44. settle_deferred_frees() has the kernel do those frees first.
  result<pt_reading> read_page_tables(pt_window span = pt_window{}) {
    constexpr int kTries = 50;
    std::optional<pt_reading> prev;
    int same = 0;  // readings in a row with prev's residual
    std::vector<int64_t> moved, drift;
    bytes last = 0;
    for (int n = 0; n < kTries; ++n) {
      ::syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);  // best effort: ENOSYS/EINVAL are fine
      if (n)
        if (status st = d_.sleep_ms(span.interval_ms); !st.ok()) return st;
      auto a = page_tables_now();
      if (!a.ok()) return a.error();
      auto others = read_others(src_, worker_pids(), false);
      if (!others.ok()) return others.error();
      auto b = page_tables_now();
      if (!b.ok()) return b.error();
      last = b.value();
      if (a.value() != b.value()) {
        moved.push_back(int64_t(b.value()) - int64_t(a.value()));
        prev.reset();
        continue;
      }
      pt_reading r{a.value(), std::move(others.value()), ""};
      if (prev) {
        const int64_t d = residual(r) - residual(*prev);
        if (d == 0) {
          if (++same >= span.readings) return r;
          continue;  // prev stays the first of the run
        }
        drift.push_back(d);
      }
      prev = std::move(r);
      same = 1;
    }
    auto list = [](const std::vector<int64_t>& v) {
      std::string out;
      for (size_t k = 0; k < v.size() && k < 8; ++k) out += fmt::format("{}{:+} kB", k ? ", " : "", v[k] / 1024);
      return out + (v.size() > 8 ? ", ..." : "");
    };
    pt_reading r;
    r.page_tables = last;
    r.busy = fmt::format("in {} tries over {:.1f} s, PageTables changed during the read of the other processes {} times "
                         "({}) and, less their page tables, moved between readings {} times ({}): page tables were "
                         "allocated or freed (freeing lags by an RCU grace period) faster than they could be read",
                         kTries, kTries * span.interval_ms / 1000.0, moved.size(), list(moved), drift.size(), list(drift));
    return r;
  }

  // A sample: page tables, each worker's figures and (with_slabs, at phases and the end)
  // the slab caches.
  status take_sample(const std::string& name, uint64_t op_index, sample& out, bool with_slabs) {
    // A worker that exited may still hold PageTables: its PGD while khugepaged's scan
    // cursor rests on its mm, its page tables while lazy RCU holds their frees. Measured
    // on this host: a worker with 64 MiB of MADV_HUGEPAGE memory left +4 KiB after its
    // exit in 3 runs of 3. Once per sample after any exits, not per exit: ~20 ms each.
    if (exited_) {
      settle_deferred_frees();
      exited_ = false;
    }
    auto pt = read_page_tables();
    if (!pt.ok()) return pt.error();
    if (with_slabs && slabs_on_) {
      if (status st = sample_slabs(out, name == "end"); !st.ok()) return st;
    }
    out.name = name;
    out.op_index = op_index;
    out.page_tables = pt->page_tables;
    out.pt_pages_known = false;
    int64_t baselines = 0;
    for (const auto& [pid, w] : d_.workers()) {
      auto st = read_status(src_, w.host);
      if (!st.ok()) return st.error();
      auto mf = read_minflt(src_, w.host);
      if (!mf.ok()) return mf.error();
      proc_sample p;
      p.pid = pid;
      p.vmpte = st->vmpte;
      p.vmpte_workload = sat_sub(st->vmpte, w.base.vmpte);
      const bytes page = shadow_.profile().paging.page_size();
      p.rss_anon = sat_sub(st->rss_anon, w.base.rss_anon) / page;
      p.rss_file = sat_sub(st->rss_file, w.base.rss_file) / page;
      p.rss_shmem = sat_sub(st->rss_shmem, w.base.rss_shmem) / page;
      p.hugetlb = sat_sub(st->hugetlb, w.base.hugetlb);
      p.min_flt = sat_sub(mf.value(), w.minflt0);
      baselines += int64_t(w.base.vmpte);
      out.procs.push_back(p);
    }
    out.nr_procs = out.procs.size();
    cached_now(out);
    if (!pt->busy.empty() || !pt_base_.busy.empty()) {
      out.page_tables_busy = !pt->busy.empty() ? pt->busy : "at the run's start: " + pt_base_.busy;
      return {};
    }
    // What the rest of the host (this driver included) did to PageTables since the start.
    const others_change oc = compare_others(pt_base_.others, pt->others, pgd_bytes_);
    if (std::llabs(oc.page_tables) >= std::llabs(others_max_.page_tables) && oc.any()) others_max_ = oc;
    const int64_t w = int64_t(pt->page_tables) - int64_t(pt_base_.page_tables) - oc.page_tables - baselines;
    if (w < 0)
      add_note(r_.notes, {note_id::clamped, "PageTables_workload fell below 0 at some reading and was clamped",
                          "PageTables fell below the run's starting point less the others' changes: page tables freed "
                          "that no process accounted for (the kernel's own, or an exited process's RCU-deferred frees)",
                          true});
    out.page_tables_workload = clamp0(w);
    return {};
  }

  static bool is_process_op(op_kind k) { return k == op_kind::spawn || k == op_kind::fork || k == op_kind::exit; }

  // The workload's page cache: cachestat(2) (6.5+) over each file and shm object, which
  // counts the pages of that file only, whatever the rest of the host caches. Unknown on
  // a kernel without it (ENOSYS). hugetlb objects are not in Cached.
  void cached_now(sample& out) {
    struct cachestat_range { uint64_t off, len; } range{0, 0};  // len 0: to the end
    struct cachestat_t { uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted; } cs{};
    constexpr long kSysCachestat = 451;  // x86-64 (include/uapi/asm-generic/unistd.h __NR_cachestat)
    uint64_t pages = 0;
    for (size_t i = 0; i < s_.objects.size(); ++i) {
      if (s_.objects[i].kind == object_kind::hugetlb) continue;
      if (::syscall(kSysCachestat, d_.object_fd(int32_t(i)), &range, &cs, 0u) != 0) return;
      pages += cs.nr_cache;
    }
    out.cached_workload = pages * shadow_.profile().paging.page_size();
    out.cached_known = true;
  }

  // Slab caches once they have settled: every CPU's cached objects flushed back to the node
  // lists (kmem_cache_shrink), read every ~10 ms until two readings agree (at most ~80 ms),
  // with every other process's VMAs read before and after: if another process started,
  // exited or changed its VMAs while the rows were read, the rows and the others do not
  // belong together and the reading is tried again (up to 5 times; then it is busy).
  // Objects are freed synchronously (SLAB_TYPESAFE_BY_RCU, as vm_area_struct and anon_vma
  // are, delays only the freeing of their slab pages, which slabinfo already stopped
  // counting), but a grace period first lets RCU-deferred work of the last exit land.
  result<slab_reading> settled_slabs() {
    auto read = [&]() -> result<slab_reading> {
      for (const auto& c : slab_caches())
        if (!flush_slab_cache(c))
          add_note(r_.notes, {note_id::unflushed, "per-CPU slabs were not flushed: active_objs also counts objects free in them",
                              "/sys/kernel/slab/" + c + "/shrink could not be written", true});
      slab_reading r;
      auto rows = read_slab_caches(src_, slab_caches());
      if (!rows.ok()) return rows.error();
      r.rows = std::move(rows.value());
      auto v = read_vma_count(src_, 0);
      if (!v.ok()) return v.error();
      r.self_vmas = v.value();
      return r;
    };
    auto same = [](const slab_reading& a, const slab_reading& b) {
      if (a.self_vmas != b.self_vmas || a.rows.size() != b.rows.size()) return false;
      for (size_t i = 0; i < a.rows.size(); ++i)
        if (a.rows[i].active_objs != b.rows[i].active_objs) return false;
      return true;
    };
    // The driver's own VMAs are taken out of vm_area_struct; every other process must hold still.
    std::set<int> exclude = worker_pids();
    exclude.insert(static_cast<int>(::getpid()));
    ::syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
    std::string moved;
    for (int attempt = 0; attempt < 5; ++attempt) {
      auto before = read_others(src_, exclude, true);
      if (!before.ok()) return before.error();
      auto prev = read();
      if (!prev.ok()) return prev;
      bool settled = false;
      for (int n = 0; n < 8 && !settled; ++n) {
        if (status st = d_.sleep_ms(10); !st.ok()) return st;
        auto cur = read();
        if (!cur.ok()) return cur;
        settled = same(cur.value(), prev.value());
        prev = std::move(cur);
      }
      auto after = read_others(src_, exclude, true);
      if (!after.ok()) return after.error();
      const others_change oc = compare_others(before.value(), after.value(), pgd_bytes_);
      prev->others = std::move(after.value());
      if (!settled) prev->busy = "the slab caches kept changing for 80 ms while the workload was idle";
      if (!oc.slab_activity() || attempt == 4) {
        if (oc.slab_activity())
          prev->busy = "other processes started, exited or changed their VMAs during each of 5 readings of the slab "
                       "caches (the last: " + oc.describe() + ")";
        return prev;
      }
    }
    return status::io_error("unreachable");  // the loop returns on its last attempt
  }

  // Whether the host's slab caches can be read, and if so the image pass: the op stream's
  // process ops alone (spawn, fork, exit), run on the host before the workload and measured
  // at every point where the real run takes a sample. What those idle workers add to the
  // caches is what the workers' own images cost (their program, libraries, stack and
  // buffer: VMAs, the anon_vmas and anon_vma_chains of the written ones, fork's copies of
  // them, one fs_struct each in the cache anon_vma_chain shares with fs_cache); the
  // workload's share of the real run's growth is what remains after subtracting it.
  // Every worker is a fork of one zygote, so both passes copy the same image.
  status start_slabs() {
    auto probe = read_slab_caches(src_, slab_caches());
    if (!probe.ok()) {
      add_note(r_.notes, {note_id::slabs_unavailable, "slab caches not read: " + probe.error().message(), "", true});
      return {};
    }
    slabs_on_ = true;
    // The epochs (process ops done) at which the real run samples: every phase and the end.
    std::set<uint64_t> need;
    uint64_t e = 0;
    for (const op& o : s_.ops) {
      if (is_process_op(o.kind)) ++e;
      if (o.kind == op_kind::phase) need.insert(e);
    }
    need.insert(e);
    auto base = settled_slabs();
    if (!base.ok()) return base.error();
    e = 0;
    bool image_stopped = false;
    auto measure = [&]() -> status {
      if (!need.count(e) || image_.count(e)) return {};
      auto now = settled_slabs();
      if (!now.ok()) return now.error();
      image_[e] = object_growth(now.value(), base.value());
      // The image is a difference of system-wide readings: it holds only if the rest of
      // the host held still meanwhile.
      const others_change oc = compare_others(base->others, now->others, pgd_bytes_);
      if (image_busy_.empty() && (oc.slab_activity() || !now->busy.empty() || !base->busy.empty()))
        image_busy_ = "while the workers' images were measured: " +
                      (oc.slab_activity() ? oc.describe() : !now->busy.empty() ? now->busy : base->busy);
      auto v = worker_vmas();
      if (!v.ok()) return v.error();
      image_vmas_[e] = v.value();
      return {};
    };
    for (const op& o : s_.ops) {
      if (d_.interrupted()) return d_.sleep_ms(0);
      if (o.kind == op_kind::phase) {
        if (status st = measure(); !st.ok()) return st;
        continue;
      }
      if (!is_process_op(o.kind)) continue;
      int err = 0;
      status st;
      if (o.kind == op_kind::spawn) st = d_.spawn(o.pid, &err);
      else if (o.kind == op_kind::fork) st = d_.fork(o.pid, o.child, &err);
      else st = d_.exit(o.pid);
      if (d_.interrupted()) return st.ok() ? d_.sleep_ms(0) : st;
      if (!st.ok() || err) {
        add_note(r_.notes, {note_id::image_stopped, "the image pass stopped: slabs_workload is missing where it did not reach",
                            "op " + format_op(s_, o) + ": " + (st.ok() ? errno_text(err) : st.message()), true});
        image_stopped = true;
        break;
      }
      ++e;
    }
    if (!image_stopped)
      if (status st = measure(); !st.ok()) return st;
    // Gone before the real run's baseline: exit every image worker, newest first.
    std::vector<uint32_t> pids;
    for (const auto& [pid, w] : d_.workers()) pids.push_back(pid);
    for (auto it = pids.rbegin(); it != pids.rend(); ++it)
      if (status st = d_.exit(*it); !st.ok()) return st;
    return {};
  }

  // The host's rows now, and the workload's share of their growth since the baseline.
  status sample_slabs(sample& out, bool is_end) {
    auto now = settled_slabs();
    if (!now.ok()) return now.error();
    out.slabs = now->rows;
    const others_change oc = compare_others(slab_base_.others, now->others, pgd_bytes_);
    if (!now->busy.empty()) out.slabs_busy = now->busy;
    else if (!slab_base_.busy.empty()) out.slabs_busy = "at the run's start: " + slab_base_.busy;
    else if (oc.slab_activity())
      out.slabs_busy = "other processes started, exited or changed their VMAs while the workload's slab objects were "
                       "measured: " + oc.describe();
    else if (!image_busy_.empty()) out.slabs_busy = image_busy_;
    auto img = image_.find(epoch_);
    if (img == image_.end()) {
      add_note(r_.notes, {note_id::no_image, "some samples have no slabs_workload: the image pass did not measure that point",
                          "", true});
      return {};
    }
    const std::vector<int64_t> grown = object_growth(now.value(), slab_base_);
    for (size_t i = 0; i < now->rows.size(); ++i) {
      const slab_row& n = now->rows[i];
      const slab_row& b = slab_base_.rows[i];
      slab_row w = n;  // name and geometry
      // mm_struct: one per process in both engines (the sim counts its processes' too).
      const int64_t image = n.name == "mm_struct" ? 0 : img->second[i];
      const int64_t objs = grown[i] - image;
      if (objs < 0)
        add_note(r_.notes, {note_id::slabs_clamped, "a slab cache's growth fell below the image's at some reading; clamped at 0",
                            "host activity freed objects", true});
      w.active_objs = clamp0(objs);
      w.num_objs = clamp0(int64_t(n.num_objs) - int64_t(b.num_objs) - image);
      w.active_slabs = clamp0(int64_t(n.active_slabs) - int64_t(b.active_slabs));
      w.num_slabs = clamp0(int64_t(n.num_slabs) - int64_t(b.num_slabs));
      out.slabs_workload.push_back(std::move(w));
      if (is_end) end_image_.push_back({n.name, image});
    }
    if (is_end) {
      // Cross-check, free of other processes' activity: the workers' own VMAs beyond their
      // images, counted in /proc/PID/maps.
      auto v = worker_vmas();
      if (!v.ok()) return v.error();
      end_maps_vmas_ = int64_t(v.value()) - int64_t(image_vmas_[epoch_]);
      end_slab_vmas_ = int64_t(out.slabs_workload[0].active_objs);  // slab_caches()[0]: vm_area_struct
    }
    return {};
  }

  // VMAs of every live worker (/proc/PID/maps).
  result<uint64_t> worker_vmas() {
    uint64_t n = 0;
    for (const auto& [pid, w] : d_.workers()) {
      auto v = read_vma_count(src_, w.host);
      if (!v.ok()) return v.error();
      n += v.value();
    }
    return n;
  }

  void note_peaks(const sample& smp) {
    peaks& pk = r_.peak;
    pk.page_tables = std::max(pk.page_tables, smp.page_tables);
    if (smp.page_tables_busy.empty())
      pk.page_tables_workload = std::max(pk.page_tables_workload, smp.page_tables_workload);
    else
      add_note(r_.notes, {note_id::page_tables_busy, "PageTables_workload not measurable at some samples: host busy",
                          smp.page_tables_busy, true});
    if (!smp.slabs_busy.empty())
      add_note(r_.notes, {note_id::slabs_busy, "slabs_workload not measurable at some samples: host busy", smp.slabs_busy,
                          true});
    for (const auto& p : smp.procs) pk.vmpte_max_proc = std::max(pk.vmpte_max_proc, p.vmpte_workload);
  }

  // The method notes, then what this run found (added where it happened), in that order.
  void add_notes() {
    std::vector<note> found = std::move(r_.notes);
    auto& n = r_.notes;
    n.clear();
    for (const auto& line : recovered_) add_note(n, {"live.recovered", line, "", true});
    add_note(n, {note_id::page_tables,
                 "PageTables_workload: PageTables growth less other processes' page-table changes and the workers' "
                 "baselines",
                 "page_tables_workload = PageTables now - PageTables before the run - what every other process's page "
                 "tables changed meanwhile (VmPTE, plus " +
                     std::to_string(pgd_bytes_ / 1024) +
                     " kB of PGD for each process started or gone; the driver is one of them) - the baseline VmPTE "
                     "of each live worker. Each reading is taken between two equal PageTables readings with every "
                     "other process read in between. It includes each worker's PGD, as the model does, and the "
                     "kernel's own page tables (vmalloc), which no process accounts for.",
                 false});
    add_note(n, {note_id::settle,
                 "the kernel's deferred frees were done before the starting reading and after exits: khugepaged woken, "
                 "rcu_barrier",
                 "an exited process's PGD stays in PageTables while khugepaged's scan cursor rests on its mm (until "
                 "khugepaged's next pass, up to scan_sleep_millisecs), and lazy RCU can hold freed page tables for "
                 "seconds; so before the starting reading, and before the first reading after workers exit, the run "
                 "wrote khugepaged's scan_sleep_millisecs back unchanged twice (each write wakes it for a pass, whose "
                 "end the run waited for), ran once on every CPU and called rcu_barrier (rcutree's do_rcu_barrier). "
                 "No setting changed.",
                 false});
    add_note(n, {note_id::vmpte, "VmPTE_workload: VmPTE less the worker's own at spawn (forked: its parent's probe child's)",
                 "vmpte_workload = VmPTE - the worker's VmPTE when it was spawned (its copy of the zygote's address "
                 "space, a fork of the driver's taken when the run started); a forked child's baseline is the VmPTE of a "
                 "probe child forked from its spawned ancestor before any workload op (what fork copies of the runtime)",
                 false});
    add_note(n, {note_id::rss, "Rss*: less the same baselines (the worker's own stack, buffer and libraries)", "", false});
    add_note(n, {note_id::min_flt, "min_flt: includes the workers' control loop; MAP_LOCKED population is not counted",
                 "min_flt includes the few faults a worker takes outside workload ops (its control loop); pages that "
                 "MAP_LOCKED populates are faulted through GUP and not counted in minflt",
                 false});
    add_note(n, {note_id::peaks, "peaks: read at phases, before each exit/munmap/madvise and at the end",
                 "peaks are readings at each phase, before each exit/munmap/madvise and at the end, not at every "
                 "allocation; vmpte_max_proc is the largest vmpte_workload",
                 false});
    add_note(n, {note_id::pt_levels, "page-table pages per level are not observable on a live kernel", "", false});
    add_note(n, {note_id::thp,
                 "THP: the host runs with the profile's enabled/shmem_enabled; workers advise what the op stream "
                 "advises, and MADV_NOHUGEPAGE on regular-file mappings without advice",
                 "khugepaged is not stopped: a collapse during the run would show (the model has none); its default scan "
                 "period (10 s) is longer than most runs. Regular files: the model's page cache has 4 KiB pages, the "
                 "host's can have PMD-sized folios that do_set_pmd maps with a PMD under any THP policy; "
                 "MADV_NOHUGEPAGE keeps the host's file mappings on PTEs as the model's are",
                 false});
    if (others_max_.any())
      add_note(n, {note_id::others,
                   fmt::format("other processes changed PageTables by {:+} kB during the run; subtracted",
                               others_max_.page_tables / 1024),
                   "at the sample where it was largest: " + others_max_.describe(), true});
    if (slabs_on_) add_slab_notes();
    for (note& f : found) add_note(n, std::move(f));
  }

  void add_slab_notes() {
    auto& n = r_.notes;
    add_note(n, {note_id::slabs, "slabs: the host's rows (whole system), read after kmem_cache_shrink flushed per-CPU slabs",
                 "slabs are the host's /proc/slabinfo rows (whole system) for vm_area_struct, anon_vma, anon_vma_chain "
                 "and mm_struct, read after kmem_cache_shrink (/sys/kernel/slab/<cache>/shrink) has flushed the "
                 "per-CPU slabs and sheaves, until two readings ~10 ms apart agree; a merged cache's row counts its "
                 "aliases too (see /sys/kernel/slab/<cache>/aliases). Every other process is read beside them: if "
                 "one started, exited or changed its VMAs, the sample's slab figures are not measurable.",
                 false});
    std::string img = "slabs_workload = growth since the baseline minus the image of the workload's processes, "
                      "measured by an image pass (the op stream's spawn/fork/exit ops alone, on idle workers forked "
                      "from the same zygote, before the run) at the same point; vm_area_struct also without the "
                      "change in the driver's own VMA count; mm_struct is not reduced (one per process, as the sim "
                      "counts); active_slabs/num_slabs are the raw growth, num_objs the growth minus the image";
    if (!end_image_.empty()) {
      img += "; subtracted at the end:";
      for (size_t i = 0; i < end_image_.size(); ++i)
        img += std::string(i ? "," : "") + " " + end_image_[i].first + " " + std::to_string(end_image_[i].second);
    }
    add_note(n, {note_id::slabs_workload, "slabs_workload: growth less the workers' images (an image pass before the run)", img,
                 false});
    if (!end_image_.empty())
      add_note(n, {note_id::slabs_crosscheck,
                   fmt::format("cross-check: the workers' maps list {} VMAs beyond their images, slabs_workload has {}",
                               end_maps_vmas_, end_slab_vmas_),
                   "a difference is other processes' VMAs created or freed meanwhile", true});
  }

  const op_stream& s_;
  sim_kernel& shadow_;
  driver& d_;
  proc_source& src_;
  const live_options& opt_;
  const bytes pgd_bytes_;  // PageTables per process PGD on this host
  run_result r_;
  std::vector<std::string> recovered_;
  pt_reading pt_base_;     // before the first workload op
  others_change others_max_;  // the others' largest change at a sample
  uint64_t faults_exited_ = 0;
  bool grown_ = false;
  bool exited_ = false;  // a worker exited since the last settle_deferred_frees
  host_answer answer_ = host_answer::refused;  // what the host did with the op step() refuses
  // Slab caches (issue 3).
  bool slabs_on_ = false;
  slab_reading slab_base_;              // the real run's baseline
  std::map<uint64_t, std::vector<int64_t>> image_;  // epoch -> the image's objects per cache
  std::string image_busy_;              // why the image cannot be trusted
  uint64_t epoch_ = 0;                  // process ops (spawn, fork, exit) done in the real run
  std::map<uint64_t, uint64_t> image_vmas_;  // epoch -> the image workers' VMAs (/proc/PID/maps)
  std::vector<std::pair<std::string, int64_t>> end_image_;
  int64_t end_maps_vmas_ = 0, end_slab_vmas_ = 0;
};

}  // namespace

result<bytes> estimate_peak_memory(const op_stream& s) {
  auto kr = sim_kernel::create(s.machine, s.objects);
  if (!kr.ok()) return kr.error();
  sim_kernel& k = *kr.value();
  bytes objects = 0;
  const bytes page = k.profile().paging.page_size();
  for (const auto& o : s.objects) objects += round_up(o.size, page);
  bytes most = 0;
  auto measure = [&] {
    const sample smp = k.snapshot("");
    bytes anon = 0, cache = 0;
    for (const auto& p : smp.procs) {
      anon += p.rss_anon * page;  // COW-shared pages count once per process: an upper bound
      cache += (p.rss_file + p.rss_shmem) * page;
    }
    most = std::max(most, anon + std::min(cache, objects));
  };
  for (const op& o : s.ops) {
    if (frees_memory(o.kind)) measure();
    if (status st = apply_op(k, o); !st.ok()) {
      if (st.code() != status_code::refused) return st;
      break;  // the live run stops here too
    }
  }
  measure();
  // The hugetlb pools the run grows on the host are memory too, used or not.
  bytes pools = 0;
  for (const auto& [size, n] : s.machine.hugepages) pools += size * n;
  return most + k.peak().page_tables + pools;
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
  // The host kernel has no shared page tables of either design (neither was merged).
  if (prof.ptshare.any())
    return status::not_supported("profile '" + prof.name + "' shares page tables (" +
                                 (prof.ptshare.mshare ? "Oracle's mshare" : "McCracken's PTSHARE") +
                                 "), which no released kernel has; the live engine cannot run it on this host (use the "
                                 "sim engine, or the unshared baseline profile live)");
  // Reclaim of a chosen amount of the run's page cache needs the run in a memory cgroup of
  // its own (cgroup v2 memory.reclaim), which would be a kernel setting vmlab changes.
  for (size_t i = 0; i < s.ops.size(); ++i)
    if (s.ops[i].kind == op_kind::reclaim)
      return status::not_supported("op " + std::to_string(i) + " (" + format_op(s, s.ops[i]) +
                                   "): the live engine cannot make this host's kernel reclaim the run's page cache "
                                   "(that needs the run in a memory cgroup of its own for memory.reclaim, which vmlab "
                                   "does not create); run it on the sim engine");
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

  // One live run at a time; a killed earlier run's leftovers are undone before this one
  // measures. A signal while waiting for the lock kills vmlab as usual: nothing is held yet.
  auto lock = live_lock::acquire(opt.no_wait ? live_lock::mode::no_wait : live_lock::mode::wait, opt.say);
  if (!lock.ok()) return lock.error();
  const recovery rec = recover();
  if (opt.say)
    for (const auto& line : rec.done) opt.say(line);
  signal_guard sig;
  if (status st = sig.install(); !st.ok()) return st;
  // The host settings the run needs (huge-page pools, THP policies), journalled and put
  // back when this scope ends, whatever way it ends.
  host_settings settings;
  std::vector<note> setting_notes;
  if (status st = apply_huge_settings(prof, s.machine, settings, src, setting_notes); !st.ok()) return st;
  result<run_result> r = status::io_error("live run did not start");
  {
    driver d(src, sig);
    live_run run(s, shadow, d, src, opt);
    run.add_recovered(rec);
    r = run.run();
    d.shutdown();  // kill and reap every worker, remove every object, before the handlers go
  }
  if (status st = settings.restore(); !st.ok()) return st;
  if (r.ok())
    for (note& n : setting_notes) add_note(r->notes, std::move(n));
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
