// The sim engine: ops -> sim_kernel calls, samples at every `phase` op and at the end.
#include <chrono>
#include <ctime>

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
      if (o.pattern == touch_pattern::all) return k.touch(o.pid, o.map, o.off, o.len, 4096, o.write);
      if (o.pattern == touch_pattern::stride) return k.touch(o.pid, o.map, o.off, o.len, o.stride, o.write);
      return k.touch_pages(o.pid, o.map, first_touches(touch_page_list(o)), o.write);
    case op_kind::phase: return {};
  }
  return {};
}

namespace {

double cpu_now() { return double(std::clock()) / CLOCKS_PER_SEC; }

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
  r.profile = k.profile().name;
  r.slabinfo_version = k.slabinfo_version();
  r.rmap = rmap_scheme_name(k.profile().rmap.scheme);
  r.vmpte_line = k.profile().reports_vmpte;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const op& o = s.ops[i];
    status st = apply_op(k, o);
    if (!st.ok()) {
      if (st.code() != status_code::refused) return st;  // a malformed stream, not a kernel event
      r.failures.push_back({i, format_op(s, o), st.message()});
      break;
    }
    ++r.ops_applied;
    if (opt.check_invariants)
      if (std::string bad = k.check_invariants(); !bad.empty())
        return status::check_failed("invariant broken after op " + std::to_string(i) + " (" + format_op(s, o) + "): " + bad);
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
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu_seconds = cpu_now() - c0;
  return r;
}

}  // namespace vmlab
