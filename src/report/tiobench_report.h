// tiobench's output: tiobench.pl's table (unit legend, then Sequential Reads, Random
// Reads, Sequential Writes, Random Writes, one row each) and vmlab's JSON of the same.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "workload/tiobench.h"

namespace vmlab {

std::string format_tiobench_table(const tiobench_run& r);
nlohmann::json tiobench_json(const tiobench_run& r);

}  // namespace vmlab
