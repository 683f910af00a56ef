// Scenarios: TOML files that describe a machine, a kernel, memory objects, process
// groups and phases; the generator turns one into the deterministic op stream.
// The format is documented in docs/scenario-format.md.
#pragma once

#include <string>
#include <string_view>

#include "vmlab/op.h"
#include "vmlab/status.h"

namespace vmlab {

// Parses scenario text (from memory, for tests and fuzzers) and generates its op stream.
// `name` is used in error locations ("name:line:col: ...").
result<op_stream> parse_scenario(std::string_view text, const std::string& name);

// Loads a scenario from a path, or a built-in one by name ("seeds/rmap-dss",
// "validate/anon-64m"; ".toml" optional). Errors name the file, line and column.
result<op_stream> load_scenario(const std::string& name_or_path);

}  // namespace vmlab
