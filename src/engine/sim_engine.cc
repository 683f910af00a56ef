// The sim engine: ops -> sim_kernel calls, samples at every `phase` op and at the end.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <new>

#include "engine/engine.h"
#include "model/profile.h"
#include "vmlab/sim_kernel.h"
#include "workload/pattern.h"
#include "workload/trace.h"

namespace vmlab {

status apply_op(sim_kernel& k, const op& o) {
  switch (o.kind) {
    case op_kind::spawn: return k.spawn(o.pid);
    case op_kind::fork: return k.fork(o.pid, o.child);
    case op_kind::exit: return k.exit(o.pid);
    case op_kind::mmap: { auto r = k.mmap(o); return r.ok() ? status{} : r.error(); }
    case op_kind::munmap: return k.munmap(o.pid, o.map, o.off, o.len);
    case op_kind::mprotect: return k.mprotect(o.pid, o.map, o.off, o.len, o.prot);
    case op_kind::madvise: return k.madvise(o.pid, o.map, o.off, o.len, o.adv);
    case op_kind::touch:
      if (o.pattern == touch_pattern::all) return k.touch(o.pid, o.map, o.off, o.len, k.profile().paging.page_size(), o.write);
      if (o.pattern == touch_pattern::stride) return k.touch(o.pid, o.map, o.off, o.len, o.stride, o.write);
      return touch_random(k, o, {});
    case op_kind::read:
    case op_kind::readv:
    case op_kind::write: return k.file_io(o);
    case op_kind::fsync: return k.fsync(o.pid, o.object);
    case op_kind::msync: return k.msync(o.pid, o.map, o.off, o.len);
    case op_kind::mremap: { auto r = k.mremap(o); return r.ok() ? status{} : r.error(); }
    case op_kind::remap_file_pages: return k.remap_file_pages(o);
    case op_kind::reclaim: return k.reclaim(o.len);
    case op_kind::phase: return {};
  }
  return {};
}

status touch_random(sim_kernel& k, const op& o, const std::function<status(uint64_t, uint64_t)>& between) {
  // A batch at a time, repeats dropped (first_touches, across batches), so that the host
  // memory of a touch follows the distinct pages it touches, not its count. Uniform
  // pages are distinct already.
  const paging_format& f = k.profile().paging;
  touch_page_gen g(o, f.page_size());
  page_set seen(o.pattern == touch_pattern::zipf ? g.limit() : 0);
  const uint64_t tables = o.len / f.pte().table_span() + 1;
  const size_t per_batch = tables <= kTouchBatchMax / 2 ? kTouchBatchMax : kTouchBatch;
  std::vector<uint64_t> batch;
  while (g.next(batch, per_batch)) {
    if (o.pattern == touch_pattern::zipf) {
      size_t n = 0;
      for (uint64_t p : batch)
        if (seen.insert(p)) batch[n++] = p;
      batch.resize(n);
    }
    if (status s = k.touch_pages(o.pid, o.map, batch, o.write); !s.ok()) return s;
    if (between)
      if (status s = between(g.produced(), g.total()); !s.ok()) return s;
  }
  return {};
}

namespace {

double cpu_now() { return double(std::clock()) / CLOCKS_PER_SEC; }

}  // namespace

namespace {

std::string mib(size_t b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB (%zu bytes)", double(b) / double(MiB), b);
  return buf;
}

// "op 7 (touch ...)": how the host-memory errors name the op.
std::string op_name(const op_stream& s, size_t i) { return "op " + std::to_string(i) + " (" + format_op(s, s.ops[i]) + ")"; }

status over_limit(const op_stream& s, size_t i, size_t have, bytes limit) {
  return status::host_memory(op_name(s, i) + ": the model needs " + mib(have) + " of host memory, more than --max-host-memory " +
                             mib(limit) + "; give a larger limit, or fewer processes or pages");
}

}  // namespace

result<run_result> run_sim(const op_stream& s, const sim_options& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = cpu_now();
  auto kr = sim_kernel::create(s.machine, s.objects);
  if (!kr.ok()) return kr.error();
  sim_kernel& k = *kr.value();
  run_result r;
  r.engine = "sim";
  r.scenario = s.source;
  r.process_image = s.has_process_image();
  r.profile = k.profile().name;
  r.page_size = k.profile().paging.page_size();
  r.slabinfo_version = k.slabinfo_version();
  r.rmap = rmap_scheme_name(k.profile().rmap.scheme);
  r.vmpte_line = k.profile().reports_vmpte;
  sim_progress pr;
  pr.ops_total = s.ops.size();
  // Within a random touch: the guard and the progress line, after every batch.
  size_t cur = 0;
  const auto between = [&](uint64_t done, uint64_t total) -> status {
    const size_t have = k.model_host_bytes();
    if (opt.max_host_memory && have > opt.max_host_memory) return over_limit(s, cur, have, opt.max_host_memory);
    if (opt.progress) {
      pr.current = &s.ops[cur];
      pr.op_done = done;
      pr.op_total = total;
      pr.host_bytes = have;
      opt.progress(pr);
    }
    return {};
  };
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const op& o = s.ops[i];
    cur = i;
    status st;
    // The model allocates as the simulated kernel would need, and a run can need more
    // than this host has (10^6 processes, a touch of terabytes): that ends here with the
    // op named, never as an uncaught std::bad_alloc.
    try {
      const bool random = o.kind == op_kind::touch && o.pattern != touch_pattern::all && o.pattern != touch_pattern::stride;
      if (random && (opt.max_host_memory || opt.progress)) {
        st = touch_random(k, o, between);
        if (st.code() == status_code::host_memory) return st;
      } else {
        st = apply_op(k, o);
      }
    } catch (const std::bad_alloc&) {
      return status::host_memory(op_name(s, i) + ": the host could not give vmlab the memory this op needs (the model held " +
                                 mib(k.model_host_bytes()) + " of host memory when an allocation failed); " +
                                 "run fewer processes or pages, or on a host with more memory");
    }
    if (!st.ok()) {
      if (st.code() != status_code::refused) return st;  // a malformed stream, not a kernel event
      r.failures.push_back({i, format_op(s, o), st.message()});
      break;
    }
    ++r.ops_applied;
    r.file_io |= o.kind == op_kind::read || o.kind == op_kind::readv || o.kind == op_kind::write;
    if (opt.check_invariants)
      if (std::string bad = k.check_invariants(); !bad.empty())
        return status::check_failed("invariant broken after op " + std::to_string(i) + " (" + format_op(s, o) + "): " + bad);
    if (opt.max_host_memory || opt.progress) {
      const size_t have = k.model_host_bytes();
      if (opt.max_host_memory && have > opt.max_host_memory) return over_limit(s, i, have, opt.max_host_memory);
      if (opt.progress) {
        pr.ops_done = i + 1;
        pr.current = nullptr;
        pr.op_done = pr.op_total = 0;
        pr.host_bytes = have;
        opt.progress(pr);
      }
    }
    if (o.kind == op_kind::phase) {
      sample smp = k.snapshot(o.name);
      smp.op_index = i + 1;
      r.samples.push_back(std::move(smp));
    }
  }
  sample end = k.snapshot("end");
  end.op_index = r.ops_applied;
  r.samples.push_back(std::move(end));
  r.peak = k.peak();  // kept by the model at every allocation: exact maxima
  r.faults = k.faults();
  r.cow_faults = k.cow_faults();
  const std::array<uint64_t, 2> pc = k.page_cache_counts();
  r.pages_written = pc[0];
  r.readahead_pages = pc[1];
  r.shares_page_tables = k.profile().ptshare.any();
  const std::array<uint64_t, 3> shared = k.ptshare_counts();
  r.pt_attaches = shared[0];
  r.pt_unshares = shared[1];
  r.tlb_flush_all = shared[2];
  r.reclaim = k.reclaim_counts();
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu_seconds = cpu_now() - c0;
  return r;
}

}  // namespace vmlab
