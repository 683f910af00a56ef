// vmlab's subcommands, one file each (cmd_<name>.cc), driven by one table in main.cc.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "report/compare.h"
#include "report/units.h"
#include "vmlab/op.h"
#include "vmlab/status.h"

namespace vmlab::cli {

// A subcommand registers its options on `app` and returns the action to run once the
// command line has been parsed. The action returns the process exit status.
using action = std::function<int()>;
action add_run(CLI::App& app);
action add_trace(CLI::App& app);
action add_validate(CLI::App& app);
action add_profiles(CLI::App& app);
action add_scenarios(CLI::App& app);
action add_show(CLI::App& app);
action add_seeds(CLI::App& app);
action add_compare(CLI::App& app);
action add_cleanup(CLI::App& app);
action add_estimate(CLI::App& app);
action add_inspect(CLI::App& app);
action add_whatif(CLI::App& app);
action add_plot(CLI::App& app);
action add_report(CLI::App& app);
action add_sweep(CLI::App& app);
action add_tiobench(CLI::App& app);

// Prints "vmlab: error: ..." (with file:line:col and a caret when known); returns the
// exit status the status calls for.
int report_error(const status& s);

// A scenario (path or built-in name) with `settings` (--set PATH=VALUE, see
// load_scenario) or, with as_trace, a trace file (no settings).
result<op_stream> load_input(const std::string& what, bool as_trace, const std::vector<std::string>& settings = {});

// `vmlab compare`'s runs (cmd_compare.cc), shared by plot and report: each --variant
// "LABEL: PATH=VALUE; ..." of `scenario` with `settings` first, all read before any runs.
result<std::vector<compare_variant>> run_variants(const std::string& scenario, const std::vector<std::string>& settings,
                                                  const std::vector<std::string>& variants);

// Registers --variant "LABEL: PATH=VALUE; ..." (repeatable) on compare, plot and report.
void add_variant_option(CLI::App& app, std::vector<std::string>& variants);

// Writes `data` to `path` (-o FILE); io_error naming the file when it cannot.
status write_output_file(const std::string& path, const std::string& data);

// Registers --set on a subcommand that reads scenarios.
void add_set_option(CLI::App& app, std::vector<std::string>& settings);

// --profile NAME: the kernel profile, as `--set kernel.profile=NAME` would set it (applied
// before the --set settings, so an explicit --set wins).
void add_profile_option(CLI::App& app, std::string& profile);
std::vector<std::string> with_profile(const std::string& profile, const std::vector<std::string>& settings);

// -o FILE and --format table|json|csv (--json is --format json), as fio's --output and
// --output-format: the same output, to a file. And how tables print sizes: human units by
// default, --bytes or --kb for exact figures (one or the other), as smem and free do;
// JSON and CSV are in bytes whatever these say.
struct output_options {
  std::string file, format = "table";
  bool json = false, bytes = false, kb = false;
  [[nodiscard]] std::string chosen() const { return json ? "json" : format; }
  [[nodiscard]] size_unit sizes() const { return bytes ? size_unit::exact_bytes : kb ? size_unit::exact_kb : size_unit::human; }
};
void add_output_options(CLI::App& app, output_options& o);
// Writes `text` to the file or standard output; exit status 0, or 3 with a message.
int write_output(const output_options& o, const std::string& text);

// "vmlab: <message>" on stderr: what a live run tells the user while it goes on.
void say_to_stderr(const std::string& message);

// A run the kernel cut short is a finding, not a success: exit status 1 (0 when the run
// reached its end). The table says so in its text ("RUN ENDED EARLY"); under JSON or CSV,
// which a script reads (and CSV has no place for it), each failure also goes to standard
// error: "vmlab: <who>ended early at op N `op`: error".
int report_ended_early(const run_result& r, const output_options& out, const std::string& who = "the run ");

// Parses "64MiB"-style --max-memory (or `option`) values; 0 when empty.
result<bytes> parse_memory_option(const std::string& text, const std::string& option = "--max-memory");

}  // namespace vmlab::cli
