#include "report/report.h"

#include <cmath>

#include <fmt/format.h>

namespace vmlab {
namespace {

nlohmann::json levels_json(const level_counts& c) {
  nlohmann::json j = nlohmann::json::object();
  for (int i = 0; i < kLevels; ++i) j[level_name(static_cast<level>(i))] = c[i];
  return j;
}

nlohmann::json sample_json(const sample& s) {
  nlohmann::json procs = nlohmann::json::array();
  for (const auto& p : s.procs)
    procs.push_back({{"pid", p.pid}, {"VmPTE", p.vmpte}, {"VmPTE_workload", p.vmpte_workload},
                     {"RssAnon_pages", p.rss_anon}, {"RssFile_pages", p.rss_file},
                     {"RssShmem_pages", p.rss_shmem}, {"min_flt", p.min_flt}});
  nlohmann::json j = {{"name", s.name}, {"op_index", s.op_index}, {"PageTables", s.page_tables},
                      {"PageTables_workload", s.page_tables_workload}, {"nr_procs", s.nr_procs}, {"procs", procs}};
  j["pt_pages"] = s.pt_pages_known ? levels_json(s.pt_pages) : nlohmann::json(nullptr);
  return j;
}

std::string kb(uint64_t bytes_) { return fmt::format("{} kB", bytes_ / 1024); }

}  // namespace

nlohmann::json to_json(const run_result& r) {
  nlohmann::json j;
  j["schema_version"] = run_result::kSchemaVersion;
  j["engine"] = r.engine;
  j["scenario"] = r.scenario;
  j["profile"] = r.profile;
  j["completed"] = r.failures.empty();
  j["ops_applied"] = r.ops_applied;
  j["faults"] = r.faults;
  j["cow_faults"] = r.cow_faults;
  j["samples"] = nlohmann::json::array();
  for (const auto& s : r.samples) j["samples"].push_back(sample_json(s));
  j["peak"] = {{"PageTables", r.peak.page_tables}, {"PageTables_workload", r.peak.page_tables_workload},
               {"VmPTE_max_process", r.peak.vmpte_max_proc}, {"pt_pages", levels_json(r.peak.pt_pages)}};
  j["failures"] = nlohmann::json::array();
  for (const auto& f : r.failures) j["failures"].push_back({{"op_index", f.op_index}, {"op", f.op_text}, {"error", f.error}});
  j["notes"] = r.notes;
  j["timing"] = {{"wall_seconds", r.wall_seconds}, {"cpu_seconds", r.cpu_seconds}};
  return j;
}

std::string format_table(const run_result& r) {
  std::string out = fmt::format("vmlab run {}  engine: {}  kernel: {}\n", r.scenario, r.engine, r.profile);
  out += fmt::format("ops applied: {}   faults: {}", r.ops_applied, r.faults);
  if (r.engine == "sim") out += fmt::format(" (COW copies: {})", r.cow_faults);
  out += "\n\n";
  out += fmt::format("{:<16} {:>6} {:>14} {:>14}   {:>5} {:>5} {:>6} {:>7} {:>9}\n", "sample", "procs", "PageTables",
                     "(workload)", "pgd", "p4d", "pud", "pmd", "pte");
  for (const auto& s : r.samples) {
    out += fmt::format("{:<16} {:>6} {:>14} {:>14}", s.name, s.nr_procs, kb(s.page_tables), kb(s.page_tables_workload));
    if (s.pt_pages_known)
      out += fmt::format("   {:>5} {:>5} {:>6} {:>7} {:>9}", s.pt_pages[0], s.pt_pages[1], s.pt_pages[2], s.pt_pages[3],
                         s.pt_pages[4]);
    else
      out += "   (page-table pages per level: not observable on a live kernel)";
    out += "\n";
  }
  out += fmt::format("\nPageTables (max): {:>14}\nVmPTE (max, one process): {:>6}\n", kb(r.peak.page_tables),
                     kb(r.peak.vmpte_max_proc));
  if (!r.samples.empty()) {
    const sample& end = r.samples.back();
    out += fmt::format("\nper process at '{}':\n{:>6} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10}\n", end.name, "pid", "VmPTE",
                       "(workload)", "RssAnon", "RssFile", "RssShmem", "minflt");
    const size_t shown = std::min<size_t>(end.procs.size(), 32);
    for (size_t i = 0; i < shown; ++i) {
      const auto& p = end.procs[i];
      out += fmt::format("{:>6} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10}\n", p.pid, kb(p.vmpte), kb(p.vmpte_workload),
                         kb(p.rss_anon * 4096), kb(p.rss_file * 4096), kb(p.rss_shmem * 4096), p.min_flt);
    }
    if (end.procs.size() > shown) out += fmt::format("   ... {} more processes (--json has all)\n", end.procs.size() - shown);
  }
  for (const auto& f : r.failures)
    out += fmt::format("\nRUN ENDED EARLY at op {} `{}`:\n  {}\n", f.op_index, f.op_text, f.error);
  for (const auto& n : r.notes) out += fmt::format("note: {}\n", n);
  return out;
}

nlohmann::json to_json(const std::vector<validate_case>& cases, const std::vector<std::string>& notes) {
  nlohmann::json j;
  j["schema_version"] = run_result::kSchemaVersion;
  j["cases"] = nlohmann::json::array();
  size_t failed = 0;
  for (const auto& c : cases) {
    j["cases"].push_back({{"scenario", c.scenario}, {"metric", c.metric()}, {"sim", c.sim}, {"live", c.live},
                          {"rel_error", c.rel_error}, {"tolerance", c.tolerance}, {"ok", c.ok}});
    failed += !c.ok;
  }
  j["failed"] = failed;
  j["notes"] = notes;
  return j;
}

std::string validate_case::metric() const {
  return pid ? fmt::format("{}[pid={}]@{}", figure, pid, at) : fmt::format("{}@{}", figure, at);
}

std::string format_validate_table(const std::vector<validate_case>& cases) {
  std::string out = fmt::format("{:<30} {:<12} {:<26} {:>12} {:>12} {:>8}  {}\n", "scenario", "sample", "figure", "sim", "live",
                                "rel.err", "");
  size_t failed = 0;
  for (size_t i = 0; i < cases.size();) {
    // Collapse consecutive cases of the same scenario, sample and figure: show the worst.
    size_t j = i, worst = i, n_bad = 0;
    for (; j < cases.size() && cases[j].scenario == cases[i].scenario && cases[j].at == cases[i].at &&
           cases[j].figure == cases[i].figure; ++j) {
      if (!cases[j].ok) ++n_bad;
      const bool worse = cases[worst].ok && !cases[j].ok;
      if (worse || (cases[j].ok == cases[worst].ok && std::abs(cases[j].sim - cases[j].live) > std::abs(cases[worst].sim - cases[worst].live)))
        worst = j;
    }
    const validate_case& c = cases[worst];
    std::string fig = c.figure;
    if (j - i > 1) fig += fmt::format(" (worst of {})", j - i);
    else if (c.pid) fig += fmt::format(" (pid {})", c.pid);
    out += fmt::format("{:<30} {:<12} {:<26} {:>12} {:>12} {:>7.3f}%  {}\n", c.scenario, c.at, fig, kb(uint64_t(c.sim)),
                       kb(uint64_t(c.live)), c.rel_error * 100, n_bad ? fmt::format("FAIL ({})", n_bad) : "ok");
    failed += n_bad;
    i = j;
  }
  out += fmt::format("\n{} figures compared, {} outside tolerance\n", cases.size(), failed);
  return out;
}

}  // namespace vmlab
