// vmlab seeds [--json] [NAME]: the seeds' published figures next to vmlab's.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "engine/engine.h"
#include "engine/tiobench_sim.h"
#include "report/compare.h"
#include "report/csv.h"
#include "report/seeds.h"

namespace vmlab::cli {
namespace {

// "0" and "00" name seed "000", as the seed files are numbered.
std::string normalise_seed(std::string name) {
  if (!name.empty() && name.size() < 3 && name.find_first_not_of("0123456789") == std::string::npos)
    name.insert(0, 3 - name.size(), '0');
  return name;
}

}  // namespace

action add_seeds(CLI::App& app) {
  struct opts {
    std::string name, profile;
    std::vector<std::string> settings;
    output_options out;
  };
  auto o = std::make_shared<opts>();
  app.footer(
      "Runs each seed's built-in scenario (scenarios/seeds/) on the sim engine and prints, for every figure the seed "
      "publishes, the seed's value, vmlab's and the relative error (vmlab - paper) / paper.\n"
      "Exit status: 0 when every figure is within its tolerance, 1 when one is not (or a seed's run ended early), "
      "2 for an unknown seed name.");
  app.add_option("name", o->name, "Only this seed, by its number (e.g. 000)");
  add_output_options(app, o->out);
  add_profile_option(app, o->profile);
  add_set_option(app, o->settings);
  return [o]() -> int {
    std::vector<const seed_figure*> figs;
    std::string known;
    const std::string want = normalise_seed(o->name);
    for (const auto& f : seed_figures()) {
      if (known.find(std::string(f.seed)) == std::string::npos) known += (known.empty() ? "" : ", ") + std::string(f.seed);
      if (want.empty() || f.seed == want) figs.push_back(&f);
    }
    if (figs.empty()) return report_error(status::invalid_argument("unknown seed '" + o->name + "' (known: " + known + ")"));

    // Each scenario variant runs once.
    std::map<std::pair<std::string_view, std::string_view>, run_result> runs;
    auto run_of = [&](std::string_view scenario, std::string_view settings) -> result<const run_result*> {
      auto it = runs.find({scenario, settings});
      if (it != runs.end()) return &it->second;
      std::vector<std::string> all = with_profile(o->profile, o->settings);
      for (std::string& st : split_settings(settings)) all.push_back(std::move(st));
      auto in = load_input(std::string(scenario), false, all);
      if (!in.ok()) return in.error();
      auto r = run_sim(in.value());
      if (!r.ok()) return r.error();
      const std::string what = std::string(scenario) + (settings.empty() ? "" : " [" + std::string(settings) + "]");
      if (o->out.chosen() == "table") std::cerr << fmt::format("{}: sim {:.1f} s\n", what, r->wall_seconds);
      for (const auto& fl : r->failures)
        std::cerr << fmt::format("{}: the run ended early at op {} `{}`: {}\n", what, fl.op_index, fl.op_text, fl.error);
      return &runs.emplace(std::make_pair(scenario, settings), std::move(r.value())).first->second;
    };
    // Each tiobench run (seed 003) runs once, on the sim's tiobench.
    std::map<std::string_view, tiobench_run> tio_runs;
    auto tio_of = [&](std::string_view scenario) -> result<const tiobench_run*> {
      auto it = tio_runs.find(scenario);
      if (it != tio_runs.end()) return &it->second;
      sim::tiobench_sim_options so = seed_tiobench_options(scenario);
      if (!o->profile.empty()) so.profile = o->profile;
      auto r = sim::run_tiobench_sim(seed_tiobench_spec(scenario), so);
      if (!r.ok()) return r.error();
      return &tio_runs.emplace(scenario, std::move(r.value())).first->second;
    };
    std::vector<seed_check> checks;
    for (const seed_figure* f : figs) {
      if (f->extract_tiobench) {
        auto r = tio_of(f->scenario);
        if (!r.ok()) return report_error(r.error());
        checks.push_back(check_seed_figure(*f, *r.value()));
        continue;
      }
      auto r = run_of(f->scenario, f->settings);
      if (!r.ok()) return report_error(r.error());
      const run_result* minus = nullptr;
      if (f->difference) {
        auto m = run_of(f->scenario, f->minus);
        if (!m.ok()) return report_error(m.error());
        minus = m.value();
      }
      checks.push_back(check_seed_figure(*f, *r.value(), minus));
    }
    const std::string f = o->out.chosen();
    const std::string text = f == "json"  ? seeds_json(checks).dump(2) + "\n"
                             : f == "csv" ? to_csv(seeds_json(checks)["figures"], {"seed", "metric", "paper", "vmlab", "rel_error", "tolerance", "ok"})
                                          : format_seeds_table(checks, o->out.sizes());
    if (int rc = write_output(o->out, text); rc) return rc;
    for (const auto& c : checks)
      if (!c.ok) return 1;
    return 0;
  };
}

}  // namespace vmlab::cli
