#include "report/compare.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace vmlab {
namespace {

const slab_row* peak_row(const run_result& r, const char* name) {
  for (const auto& s : r.peak.slabs)
    if (s.name == name) return &s;
  return nullptr;
}

std::optional<double> slab_bytes(const run_result& r, const char* name) {
  const slab_row* s = peak_row(r, name);
  if (!s) return std::nullopt;
  return double(s->active_objs) * s->objsize;
}

const meminfo* end_mi(const run_result& r) { return r.samples.empty() ? nullptr : &r.samples.back().mi; }

struct figure_def {
  const char* figure;
  const char* unit;
  std::optional<double> (*get)(const run_result&);
};

// The reverse-map caches of every design vmlab models (whichever the profile has).
constexpr const char* kRmapCaches[] = {"pte_chain", "anon_vma", "anon_vma_chain"};

const figure_def kFigures[] = {
    {"PageTables (max)", "bytes", [](const run_result& r) -> std::optional<double> { return double(r.peak.page_tables); }},
    {"pte_chain (max)", "bytes", [](const run_result& r) { return slab_bytes(r, "pte_chain"); }},
    {"anon_vma (max)", "bytes", [](const run_result& r) { return slab_bytes(r, "anon_vma"); }},
    {"anon_vma_chain (max)", "bytes", [](const run_result& r) { return slab_bytes(r, "anon_vma_chain"); }},
    {"page tables + rmap (sum of maxima)", "bytes",
     [](const run_result& r) -> std::optional<double> {
       double sum = double(r.peak.page_tables);
       for (const char* c : kRmapCaches) sum += slab_bytes(r, c).value_or(0);
       return sum;
     }},
    {"low memory in use (max)", "bytes",
     [](const run_result& r) -> std::optional<double> {
       const meminfo* mi = end_mi(r);
       if (!mi || !mi->has_highmem) return std::nullopt;
       return double(r.peak.mi.low_total - r.peak.mi.low_free);  // peak low_free is the minimum
     }},
    {"largest process's page tables (max)", "bytes",
     [](const run_result& r) -> std::optional<double> { return double(r.peak.vmpte_max_proc); }},
    {"hugetlb pool (end)", "bytes",
     [](const run_result& r) -> std::optional<double> {
       const meminfo* mi = end_mi(r);
       if (!mi || !mi->has_hugetlb) return std::nullopt;
       return double(mi->has_hugetlb_total ? mi->hugetlb : mi->hugepages_total * mi->hugepagesize);
     }},
    {"AnonHugePages (max)", "bytes",
     [](const run_result& r) -> std::optional<double> {
       const meminfo* mi = end_mi(r);
       if (!mi || !mi->has_thp) return std::nullopt;
       return double(r.peak.mi.anon_huge);
     }},
    {"ShmemPmdMapped (max)", "bytes",
     [](const run_result& r) -> std::optional<double> {
       const meminfo* mi = end_mi(r);
       if (!mi || !mi->has_shmem_thp) return std::nullopt;
       return double(r.peak.mi.shmem_pmd_mapped);
     }},
    {"page faults", "faults", [](const run_result& r) -> std::optional<double> { return double(r.faults); }},
};

std::string cell(const std::optional<double>& v, const std::string& unit, bool sign, size_unit u) {
  if (!v) return "-";
  if (unit == "bytes") return sign ? format_size_signed(*v, u) : format_size(*v, u);
  return sign ? fmt::format("{:+.0f}", *v) : fmt::format("{:.0f}", *v);
}

std::optional<double> diff(const std::optional<double>& a, const std::optional<double>& b) {
  if (!a || !b) return std::nullopt;
  return *b - *a;
}

std::string trim(std::string s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

}  // namespace

std::vector<std::string> split_settings(std::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t semi = text.find(';', pos);
    std::string s = trim(std::string(text.substr(pos, semi == std::string_view::npos ? std::string_view::npos : semi - pos)));
    if (!s.empty()) out.push_back(std::move(s));
    if (semi == std::string_view::npos) break;
    pos = semi + 1;
  }
  return out;
}

result<compare_variant> parse_variant(const std::string& text) {
  const size_t colon = text.find(':');
  compare_variant v;
  v.label = trim(colon == std::string::npos ? "" : text.substr(0, colon));
  if (v.label.empty())
    return status::invalid_argument("--variant '" + text +
                                    "': a variant is \"LABEL: PATH=VALUE; PATH=VALUE\" (a label, a colon, then "
                                    "settings; no settings = the scenario as written)");
  v.settings = split_settings(std::string_view(text).substr(colon + 1));
  return v;
}

