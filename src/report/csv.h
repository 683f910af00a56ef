// CSV (RFC 4180) from the JSON the commands print, so `--format csv` follows `--format
// json` without a second writer per command: a JSON array of objects becomes a header and
// one line per object; nested objects become dotted columns ("pt_pages.pte"); arrays are
// written as their JSON text in one field.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vmlab {

// One field, quoted when it holds a comma, a quote, CR or LF (quotes doubled).
std::string csv_field(const std::string& s);

// `rows`: an array of objects. Columns: `first` (those present), then the rest in the
// order keys are first seen (JSON objects keep their keys sorted).
std::string to_csv(const nlohmann::json& rows, const std::vector<std::string>& first = {});

}  // namespace vmlab
