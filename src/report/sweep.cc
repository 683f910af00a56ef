#include "report/sweep.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace vmlab {
namespace {

// Splits at `sep` outside quotes and brackets (TOML values); nullopt-like empty vector
// with `open` set when a quote or bracket is left open.
std::vector<std::string> split_values(std::string_view s, char sep, bool nest, bool& open) {
  std::vector<std::string> out(1);
  int depth = 0;
  char quote = 0;
  for (const char c : s) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (nest && (c == '"' || c == '\'')) {
      quote = c;
    } else if (nest && (c == '[' || c == '{')) {
      ++depth;
    } else if (nest && (c == ']' || c == '}')) {
      --depth;
    } else if (c == sep && depth == 0) {
      out.emplace_back();
      continue;
    }
    out.back() += c;
  }
  open = quote != 0 || depth != 0;
  return out;
}

std::string trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(" \t") - b + 1));
}

// The value of axis `k` in variant `v` (its setting is "KEY=VALUE").
std::string value_of(const sweep_axis& a, const sweep_variant& v, size_t k) {
  return v.settings[k].substr(a.key.size() + 1);
}

std::string number(double x) {
  if (std::nearbyint(x) == x && std::fabs(x) < 9.0e15) return fmt::format("{:.0f}", x);
  return fmt::format("{}", x);
}

std::string cell(const std::optional<double>& v, const std::string& unit, size_unit u) {
  if (!v) return "-";
  return unit == "bytes" ? format_size(*v, u) : fmt::format("{:.0f}", *v);
}

std::vector<size_t> varied(const std::vector<sweep_axis>& axes) {
  std::vector<size_t> out;
  for (size_t k = 0; k < axes.size(); ++k)
    if (axes[k].values.size() > 1) out.push_back(k);
  return out;
}

std::string format_csv(const std::vector<sweep_axis>& axes, const std::vector<sweep_variant>& variants,
                       const std::vector<compare_variant>& results, const std::vector<compare_row>& rows) {
  const auto cols = varied(axes);
  std::string out;
  for (size_t k : cols) out += csv_field(axes[k].key) + ",";
  out += "completed";
  for (const auto& r : rows) out += "," + csv_field(r.figure + (r.unit == "bytes" ? " [bytes]" : ""));
  out += "\r\n";
  for (size_t i = 0; i < variants.size(); ++i) {
    for (size_t k : cols) out += csv_field(value_of(axes[k], variants[i], k)) + ",";
    out += results[i].result.failures.empty() ? "true" : "false";
    for (const auto& r : rows) out += "," + (r.values[i] ? number(*r.values[i]) : std::string());
    out += "\r\n";
  }
  return out;
}

nlohmann::json sweep_json(const std::string& scenario, const std::vector<sweep_axis>& axes,
                          const std::vector<sweep_variant>& variants, const std::vector<compare_variant>& results,
                          const std::vector<compare_row>& rows) {
  nlohmann::json j = {{"schema_version", 1}, {"scenario", scenario}, {"engine", "sim"}};
  j["units"] = nlohmann::json::object();
  for (const auto& r : rows) j["units"][r.figure] = r.unit;
  j["variants"] = nlohmann::json::array();
  for (size_t i = 0; i < variants.size(); ++i) {
    nlohmann::json settings = nlohmann::json::object(), figures = nlohmann::json::object();
    for (size_t k = 0; k < axes.size(); ++k) settings[axes[k].key] = value_of(axes[k], variants[i], k);
    for (const auto& r : rows) figures[r.figure] = r.values[i] ? nlohmann::json(*r.values[i]) : nlohmann::json(nullptr);
    nlohmann::json failures = nlohmann::json::array();
    for (const auto& f : results[i].result.failures)
      failures.push_back({{"op_index", f.op_index}, {"op", f.op_text}, {"error", f.error}});
    j["variants"].push_back({{"index", i},
                             {"settings", settings},
                             {"profile", results[i].result.profile},
                             {"completed", failures.empty()},
                             {"failures", failures},
                             {"figures", figures}});
  }
  return j;
}

