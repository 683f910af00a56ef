#include "report/report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "model/slab.h"

namespace vmlab {
namespace {

nlohmann::json levels_json(const level_counts& c) {
  nlohmann::json j = nlohmann::json::object();
  for (int i = 0; i < kLevels; ++i) j[level_name(static_cast<level>(i))] = c[i];
  return j;
}

// The profile's /proc/meminfo lines, in bytes (ReverseMaps: a count), under the kernel's
// names; a line the kernel does not print is left out. In the peaks the free figures are
// minima, and their keys say so.
nlohmann::json meminfo_json(const meminfo& m, bool peak) {
  const std::string min = peak ? "_min" : "";
  nlohmann::json j = nlohmann::json::object();
  j["MemTotal"] = m.mem_total;
  j["MemFree" + min] = m.mem_free;
  if (m.has_highmem) {
    j["LowTotal"] = m.low_total;
    j["LowFree" + min] = m.low_free;
    j["HighTotal"] = m.high_total;
    j["HighFree" + min] = m.high_free;
  }
  j["PageTables"] = m.page_tables;
  j["Cached"] = m.cached;
  j["Dirty"] = m.dirty;
  if (!peak) j["Writeback"] = m.writeback;
  if (m.has_mapped) j["Mapped"] = m.mapped;
  j["Slab"] = m.slab;
  if (m.has_reverse_maps) j["ReverseMaps"] = m.reverse_maps;
  if (m.has_thp) j["AnonHugePages"] = m.anon_huge;
  if (m.has_shmem_thp) {
    j["ShmemHugePages"] = m.shmem_huge;
    j["ShmemPmdMapped"] = m.shmem_pmd_mapped;
  }
  if (m.has_hugetlb) {
    j["HugePages_Total"] = m.hugepages_total;
    j["HugePages_Free"] = m.hugepages_free;
    j["HugePages_Rsvd"] = m.hugepages_rsvd;
    j["HugePages_Surp"] = m.hugepages_surp;
    j["Hugepagesize"] = m.hugepagesize;
  }
  if (m.has_hugetlb_total) j["Hugetlb"] = m.hugetlb;
  j["mem_map"] = m.mem_map;
  return j;
}

nlohmann::json slab_json(const slab_row& r) {
  return {{"name", r.name},
          {"active_objs", r.active_objs},
          {"num_objs", r.num_objs},
          {"objsize", r.objsize},
          {"objperslab", r.objperslab},
          {"pagesperslab", r.pagesperslab},
          {"active_slabs", r.active_slabs},
          {"num_slabs", r.num_slabs},
          {"limit", r.limit},
          {"batchcount", r.batchcount},
          {"sharedfactor", r.sharedfactor}};
}

nlohmann::json slabs_json(const std::vector<slab_row>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : rows) j.push_back(slab_json(r));
  return j;
}

// Peak meminfo is sim only; a result without it leaves MemTotal at 0.
bool has_peak_meminfo(const run_result& r) { return r.peak.mi.mem_total != 0; }

nlohmann::json sample_json(const sample& s) {
  nlohmann::json procs = nlohmann::json::array();
  for (const auto& p : s.procs)
    procs.push_back({{"pid", p.pid}, {"VmPTE", p.vmpte}, {"VmPTE_workload", p.vmpte_workload},
                     {"RssAnon_pages", p.rss_anon}, {"RssFile_pages", p.rss_file},
                     {"RssShmem_pages", p.rss_shmem}, {"min_flt", p.min_flt}, {"HugetlbPages", p.hugetlb}});
  nlohmann::json j = {{"name", s.name}, {"op_index", s.op_index}, {"PageTables", s.page_tables},
                      {"PageTables_workload", s.page_tables_workload}, {"nr_procs", s.nr_procs}, {"procs", procs}};
  j["pt_pages"] = s.pt_pages_known ? levels_json(s.pt_pages) : nlohmann::json(nullptr);
  // Only what the engine knows: a result without these keeps the issue-2 shape.
  if (s.mi_known) j["meminfo"] = meminfo_json(s.mi, false);
  if (!s.slabs.empty()) j["slabs"] = slabs_json(s.slabs);
  if (!s.slabs_workload.empty()) j["slabs_workload"] = slabs_json(s.slabs_workload);
  if (s.cached_known) j["Cached_workload"] = s.cached_workload;
  if (!s.page_tables_busy.empty()) j["page_tables_busy"] = s.page_tables_busy;
  if (!s.slabs_busy.empty()) j["slabs_busy"] = s.slabs_busy;
  return j;
}

nlohmann::json notes_json(const std::vector<note>& notes) {
  nlohmann::json j = nlohmann::json::array();
  for (const note& n : notes) {
    nlohmann::json x = {{"id", n.id}, {"text", n.text}, {"finding", n.finding}};
    if (!n.detail.empty()) x["detail"] = n.detail;
    j.push_back(std::move(x));
  }
  return j;
}

std::string size_text(uint64_t bytes_, size_unit u) { return format_size(double(bytes_), u); }

// The meminfo lines a kernel with these flags prints, in /proc/meminfo order, and how to
// read each from a meminfo (sizes, except ReverseMaps and the pool's counts).
struct mi_column {
  const char* name;
  uint64_t meminfo::*field;
  bool is_count;
};

std::vector<mi_column> mi_columns(const meminfo& flags) {
  std::vector<mi_column> c = {
      {"MemTotal", &meminfo::mem_total, false}, {"MemFree", &meminfo::mem_free, false}, {"Cached", &meminfo::cached, false}};
  if (flags.has_highmem)
    c.insert(c.end(), {{"HighTotal", &meminfo::high_total, false},
                       {"HighFree", &meminfo::high_free, false},
                       {"LowTotal", &meminfo::low_total, false},
                       {"LowFree", &meminfo::low_free, false}});
  if (flags.has_mapped) c.push_back({"Mapped", &meminfo::mapped, false});
  c.push_back({"Slab", &meminfo::slab, false});
  c.push_back({"PageTables", &meminfo::page_tables, false});
  if (flags.has_reverse_maps) c.push_back({"ReverseMaps", &meminfo::reverse_maps, true});
  if (flags.has_thp) c.push_back({"AnonHugePages", &meminfo::anon_huge, false});
  if (flags.has_shmem_thp)
    c.insert(c.end(), {{"ShmemHugePages", &meminfo::shmem_huge, false}, {"ShmemPmdMapped", &meminfo::shmem_pmd_mapped, false}});
  // The pool lines only where there is a pool: a profile with hugetlb but no pages would
  // print five zeros.
  if (flags.has_hugetlb && flags.hugepages_total)
    c.insert(c.end(), {{"HugePages_Total", &meminfo::hugepages_total, true},
                       {"HugePages_Free", &meminfo::hugepages_free, true},
                       {"HugePages_Rsvd", &meminfo::hugepages_rsvd, true},
                       {"HugePages_Surp", &meminfo::hugepages_surp, true}});
  c.push_back({"mem_map", &meminfo::mem_map, false});
  return c;
}

std::string mi_row(const std::string& label, const meminfo& m, const std::vector<mi_column>& cols, size_unit u) {
  std::string out = fmt::format("{:<16}", label);
  for (const auto& c : cols) {
    const uint64_t v = m.*c.field;
    out += fmt::format(" {:>13}", c.is_count ? std::to_string(v) : size_text(v, u));
  }
  return out + "\n";
}

std::string format_meminfo(const run_result& r, size_unit u) {
  const auto first = std::find_if(r.samples.begin(), r.samples.end(), [](const sample& s) { return s.mi_known; });
  if (first == r.samples.end()) return "";
  // The columns of the sample with the most lines (a pool may only grow during the run).
  meminfo flags = first->mi;
  for (const auto& smp : r.samples)
    if (smp.mi_known && smp.mi.hugepages_total > flags.hugepages_total) flags.hugepages_total = smp.mi.hugepages_total;
  const auto cols = mi_columns(flags);
  std::string out = "\n/proc/meminfo";
  if (first->mi.has_reverse_maps) out += " (ReverseMaps: a count of pte -> page mappings)";
  out += ":\n" + fmt::format("{:<16}", "sample");
  for (const auto& c : cols) out += fmt::format(" {:>13}", c.name);
  out += "\n";
  for (const auto& s : r.samples)
    if (s.mi_known) out += mi_row(s.name, s.mi, cols, u);
  if (has_peak_meminfo(r)) out += mi_row("max (Free: min)", r.peak.mi, cols, u);
  return out;
}

std::string slab_table(const std::string& title, const std::vector<slab_row>& rows, bytes page, size_unit u) {
  std::string out = fmt::format("\n{}:\n{:<20} {:>12} {:>12} {:>8} {:>10} {:>12} {:>12} {:>10} {:>12}\n", title, "cache",
                                "active_objs", "num_objs", "objsize", "objperslab", "pagesperslab", "active_slabs",
                                "num_slabs", "slab memory");
  for (const auto& s : rows)
    out += fmt::format("{:<20} {:>12} {:>12} {:>8} {:>10} {:>12} {:>12} {:>10} {:>12}\n", s.name, s.active_objs, s.num_objs,
                       s.objsize, s.objperslab, s.pagesperslab, s.active_slabs, s.num_slabs,
                       size_text(s.num_slabs * s.pagesperslab * page, u));
  return out;
}

std::string format_slabs(const run_result& r, size_unit u) {
  if (r.samples.empty()) return "";
  const sample& end = r.samples.back();
  std::string out;
  if (!end.slabs.empty())
    out += slab_table(fmt::format("slab caches at '{}'{}", end.name,
                                  r.engine == "sim" ? " (the workload's objects)" : " (this host, whole system)"),
                      end.slabs, r.page_size, u);
  if (!end.slabs_workload.empty())
    out += slab_table(fmt::format("slab caches at '{}', growth since the baseline", end.name), end.slabs_workload,
                      r.page_size, u);
  if (!r.peak.slabs.empty())
    out += slab_table("slab caches, maxima over the run (each column on its own)", r.peak.slabs, r.page_size, u);
  return out;
}

// A validate figure in its unit: bytes in `u`, counts as they are.
std::string in_unit(const std::string& unit, double v, size_unit u) {
  return unit == "bytes" ? size_text(uint64_t(v), u) : fmt::format("{}", uint64_t(v));
}

}  // namespace

