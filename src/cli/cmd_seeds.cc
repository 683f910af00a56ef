// vmlab seeds [--json] [NAME]: the seeds' published figures next to vmlab's.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "engine/engine.h"
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
    std::string name;
    bool json = false;
  };
  auto o = std::make_shared<opts>();
  app.footer(
      "Runs each seed's built-in scenario (scenarios/seeds/) on the sim engine and prints, for every figure the seed "
      "publishes, the seed's value, vmlab's and the relative error (vmlab - paper) / paper.\n"
      "Exit status: 0 when every figure is within its tolerance, 1 when one is not (or a seed's run ended early), "
      "2 for an unknown seed name.");
  app.add_option("name", o->name, "Only this seed, by its number (e.g. 000)");
  app.add_flag("--json", o->json, "Print the figures as JSON");
  return [o]() -> int {
    std::vector<const seed_figure*> figs;
    std::string known;
    const std::string want = normalise_seed(o->name);
    for (const auto& f : seed_figures()) {
      if (known.find(std::string(f.seed)) == std::string::npos) known += (known.empty() ? "" : ", ") + std::string(f.seed);
      if (want.empty() || f.seed == want) figs.push_back(&f);
    }
    if (figs.empty()) return report_error(status::invalid_argument("unknown seed '" + o->name + "' (known: " + known + ")"));

    std::map<std::string_view, run_result> runs;  // each scenario runs once
    std::vector<seed_check> checks;
    for (const seed_figure* f : figs) {
      auto it = runs.find(f->scenario);
      if (it == runs.end()) {
        auto in = load_input(std::string(f->scenario), false);
        if (!in.ok()) return report_error(in.error());
        auto r = run_sim(in.value());
        if (!r.ok()) return report_error(r.error());
        if (!o->json) std::cerr << fmt::format("{}: sim {:.1f} s\n", f->scenario, r->wall_seconds);
        for (const auto& fl : r->failures)
          std::cerr << fmt::format("{}: the run ended early at op {} `{}`: {}\n", f->scenario, fl.op_index, fl.op_text,
                                   fl.error);
        it = runs.emplace(f->scenario, std::move(r.value())).first;
      }
      checks.push_back(check_seed_figure(*f, it->second));
    }
    if (o->json)
      std::cout << seeds_json(checks).dump(2) << "\n";
    else
      std::cout << format_seeds_table(checks);
    for (const auto& c : checks)
      if (!c.ok) return 1;
    return 0;
  };
}

}  // namespace vmlab::cli