std::string format_table(const std::string& scenario, const std::vector<sweep_axis>& axes,
                         const std::vector<sweep_variant>& variants, const std::vector<compare_variant>& results,
                         const std::vector<compare_row>& rows, size_unit u) {
  std::string out = fmt::format("vmlab sweep {}  engine: sim  {} variants\n", scenario, variants.size());
  for (const auto& a : axes)
    if (a.values.size() == 1) out += fmt::format("  every variant: {}={}\n", a.key, a.values[0]);
  const auto cols = varied(axes);
  std::vector<std::string> head;
  for (size_t k : cols) head.push_back(axes[k].key);
  for (const auto& r : rows) head.push_back(r.figure);
  std::vector<std::vector<std::string>> cells;
  for (size_t i = 0; i < variants.size(); ++i) {
    std::vector<std::string> c;
    for (size_t k : cols) c.push_back(value_of(axes[k], variants[i], k));
    for (const auto& r : rows) c.push_back(cell(r.values[i], r.unit, u));
    cells.push_back(std::move(c));
  }
  std::vector<size_t> w;
  for (size_t c = 0; c < head.size(); ++c) {
    w.push_back(head[c].size());
    for (const auto& row : cells) w[c] = std::max(w[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& c) {
    std::string s;
    for (size_t x = 0; x < c.size(); ++x)
      s += x < cols.size() ? fmt::format("{:<{}}  ", c[x], w[x]) : fmt::format("  {:>{}}", c[x], w[x]);
    return trim(s) + "\n";
  };
  out += "\n" + line(head);
  for (const auto& c : cells) out += line(c);
  out += "\n(" + size_unit_legend(u) + "; maxima over the run, each figure on its own, as `vmlab compare` prints them)\n";
  for (size_t i = 0; i < variants.size(); ++i)
    for (const auto& f : results[i].result.failures)
      out += fmt::format("variant {}: RUN ENDED EARLY at op {} `{}`: {}\n", i, f.op_index, f.op_text, f.error);
  return out;
}

}  // namespace

result<sweep_axis> parse_sweep_axis(const std::string& text, bool list) {
  const char* opt = list ? "--set-list" : "--set";
  const size_t eq = text.find('=');
  sweep_axis a;
  a.key = trim(eq == std::string::npos ? "" : std::string_view(text).substr(0, eq));
  if (a.key.empty())
    return status::invalid_argument(fmt::format("{} '{}': expected KEY={}", opt, text, list ? "V1;V2;..." : "V1,V2,..."));
  bool open = false;
  for (auto& v : split_values(std::string_view(text).substr(eq + 1), list ? ';' : ',', !list, open)) {
    v = trim(v);
    if (v.empty())
      return status::invalid_argument(fmt::format("{} '{}': an empty value in the list of {} (values are separated "
                                                  "by '{}')",
                                                  opt, text, a.key, list ? ';' : ','));
    a.values.push_back(std::move(v));
  }
  if (open)
    return status::invalid_argument(fmt::format("{} '{}': a quote or bracket is left open", opt, text));
  return a;
}

result<std::vector<sweep_variant>> sweep_variants(const std::vector<sweep_axis>& axes) {
  std::set<std::string> keys;
  for (const auto& a : axes)
    if (!keys.insert(a.key).second)
      return status::invalid_argument("--set " + a.key + " is given twice: list its values in one --set");
  std::vector<sweep_variant> out(1);
  for (const auto& a : axes) {
    std::vector<sweep_variant> next;
    for (const auto& v : out)
      for (const auto& value : a.values) {
        sweep_variant n = v;
        n.settings.push_back(a.key + "=" + value);
        next.push_back(std::move(n));
      }
    out = std::move(next);
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].index = i;
  return out;
}

std::string variant_name(size_t index, size_t count) {
  const size_t digits = std::max<size_t>(3, std::to_string(count ? count - 1 : 0).size());
  return fmt::format("{:0{}}", index, digits);
}

std::string format_sweep(const std::string& scenario, const std::vector<sweep_axis>& axes,
                         const std::vector<sweep_variant>& variants, const std::vector<compare_variant>& results,
                         sweep_format f, size_unit u) {
  const auto rows = compare_rows(results);
  switch (f) {
    case sweep_format::csv: return format_csv(axes, variants, results, rows);
    case sweep_format::json: return sweep_json(scenario, axes, variants, results, rows).dump(2) + "\n";
    case sweep_format::table: break;
  }
  return format_table(scenario, axes, variants, results, rows, u);
}

std::string shell_quote(const std::string& s) {
  const bool safe = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
  });
  if (safe) return s;
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace vmlab
