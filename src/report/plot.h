// Plots: a RunResult or `vmlab compare`'s rows as a gnuplot script (as fio's
// fio2gnuplot does), and gnuplot run on it. The chart is data first (`chart`), so a test
// can check the figures a script holds against the run's, and the same chart serves
// `vmlab plot` (PNG or SVG) and `vmlab report` (SVG inlined into HTML).
//
// Sizes are plotted in one binary unit chosen from the largest value (KiB, MiB, GiB, ...),
// which the axis label names; counts are plotted as they are.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/compare.h"
#include "vmlab/run_result.h"
#include "vmlab/status.h"

namespace vmlab {

struct chart_series {
  std::string title;           // the legend entry: "PageTables", a variant's label
  std::vector<double> values;  // one per category, in `unit`; NaN = the series has no value there
};

struct chart {
  enum class style { lines, bars };
  std::string title;
  std::string xlabel;
  std::string ylabel;   // without the unit: "PageTables"
  bool in_bytes = true;  // values are bytes (plotted in a binary unit), else counts
  style how = style::bars;
  std::vector<std::string> categories;  // x positions, in order: sample names, levels, figures
  std::vector<chart_series> series;
};

// PageTables at each sample of the run (x: the sample names in op order).
chart samples_chart(const run_result& r);
// Page-table pages per level (pgd ... pte) at the end sample, every level (a level the
// profile folds has 0). No series when the engine could not observe them (live).
chart levels_chart(const run_result& r);
// `vmlab compare`'s rows side by side, a bar per variant (`labels`), for the rows in
// bytes when `bytes`, else for the rows that count something (faults, objects).
chart compare_chart(const std::vector<compare_row>& rows, const std::vector<std::string>& labels, bool in_bytes);

// What `vmlab run --json` wrote, read back as far as the charts need it (scenario,
// profile, samples with PageTables and pt_pages, notes). invalid_argument naming the key
// when the document is not such a result.
result<run_result> run_result_from_json(const nlohmann::json& j);
// What `vmlab compare --json` wrote: its rows and its variants' labels.
status compare_from_json(const nlohmann::json& j, std::vector<compare_row>& rows, std::vector<std::string>& labels);

// The largest binary unit (B, KiB, MiB, ...) not above `max_bytes` and its size.
struct byte_unit {
  const char* name;
  double size;
};
byte_unit unit_for(double max_bytes);

// gnuplot's terminal for an output file's extension: svg, or png (pngcairo when this
// gnuplot has it). invalid_argument for any other extension.
enum class plot_format { svg, png };
result<plot_format> plot_format_for(const std::string& path);

// A gnuplot script that draws `c` to `output` (quoted in the script) in `format`, its
// data inline (a `$data << EOD` block).
std::string gnuplot_script(const chart& c, plot_format format, const std::string& output);

// Runs gnuplot on `c` and returns what it drew (the bytes of the PNG or SVG). io_error
// naming the package (gnuplot-nox) when there is no gnuplot in PATH, or with gnuplot's
// own message when it fails.
result<std::string> render_chart(const chart& c, plot_format format);

}  // namespace vmlab
