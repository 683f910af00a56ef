#include "report/plot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

namespace vmlab {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A string in a gnuplot script: double-quoted, with the backslash and quote escaped.
std::string gp_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// A string in the inline data block: quoted; gnuplot data has no escapes, so a quote
// becomes an apostrophe.
std::string data_string(std::string s) {
  std::replace(s.begin(), s.end(), '"', '\'');
  std::replace(s.begin(), s.end(), '\n', ' ');
  return "\"" + s + "\"";
}

std::string data_value(double v) { return std::isnan(v) ? "NaN" : fmt::format("{:.6g}", v); }

double max_value(const chart& c) {
  double m = 0;
  for (const auto& s : c.series)
    for (double v : s.values)
      if (!std::isnan(v)) m = std::max(m, std::fabs(v));
  return m;
}

}  // namespace

byte_unit unit_for(double max_bytes) {
  static const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t u = 0;
  double size = 1;
  while (max_bytes >= size * 1024 && u + 1 < std::size(names)) {
    size *= 1024;
    ++u;
  }
  return {names[u], size};
}

chart samples_chart(const run_result& r) {
  chart c;
  c.title = fmt::format("{}: PageTables per sample (kernel {}, {} engine)", r.scenario, r.profile, r.engine);
  c.xlabel = "sample";
  c.ylabel = "PageTables";
  c.how = chart::style::lines;
  chart_series s{"PageTables", {}};
  for (const auto& x : r.samples) {
    c.categories.push_back(x.name);
    s.values.push_back(double(x.page_tables));
  }
  c.series.push_back(std::move(s));
  return c;
}

chart levels_chart(const run_result& r) {
  chart c;
  c.title = fmt::format("{}: page-table pages per level at the end (kernel {})", r.scenario, r.profile);
  c.xlabel = "level";
  c.ylabel = "page-table pages";
  c.in_bytes = false;
  for (int l = 0; l < kLevels; ++l) c.categories.push_back(level_name(static_cast<level>(l)));
  if (r.samples.empty() || !r.samples.back().pt_pages_known) return c;
  chart_series s{"pages at the end", {}};
  for (int l = 0; l < kLevels; ++l) s.values.push_back(double(r.samples.back().pt_pages[l]));
  c.series.push_back(std::move(s));
  return c;
}

chart compare_chart(const std::vector<compare_row>& rows, const std::vector<std::string>& labels, bool in_bytes) {
  chart c;
  c.title = in_bytes ? "designs side by side: memory" : "designs side by side: counts";
  c.ylabel = in_bytes ? "bytes" : "count";
  c.in_bytes = in_bytes;
  for (const auto& l : labels) c.series.push_back({l, {}});
  for (const auto& row : rows) {
    if ((row.unit == "bytes") != in_bytes) continue;
    c.categories.push_back(row.figure);
    for (size_t i = 0; i < labels.size(); ++i)
      c.series[i].values.push_back(i < row.values.size() && row.values[i] ? *row.values[i] : kNaN);
  }
  return c;
}

result<run_result> run_result_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("samples") || !j["samples"].is_array())
    return status::invalid_argument("not a result of `vmlab run --json` (no \"samples\" array)");
  run_result r;
  try {
    r.engine = j.value("engine", "");
    r.scenario = j.value("scenario", "");
    r.profile = j.value("profile", "");
    for (const auto& s : j["samples"]) {
      sample x;
      x.name = s.at("name").get<std::string>();
      x.page_tables = s.at("PageTables").get<bytes>();
      x.nr_procs = s.value("nr_procs", uint64_t{0});
      if (s.contains("pt_pages") && s["pt_pages"].is_object()) {
        x.pt_pages_known = true;
        for (int l = 0; l < kLevels; ++l) x.pt_pages[l] = s["pt_pages"].at(level_name(static_cast<level>(l))).get<uint64_t>();
      }
      r.peak.page_tables = std::max(r.peak.page_tables, x.page_tables);
      r.samples.push_back(std::move(x));
    }
    if (j.contains("notes"))
      for (const auto& n : j["notes"]) r.notes.push_back({n.value("id", ""), n.value("text", ""), n.value("detail", ""), n.value("finding", false)});
  } catch (const nlohmann::json::exception& e) {
    return status::invalid_argument(std::string("a sample of the `vmlab run --json` result: ") + e.what());
  }
  return r;
}

status compare_from_json(const nlohmann::json& j, std::vector<compare_row>& rows, std::vector<std::string>& labels) {
  if (!j.is_object() || !j.contains("rows") || !j.contains("variants"))
    return status::invalid_argument("not a result of `vmlab compare --json` (no \"rows\" and \"variants\")");
  try {
    for (const auto& v : j.at("variants")) labels.push_back(v.at("label").get<std::string>());
    for (const auto& r : j.at("rows")) {
      compare_row row{r.at("figure").get<std::string>(), r.at("unit").get<std::string>(), {}};
      for (const auto& v : r.at("values")) row.values.push_back(v.is_null() ? std::nullopt : std::optional<double>(v.get<double>()));
      rows.push_back(std::move(row));
    }
  } catch (const nlohmann::json::exception& e) {
    return status::invalid_argument(std::string("a row of the `vmlab compare --json` result: ") + e.what());
  }
  return {};
}

