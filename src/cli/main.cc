// vmlab: one binary, subcommands from one table (ninja's kTools pattern).
#include <cstdio>
#include <iostream>
#include <new>

#include "cli/commands.h"
#include "workload/scenario.h"
#include "workload/size.h"
#include "workload/trace.h"

namespace vmlab::cli {

int report_error(const status& s) {
  std::cerr << "vmlab: error: " << s.to_string() << "\n";
  return s.exit_code();
}

result<op_stream> load_input(const std::string& what, bool as_trace, const std::vector<std::string>& settings) {
  if (as_trace && !settings.empty())
    return status::invalid_argument("--set changes a scenario before it is read; a trace has no such settings");
  return as_trace ? load_trace(what) : load_scenario(what, settings);
}

void add_set_option(CLI::App& app, std::vector<std::string>& settings) {
  app.add_option("--set", settings,
                 "Change the scenario before it runs, PATH=VALUE (repeatable): e.g. object.pool.kind=hugetlb, "
                 "group.db.count=200, kernel.profile=linux-2.6.15, kernel.overrides.thp_enabled=always, "
                 "machine.hugepages={\"2MiB\"=8192}")
      ->allow_extra_args(false)
      ->take_all();
}

void say_to_stderr(const std::string& message) { std::cerr << "vmlab: " << message << "\n"; }

result<bytes> parse_memory_option(const std::string& text, const std::string& option) {
  if (text.empty()) return bytes{0};
  auto r = parse_size(text);
  if (!r.ok()) return status::invalid_argument(option + ": " + r.error().message());
  return r;
}

namespace {

struct command {
  const char* name;
  const char* help;
  action (*add)(CLI::App&);
};

const command kCommands[] = {
    {"run", "Run a scenario (or a trace) on the sim or the live engine and print what the kernel would report", add_run},
    {"validate", "Run scenarios on both engines and compare the page-table figures", add_validate},
    {"seeds", "Reproduce the seeds' published figures (built-in seed scenarios, sim engine)", add_seeds},
    {"compare", "Run variants of a scenario (huge pages, another kernel, more processes) and print their figures side by side", add_compare},
    {"sweep", "Run the cross product of --set values (profiles x process counts x ...) in parallel: a row per variant, as CSV, JSON or a table; or emit it as a GNU parallel or Slurm job list", add_sweep},
    {"estimate", "Page tables, rmap and slab of N processes sharing a segment, per design, in closed form (instant)", add_estimate},
    {"inspect", "Where the page tables of processes running on this host go, mapping by mapping", add_inspect},
    {"whatif", "Replay processes running now (or a scenario) under other designs: huge pages, PMD sharing, ...", add_whatif},
    {"trace", "Write a scenario's op stream as a trace file", add_trace},
    {"profiles", "List the kernel profiles and what each counts", add_profiles},
    {"scenarios", "List the built-in scenarios", add_scenarios},
    {"cleanup", "Undo what a killed live run left on this host (settings it changed, stray workers)", add_cleanup},
};

}  // namespace
}  // namespace vmlab::cli

int main(int argc, char** argv) {
  using namespace vmlab::cli;
  CLI::App app{"vmlab: a laboratory for the memory an operating system spends on managing memory"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "vmlab 0.1");
  std::vector<std::pair<CLI::App*, action>> subs;
  for (const auto& c : kCommands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    subs.emplace_back(sub, c.add(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;  // usage errors are exit 2
  }
  for (auto& [sub, act] : subs)
    if (sub->parsed()) {
      // The sim engine names the op that ran the host out of memory (run_sim); this is
      // the last line for everything else (reading a scenario whose op stream the host
      // cannot hold, a report): a message and exit 1, never an abort.
      try {
        return act();
      } catch (const std::bad_alloc&) {
        std::cerr << "vmlab: error: the host ran out of memory (std::bad_alloc) in `vmlab " << sub->get_name()
                  << "`: the input needs more host memory than this machine can give\n";
        return 1;
      }
    }
  return 2;
}
