// Reports: every view of a RunResult, for either engine. The model never prints; this is
// where figures become text: tables print sizes in a size_unit (human units by default,
// or exact bytes or kB as the kernel prints them), JSON in bytes.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/units.h"
#include "vmlab/run_result.h"
#include "vmlab/status.h"

namespace vmlab {

// The whole RunResult as JSON, with "schema_version". Timings sit under "timing" so that
// determinism checks can drop one key.
nlohmann::json to_json(const run_result& r);

// The inverse of to_json for what compare_rows reads (engine, scenario, profile, faults,
// the failures, the peaks with their meminfo and slab rows, the samples' meminfo lines),
// so that `vmlab sweep --collect` gets the figures a local sweep computes. Per-process
// figures, notes and timings are not read back. invalid_argument naming `where` when the
// JSON is not a RunResult.
result<run_result> run_result_from_json(const nlohmann::json& j, const std::string& where);

// A meminfo-style table: one row per sample, then per-process figures at the end. When the
// result carries them: the profile's /proc/meminfo lines per sample and their maxima (free
// memory: minima), and the slab caches at the end and at their maxima (sim) or the host's
// rows and their growth (live).
std::string format_table(const run_result& r, bool verbose = false, size_unit u = size_unit::human);

// /proc/slabinfo of the end sample in the profile's format (r.slabinfo_version), then the
// same rows for the maxima over the run under "# maxima over the run". invalid_argument
// when the result has no slab rows or an unknown slabinfo version.
result<std::string> format_slabinfo(const run_result& r);

// What `vmlab validate` concluded about one figure. not_measurable: the live run could not
// measure it on this host (other processes changed the system-wide figure meanwhile); it
// is neither ok nor a failure, and `why` holds the live run's evidence.
// skipped: the host cannot run the scenario at all (no such huge pages, a pool it cannot
// give), with the reason.
enum class verdict : uint8_t { ok, fail, not_measurable, skipped };
const char* verdict_name(verdict v);  // "ok", "FAIL", "not measurable", "skipped"

// One compared figure of `vmlab validate`.
struct validate_case {
  std::string scenario;
  std::string figure;   // "VmPTE_growth" (per process) or "PageTables_growth" (system)
  std::string unit = "bytes";  // "bytes" (printed in the table's size_unit) or a count's unit ("objects", "slabs")
  std::string at;       // the sample: a phase name or "end"
  uint32_t pid = 0;     // 0 for system figures
  [[nodiscard]] std::string metric() const;  // "VmPTE_growth[pid=3]@load", "PageTables_growth@end"
  double sim = 0;       // in `unit`
  double live = 0;      // in `unit`
  double rel_error = 0; // |sim - live| / max(live, 1)
  double tolerance = 0; // `unit`s allowed: |sim - live| <= tolerance is ok
  std::string tolerance_rule;  // how it was set, e.g. "1% or 8 kB"
  verdict v = verdict::ok;
  std::string why;      // not_measurable (or a failure without figures): the evidence
  [[nodiscard]] bool failed() const { return v == verdict::fail; }
};

nlohmann::json to_json(const std::vector<validate_case>& cases, const std::vector<note>& notes);
// One row per scenario, sample and figure with both figures, their difference, the
// tolerance and the verdict; per-process figures show the worst process. Then a count of
// each verdict, and for figures not measurable the evidence.
std::string format_validate_table(const std::vector<validate_case>& cases, size_unit u = size_unit::human);

// The notes of a result, one line each (with `verbose`, each followed by its long form).
std::string format_notes(const std::vector<note>& notes, bool verbose);

}  // namespace vmlab
