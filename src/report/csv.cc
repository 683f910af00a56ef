#include "report/csv.h"

#include <map>
#include <vector>

namespace vmlab {
namespace {

void flatten(const nlohmann::json& v, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    return;
  }
  std::string text;
  if (v.is_string()) text = v.get<std::string>();
  else if (v.is_null()) text = "";
  else text = v.dump();
  out.emplace_back(prefix, text);
}

}  // namespace

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

std::string to_csv(const nlohmann::json& rows, const std::vector<std::string>& first) {
  std::vector<std::string> columns;
  std::map<std::string, size_t> index;
  std::vector<std::vector<std::pair<std::string, std::string>>> flat;
  for (const auto& r : rows) {
    flat.emplace_back();
    flatten(r, "", flat.back());
  }
  auto present = [&flat](const std::string& k) {
    for (const auto& f : flat)
      for (const auto& kv : f)
        if (kv.first == k) return true;
    return false;
  };
  for (const std::string& k : first)
    if (present(k) && index.emplace(k, columns.size()).second) columns.push_back(k);
  for (const auto& f : flat)
    for (const auto& [k, v] : f)
      if (index.emplace(k, columns.size()).second) columns.push_back(k);
  std::string out;
  for (size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + csv_field(columns[i]);
  out += "\r\n";
  for (const auto& f : flat) {
    std::vector<std::string> line(columns.size());
    for (const auto& [k, v] : f) line[index[k]] = v;
    for (size_t i = 0; i < line.size(); ++i) out += (i ? "," : "") + csv_field(line[i]);
    out += "\r\n";
  }
  return out;
}

}  // namespace vmlab
