// CPU time of the simulated kernel's operations: the table the timing model turns counts
// into time with (issue 9, item 3). Every entry names its source: a measurement on a host
// with the command that made it, a paper, or a datasheet. None is fitted to a benchmark
// result it is meant to predict (seed 003's tiobench rates in particular).
//
// Only the host of this project (a 2-vCPU AMD EPYC VM, Linux 6.18, measured by
// vmlab_io_cost) is filled in so far; a 2001 machine (seed 003: Linux 2.4.1) needs its own
// row per entry, from papers of the time, before the sim can replay seed 003
// (docs/decisions.md says what is missing).
#pragma once

#include <string>
#include <vector>

namespace vmlab::block {

struct cpu_cost {
  std::string op;      // "copy", "anon_fault", "file_fault", "readahead_page", "rmap_walk_pte"
  std::string machine; // whose cost it is
  double ns = 0;       // per `unit`
  std::string unit;    // "byte", "fault", "page", "pte"
  std::string source;  // where the figure comes from, with the command that measured it
};

const std::vector<cpu_cost>& cpu_costs();
// nullptr when the table has no such entry for that machine.
const cpu_cost* find_cpu_cost(const std::string& op, const std::string& machine);

}  // namespace vmlab::block
