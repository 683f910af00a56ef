// "Did you mean ...?": the closest known name to a mistyped one, for error messages
// (subcommands, scenario keys, kernel profiles, built-in scenarios), as git and cargo
// suggest. Closeness is the Damerau-Levenshtein (optimal string alignment) distance; a
// name is suggested when it is within a quarter of the typed length (at least 1, at most 3
// edits), or when one is a prefix of the other ("linux-6" -> "linux-6.18").
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace vmlab {

inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The closest of `known` to `typed`, or "" when none is close enough.
template <typename Range>
std::string closest_name(std::string_view typed, const Range& known) {
  if (typed.empty() || typed.size() > 200) return "";
  std::string best;
  size_t best_d = SIZE_MAX;
  const size_t limit = std::clamp<size_t>(typed.size() / 4, 1, 3);
  for (const auto& k : known) {
    const std::string_view name(k);
    if (name == typed || name.size() > 200) continue;
    size_t d = edit_distance(typed, name);
    const bool prefix = typed.size() >= 3 && (name.rfind(typed, 0) == 0 || typed.rfind(name, 0) == 0);
    if (d > limit && !prefix) continue;
    if (prefix) d = std::min(d, limit);
    if (d < best_d) {
      best_d = d;
      best = std::string(name);
    }
  }
  return best;
}

// "; did you mean 'NAME'?" or "".
template <typename Range>
std::string did_you_mean(std::string_view typed, const Range& known) {
  const std::string c = closest_name(typed, known);
  return c.empty() ? "" : "; did you mean '" + c + "'?";
}

}  // namespace vmlab
