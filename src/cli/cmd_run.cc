// vmlab run SCENARIO [--engine sim|live] [--json | --slabinfo] | vmlab run --trace FILE
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "engine/engine.h"
#include "report/report.h"

namespace vmlab::cli {

action add_run(CLI::App& app) {
  struct opts {
    std::string scenario, trace, engine = "sim", max_memory;
    std::vector<std::string> settings;
    bool json = false, check = false, slabinfo = false, verbose = false, no_wait = false;
  };
  auto o = std::make_shared<opts>();
  app.add_option("scenario", o->scenario, "Scenario file or built-in name (e.g. validate/anon-64m)");
  app.add_option("--trace", o->trace, "Replay a trace file instead of a scenario");
  add_set_option(app, o->settings);
  app.add_option("--engine", o->engine, "sim (the model) or live (real processes on this host)")
      ->check(CLI::IsMember({"sim", "live"}));
  CLI::Option* json = app.add_flag("--json", o->json, "Print the whole RunResult as JSON");
  app.add_flag("--slabinfo", o->slabinfo,
               "Print /proc/slabinfo as the profile's kernel would at the end of the run (its version: 1.1, 2.0 or "
               "2.1), then the same rows for the maxima over the run")
      ->excludes(json);
  app.add_flag("--check", o->check, "Recount the model's accounting from scratch after every op (slow)");
  app.add_option("--max-memory", o->max_memory, "Live engine: refuse workloads needing more (default: half of MemAvailable)");
  app.add_flag("--no-wait", o->no_wait, "Live engine: refuse, rather than wait, when another live run is measuring");
  app.add_flag("-v,--verbose", o->verbose, "Print each note's long form");
  return [o]() -> int {
    if (o->scenario.empty() == o->trace.empty())
      return report_error(status::invalid_argument("give exactly one of SCENARIO or --trace FILE"));
    auto in = load_input(o->trace.empty() ? o->scenario : o->trace, !o->trace.empty(), o->settings);
    if (!in.ok()) return report_error(in.error());
    result<run_result> r = status::invalid_argument("unreachable");
    if (o->engine == "sim") {
      r = run_sim(in.value(), sim_options{o->check});
    } else {
      auto mem = parse_memory_option(o->max_memory);
      if (!mem.ok()) return report_error(mem.error());
      live_options lo;
      lo.max_memory = mem.value();
      lo.no_wait = o->no_wait;
      lo.say = say_to_stderr;
      r = run_live(in.value(), lo);
    }
    if (!r.ok()) return report_error(r.error());
    if (o->json) {
      std::cout << to_json(r.value()).dump(2) << "\n";
    } else if (o->slabinfo) {
      auto text = format_slabinfo(r.value());
      if (!text.ok()) return report_error(text.error());
      std::cout << text.value();
    } else {
      std::cout << format_table(r.value(), o->verbose);
    }
    // A run the simulated (or real) kernel cut short is a finding, not a success.
    return r->failures.empty() ? 0 : 1;
  };
}

}  // namespace vmlab::cli
