// `vmlab compare`: variants of one scenario side by side, in the layout of seed 001's
// table (a row per figure, a column per variant, then each variant's difference from the
// first), so a user can ask "what would huge pages, or another kernel, save me".
//
// The figures are maxima over the run, as the seeds quote them: PageTables, the rmap's
// slab objects (pte_chain on 2.5, anon_vma and anon_vma_chain from 2.6), their sum, the
// largest process's VmPTE, the huge-page figures at the end, the faults. A row appears when
// some variant has the figure; a variant without it shows "-".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>  // the callers that build JSON include json.hpp

#include "report/units.h"
#include "vmlab/run_result.h"
#include "vmlab/status.h"

namespace vmlab {

// One column: its label, the settings that made it (PATH=VALUE, as --set takes them) and
// the sim's result of the scenario with them.
struct compare_variant {
  std::string label;
  std::vector<std::string> settings;
  run_result result;
};

// "PATH=VALUE; PATH=VALUE" -> its settings, trimmed, empty ones dropped.
std::vector<std::string> split_settings(std::string_view text);

// Parses "LABEL: PATH=VALUE; PATH=VALUE" (settings may be empty: the scenario as
// written). invalid_argument naming the text when the label is missing.
result<compare_variant> parse_variant(const std::string& text);

// One row of the table.
struct compare_row {
  std::string figure;  // "PageTables (max)"
  std::string unit;    // "bytes" or a count's unit ("faults")
  std::vector<std::optional<double>> values;  // per variant
};

std::vector<compare_row> compare_rows(const std::vector<compare_variant>& v);

// The table: a header naming the scenario and each variant's kernel, the rows (sizes in
// `u`), a difference column per later variant, then how each run ended. `command` names
// what made the variants ("compare", "whatif").
std::string format_compare(const std::string& scenario, const std::vector<compare_variant>& v,
                           const std::string& command = "compare", size_unit u = size_unit::human);

// {"scenario", "variants":[{"label","settings","profile","completed","failures"}],
//  "rows":[{"figure","unit","values":[...],"diff":[...]}]}; diff[i] is values[i+1] -
// values[0] (null where either is missing).
nlohmann::json compare_json(const std::string& scenario, const std::vector<compare_variant>& v);

// The rows for CSV: {"figure", "unit", LABEL: value, ...} per figure (null where missing).
nlohmann::json compare_csv_rows(const std::vector<compare_variant>& v);
// Its columns in order: figure, unit, then the variants' labels.
std::vector<std::string> compare_csv_columns(const std::vector<compare_variant>& v);

}  // namespace vmlab