std::vector<compare_row> compare_rows(const std::vector<compare_variant>& v) {
  std::vector<compare_row> rows;
  for (const figure_def& f : kFigures) {
    compare_row row{f.figure, f.unit, {}};
    bool any = false;
    for (const auto& x : v) {
      row.values.push_back(f.get(x.result));
      any = any || row.values.back().has_value();
    }
    // Rows of figures no variant has, and rmap rows that are zero everywhere, say nothing.
    const bool all_zero = std::all_of(row.values.begin(), row.values.end(), [](const auto& x) { return !x || *x == 0; });
    if (!any || (all_zero && row.figure != "PageTables (max)")) continue;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string format_compare(const std::string& scenario, const std::vector<compare_variant>& v,
                           const std::string& command, size_unit u) {
  std::string out = fmt::format("vmlab {} {}  engine: sim\n", command, scenario);
  for (const auto& x : v)
    out += fmt::format("  {}: kernel {}{}{}\n", x.label, x.result.profile, x.settings.empty() ? "" : ", ",
                       [&] {
                         std::string s;
                         for (const auto& st : x.settings) s += (s.empty() ? "" : "; ") + st;
                         return s;
                       }());
  const auto rows = compare_rows(v);
  // The cells first: a column is as wide as its widest cell (exact bytes are long).
  std::vector<std::string> head;
  for (const auto& x : v) head.push_back(x.label);
  for (size_t i = 1; i < v.size(); ++i) head.push_back(v[i].label + " - " + v[0].label);
  std::vector<std::vector<std::string>> cells;
  size_t w0 = 12;
  for (const auto& r : rows) {
    w0 = std::max(w0, r.figure.size());
    std::vector<std::string> c;
    for (size_t i = 0; i < v.size(); ++i) c.push_back(cell(r.values[i], r.unit, false, u));
    for (size_t i = 1; i < v.size(); ++i) c.push_back(cell(diff(r.values[0], r.values[i]), r.unit, true, u));
    cells.push_back(std::move(c));
  }
  std::vector<size_t> w;
  for (size_t c = 0; c < head.size(); ++c) {
    w.push_back(std::max<size_t>(12, head[c].size()));
    for (const auto& row : cells) w[c] = std::max(w[c], row[c].size());
  }
  out += fmt::format("\n{:<{}}", "", w0);
  for (size_t c = 0; c < head.size(); ++c) out += fmt::format("  {:>{}}", head[c], w[c]);
  out += "\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    out += fmt::format("{:<{}}", rows[r].figure, w0);
    for (size_t c = 0; c < head.size(); ++c) out += fmt::format("  {:>{}}", cells[r][c], w[c]);
    out += "\n";
  }
  out += "\n(" + size_unit_legend(u) + "; maxima over the run, each figure on its own, as the seeds quote them)\n";
  for (const auto& x : v)
    for (const auto& f : x.result.failures)
      out += fmt::format("{}: RUN ENDED EARLY at op {} `{}`: {}\n", x.label, f.op_index, f.op_text, f.error);
  return out;
}

nlohmann::json compare_json(const std::string& scenario, const std::vector<compare_variant>& v) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["scenario"] = scenario;
  j["variants"] = nlohmann::json::array();
  for (const auto& x : v) {
    nlohmann::json f = nlohmann::json::array();
    for (const auto& fl : x.result.failures) f.push_back({{"op_index", fl.op_index}, {"op", fl.op_text}, {"error", fl.error}});
    j["variants"].push_back({{"label", x.label},
                             {"settings", x.settings},
                             {"profile", x.result.profile},
                             {"completed", x.result.failures.empty()},
                             {"failures", f}});
  }
  j["rows"] = nlohmann::json::array();
  for (const auto& r : compare_rows(v)) {
    nlohmann::json vals = nlohmann::json::array(), diffs = nlohmann::json::array();
    for (const auto& x : r.values) vals.push_back(x ? nlohmann::json(*x) : nlohmann::json(nullptr));
    for (size_t i = 1; i < r.values.size(); ++i) {
      const auto d = diff(r.values[0], r.values[i]);
      diffs.push_back(d ? nlohmann::json(*d) : nlohmann::json(nullptr));
    }
    j["rows"].push_back({{"figure", r.figure}, {"unit", r.unit}, {"values", vals}, {"diff", diffs}});
  }
  return j;
}

nlohmann::json compare_csv_rows(const std::vector<compare_variant>& v) {
  nlohmann::json rows = nlohmann::json::array();
  for (const compare_row& r : compare_rows(v)) {
    nlohmann::json row = {{"figure", r.figure}, {"unit", r.unit}};
    for (size_t i = 0; i < v.size(); ++i)
      row[v[i].label] = r.values[i] ? nlohmann::json(*r.values[i]) : nlohmann::json(nullptr);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<std::string> compare_csv_columns(const std::vector<compare_variant>& v) {
  std::vector<std::string> c = {"figure", "unit"};
  for (const compare_variant& x : v) c.push_back(x.label);
  return c;
}

}  // namespace vmlab
