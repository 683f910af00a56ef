// Reports: every view of a RunResult, for either engine. The model never prints; this is
// where figures become text, in the units the kernel prints (kB for PageTables/VmPTE).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vmlab/run_result.h"

namespace vmlab {

// The whole RunResult as JSON, with "schema_version". Timings sit under "timing" so that
// determinism checks can drop one key.
nlohmann::json to_json(const run_result& r);

// A meminfo-style table: one row per sample, then per-process figures at the end.
std::string format_table(const run_result& r);

// One compared figure of `vmlab validate`.
struct validate_case {
  std::string scenario;
  std::string figure;   // "VmPTE_growth" (per process) or "PageTables_growth" (system)
  std::string at;       // the sample: a phase name or "end"
  uint32_t pid = 0;     // 0 for system figures
  [[nodiscard]] std::string metric() const;  // "VmPTE_growth[pid=3]@load", "PageTables_growth@end"
  double sim = 0;       // bytes
  double live = 0;      // bytes
  double rel_error = 0; // |sim - live| / max(live, 1)
  double tolerance = 0; // bytes allowed
  bool ok = true;
};

nlohmann::json to_json(const std::vector<validate_case>& cases, const std::vector<std::string>& notes);
// One row per scenario, sample and figure; per-process figures show the worst process.
std::string format_validate_table(const std::vector<validate_case>& cases);

}  // namespace vmlab