nlohmann::json to_json(const run_result& r) {
  nlohmann::json j;
  j["schema_version"] = run_result::kSchemaVersion;
  j["engine"] = r.engine;
  j["scenario"] = r.scenario;
  j["process_image"] = r.process_image;
  j["profile"] = r.profile;
  j["page_size"] = r.page_size;
  j["completed"] = r.failures.empty();
  j["ops_applied"] = r.ops_applied;
  j["faults"] = r.faults;
  j["cow_faults"] = r.cow_faults;
  if (r.engine == "sim") j["page_cache"] = {{"written_pages", r.pages_written}, {"readahead_pages", r.readahead_pages}};
  if (r.shares_page_tables)
    j["shared_page_tables"] = {{"attaches", r.pt_attaches}, {"unshares", r.pt_unshares}, {"tlb_flush_all", r.tlb_flush_all}};
  if (r.engine == "sim") {
    const reclaim_stats& c = r.reclaim;
    j["reclaim"] = {{"scanned", c.scanned},   {"reclaimed", c.reclaimed},   {"rotated", c.rotated},
                    {"kept", c.kept},         {"unmapped", c.unmapped},     {"written", c.written},
                    {"swap_out_calls", c.swap_out_calls},
                    {"rmap_work",
                     {{"walks", c.work.walks}, {"chain_entries", c.work.chain_entries}, {"chain_objects", c.work.chain_objects},
                      {"vmas_visited", c.work.vmas_visited}, {"pt_walks", c.work.pt_walks},
                      {"ptes_scanned", c.work.ptes_scanned}, {"unmapped", c.work.unmapped}}}};
  }
  j["samples"] = nlohmann::json::array();
  for (const auto& s : r.samples) j["samples"].push_back(sample_json(s));
  j["peak"] = {{"PageTables", r.peak.page_tables}, {"PageTables_workload", r.peak.page_tables_workload},
               {"VmPTE_max_process", r.peak.vmpte_max_proc}, {"pt_pages", levels_json(r.peak.pt_pages)}};
  if (has_peak_meminfo(r)) j["peak"]["meminfo"] = meminfo_json(r.peak.mi, true);
  if (!r.peak.slabs.empty()) j["peak"]["slabs"] = slabs_json(r.peak.slabs);
  j["failures"] = nlohmann::json::array();
  for (const auto& f : r.failures) {
    nlohmann::json fj = {{"op_index", f.op_index}, {"op", f.op_text}, {"error", f.error}};
    if (f.host != host_answer::none) fj["host"] = host_answer_name(f.host);
    j["failures"].push_back(std::move(fj));
  }
  if (!r.slabinfo_version.empty()) j["slabinfo_version"] = r.slabinfo_version;
  if (!r.vmpte_line) j["vmpte_line"] = false;
  if (!r.rmap.empty()) j["rmap"] = r.rmap;
  j["notes"] = notes_json(r.notes);
  j["timing"] = {{"wall_seconds", r.wall_seconds}, {"cpu_seconds", r.cpu_seconds}};
  return j;
}

