// vmlab sweep SCENARIO --set KEY=V1,V2 [--set-list KEY=V1;V2] [-j N] [-o FILE] [--format table|csv|json]
// vmlab sweep SCENARIO --set ... --emit parallel|slurm DIR;  vmlab sweep --collect DIR
//
// Threads, not processes: the model and the sim engine have no mutable global state (the
// only statics in src/model are constant after their thread-safe first use, and the live
// engine's lock globals are never touched by run_sim), so each worker builds its own op
// stream and sim_kernel. docs/decisions.md "Issue 13: sweep".
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/progress.h"
#include "engine/engine.h"
#include "report/report.h"
#include "report/sweep.h"

namespace vmlab::cli {
namespace {

namespace fs = std::filesystem;

struct opts {
  std::string scenario, collect;
  output_options out;
  std::vector<std::string> sets, set_lists, emit;
  unsigned jobs = 0;
  bool quiet = false;
  CLI::Option *set_opt = nullptr, *set_list_opt = nullptr;
};

// The axes in the order --set and --set-list were given.
result<std::vector<sweep_axis>> axes_of(const opts& o, const CLI::App& app) {
  std::vector<sweep_axis> axes;
  size_t next_set = 0, next_list = 0;
  for (const CLI::Option* opt : app.parse_order()) {
    const bool list = opt == o.set_list_opt;
    if (opt != o.set_opt && !list) continue;
    const std::string& text = list ? o.set_lists.at(next_list++) : o.sets.at(next_set++);
    auto a = parse_sweep_axis(text, list);
    if (!a.ok()) return a.error();
    axes.push_back(std::move(a.value()));
  }
  if (axes.empty()) return status::invalid_argument("sweep needs at least one --set KEY=V1,V2,... to vary");
  return axes;
}

std::string describe(const sweep_variant& v) {
  std::string s;
  for (const auto& x : v.settings) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Runs every variant on `jobs` threads; results in variant order. The first variant that
// cannot be read (bad key or value) stops the start of new ones and is the error.
result<std::vector<compare_variant>> run_variants(const std::string& scenario, const std::vector<sweep_variant>& vs,
                                                  unsigned jobs, bool progress) {
  std::vector<std::optional<result<run_result>>> out(vs.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  size_t done = 0, running = 0;
  auto work = [&] {
    for (size_t i; !stop && (i = next++) < vs.size();) {
      { std::lock_guard<std::mutex> l(mu); ++running; }
      auto in = load_input(scenario, false, vs[i].settings);
      result<run_result> r = in.ok() ? run_sim(in.value()) : result<run_result>(in.error());
      if (!r.ok()) stop = true;
      std::lock_guard<std::mutex> l(mu);
      out[i] = std::move(r);
      --running;
      ++done;
      cv.notify_one();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::min<size_t>(jobs, vs.size()); ++t) pool.emplace_back(work);
  {
    // "vmlab: sweep 5/12 variants done (2 running), 3 s elapsed, ETA 4 s"
    progress_line line(progress);
    std::unique_lock<std::mutex> l(mu);
    while (done < vs.size() && !(stop && running == 0)) {
      cv.wait_for(l, std::chrono::milliseconds(200));
      line.draw([&](double t) {
        const std::string eta = done ? progress_seconds(t / double(done) * double(vs.size() - done)) : "?";
        return fmt::format("sweep {}/{} variants done ({} running), {} elapsed, ETA {}", done, vs.size(), running,
                           progress_seconds(t), eta);
      });
    }
  }
  for (auto& t : pool) t.join();
  std::vector<compare_variant> results;
  for (size_t i = 0; i < vs.size(); ++i) {
    if (out[i] && !out[i]->ok()) {
      say_to_stderr("variant " + std::to_string(i) + " (" + describe(vs[i]) + ") cannot run:");
      return out[i]->error();
    }
    if (out[i]) results.push_back({describe(vs[i]), vs[i].settings, std::move(out[i]->value())});
  }
  return results;
}

sweep_format format_of(const std::string& f) {
  return f == "csv" ? sweep_format::csv : f == "json" ? sweep_format::json : sweep_format::table;
}

int finish(const opts& o, const std::string& scenario, const std::vector<sweep_axis>& axes,
           const std::vector<sweep_variant>& vs, const std::vector<compare_variant>& results) {
  if (int rc = write_output(o.out, format_sweep(scenario, axes, vs, results, format_of(o.out.chosen()), o.out.sizes())))
    return rc;
  for (const auto& r : results)
    if (!r.result.failures.empty()) return 1;  // a run the kernel cut short is a finding
  return 0;
}

// Where the running binary is, so the job lines run this vmlab (on a cluster: the same
// path on a shared filesystem; edit the lines otherwise).
std::string self_path() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("vmlab") : p.string();
}

result<std::string> read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return status::check_failed(p.string() + ": missing (the job did not run, or has not finished)");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) return report_error(status::io_error(p.string() + ": cannot write it"));
  return 0;
}

// Writes DIR/variants.json and DIR/jobs.txt (parallel) or DIR/sweep.slurm (slurm), after
// reading every variant (a bad setting fails here, not on the cluster).
int sweep_emit(const std::string& kind, const std::string& dir, const std::string& scenario,
               const std::vector<sweep_axis>& axes, const std::vector<sweep_variant>& vs) {
  if (kind != "parallel" && kind != "slurm")
    return report_error(status::invalid_argument("--emit " + kind + ": expected parallel or slurm"));
  for (const auto& v : vs) {
    auto in = load_input(scenario, false, v.settings);
    if (!in.ok()) {
      say_to_stderr("variant " + std::to_string(v.index) + " (" + describe(v) + ") cannot run:");
      return report_error(in.error());
    }
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::string abs_dir = fs::absolute(dir, ec).lexically_normal().string();
  if (ec) return report_error(status::io_error("--emit " + dir + ": " + ec.message()));
  // A scenario file is named by its absolute path, so the jobs run from anywhere.
  const std::string run_scenario = fs::is_regular_file(scenario, ec) ? fs::absolute(scenario, ec).string() : scenario;
  std::vector<std::string> commands;
  for (const auto& v : vs) commands.push_back(variant_command(self_path(), run_scenario, v, abs_dir, vs.size()));
  if (int rc = write_file(fs::path(abs_dir) / "variants.json", variants_json(scenario, axes, vs).dump(2) + "\n")) return rc;
  const bool par = kind == "parallel";
  const fs::path jobs = fs::path(abs_dir) / (par ? "jobs.txt" : "sweep.slurm");
  if (int rc = write_file(jobs, par ? parallel_jobs(commands, abs_dir) : slurm_script(commands, abs_dir))) return rc;
  std::cout << fmt::format("vmlab sweep: {} variants; wrote {} and {}/variants.json\n", vs.size(), jobs.string(), abs_dir)
            << (par ? fmt::format("run them with: parallel --jobs N < {}\n", jobs.string())
                    : fmt::format("submit with: sbatch {}\n", jobs.string()))
            << fmt::format("then: vmlab sweep --collect {}\n", abs_dir);
  return 0;
}

// Reads DIR/variants.json and each variant's result; every missing or unreadable result
// is named on stderr, and then the status is 1.
int sweep_collect(const std::string& dir, std::vector<sweep_axis>& axes, std::vector<sweep_variant>& vs,
                  std::string& scenario, std::vector<compare_variant>& results) {
  const fs::path vj = fs::path(dir) / "variants.json";
  auto text = read_file(vj);
  if (!text.ok())
    return report_error(status::invalid_argument(vj.string() + ": missing (write it with `vmlab sweep ... --emit`)"));
  const auto j = nlohmann::json::parse(text.value(), nullptr, false);
  auto plan = parse_variants_json(j, vj.string());
  if (!plan.ok()) return report_error(plan.error());
  axes = plan->axes;
  vs = plan->variants;
  scenario = plan->scenario;
  size_t bad = 0;
  for (size_t i = 0; i < vs.size(); ++i) {
    const fs::path p = fs::path(dir) / plan->files[i];
    auto t = read_file(p);
    const auto rj = t.ok() ? nlohmann::json::parse(t.value(), nullptr, false) : nlohmann::json();
    auto r = !t.ok() ? result<run_result>(t.error())
             : rj.is_discarded() ? result<run_result>(status::check_failed(p.string() + ": not JSON (the job failed; see its output)"))
                                 : run_result_from_json(rj, p.string());
    if (!r.ok()) {
      std::cerr << "vmlab: error: variant " << i << " (" << describe(vs[i]) << "): " << r.error().message() << "\n";
      ++bad;
      continue;
    }
    results.push_back({describe(vs[i]), vs[i].settings, std::move(r.value())});
  }
  if (bad)
    return report_error(status::check_failed(fmt::format("--collect {}: {} of {} variants have no result", dir, bad, vs.size())));
  return 0;
}

}  // namespace

action add_sweep(CLI::App& app) {
  auto o = std::make_shared<opts>();
  app.footer(
      "Runs the cross product of the --set values on the sim engine, in parallel, and prints one row per variant: "
      "the settings that vary, then the figures `vmlab compare` prints (sizes in bytes in CSV and JSON).\n"
      "Example: vmlab sweep examples/oltp-small --set kernel.profile=linux-2.6.15-x86_64,linux-6.18 --set "
      "group.db.count=10,100,1000 --format csv -o sweep.csv\n"
      "Values are split at commas outside quotes, [...] and {...} (TOML values keep theirs); --set-list KEY=V1;V2 "
      "splits at ';' only. The first --set varies slowest.\n"
      "Exit status: 0 when every variant ran to its end, 1 when one ended early (or --collect misses results), 2 "
      "for bad input.");
  app.add_option("scenario", o->scenario, "Scenario file or built-in name");
  o->set_opt = app.add_option("--set", o->sets, "KEY=V1,V2,... (repeatable): the values a setting takes; one value: "
                                                "every variant")
                   ->allow_extra_args(false)
                   ->take_all();
  o->set_list_opt = app.add_option("--set-list", o->set_lists, "KEY=V1;V2;... : as --set, values split at ';' only")
                        ->allow_extra_args(false)
                        ->take_all();
  app.add_option("-j,--jobs", o->jobs, "Variants run at once (default: the number of CPUs)")->check(CLI::PositiveNumber);
  add_output_options(app, o->out);
  app.add_option("--emit", o->emit, "parallel|slurm DIR: write a GNU parallel job list or a Slurm job-array script "
                                    "and DIR/variants.json instead of running")
      ->expected(2)
      ->allow_extra_args(false);
  app.add_option("--collect", o->collect, "DIR: print the results of an --emit'ed sweep, as a local sweep would");
  app.add_flag("-q,--quiet", o->quiet, "No progress line on a terminal");
  return [o, &app]() -> int {
    std::vector<sweep_axis> axes;
    std::vector<sweep_variant> vs;
    std::vector<compare_variant> results;
    if (!o->collect.empty()) {
      if (!o->scenario.empty() || !o->sets.empty() || !o->set_lists.empty() || !o->emit.empty())
        return report_error(status::invalid_argument("--collect DIR reads the sweep from DIR/variants.json: give no "
                                                     "SCENARIO, --set or --emit with it"));
      if (int rc = sweep_collect(o->collect, axes, vs, o->scenario, results)) return rc;
      return finish(*o, o->scenario, axes, vs, results);
    }
    if (o->scenario.empty()) return report_error(status::invalid_argument("give a SCENARIO (or --collect DIR)"));
    auto a = axes_of(*o, app);
    if (!a.ok()) return report_error(a.error());
    axes = std::move(a.value());
    auto v = sweep_variants(axes);
    if (!v.ok()) return report_error(v.error());
    vs = std::move(v.value());
    if (!o->emit.empty()) return sweep_emit(o->emit[0], o->emit[1], o->scenario, axes, vs);
    const unsigned jobs = o->jobs ? o->jobs : std::max(1u, std::thread::hardware_concurrency());
    auto r = run_variants(o->scenario, vs, jobs, progress_wanted(o->quiet));
    if (!r.ok()) return report_error(r.error());
    return finish(*o, o->scenario, axes, vs, r.value());
  };
}

}  // namespace vmlab::cli
