// vmlab plot SCENARIO|RESULT.json [--set ...] [--variant ...] -o OUT.svg|OUT.png [--kind ...]
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "engine/engine.h"
#include "report/compare.h"
#include "report/plot.h"

namespace vmlab::cli {
namespace {

struct plot_opts {
  std::string input, out, kind;
  std::vector<std::string> settings, variants;
};

// A saved result (`vmlab run --json` or `vmlab compare --json`): the file's JSON, or a
// null document when `path` is not a .json file (then it names a scenario).
result<nlohmann::json> saved_result(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::path(path).extension() != ".json" || !std::filesystem::is_regular_file(path, ec))
    return nlohmann::json(nullptr);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream b;
  b << in.rdbuf();
  if (!in && !in.eof()) return status::io_error("cannot read '" + path + "'");
  auto j = nlohmann::json::parse(b.str(), nullptr, false);
  if (j.is_discarded()) return status::invalid_argument(path + ": not valid JSON");
  return j;
}

// The chart the options ask for; `ended_early` is set when a run the chart shows ended
// before its last op.
result<chart> make_chart(const plot_opts& o, bool& ended_early) {
  auto saved = saved_result(o.input);
  if (!saved.ok()) return saved.error();
  const nlohmann::json& j = saved.value();
  const bool designs = !o.variants.empty() || (j.is_object() && j.contains("rows"));
  const std::string kind = o.kind.empty() ? (designs ? "memory" : "samples") : o.kind;
  if (designs != (kind == "memory" || kind == "counts"))
    return status::invalid_argument("--kind " + kind + " is for " + (designs ? "a single run" : "designs side by side") +
                                    (designs ? " (designs: --kind memory|counts)" : " (a run: --kind samples|levels)"));
  if (!j.is_null() && (!o.settings.empty() || !o.variants.empty()))
    return status::invalid_argument("--set and --variant change a scenario; " + o.input + " is a saved result");
  if (designs) {
    std::vector<compare_row> rows;
    std::vector<std::string> labels;
    if (j.is_null()) {
      if (o.variants.size() < 2)
        return status::invalid_argument("designs side by side need at least two --variant \"LABEL: PATH=VALUE; ...\"");
      auto vs = run_variants(o.input, o.settings, o.variants);
      if (!vs.ok()) return vs.error();
      rows = compare_rows(vs.value());
      for (const auto& v : vs.value()) {
        labels.push_back(v.label);
        ended_early |= !v.result.failures.empty();
      }
    } else if (status st = compare_from_json(j, rows, labels); !st.ok()) {
      return status::invalid_argument(o.input + ": " + st.message());
    }
    chart c = compare_chart(rows, labels, kind == "memory");
    c.title = o.input + ": " + c.title;
    return c;
  }
  run_result r;
  if (j.is_null()) {
    auto in = load_input(o.input, false, o.settings);
    if (!in.ok()) return in.error();
    auto ran = run_sim(in.value());
    if (!ran.ok()) return ran.error();
    r = std::move(ran.value());
  } else {
    auto read = run_result_from_json(j);
    if (!read.ok()) return status::invalid_argument(o.input + ": " + read.error().message());
    r = std::move(read.value());
  }
  ended_early = !r.failures.empty();
  return kind == "levels" ? levels_chart(r) : samples_chart(r);
}

}  // namespace

action add_plot(CLI::App& app) {
  auto o = std::make_shared<plot_opts>();
  app.footer(
      "Runs the scenario on the sim engine (or reads a result saved by `vmlab run --json` or `vmlab compare "
      "--json`) and draws it with gnuplot: PageTables at each sample (--kind samples), page-table pages per level "
      "at the end (--kind levels), or, with --variant (as `vmlab compare` takes them), the designs side by side "
      "(--kind memory: the figures in bytes; --kind counts: faults and objects). The extension of -o chooses PNG "
      "or SVG.\n"
      "Example: vmlab plot examples/postgres-200 --variant \"4 KiB:\" --variant \"shmem THP: "
      "kernel.overrides.shmem_enabled=always\" -o designs.svg\n"
      "Exit status: 0 drawn, 1 drawn but a run ended early, 2 bad input, 3 no gnuplot (package gnuplot-nox) or "
      "an unwritable output.");
  app.add_option("input", o->input, "Scenario file, built-in name, or a .json result of run/compare")->required();
  app.add_option("-o,--output", o->out, "The picture to write: FILE.svg or FILE.png")->required();
  app.add_option("--kind", o->kind, "samples or levels (a run); memory or counts (designs)")
      ->check(CLI::IsMember({"samples", "levels", "memory", "counts"}));
  add_variant_option(app, o->variants);
  add_set_option(app, o->settings);
  return [o]() -> int {
    auto format = plot_format_for(o->out);
    if (!format.ok()) return report_error(format.error());
    bool ended_early = false;
    auto c = make_chart(*o, ended_early);
    if (!c.ok()) return report_error(c.error());
    auto drawn = render_chart(c.value(), format.value());
    if (!drawn.ok()) return report_error(drawn.error());
    if (status st = write_output_file(o->out, drawn.value()); !st.ok()) return report_error(st);
    return ended_early ? 1 : 0;
  };
}

}  // namespace vmlab::cli
