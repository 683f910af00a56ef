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
#include "workload/scenario.h"

namespace vmlab::cli {

result<kernel_profile> host_profile(const std::string& name);  // cmd_inspect.cc

namespace {

// A design the processes could run under: kernel settings, and how their shared segments
// are backed. Offered when the profile has what the design needs.
struct design {
  std::string label;
  std::vector<std::string> settings;
  segment_backing backing;
};

std::vector<design> designs_for(const kernel_profile& p) {
  std::vector<design> d;
  d.push_back({"as read", {}, {}});
  if (p.huge.thp && p.huge.shmem_thp)
    d.push_back({"THP", {"kernel.overrides.thp_enabled=always", "kernel.overrides.shmem_enabled=always"}, {}});
  const std::vector<bytes> sizes = hugetlb_page_sizes(p);
  const int pmd = p.paging.index_of(level::pmd);
  for (bytes s : sizes) {
    const bool pmd_size = pmd >= 0 && p.paging.at(pmd).span() == s;
    d.push_back({fmt::format("hugetlb {} MiB", s >> 20), {}, {s, s}});
    // huge_pmd_share() shares only whole PUD-aligned windows: place the segment on one.
    if (pmd_size && p.huge.pmd_share && pmd > 0)
      d.push_back({fmt::format("hugetlb {} MiB, PMD-shared", s >> 20), {}, {s, p.paging.at(pmd - 1).span()}});
  }
  for (design& x : d)
    if (x.backing.huge_page >= (bytes{1} << 30)) x.label = fmt::format("hugetlb {} GiB", x.backing.huge_page >> 30);
  return d;
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
  if (!in->skipped.empty())
    return status::io_error("cannot read process " + std::to_string(in->skipped[0].pid) + ": " + in->skipped[0].reason);
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
      name = "PIDs";
      for (const std::string& w : o->what) name += " " + w;
      for (const design& d : designs_for(prof.value())) {
        const inspected_scenario sc = inspection_scenario(in.value(), prof.value(), host_profile_overrides(), d.backing);
        if (d.backing.huge_page && sc.shared_objects.empty()) continue;  // nothing shared to back with huge pages
        if (!d.backing.huge_page && d.settings.empty() && !o->save.empty()) {
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
      for (const design& d : designs_for(prof.value())) {
        if (d.backing.huge_page) continue;  // segments are re-backed from an inspection only; use --variant
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
    if (o->json)
      std::cout << compare_json(name, vs).dump(2) << "\n";
    else
      std::cout << format_compare(name, vs);
    for (const auto& v : vs)
      if (!v.result.failures.empty()) return 1;
    return 0;
  };
}

}  // namespace vmlab::cli
