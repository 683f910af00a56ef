// parse_size: "4096", "4KiB", "2.66GiB", "680*4MiB", "0x40000000".
//
// Each factor is kept as an exact fraction (digits / 10^decimals, times the unit) in
// 128-bit arithmetic, so "2.66GiB" is 2.66 * 2^30 rounded down once at the end, not the
// product of a rounded double.
#include "workload/size.h"

#include <string>

namespace vmlab {
namespace {

using u128 = __uint128_t;
constexpr u128 kU128Max = ~u128{0};

struct fraction {
  u128 num = 1;
  u128 den = 1;
};

bool is_space(char c) { return c == ' ' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// The multiplier for a unit suffix, 0 when unknown. Suffixes are case-sensitive.
bytes unit_of(std::string_view u) {
  if (u.empty() || u == "B") return 1;
  static constexpr struct {
    char letter;
    bytes mult;
  } kUnits[] = {{'K', KiB}, {'M', MiB}, {'G', GiB}, {'T', TiB}};
  for (const auto& k : kUnits) {
    if (u[0] != k.letter) continue;
    const std::string_view rest = u.substr(1);
    if (rest.empty() || rest == "iB" || rest == "B") return k.mult;
  }
  return 0;
}

enum class factor_error { none, not_a_number, unknown_unit, overflow };

// One factor: a decimal number with optional fraction, or a hex integer; then an
// optional unit. `unit` receives the unknown unit text on unknown_unit.
factor_error parse_factor(std::string_view f, fraction& out, std::string& unit) {
  f = trim(f);
  size_t i = 0;
  u128 num = 0, den = 1;
  bool any_digit = false;
  if (f.size() >= 2 && f[0] == '0' && (f[1] == 'x' || f[1] == 'X')) {
    i = 2;
    while (i < f.size() && is_hex(f[i])) {
      if (num > (kU128Max >> 4)) return factor_error::overflow;
      num = num * 16 + static_cast<unsigned>(hex_value(f[i]));
      ++i;
      any_digit = true;
    }
  } else {
    while (i < f.size() && is_digit(f[i])) {
      if (num > kU128Max / 10 - 9) return factor_error::overflow;
      num = num * 10 + static_cast<unsigned>(f[i] - '0');
      ++i;
      any_digit = true;
    }
    if (i < f.size() && f[i] == '.') {
      ++i;
      bool frac_digit = false;
      while (i < f.size() && is_digit(f[i])) {
        // Digits beyond 18 decimals cannot change a 64-bit result; drop them.
        if (den < u128{1000000000000000000ull}) {
          num = num * 10 + static_cast<unsigned>(f[i] - '0');
          den *= 10;
        }
        ++i;
        frac_digit = true;
      }
      if (!frac_digit && !any_digit) return factor_error::not_a_number;
      any_digit = any_digit || frac_digit;
    }
  }
  if (!any_digit) return factor_error::not_a_number;
  const std::string_view u = trim(f.substr(i));
  const bytes mult = unit_of(u);
  if (mult == 0) {
    // "12abc" with no letter-only suffix is not a number with a unit at all.
    for (char c : u)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return factor_error::not_a_number;
    unit = std::string(u);
    return factor_error::unknown_unit;
  }
  if (num > kU128Max / mult) return factor_error::overflow;
  out.num = num * mult;
  out.den = den;
  return factor_error::none;
}

}  // namespace

result<bytes> parse_size(std::string_view text) {
  const std::string shown(text);
  const std::string_view t = trim(text);
  if (!t.empty() && t.front() == '-') return status::invalid_argument("negative size '" + shown + "'");
  if (t.empty()) return status::invalid_argument("size '" + shown + "' is not a number");

  u128 num = 1, den = 1;
  size_t start = 0;
  for (;;) {
    const size_t star = t.find('*', start);
    const std::string_view piece = t.substr(start, star == std::string_view::npos ? std::string_view::npos : star - start);
    if (!trim(piece).empty() && trim(piece).front() == '-')
      return status::invalid_argument("negative size '" + shown + "'");
    fraction f;
    std::string unit;
    switch (parse_factor(piece, f, unit)) {
      case factor_error::none: break;
      case factor_error::not_a_number: return status::invalid_argument("size '" + shown + "' is not a number");
      case factor_error::unknown_unit:
        return status::invalid_argument("unknown unit '" + unit + "' in '" + shown + "'");
      case factor_error::overflow: return status::invalid_argument("size '" + shown + "' is too large (more than 2^64-1 bytes)");
    }
    // Reduce before multiplying so that products of modest factors stay in range.
    while (f.den > 1 && f.num % 10 == 0 && f.den % 10 == 0) { f.num /= 10; f.den /= 10; }
    if (f.num != 0 && num > kU128Max / f.num) return status::invalid_argument("size '" + shown + "' is too large (more than 2^64-1 bytes)");
    if (den > kU128Max / f.den) return status::invalid_argument("size '" + shown + "' has too many decimals");
    num *= f.num;
    den *= f.den;
    while (den > 1 && num % 10 == 0 && den % 10 == 0) { num /= 10; den /= 10; }
    if (star == std::string_view::npos) break;
    start = star + 1;
  }
  const u128 v = num / den;  // fractional bytes round down
  if (v > u128{~uint64_t{0}}) return status::invalid_argument("size '" + shown + "' is too large (more than 2^64-1 bytes)");
  return static_cast<bytes>(v);
}

}  // namespace vmlab
