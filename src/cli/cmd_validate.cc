// vmlab validate [--json] [SCENARIO...]: both engines, side by side.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/progress.h"
#include "report/csv.h"
#include "engine/engine.h"
#include "engine/live/host_state.h"
#include "report/report.h"
#include "workload/builtin.h"

namespace vmlab::cli {

action add_validate(CLI::App& app) {
  struct opts {
    std::vector<std::string> scenarios, settings;
    std::string max_memory, profile;
    output_options out;
    bool no_wait = false, verbose = false, quiet = false;
  };
  auto o = std::make_shared<opts>();
  app.add_option("scenarios", o->scenarios, "Scenarios to validate (default: every built-in validate/ scenario)");
  add_output_options(app, o->out);
  add_profile_option(app, o->profile);
  add_set_option(app, o->settings);
  app.add_option("--max-memory", o->max_memory, "Refuse scenarios needing more host memory than this");
  app.add_flag("--no-wait", o->no_wait, "Refuse, rather than wait, when another live run is measuring");
  app.add_flag("-v,--verbose", o->verbose, "Print each note's long form");
  app.add_flag("-q,--quiet", o->quiet, "No progress line on a terminal");
  return [o]() -> int {
    auto mem = parse_memory_option(o->max_memory);
    if (!mem.ok()) return report_error(mem.error());
    std::vector<std::string> names = o->scenarios;
    if (names.empty())
      for (const auto& b : builtin_scenarios())
        if (b.name.substr(0, 9) == "validate/") names.emplace_back(b.name);
    std::vector<validate_case> cases;
    std::vector<note> notes;
    const auto host = host_profile_overrides();
    for (const auto& [k, v] : host)
      add_note(notes, {"validate.host_override." + k, "sim profile override from the host: " + k + "=" + v, "", false});
    // "vmlab: validate 2/5 validate/fork-cow: live run, 12 s elapsed" on a terminal, redrawn
    // while the live run goes on; the engine's messages are written around it.
    std::optional<ticking_progress> progress;
    progress.emplace(progress_wanted(o->quiet));
    auto say = [&progress](const std::string& m) {
      if (progress) progress->say(m);
      else say_to_stderr(m);
    };
    auto fail = [&progress](const status& e) {
      progress.reset();  // erase the line before the error
      return report_error(e);
    };
    // The whole matrix measures as one live run: a second `vmlab validate` waits for it
    // rather than interleaving its runs with ours (live/host_state.h).
    progress->set([n = names.size()](double t) {
      return fmt::format("validate 0/{}: taking the live lock (one live run measures at a time), {} elapsed", n,
                         progress_seconds(t));
    });
    auto lock = live::live_lock::acquire(o->no_wait ? live::live_lock::mode::no_wait : live::live_lock::mode::wait, say);
    if (!lock.ok()) return fail(lock.error());
    live_options lo;
    lo.max_memory = mem.value();
    lo.say = say;
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string& name = names[i];
      auto step = [&](const char* what) {
        progress->set([what, i, n = names.size(), name](double t) {
          return fmt::format("validate {}/{} {}: {}, {} elapsed", i + 1, n, name, what, progress_seconds(t));
        });
      };
      step("sim run");
      auto in = load_input(name, false, with_profile(o->profile, o->settings));
      if (!in.ok()) return fail(in.error());
      op_stream s = std::move(in.value());
      // The sim describes this host: apply what the live engine found (e.g. PTI off).
      for (const auto& kv : host) s.machine.overrides.push_back(kv);
      auto sim = run_sim(s);
      if (!sim.ok()) return fail(sim.error());
      step("live run");
      auto live = run_live(s, lo);
      if (!live.ok() && live.error().code() == status_code::not_supported) {
        // This host cannot run it (no such huge pages, a pool it cannot give): skipped.
        validate_case c;
        c.scenario = name;
        c.figure = "(the whole scenario)";
        c.at = "-";
        c.v = verdict::skipped;
        c.why = live.error().message();
        cases.push_back(c);
        continue;
      }
      if (!live.ok()) return fail(live.error());
      auto c = compare_results(name, sim.value(), live.value());
      cases.insert(cases.end(), c.begin(), c.end());
      // The live engine explains its method in notes; say each once, not per scenario.
      // Method notes once; what happened in a run (a finding) once per scenario, saying which.
      for (note n : live->notes) {
        if (n.finding) {
          n.id += "@" + name;
          n.text = name + ": " + n.text;
        }
        add_note(notes, std::move(n));
      }
      if (o->out.chosen() == "table")
        progress->print(fmt::format("{}: sim {:.2f} s, live {:.2f} s\n", name, sim->wall_seconds, live->wall_seconds));
    }
    progress.reset();  // erase the line before the table
    size_t failed = 0;
    for (const auto& c : cases) failed += c.failed();
    const std::string f = o->out.chosen();
    const std::string text = f == "json"  ? to_json(cases, notes).dump(2) + "\n"
                             : f == "csv" ? to_csv(to_json(cases, notes)["cases"], {"scenario", "sample", "figure", "sim", "live", "tolerance", "verdict"})
                                          : format_validate_table(cases, o->out.sizes()) + "\n" + format_notes(notes, o->verbose);
    if (int rc = write_output(o->out, text); rc) return rc;
    return failed ? 1 : 0;
  };
}

}  // namespace vmlab::cli
