// vmlab whatif PID... | FILE.toml [--variant "LABEL: PATH=VALUE; ..."]... [--set ...] [--json]
// and the scenario writer of vmlab inspect (--scenario).
#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "engine/engine.h"
#include "engine/live/inspect.h"
#include "report/compare.h"
#include "report/inspect_report.h"
#include "report/whatif.h"
#include "workload/designs.h"
#include "workload/scenario.h"

namespace vmlab::cli {

result<kernel_profile> host_profile(const std::string& name);  // cmd_inspect.cc

namespace {

// A design of the table (workload/designs.h) as whatif replays it: its kernel settings, and
// how the shared segments are placed and backed (their kind and size settings are for a
// scenario whose mappings the kernel places; here the segments are moved by the writer).
struct replay {
  std::string label;
  std::vector<std::string> settings;
  segment_backing backing;
};

std::vector<replay> replays_for(const kernel_profile& p) {
  std::vector<replay> out;
  out.push_back({"as read", {}, {}});
  for (const design& d : designs_for(p, {"segment", 0})) {
    replay r{d.label, {}, {}};
    for (const std::string& s : d.settings)
      if (s.rfind("kernel.", 0) == 0) r.settings.push_back(s);
    if (d.spec.shared == shared_pages::hugetlb) r.backing = {d.spec.hugetlb_page, d.spec.hugetlb_page};
    if (d.spec.shared == shared_pages::shmem_thp) r.backing = {p.paging.pmd_huge_size(), 0};
    out.push_back(std::move(r));
  }
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

result<live::inspection> inspect_for_scenario(const std::vector<int>& pids, const kernel_profile& prof) {
  live::host_proc_source src;
  live::host_pagemap_source pm;
  live::inspect_options io;
  io.pids = pids;
  io.keep_runs = true;
  auto in = live::inspect(io, prof, src, pm);
  if (!in.ok()) return in.error();
  // Processes that exited while being read are left out (said on stderr); one that may not
  // be read is an error.
  for (const live::unreadable& u : in->skipped) {
    if (u.reason.rfind("exited while being read", 0) != 0 && u.reason.rfind("no address space", 0) != 0)
      return status::io_error("cannot read process " + std::to_string(u.pid) + ": " + u.reason);
    say_to_stderr("left out process " + std::to_string(u.pid) + ": " + u.reason);
  }
  if (in->processes.empty()) return status::io_error("none of the processes could be read");
  return in;
}

action add_whatif(CLI::App& app) {
  struct opts {
    std::vector<std::string> what, settings, variants;
    std::string profile = "linux-6.18", save;
    bool json = false;
  };
  auto o = std::make_shared<opts>();
  app.footer(
      "Replays processes running on this host (PIDs: read as `vmlab inspect` reads them) or a scenario file under "
      "other designs on the sim engine and prints the figures side by side. For PIDs the designs are those the host "
      "profile offers: as read, THP, hugetlb pages for the segments the processes share (and PMD sharing where the "
      "kernel has it); --variant adds columns as `vmlab compare` takes them.\n"
      "Exit status: 0; 1 when a design's replay ended early (the simulated kernel refused an op); 2 bad input; 3 a "
      "process could not be read.");
  app.add_option("what", o->what, "PIDs, or one scenario file (e.g. written by vmlab inspect --scenario)")->required();
  app.add_option("--variant", o->variants, "An extra column: \"LABEL: PATH=VALUE; ...\"")->take_all();
  add_set_option(app, o->settings);
  app.add_option("--profile", o->profile, "The host kernel's profile");
  app.add_option("--save", o->save, "Also write the scenario of the processes as read to this file");
  app.add_flag("--json", o->json, "Print the variants and rows as JSON");
  return [o]() -> int {
    auto prof = host_profile(o->profile);
    if (!prof.ok()) return report_error(prof.error());
    std::vector<compare_variant> vs;
    std::vector<op_stream> inputs;
    std::string name;
    bytes read_vmpte = 0;
    const bool pids = all_digits(o->what[0]);
    if (pids) {
      std::vector<int> list;
      for (const std::string& w : o->what) {
        if (!all_digits(w) || w.size() > 9 || std::stoi(w) <= 0)
          return report_error(status::invalid_argument("whatif takes PIDs or one scenario file, not '" + w + "'"));
        list.push_back(std::stoi(w));
      }
      auto in = inspect_for_scenario(list, prof.value());
      if (!in.ok()) return report_error(in.error());
      for (const live::process_inspection& p : in->processes) read_vmpte += p.status.vmpte;
      name = "PIDs";
      for (const std::string& w : o->what) name += " " + w;
      for (const replay& d : replays_for(prof.value())) {
        const inspected_scenario sc = inspection_scenario(in.value(), prof.value(), host_profile_overrides(), d.backing);
        if (d.backing.huge_page && sc.shared_objects.empty()) continue;  // nothing shared to back with huge pages
        if (!d.backing.align && d.settings.empty() && !o->save.empty()) {
          std::ofstream f(o->save);
          if (!(f << sc.toml)) return report_error(status::io_error("cannot write " + o->save));
        }
        std::vector<std::string> all = o->settings;
        all.insert(all.end(), d.settings.begin(), d.settings.end());
        auto s = parse_scenario(sc.toml, "inspected", all);
        if (!s.ok()) return report_error(s.error());
        inputs.push_back(std::move(s.value()));
        vs.push_back({d.label, d.settings, {}});
      }
    } else {
      if (o->what.size() != 1)
        return report_error(status::invalid_argument("whatif takes PIDs or one scenario file, not " +
                                                     std::to_string(o->what.size()) + " files"));
      name = o->what[0];
      for (const replay& d : replays_for(prof.value())) {
        if (d.backing.align) continue;  // segments are moved and re-backed from an inspection only; use --variant
        std::vector<std::string> all = o->settings;
        all.insert(all.end(), d.settings.begin(), d.settings.end());
        auto s = load_input(name, false, all);
        if (!s.ok()) return report_error(s.error());
        inputs.push_back(std::move(s.value()));
        vs.push_back({d.label == "as read" ? "as written" : d.label, d.settings, {}});
      }
    }
    for (const auto& text : o->variants) {
      auto v = parse_variant(text);
      if (!v.ok()) return report_error(v.error());
      std::vector<std::string> all = o->settings;
      all.insert(all.end(), v->settings.begin(), v->settings.end());
      if (pids) return report_error(status::invalid_argument("--variant applies to a scenario file; for PIDs, --save it first"));
      auto s = load_input(name, false, all);
      if (!s.ok()) return report_error(s.error());
      inputs.push_back(std::move(s.value()));
      vs.push_back(std::move(v.value()));
    }
    for (size_t i = 0; i < vs.size(); ++i) {
      auto r = run_sim(inputs[i]);
      if (!r.ok()) return report_error(r.error());
      vs[i].result = std::move(r.value());
    }
    if (o->json) {
      nlohmann::json j = compare_json(name, vs);
      if (pids) j["vmpte_read_bytes"] = read_vmpte;
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << format_compare(name, vs, "whatif");
      // How faithful the replay is: the processes' VmPTE as read next to the sim's.
      if (pids && !vs.empty() && !vs[0].result.samples.empty()) {
        bytes sim = 0;
        for (const proc_sample& p : vs[0].result.samples.back().procs) sim += p.vmpte;
        std::cout << fmt::format("\nVmPTE of the processes: {} as read on this host, {} in the sim's replay 'as read' "
                                 "({:+.2f}%)\n",
                                 human_bytes(double(read_vmpte)), human_bytes(double(sim)),
                                 read_vmpte ? 100.0 * (double(sim) - double(read_vmpte)) / double(read_vmpte) : 0.0);
      }
    }
    for (const auto& v : vs)
      if (!v.result.failures.empty()) return 1;
    return 0;
  };
}

}  // namespace vmlab::cli
