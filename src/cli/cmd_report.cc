// vmlab report SCENARIO [--set ...] [--variant ...] -o report.html
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "engine/engine.h"
#include "report/compare.h"
#include "report/html_report.h"
#include "report/plot.h"
#include "report/report.h"
#include "workload/builtin.h"

namespace vmlab::cli {
namespace {

// The scenario as the user wrote it: the file, or the built-in text (the order
// load_scenario resolves names in).
result<std::string> scenario_text(const std::string& name) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(name, ec)) {
    std::ifstream in(name, std::ios::binary);
    std::ostringstream b;
    b << in.rdbuf();
    return b.str();
  }
  if (const builtin_scenario* b = find_builtin(name)) return std::string(b->text);
  return status::invalid_argument("no scenario file or built-in scenario named '" + name + "'");
}

status add_chart(html_report& rep, const chart& c, const std::string& caption) {
  if (c.categories.empty()) return {};  // e.g. no counted figure among the designs' rows
  auto svg = render_chart(c, plot_format::svg);
  if (!svg.ok()) return svg.error();
  rep.charts.push_back({caption, std::move(svg.value())});
  return {};
}

}  // namespace

action add_report(CLI::App& app) {
  struct opts {
    std::string scenario, out;
    std::vector<std::string> settings, variants;
  };
  auto o = std::make_shared<opts>();
  app.footer(
      "Runs the scenario on the sim engine (and each --variant, as `vmlab compare` does) and writes one HTML file "
      "that needs nothing else to open: the charts (gnuplot's SVG, inline), the tables `vmlab run` and `vmlab "
      "compare` print, the notes and the scenario.\n"
      "Exit status: 0 written, 1 written but a run ended early, 2 bad input, 3 no gnuplot (package gnuplot-nox) "
      "or an unwritable output.");
  app.add_option("scenario", o->scenario, "Scenario file or built-in name")->required();
  app.add_option("-o,--output", o->out, "The HTML file to write")->required();
  add_variant_option(app, o->variants);
  add_set_option(app, o->settings);
  return [o]() -> int {
    if (o->variants.size() == 1)
      return report_error(status::invalid_argument("designs side by side need at least two --variant (got one)"));
    auto text = scenario_text(o->scenario);
    if (!text.ok()) return report_error(text.error());
    auto in = load_input(o->scenario, false, o->settings);
    if (!in.ok()) return report_error(in.error());
    std::vector<compare_variant> vs;
    if (!o->variants.empty()) {
      auto ran = run_variants(o->scenario, o->settings, o->variants);
      if (!ran.ok()) return report_error(ran.error());
      vs = std::move(ran.value());
    }
    auto r = run_sim(in.value());
    if (!r.ok()) return report_error(r.error());

    html_report rep;
    rep.title = "vmlab report: " + o->scenario;
    rep.scenario_name = o->scenario;
    rep.scenario_text = text.value();
    rep.settings = o->settings;
    rep.run_table = format_table(r.value());
    rep.notes = format_notes(r->notes, true);
    bool ended_early = !r->failures.empty();
    if (!vs.empty()) {
      rep.compare_table = format_compare(o->scenario, vs);
      std::vector<std::string> labels;
      for (const auto& v : vs) {
        labels.push_back(v.label);
        ended_early |= !v.result.failures.empty();
      }
      const auto rows = compare_rows(vs);
      if (status st = add_chart(rep, compare_chart(rows, labels, true), "The designs' figures in bytes (maxima over the run)"); !st.ok())
        return report_error(st);
      if (status st = add_chart(rep, compare_chart(rows, labels, false), "The designs' counts (faults, objects)"); !st.ok())
        return report_error(st);
    }
    if (status st = add_chart(rep, samples_chart(r.value()), "PageTables at each sample of the run"); !st.ok())
      return report_error(st);
    if (status st = add_chart(rep, levels_chart(r.value()), "Page-table pages per level at the end"); !st.ok())
      return report_error(st);
    if (status st = write_output_file(o->out, format_html_report(rep)); !st.ok()) return report_error(st);
    return ended_early ? 1 : 0;
  };
}

}  // namespace vmlab::cli
