// Sim versus live: the figures `vmlab validate` puts side by side.
#include <algorithm>
#include <cmath>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "engine/engine.h"
#include "report/report.h"

namespace vmlab {
namespace {

std::string percent(double rel) { return fmt::format("{:g}%", rel * 100); }

validate_case make_case(const std::string& scenario, const std::string& figure, const std::string& at, uint32_t pid,
                        double sim, double live, double rel_tol, double abs_tol, std::string rule) {
  validate_case c;
  c.scenario = scenario;
  c.figure = figure;
  c.at = at;
  c.pid = pid;
  c.sim = sim;
  c.live = live;
  const double diff = std::fabs(sim - live);
  c.rel_error = diff / std::max(std::fabs(live), 1.0);
  c.tolerance = std::max(rel_tol * std::fabs(live), abs_tol);
  c.tolerance_rule = std::move(rule);
  c.v = diff <= c.tolerance ? verdict::ok : verdict::fail;
  return c;
}

const slab_row* find_row(const std::vector<slab_row>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}

// The rmap caches at the end sample: the sim's objects (its processes' only) against the
// live workload's growth (the host's growth minus the workers' own images). Only when the
// sim profile has the host's rmap design (anon_vma_chain, 2.6.34 onwards): under another
// design the host's caches count other objects.
void compare_slabs(const std::string& scenario, const sample& s, const sample& l, const tolerances& tol,
                   std::vector<validate_case>& out) {
  if (s.slabs.empty() || l.slabs.empty() || !find_row(s.slabs, "anon_vma_chain")) return;
  const uint32_t cpus = tol.cpus ? tol.cpus : std::max(1u, std::thread::hardware_concurrency());
  for (const char* cache : {"vm_area_struct", "anon_vma", "anon_vma_chain"}) {
    const slab_row* sr = find_row(s.slabs, cache);
    if (!sr) continue;
    const slab_row* lr = find_row(l.slabs_workload, cache);
    const slab_row* host = find_row(l.slabs, cache);
    const uint32_t per_slab = host ? host->objperslab : sr->objperslab;
    const double slack = double(tol.slab_slabs_per_cpu) * double(per_slab) * double(cpus);
    validate_case c = make_case(scenario, std::string("slab ") + cache, s.name, 0, double(sr->active_objs),
                                lr ? double(lr->active_objs) : -1.0, tol.slab_rel, slack,
                                fmt::format("{} or {} slabs/CPU", percent(tol.slab_rel), tol.slab_slabs_per_cpu));
    c.unit = "objects";
    if (!l.slabs_busy.empty()) {
      c.v = verdict::not_measurable;
      c.why = l.slabs_busy;
    } else if (!lr) {
      c.v = verdict::fail;  // the live run could not isolate the workload's share (see its notes)
      c.why = "the live run has no slabs_workload for this sample (see its notes)";
    }
    out.push_back(c);
  }
}

// Where a run that ended early ended, and whether the host refused what the model refused
// (a hugetlb fault with no free page, an mmap the pool cannot reserve): the op index each
// engine stopped at, exact. A run that completed counts its ops.
validate_case compare_run_end(const std::string& scenario, const run_result& sim, const run_result& live) {
  auto ended = [](const run_result& r) { return double(r.failures.empty() ? r.ops_applied : r.failures[0].op_index); };
  validate_case c = make_case(scenario, "ended_at_op", "run", 0, ended(sim), ended(live), 0, 0, "exact");
  c.unit = "op";
  if (live.failures.empty()) return c;
  const op_failure& f = live.failures[0];
  if (f.host == host_answer::not_asked) {
    c.v = verdict::not_measurable;
    c.why = "the model refused op " + std::to_string(f.op_index) + " first and the host was not asked: " + f.error;
  } else if (f.host == host_answer::carried_out) {
    c.v = verdict::fail;
    c.why = "the model refused op " + std::to_string(f.op_index) + "; the host carried it out: " + f.error;
  } else if (!sim.failures.empty() && c.v == verdict::ok) {
    c.why = "both refused: " + f.error;
  }
  return c;
}

}  // namespace

std::vector<validate_case> compare_results(const std::string& scenario, const run_result& sim, const run_result& live,
                                           const tolerances& tol) {
  std::vector<validate_case> out;
  const std::string proc_rule = fmt::format("{} or {} kB", percent(tol.proc_rel), tol.proc_abs / 1024);
  const std::string system_rule =
      tol.system_abs ? fmt::format("{} or {} kB", percent(tol.system_rel), tol.system_abs / 1024) : percent(tol.system_rel);
  for (size_t i = 0; i < sim.samples.size(); ++i) {
    const sample& s = sim.samples[i];
    const sample* l = i < live.samples.size() && live.samples[i].name == s.name ? &live.samples[i] : nullptr;
    if (!l) {
      validate_case c = make_case(scenario, "sample_missing_in_live", s.name, 0, 1, 0, 0, 0, "");
      c.v = verdict::fail;
      c.why = "the live run did not reach this sample";
      out.push_back(c);
      continue;
    }
    std::map<uint32_t, const proc_sample*> live_procs;
    for (const auto& p : l->procs) live_procs[p.pid] = &p;
    // HugetlbPages for every process once any has hugetlb pages: a process that only
    // attached to a shared PMD shows 0 in both, and that is a finding too.
    bool hugetlb = false;
    for (const auto& p : s.procs) hugetlb |= p.hugetlb != 0;
    for (const auto& p : l->procs) hugetlb |= p.hugetlb != 0;
    for (const auto& p : s.procs) {
      auto it = live_procs.find(p.pid);
      const double lv = it == live_procs.end() ? -1.0 : double(it->second->vmpte_workload);
      validate_case c = make_case(scenario, "VmPTE_growth", s.name, p.pid, double(p.vmpte_workload), lv, tol.proc_rel,
                                  double(tol.proc_abs), proc_rule);
      if (lv < 0) {
        c.v = verdict::fail;
        c.why = "the process is missing from the live sample";
      }
      out.push_back(c);
      // hugetlb pages this process faulted in (HugetlbPages), where either engine has any.
      const double lh = it == live_procs.end() ? 0.0 : double(it->second->hugetlb);
      if (hugetlb) {
        validate_case h = make_case(scenario, "HugetlbPages", s.name, p.pid, double(p.hugetlb), lh, 0, 0, "exact");
        out.push_back(h);
      }
    }
    // File I/O (issue 9): the faults each process took (a read into a buffer faults it)
    // and the file and shm pages it maps (its share of Mapped; the host's Mapped line
    // counts every process's), both per process and not disturbed by others.
    if (sim.file_io)
      for (const auto& p : s.procs) {
        auto it = live_procs.find(p.pid);
        if (it == live_procs.end()) continue;  // VmPTE_growth reported it missing
        validate_case f = make_case(scenario, "min_flt", s.name, p.pid, double(p.min_flt), double(it->second->min_flt),
                                    tol.proc_rel, double(tol.fault_abs), fmt::format("{} or {} faults", percent(tol.proc_rel), tol.fault_abs));
        f.unit = "faults";
        out.push_back(f);
        validate_case m = make_case(scenario, "Mapped_pages", s.name, p.pid, double(p.rss_file + p.rss_shmem),
                                    double(it->second->rss_file + it->second->rss_shmem), 0, 0, "exact");
        m.unit = "pages";
        out.push_back(m);
      }
    // The workload's page cache, where either engine has some.
    if (s.cached_known && l->cached_known && (s.cached_workload || l->cached_workload)) {
      validate_case c = make_case(scenario, "Cached_workload", s.name, 0, double(s.cached_workload), double(l->cached_workload),
                                  tol.system_rel, double(tol.system_abs), system_rule);
      out.push_back(c);
    }
    validate_case pt = make_case(scenario, "PageTables_growth", s.name, 0, double(s.page_tables_workload),
                                 double(l->page_tables_workload), tol.system_rel, double(tol.system_abs), system_rule);
    if (!l->page_tables_busy.empty()) {
      pt.v = verdict::not_measurable;
      pt.why = l->page_tables_busy;
    }
    out.push_back(pt);
    if (s.name == "end") compare_slabs(scenario, s, *l, tol, out);
  }
  if (!sim.failures.empty() || !live.failures.empty()) out.push_back(compare_run_end(scenario, sim, live));
  return out;
}

}  // namespace vmlab
