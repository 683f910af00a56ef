// Scenarios: TOML files that describe a machine, a kernel, memory objects, process
// groups and phases; the generator turns one into the deterministic op stream.
// The format is documented in docs/scenario-format.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vmlab/op.h"
#include "vmlab/status.h"

namespace vmlab {

// Parses scenario text (from memory, for tests and fuzzers) and generates its op stream.
// `name` is used in error locations ("name:line:col: ...").
// `settings` as for load_scenario.
result<op_stream> parse_scenario(std::string_view text, const std::string& name,
                                 const std::vector<std::string>& settings = {});

// Loads a scenario from a path, or a built-in one by name ("seeds/rmap-dss",
// "validate/anon-64m"; ".toml" optional). Errors name the file, line and column.
//
// `settings` change the TOML document before it is read, each "PATH=VALUE": PATH is
// dotted keys, where a key after an array of tables ([[object]], [[group]], a group's
// map, [[phase]]) names the element by its `name` (object.pool.kind, group.db.count,
// group.db.map.heap.advice, kernel.overrides.thp_enabled); missing tables on the way are
// created, the last key is set or added. VALUE is TOML when it parses as TOML (680, true,
// {"4MiB" = 680}), else a string (hugetlb, 4MiB). The reader then checks the result as it
// checks a file; an error in a set value names the setting ("--set PATH=VALUE:1:col").
// The scenario text with `settings` applied as load_scenario applies them, written back as
// TOML (toml++'s layout: comments are not kept), after checking that it reads. For
// commands that print the scenario a figure stands for (`vmlab estimate --scenario`).
result<std::string> scenario_with_settings(std::string_view text, const std::string& name,
                                           const std::vector<std::string>& settings);

result<op_stream> load_scenario(const std::string& name_or_path, const std::vector<std::string>& settings = {});

// The `description` of a scenario's text ("" when it has none or does not parse as TOML).
std::string scenario_description(std::string_view text);

}  // namespace vmlab
