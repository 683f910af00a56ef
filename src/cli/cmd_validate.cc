// vmlab validate [--json] [SCENARIO...]: both engines, side by side.
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "engine/engine.h"
#include "report/report.h"
#include "workload/builtin.h"

namespace vmlab::cli {

action add_validate(CLI::App& app) {
  struct opts {
    std::vector<std::string> scenarios;
    std::string max_memory;
    bool json = false;
  };
  auto o = std::make_shared<opts>();
  app.add_option("scenarios", o->scenarios, "Scenarios to validate (default: every built-in validate/ scenario)");
  app.add_flag("--json", o->json, "Print the cases as JSON");
  app.add_option("--max-memory", o->max_memory, "Refuse scenarios needing more host memory than this");
  return [o]() -> int {
    auto mem = parse_memory_option(o->max_memory);
    if (!mem.ok()) return report_error(mem.error());
    std::vector<std::string> names = o->scenarios;
    if (names.empty())
      for (const auto& b : builtin_scenarios())
        if (b.name.substr(0, 9) == "validate/") names.emplace_back(b.name);
    std::vector<validate_case> cases;
    std::vector<std::string> notes;
    const auto host = host_profile_overrides();
    for (const auto& [k, v] : host) notes.push_back("sim profile override from the host: " + k + "=" + v);
    for (const auto& name : names) {
      auto in = load_input(name, false);
      if (!in.ok()) return report_error(in.error());
      op_stream s = std::move(in.value());
      // The sim describes this host: apply what the live engine found (e.g. PTI off).
      for (const auto& kv : host) s.machine.overrides.push_back(kv);
      auto sim = run_sim(s);
      if (!sim.ok()) return report_error(sim.error());
      auto live = run_live(s, live_options{mem.value()});
      if (!live.ok()) return report_error(live.error());
      auto c = compare_results(name, sim.value(), live.value());
      cases.insert(cases.end(), c.begin(), c.end());
      // The live engine explains its method in notes; say each once, not per scenario.
      for (const auto& n : live->notes)
        if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
      if (!o->json)
        std::cerr << name << ": sim " << sim->wall_seconds << " s, live " << live->wall_seconds << " s\n";
    }
    size_t failed = 0;
    for (const auto& c : cases) failed += !c.ok;
    if (o->json)
      std::cout << to_json(cases, notes).dump(2) << "\n";
    else
      std::cout << format_validate_table(cases);
    return failed ? 1 : 0;
  };
}

}  // namespace vmlab::cli
