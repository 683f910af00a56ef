// vmlab: one binary, subcommands from one table (ninja's kTools pattern).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <new>

#include <malloc.h>

#include "cli/commands.h"
#include "vmlab/suggest.h"
#include "workload/scenario.h"
#include "workload/size.h"
#include "workload/trace.h"

namespace vmlab::cli {

int report_error(const status& s) {
  // The whole line first: when the host is short of memory, building it may fail, and
  // then main's std::bad_alloc message is the only one printed, not a half line before it.
  const std::string line = "vmlab: error: " + s.to_string() + "\n";
  std::cerr << line;
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

void add_profile_option(CLI::App& app, std::string& profile) {
  app.add_option("--profile", profile, "Kernel profile (vmlab profiles lists them): the same as --set kernel.profile=NAME");
}

std::vector<std::string> with_profile(const std::string& profile, const std::vector<std::string>& settings) {
  std::vector<std::string> all;
  if (!profile.empty()) all.push_back("kernel.profile=" + profile);
  all.insert(all.end(), settings.begin(), settings.end());
  return all;
}

void add_output_options(CLI::App& app, output_options& o) {
  app.add_option("-o,--output", o.file, "Write the output to this file (default: standard output)");
  CLI::Option* fmt = app.add_option("--format", o.format, "table (default), json or csv")
                         ->check(CLI::IsMember({"table", "json", "csv"}));
  app.add_flag("--json", o.json, "The same as --format json")->excludes(fmt);
  CLI::Option* b = app.add_flag("--bytes", o.bytes, "Sizes in the table in exact bytes (default: KiB, MiB, GiB with one "
                                                    "decimal; JSON and CSV are always in bytes)");
  app.add_flag("--kb", o.kb, "Sizes in the table in exact kB (1024 bytes), as /proc/meminfo prints them")->excludes(b);
}

int write_output(const output_options& o, const std::string& text) {
  if (o.file.empty()) {
    std::cout << text;
    return 0;
  }
  std::ofstream f(o.file, std::ios::binary | std::ios::trunc);
  if (!(f << text) || !f.flush())
    return report_error(status::io_error("cannot write " + o.file + ": " + std::strerror(errno)));
  return 0;
}

void add_variant_option(CLI::App& app, std::vector<std::string>& variants) {
  app.add_option("--variant", variants,
                 "A design, a column: \"LABEL: PATH=VALUE; PATH=VALUE\" (settings as --set takes them; none = the "
                 "scenario as written). At least two.")
      ->allow_extra_args(false)
      ->take_all();
}

void say_to_stderr(const std::string& message) { std::cerr << "vmlab: " << message << "\n"; }

int report_ended_early(const run_result& r, const output_options& out, const std::string& who) {
  if (out.chosen() != "table")
    for (const op_failure& f : r.failures)
      say_to_stderr(who + "ended early at op " + std::to_string(f.op_index) + " `" + f.op_text + "`: " + f.error);
  return r.failures.empty() ? 0 : 1;
}

result<bytes> parse_memory_option(const std::string& text, const std::string& option) {
  if (text.empty()) return bytes{0};
  auto r = parse_size(text);
  if (!r.ok()) return status::invalid_argument(option + ": " + r.error().message());
  return r;
}

status write_output_file(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  f.close();
  if (!f) return status::io_error("cannot write the output file '" + path + "'");
  return {};
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
    {"plot", "Draw a run's page tables (per sample or per level) or designs side by side, as PNG or SVG (gnuplot)", add_plot},
    {"report", "Write one self-contained HTML file: the scenario, the tables, the charts and the notes", add_report},
    {"tiobench", "Run tiobench (tiotest's sequential and random write and read tests, with read/write or mmap I/O) on this host and print tiobench.pl's table", add_tiobench},
    {"trace", "Write a scenario's op stream as a trace file", add_trace},
    {"profiles", "List the kernel profiles and what each counts", add_profiles},
    {"scenarios", "List the built-in scenarios, with their descriptions", add_scenarios},
    {"show", "Print a built-in scenario's TOML (to read it, or to start your own from it)", add_show},
    {"cleanup", "Undo what a killed live run left on this host (settings it changed, stray workers)", add_cleanup},
};

// CLI11 reads "-5" into an unsigned option as 2^64 - 5 (strtoull's wrap), so every
// unsigned option (CLI11 names its type UINT) refuses a leading minus: a count or a size
// is never negative, and a wrapped one ran an estimate of 18446744073709551611 processes.
void refuse_negative_counts(CLI::App& app) {
  static const CLI::Validator not_negative(
      [](std::string& text) -> std::string {
        const size_t at = text.find_first_not_of(" \t");
        return at != std::string::npos && text[at] == '-' ? "'" + text + "' is negative: give a whole number of 0 or more"
                                                          : std::string{};
      },
      "", "NOT_NEGATIVE");
  for (CLI::Option* opt : app.get_options())
    if (opt->get_type_name() == "UINT") opt->check(not_negative);
  for (CLI::App* sub : app.get_subcommands({})) refuse_negative_counts(*sub);
}

}  // namespace
}  // namespace vmlab::cli

int main(int argc, char** argv) {
  using namespace vmlab::cli;
  // Large temporaries (a touch's pages, the generator's record of the pages drawn: 16 MB
  // for one op of the 1,500 x 300 GiB 1% case) come from the heap and stay there for the
  // next op, instead of glibc mapping them afresh or trimming them after an op, as it
  // may depending on what else the heap holds: every first write to fresh memory is a
  // page fault (bench/sga-1pct-warm.toml: 488,727 of them before, 58,723 after;
  // docs/decisions.md "glibc's heap keeps the large temporaries").
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(64 * vmlab::MiB));
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(256 * vmlab::MiB));
  CLI::App app{"vmlab: a laboratory for the memory an operating system spends on managing memory"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "vmlab 0.1");
  std::vector<std::pair<CLI::App*, action>> subs;
  for (const auto& c : kCommands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    subs.emplace_back(sub, c.add(*sub));
    refuse_negative_counts(*sub);
  }
  // An unknown subcommand: say so, with the closest one, rather than CLI11's "A subcommand
  // is required".
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const auto& c : kCommands) names.emplace_back(c.name);
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      std::cerr << "vmlab: error: unknown command '" << argv[1] << "'" << vmlab::did_you_mean(argv[1], names)
                << " (vmlab --help lists them)\n";
      return 2;
    }
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