std::string format_notes(const std::vector<note>& notes, bool verbose) {
  std::string out;
  for (const note& n : notes) {
    out += fmt::format("note: {}\n", n.text);
    if (verbose && !n.detail.empty()) out += fmt::format("      {}\n", n.detail);
  }
  return out;
}

std::string format_table(const run_result& r, bool verbose, size_unit u) {
  std::string out = fmt::format("vmlab run {}  engine: {}  kernel: {}\n", r.scenario, r.engine, r.profile);
  out += fmt::format("ops applied: {}   faults: {}", r.ops_applied, r.faults);
  if (r.engine == "sim") out += fmt::format(" (COW copies: {})", r.cow_faults);
  if (r.shares_page_tables)
    out += fmt::format("\nshared page tables: {} taken from a partner, {} unshared (flush_tlb_all: {})", r.pt_attaches,
                       r.pt_unshares, r.tlb_flush_all);
  if (const reclaim_stats& c = r.reclaim; c.scanned) {
    out += fmt::format("\nreclaim: {} pages scanned, {} evicted, {} rotated (referenced), {} kept (mlocked or in shared tables), "
                       "{} PTEs unmapped, {} written",
                       c.scanned, c.reclaimed, c.rotated, c.kept, c.unmapped, c.written);
    if (c.work.ptes_scanned)
      out += fmt::format("\n  swap_out: {} passes, {} PTEs scanned in {} PTE tables", c.swap_out_calls, c.work.ptes_scanned, c.work.pt_walks);
    else if (c.work.walks)
      out += fmt::format("\n  rmap walks: {} ({} chain entries in {} pte_chain objects, {} VMAs, {} page-table walks)", c.work.walks,
                         c.work.chain_entries, c.work.chain_objects, c.work.vmas_visited, c.work.pt_walks);
  }
  out += "\n\n";
  out += fmt::format("{:<16} {:>6} {:>14} {:>14}   {:>5} {:>5} {:>6} {:>7} {:>9}\n", "sample", "procs", "PageTables",
                     "(workload)", "pgd", "p4d", "pud", "pmd", "pte");
  for (const auto& s : r.samples) {
    out += fmt::format("{:<16} {:>6} {:>14} {:>14}", s.name, s.nr_procs, size_text(s.page_tables, u), size_text(s.page_tables_workload, u));
    if (s.pt_pages_known)
      out += fmt::format("   {:>5} {:>5} {:>6} {:>7} {:>9}", s.pt_pages[0], s.pt_pages[1], s.pt_pages[2], s.pt_pages[3],
                         s.pt_pages[4]);
    else
      out += "   (page-table pages per level: not observable on a live kernel)";
    out += "\n";
  }
  // A kernel without a VmPTE line still spent page tables per mm: say whose figure it is.
  const char* vmpte = r.vmpte_line ? "VmPTE" : "page tables (no VmPTE line before 2.6.10)";
  out += fmt::format("\nPageTables (max): {:>14}\n{} (max, one process): {:>6}\n", size_text(r.peak.page_tables, u), vmpte,
                     size_text(r.peak.vmpte_max_proc, u));
  out += r.process_image ? "(VmPTE: the whole process's, its image included: text, libraries, heap, stack)\n"
                         : "(VmPTE: the workload's mappings only; a group's image = \"typical\" adds the rest of a process)\n";
  if (!r.samples.empty()) {
    const sample& end = r.samples.back();
    bool hugetlb = false;
    for (const auto& p : end.procs) hugetlb |= p.hugetlb != 0;
    out += fmt::format("\nper process at '{}':\n{:>6} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10}{}\n", end.name, "pid",
                       r.vmpte_line ? "VmPTE" : "mm PT bytes", "(workload)", "RssAnon", "RssFile", "RssShmem", "minflt",
                       hugetlb ? fmt::format(" {:>13}", "HugetlbPages") : "");
    const size_t shown = std::min<size_t>(end.procs.size(), 32);
    for (size_t i = 0; i < shown; ++i) {
      const auto& p = end.procs[i];
      out += fmt::format("{:>6} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10}{}\n", p.pid, size_text(p.vmpte, u), size_text(p.vmpte_workload, u),
                         size_text(p.rss_anon * r.page_size, u), size_text(p.rss_file * r.page_size, u),
                         size_text(p.rss_shmem * r.page_size, u), p.min_flt,
                         hugetlb ? fmt::format(" {:>13}", size_text(p.hugetlb, u)) : "");
    }
    if (end.procs.size() > shown) out += fmt::format("   ... {} more processes (--json has all)\n", end.procs.size() - shown);
  }
  out += format_meminfo(r, u);
  out += format_slabs(r, u);
  for (const auto& f : r.failures)
    out += fmt::format("\nRUN ENDED EARLY at op {} `{}`:\n  {}\n", f.op_index, f.op_text, f.error);
  if (!r.notes.empty()) out += "\n" + format_notes(r.notes, verbose);
  return out;
}