result<plot_format> plot_format_for(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".svg") return plot_format::svg;
  if (ext == ".png") return plot_format::png;
  return status::invalid_argument("-o " + path + ": the output's extension chooses the format: .svg or .png");
}

std::string gnuplot_script(const chart& c, plot_format format, const std::string& output) {
  const byte_unit u = c.in_bytes ? unit_for(max_value(c)) : byte_unit{"", 1};
  std::string s = "# vmlab plot: gnuplot script (data inline)\n";
  if (format == plot_format::svg) {
    s += "set terminal svg size 960,540 font 'sans,11' background rgb 'white'\n";
  } else {
    // pngcairo draws antialiased text; the gd-based png terminal is the fallback.
    s += "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
         "  set terminal pngcairo size 960,540 font 'sans,10' background rgb 'white'\n"
         "} else {\n"
         "  set terminal png size 960,540 background rgb 'white'\n"
         "}\n";
  }
  s += "set output " + gp_string(output) + "\n";
  s += "set encoding utf8\nset termoption noenhanced\n";
  s += "set title " + gp_string(c.title) + "\n";
  if (!c.xlabel.empty()) s += "set xlabel " + gp_string(c.xlabel) + "\n";
  s += "set ylabel " + gp_string(c.in_bytes ? fmt::format("{} ({})", c.ylabel, u.name) : c.ylabel) + "\n";
  s += "set yrange [0:*]\nset grid ytics\nset key outside top center horizontal\nset datafile missing 'NaN'\n";
  // The data block's first row names the columns; the titles below are explicit.
  s += "set key autotitle columnheader\n";
  size_t label_chars = 0;
  for (const auto& x : c.categories) label_chars += x.size() + 2;
  if (label_chars > 80) s += "set xtics rotate by 25 right\nset bmargin 8\n";
  s += "$data << EOD\n" + data_string(c.xlabel.empty() ? "figure" : c.xlabel);
  for (const auto& x : c.series) s += " " + data_string(x.title);
  s += "\n";
  for (size_t i = 0; i < c.categories.size(); ++i) {
    s += data_string(c.categories[i]);
    for (const auto& x : c.series) s += " " + data_value(i < x.values.size() ? x.values[i] / u.size : kNaN);
    s += "\n";
  }
  s += "EOD\n";
  if (c.series.empty()) {
    s += "set label 1 'no data: the engine could not observe these figures' at graph 0.5, graph 0.5 center\n"
         "plot [0:1] NaN notitle\n";
    return s;
  }
  if (c.how == chart::style::bars)
    s += "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.85 border -1\n"
         "set boxwidth 0.9\n";
  s += "plot ";
  for (size_t i = 0; i < c.series.size(); ++i) {
    const std::string col = std::to_string(i + 2);
    if (i) s += ", \\\n     ";
    if (c.how == chart::style::bars)
      s += fmt::format("$data using {}{} title {}", col, i == 0 ? ":xtic(1)" : "", gp_string(c.series[i].title));
    else
      s += fmt::format("$data using 0:{}:xtic(1) with linespoints lw 2 pt 7 title {}", col,
                       gp_string(c.series[i].title));
  }
  return s + "\n";
}

namespace {

// The directory gnuplot is found in, or "" (the PATH lookup execvp would make).
std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');) {
    const std::string f = (d.empty() ? "." : d) + "/" + name;
    if (::access(f.c_str(), X_OK) == 0) return f;
  }
  return "";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream b;
  b << in.rdbuf();
  return b.str();
}

// Runs `gnuplot script` with stdout and stderr into `log`; its exit status, or -1.
int run_gnuplot(const std::string& gnuplot, const std::string& script, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int null = ::open("/dev/null", O_RDONLY);
    if (fd < 0 || null < 0) ::_exit(126);
    ::dup2(null, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(gnuplot.c_str(), "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace

result<std::string> render_chart(const chart& c, plot_format format) {
  const std::string gnuplot = find_in_path("gnuplot");
  if (gnuplot.empty())
    return status::io_error("gnuplot is not installed (no `gnuplot` in PATH): install the package gnuplot-nox "
                            "(apt-get install gnuplot-nox)");
  char tmpl[] = "/tmp/vmlab-plot-XXXXXX";
  if (!::mkdtemp(tmpl)) return status::io_error(std::string("cannot make a temporary directory: ") + std::strerror(errno));
  const std::string dir = tmpl;
  const std::string script = dir + "/plot.gp", out = dir + (format == plot_format::svg ? "/out.svg" : "/out.png"),
                    log = dir + "/gnuplot.log";
  result<std::string> r = status::io_error("unreachable");
  {
    std::ofstream f(script, std::ios::binary);
    f << gnuplot_script(c, format, out);
    f.close();
    if (!f) r = status::io_error("cannot write the gnuplot script " + script);
  }
  if (std::filesystem::exists(script)) {
    const int rc = run_gnuplot(gnuplot, script, log);
    std::string drawn = slurp(out);
    if (rc == 0 && !drawn.empty()) r = std::move(drawn);
    else
      r = status::io_error(fmt::format("gnuplot ({}) failed (exit status {}): {}", gnuplot, rc, slurp(log)));
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return r;
}

}  // namespace vmlab
