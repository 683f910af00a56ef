// vmlab run SCENARIO [--engine sim|live] [--json | --slabinfo] | vmlab run --trace FILE
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "engine/engine.h"
#include "report/csv.h"
#include "report/report.h"
#include "workload/trace.h"

namespace vmlab::cli {
namespace {

// The progress line of a long sim run on a terminal: "ops done/total (percent), the op
// being simulated, elapsed, ETA", redrawn in place on stderr at most 5 times a second and
// erased at the end. Why only on a terminal: a pipe or a log file would collect hundreds
// of carriage-return-separated lines that nobody asked for.
class progress_line {
 public:
  progress_line() : t0_(std::chrono::steady_clock::now()), last_(t0_) {}
  ~progress_line() {
    if (shown_) std::fputs("\r\033[K", stderr);
  }
  progress_line(const progress_line&) = delete;
  progress_line& operator=(const progress_line&) = delete;

  void update(const op_stream& s, const sim_progress& p) {
    const auto now = std::chrono::steady_clock::now();
    // Nothing for the first half second (a short run stays quiet), then 5 per second.
    if (now - last_ < std::chrono::milliseconds(200) || now - t0_ < std::chrono::milliseconds(500)) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - t0_).count();
    double done = double(p.ops_done);
    if (p.current && p.op_total) done += double(p.op_done) / double(p.op_total);
    const double frac = p.ops_total ? done / double(p.ops_total) : 1.0;
    std::string what;
    if (p.current) {
      what = format_op(s, *p.current);
      what = what.substr(0, what.find(' '));
      if (p.op_total) what += " " + std::to_string(p.op_done * 100 / p.op_total) + "%";
    } else if (p.ops_done < s.ops.size()) {
      what = format_op(s, s.ops[p.ops_done]);
      what = what.substr(0, what.find(' '));
    }
    std::string eta = "?";
    if (frac > 0.001) eta = seconds(elapsed / frac - elapsed);
    std::fprintf(stderr, "\r\033[Kvmlab: op %zu/%zu (%.1f%%) %s, %s elapsed, ETA %s, model %.0f MiB", p.ops_done,
                 p.ops_total, frac * 100, what.c_str(), seconds(elapsed).c_str(), eta.c_str(),
                 double(p.host_bytes) / double(MiB));
    std::fflush(stderr);
    shown_ = true;
  }

 private:
  static std::string seconds(double t) {
    char b[32];
    if (t < 120) std::snprintf(b, sizeof b, "%.0f s", t);
    else if (t < 7200) std::snprintf(b, sizeof b, "%.0f min", t / 60);
    else std::snprintf(b, sizeof b, "%.1f h", t / 3600);
    return b;
  }
  std::chrono::steady_clock::time_point t0_, last_;
  bool shown_ = false;
};

}  // namespace

action add_run(CLI::App& app) {
  struct opts {
    std::string scenario, trace, engine = "sim", max_memory, max_host_memory, profile;
    std::vector<std::string> settings;
    output_options out;
    bool check = false, slabinfo = false, verbose = false, no_wait = false, quiet = false;
  };
  auto o = std::make_shared<opts>();
  app.add_option("scenario", o->scenario, "Scenario file or built-in name (e.g. validate/anon-64m)");
  app.add_option("--trace", o->trace, "Replay a trace file instead of a scenario");
  add_set_option(app, o->settings);
  add_profile_option(app, o->profile);
  app.add_option("--engine", o->engine, "sim (the model) or live (real processes on this host)")
      ->check(CLI::IsMember({"sim", "live"}));
  add_output_options(app, o->out);
  app.add_flag("--slabinfo", o->slabinfo,
               "Print /proc/slabinfo as the profile's kernel would at the end of the run (its version: 1.1, 2.0 or "
               "2.1), then the same rows for the maxima over the run");
  app.add_flag("--check", o->check, "Recount the model's accounting from scratch after every op (slow)");
  app.add_option("--max-memory", o->max_memory, "Live engine: refuse workloads needing more (default: half of MemAvailable)");
  app.add_option("--max-host-memory", o->max_host_memory,
                 "Sim engine: stop (exit 1) when the model needs more host memory than this, e.g. 8GiB (default: no "
                 "limit)");
  app.add_flag("-q,--quiet", o->quiet, "No progress line on a terminal");
  app.add_flag("--no-wait", o->no_wait, "Live engine: refuse, rather than wait, when another live run is measuring");
  app.add_flag("-v,--verbose", o->verbose, "Print each note's long form");
  return [o]() -> int {
    if (o->scenario.empty() == o->trace.empty())
      return report_error(status::invalid_argument("give exactly one of SCENARIO or --trace FILE"));
    if (!o->trace.empty() && !o->profile.empty())
      return report_error(status::invalid_argument("--profile changes a scenario before it is read; a trace has none"));
    if (o->slabinfo && o->out.chosen() != "table")
      return report_error(status::invalid_argument("--slabinfo prints /proc/slabinfo's own format: not with --format " +
                                                   o->out.chosen()));
    auto in = load_input(o->trace.empty() ? o->scenario : o->trace, !o->trace.empty(), with_profile(o->profile, o->settings));
    if (!in.ok()) return report_error(in.error());
    result<run_result> r = status::invalid_argument("unreachable");
    if (o->engine == "sim") {
      sim_options so;
      so.check_invariants = o->check;
      auto limit = parse_memory_option(o->max_host_memory, "--max-host-memory");
      if (!limit.ok()) return report_error(limit.error());
      so.max_host_memory = limit.value();
      std::unique_ptr<progress_line> line;
      if (!o->quiet && ::isatty(STDERR_FILENO)) {
        line = std::make_unique<progress_line>();
        so.progress = [&line, &in](const sim_progress& p) { line->update(in.value(), p); };
      }
      r = run_sim(in.value(), so);
      line.reset();  // erase the line before anything else is printed
    } else {
      if (!o->max_host_memory.empty())
        return report_error(status::invalid_argument("--max-host-memory is for the sim engine (the live engine has --max-memory)"));
      auto mem = parse_memory_option(o->max_memory);
      if (!mem.ok()) return report_error(mem.error());
      live_options lo;
      lo.max_memory = mem.value();
      lo.no_wait = o->no_wait;
      lo.say = say_to_stderr;
      r = run_live(in.value(), lo);
    }
    if (!r.ok()) return report_error(r.error());
    std::string text;
    if (o->out.chosen() == "json") {
      text = to_json(r.value()).dump(2) + "\n";
    } else if (o->out.chosen() == "csv") {
      // One line per sample: the system's figures (the JSON has each process's too).
      nlohmann::json rows = nlohmann::json::array();
      const nlohmann::json all = to_json(r.value());
      for (auto s : all["samples"]) {
        s.erase("procs");
        s.erase("slabs");
        rows.push_back(std::move(s));
      }
      text = to_csv(rows, {"name", "op_index", "nr_procs", "PageTables", "PageTables_workload"});
    } else if (o->slabinfo) {
      auto t = format_slabinfo(r.value());
      if (!t.ok()) return report_error(t.error());
      text = t.value();
    } else {
      text = format_table(r.value(), o->verbose, o->out.sizes());
    }
    if (int rc = write_output(o->out, text); rc) return rc;
    return report_ended_early(r.value(), o->out);
  };
}

}  // namespace vmlab::cli