result<std::string> format_slabinfo(const run_result& r) {
  const auto f = parse_slabinfo_version(r.slabinfo_version);
  if (!f)
    return status::invalid_argument(r.slabinfo_version.empty()
                                        ? "--slabinfo: this run has no /proc/slabinfo (no slabinfo version in the result)"
                                        : "--slabinfo: unknown slabinfo version '" + r.slabinfo_version + "'");
  if (r.samples.empty() || r.samples.back().slabs.empty())
    return status::invalid_argument("--slabinfo: this run has no slab rows");
  const sample& end = r.samples.back();
  std::string out = slabinfo_header(*f);
  for (const auto& row : end.slabs) out += slabinfo_row(row, *f) + "\n";
  out += "# maxima over the run (each column's maximum on its own)\n";
  if (r.peak.slabs.empty()) out += "# (not observable on a live kernel)\n";
  for (const auto& row : r.peak.slabs) out += slabinfo_row(row, *f) + "\n";
  for (const auto& fl : r.failures)
    out += fmt::format("# RUN ENDED EARLY at op {} `{}`: {}\n", fl.op_index, fl.op_text, fl.error);
  return out;
}

const char* host_answer_name(host_answer a) {
  switch (a) {
    case host_answer::none: return "";
    case host_answer::refused: return "refused";
    case host_answer::not_asked: return "not asked";
    case host_answer::carried_out: return "carried out";
  }
  return "?";
}

