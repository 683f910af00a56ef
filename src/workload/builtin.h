// Built-in scenarios, compiled into the binary from scenarios/ so that
// `vmlab run seeds/rmap-dss` works from any directory.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vmlab {

struct builtin_scenario {
  std::string_view name;  // path under scenarios/ without ".toml", e.g. "validate/anon-64m"
  std::string_view text;
};

const std::vector<builtin_scenario>& builtin_scenarios();
// nullptr when there is no built-in scenario of that name.
const builtin_scenario* find_builtin(std::string_view name);

}  // namespace vmlab
