// `vmlab sweep`: the cross product of --set values, as variants of one scenario; their
// figures (compare_rows, the figures `vmlab compare` prints) as a table, CSV or JSON; the
// job lists that run the variants elsewhere (GNU parallel, a Slurm job array) and the
// collect step that reads their results back. No I/O but the collect's reads.
#pragma once

#include "report/csv.h"  // csv_field

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/compare.h"
#include "vmlab/status.h"

namespace vmlab {

// One --set: a key and the values it takes (one value: the same in every variant).
struct sweep_axis {
  std::string key;
  std::vector<std::string> values;
};

// "KEY=V1,V2,V3" (--set): values split at commas outside "..."/'...' strings, [...] and
// {...}, so TOML values keep theirs (machine.hugepages={"2MiB"=8,"1GiB"=1}). With `list`
// (--set-list "KEY=V1;V2"), split at ';' only. invalid_argument naming the text when the
// key or '=' is missing, a value is empty, or a bracket or quote is left open.
result<sweep_axis> parse_sweep_axis(const std::string& text, bool list);

// One variant: its index in the cross product and PATH=VALUE for every axis, in axis order.
struct sweep_variant {
  size_t index = 0;
  std::vector<std::string> settings;
};

// The cross product, the first axis varying slowest (nested loops in the order given).
// invalid_argument when the same key is given twice.
result<std::vector<sweep_variant>> sweep_variants(const std::vector<sweep_axis>& axes);

// "003" (at least 3 digits, as many as the last index needs): result file DIR/003.json.
std::string variant_name(size_t index, size_t count);

enum class sweep_format { table, csv, json };

// The output of a sweep: a column per axis with more than one value, then completed, then
// a column per figure of compare_rows(results) (sizes in bytes in CSV and JSON, in `u` in
// the table). results[i] is variant i's (its label and settings are not read).
std::string format_sweep(const std::string& scenario, const std::vector<sweep_axis>& axes,
                         const std::vector<sweep_variant>& variants, const std::vector<compare_variant>& results,
                         sweep_format f, size_unit u = size_unit::human);


// What --emit writes, for `dir` (absolute) and the command that runs one variant
// (`vmlab_path` run SCENARIO --set ... --json > DIR/NNN.json; shell-quoted).
std::string variant_command(const std::string& vmlab_path, const std::string& scenario, const sweep_variant& v,
                            const std::string& dir, size_t count);
// DIR/variants.json: {"schema_version":1,"scenario","axes":[{"key","values"}],
// "variants":[{"index","file","settings":{KEY:VALUE}}]}.
nlohmann::json variants_json(const std::string& scenario, const std::vector<sweep_axis>& axes,
                             const std::vector<sweep_variant>& variants);
// A GNU parallel job list (a comment line, then one command a line).
std::string parallel_jobs(const std::vector<std::string>& commands, const std::string& dir);
// A Slurm job-array script: one task per command, $SLURM_ARRAY_TASK_ID selects it.
std::string slurm_script(const std::vector<std::string>& commands, const std::string& dir);

// What `--collect DIR` read: the scenario, axes and variants of variants.json.
struct sweep_plan {
  std::string scenario;
  std::vector<sweep_axis> axes;
  std::vector<sweep_variant> variants;
  std::vector<std::string> files;  // per variant, relative to DIR
};
// invalid_argument naming `where` when variants.json is not what variants_json writes.
result<sweep_plan> parse_variants_json(const nlohmann::json& j, const std::string& where);

// "a shell word": 'text' with ' written as '\'' (unquoted when only safe characters).
std::string shell_quote(const std::string& s);

}  // namespace vmlab