const char* verdict_name(verdict v) {
  switch (v) {
    case verdict::ok: return "ok";
    case verdict::fail: return "FAIL";
    case verdict::not_measurable: return "not measurable";
    case verdict::skipped: return "skipped";
  }
  return "?";
}

nlohmann::json to_json(const std::vector<validate_case>& cases, const std::vector<note>& notes) {
  nlohmann::json j;
  j["schema_version"] = run_result::kSchemaVersion;
  j["cases"] = nlohmann::json::array();
  size_t failed = 0, unmeasured = 0, skipped = 0;
  for (const auto& c : cases) {
    nlohmann::json x = {{"scenario", c.scenario}, {"metric", c.metric()}, {"unit", c.unit}, {"sim", c.sim},
                        {"live", c.live}, {"rel_error", c.rel_error}, {"tolerance", c.tolerance},
                        {"tolerance_rule", c.tolerance_rule}, {"verdict", verdict_name(c.v)}, {"ok", c.v == verdict::ok}};
    if (!c.why.empty()) x["why"] = c.why;
    j["cases"].push_back(std::move(x));
    failed += c.failed();
    unmeasured += c.v == verdict::not_measurable;
    skipped += c.v == verdict::skipped;
  }
  j["failed"] = failed;
  j["not_measurable"] = unmeasured;
  j["skipped"] = skipped;
  j["notes"] = notes_json(notes);
  return j;
}

