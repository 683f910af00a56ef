// vmlab inspect [PID...] [--all] [--cgroup PATH] [--vmas] [--json]
#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include <unistd.h>

#include "cli/commands.h"
#include "engine/engine.h"
#include "engine/live/inspect.h"
#include "report/inspect_report.h"
#include "report/whatif.h"

namespace vmlab::cli {

// The host kernel's profile: linux-6.18 (this project's host kernel; `--profile` names
// another) with what the host says of itself (PTI).
result<kernel_profile> host_profile(const std::string& name) {
  auto p = find_profile(name);
  if (!p.ok()) return p.error();
  for (const auto& [k, v] : host_profile_overrides())
    if (status s = apply_override(p.value(), k, v); !s.ok()) return s;
  return p;
}

action add_inspect(CLI::App& app) {
  struct opts {
    std::vector<int> pids;
    bool all = false, json = false, vmas = false;
    std::string cgroup, profile = "linux-6.18", out;
    bool scenario = false;
  };
  auto o = std::make_shared<opts>();
  app.footer(
      "Reads each process's mappings (/proc/PID/smaps) and what they have mapped (PAGEMAP_SCAN on "
      "/proc/PID/pagemap), works out the PTE, PMD and PUD pages those entries need, attributes each table to the "
      "mappings that use it, and reconciles the sum with the process's VmPTE and with /proc/meminfo's PageTables; "
      "the residual is shown. Segments mapped by two or more of the processes (the same SysV segment, memfd or "
      "file) are grouped. Reading another user's process needs root (CAP_SYS_PTRACE).\n"
      "Exit status: 0; 2 for bad usage or a PID that does not exist; 3 when a named process may not be read (not root).");
  app.add_option("pids", o->pids, "Process IDs");
  app.add_flag("--all", o->all, "Every process with an address space");
  app.add_option("--cgroup", o->cgroup, "The processes of a cgroup v2 (a path, absolute or under /sys/fs/cgroup)");
  app.add_flag("--vmas", o->vmas, "Each mapping that needs a page table, per process");
  app.add_option("--profile", o->profile, "The host kernel's profile (what VmPTE counts, the paging format)");
  app.add_flag("--json", o->json, "Print everything as JSON (every mapping, every segment)");
  app.add_flag("--scenario", o->scenario,
               "Print (or with -o write) a scenario that reproduces these processes, for vmlab whatif and vmlab run");
  app.add_option("-o,--output", o->out, "With --scenario: the file to write");
  return [o]() -> int {
    if (o->pids.empty() && !o->all && o->cgroup.empty())
      return report_error(status::invalid_argument("inspect needs PIDs, --all or --cgroup PATH"));
    for (int pid : o->pids)
      if (pid <= 0) return report_error(status::invalid_argument("not a process ID: " + std::to_string(pid)));
    auto prof = host_profile(o->profile);
    if (!prof.ok()) return report_error(prof.error());
    live::host_proc_source src;
    live::host_pagemap_source pm;
    live::inspect_options io;
    io.pids = o->pids;
    io.all = o->all;
    io.cgroup = o->cgroup;
    io.keep_runs = o->scenario;
    if (!o->out.empty() && !o->scenario) return report_error(status::invalid_argument("-o goes with --scenario"));
    auto in = live::inspect(io, prof.value(), src, pm);
    if (!in.ok()) return report_error(in.error());
    if (o->scenario) {
      const std::string toml = inspection_scenario(in.value(), prof.value(), host_profile_overrides()).toml;
      if (o->out.empty()) {
        std::cout << toml;
      } else {
        std::ofstream f(o->out);
        if (!(f << toml)) return report_error(status::io_error("cannot write " + o->out));
        std::cerr << "vmlab: wrote " << o->out << " (" << in->processes.size() << " processes)\n";
      }
    } else if (o->json)
      std::cout << inspection_json(in.value()).dump(2) << "\n";
    else
      std::cout << format_inspection(in.value(), {.vmas = o->vmas || o->pids.size() == 1});
    // A process the user named and may not read is an error (exit 3); one that exited or
    // was exiting while read, or a kernel thread, is a line of the report.
    const bool unreadable = std::any_of(in->skipped.begin(), in->skipped.end(), [](const live::unreadable& u) {
      return u.reason.find("Permission denied") != std::string::npos ||
             u.reason.find("Operation not permitted") != std::string::npos;
    });
    if (!o->pids.empty() && !o->all && o->cgroup.empty() && unreadable) {
      if (::geteuid() != 0)
        std::cerr << "vmlab: reading another user's process needs root (or CAP_SYS_PTRACE)\n";
      return 3;
    }
    return 0;
  };
}

}  // namespace vmlab::cli