std::string validate_case::metric() const {
  return pid ? fmt::format("{}[pid={}]@{}", figure, pid, at) : fmt::format("{}@{}", figure, at);
}

namespace {

// The difference live - sim in the case's unit, signed.
std::string signed_in_unit(const std::string& unit, double v, size_unit u) {
  return unit == "bytes" ? format_size_signed(v, u) : fmt::format("{:+.0f}", v);
}

// How bad a case is, for choosing the one row shown of a group: failures first, then
// the largest difference relative to its tolerance.
double badness(const validate_case& c) {
  const double over = std::fabs(c.sim - c.live) / std::max(c.tolerance, 1.0);
  return c.v == verdict::fail ? 1e9 + over : c.v != verdict::ok ? 1e6 + over : over;
}

}  // namespace

std::string format_validate_table(const std::vector<validate_case>& cases, size_unit u) {
  std::string out = fmt::format("{:<30} {:<12} {:<28} {:>12} {:>12} {:>10}  {:<28} {}\n", "scenario", "sample", "figure",
                                "sim", "live", "live-sim", "tolerance", "verdict");
  size_t counts[4] = {0, 0, 0, 0};
  std::vector<const validate_case*> unmeasured;
  for (size_t i = 0; i < cases.size();) {
    // Collapse consecutive cases of the same scenario, sample and figure: show the worst.
    size_t j = i, worst = i;
    size_t n_by[4] = {0, 0, 0, 0};
    for (; j < cases.size() && cases[j].scenario == cases[i].scenario && cases[j].at == cases[i].at &&
           cases[j].figure == cases[i].figure; ++j) {
      ++n_by[static_cast<int>(cases[j].v)];
      if (badness(cases[j]) > badness(cases[worst])) worst = j;
    }
    const validate_case& c = cases[worst];
    std::string fig = c.figure;
    if (j - i > 1) fig += fmt::format(" (worst of {})", j - i);
    else if (c.pid) fig += fmt::format(" (pid {})", c.pid);
    std::string v = verdict_name(c.v);
    if (n_by[1] > 1) v += fmt::format(" ({} of {})", n_by[1], j - i);
    const bool measured = c.v == verdict::ok || c.v == verdict::fail;
    out += fmt::format("{:<30} {:<12} {:<28} {:>12} {:>12} {:>10}  {:<28} {}\n", c.scenario, c.at, fig,
                       in_unit(c.unit, c.sim, u), measured ? in_unit(c.unit, c.live, u) : "-",
                       measured ? signed_in_unit(c.unit, c.live - c.sim, u) : "-",
                       c.tolerance_rule.empty() ? fmt::format("±{}", in_unit(c.unit, c.tolerance, u))
                                                : fmt::format("±{} ({})", in_unit(c.unit, c.tolerance, u), c.tolerance_rule),
                       v);
    for (int k = 0; k < 4; ++k) counts[k] += n_by[k];
    if (!measured) unmeasured.push_back(&c);
    i = j;
  }
  out += fmt::format("\n{} figures compared: {} ok, {} FAIL, {} not measurable on this host", cases.size(), counts[0],
                     counts[1], counts[2]);
  if (counts[3]) out += fmt::format(", {} scenario{} skipped", counts[3], counts[3] == 1 ? "" : "s");
  out += "\n";
  for (const validate_case* c : unmeasured)
    out += fmt::format("  {}: {} {}: {}\n", verdict_name(c->v), c->scenario, c->v == verdict::skipped ? "" : c->metric(), c->why);
  return out;
}

}  // namespace vmlab
