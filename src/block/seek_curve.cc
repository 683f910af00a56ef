#include "block/seek_curve.h"

#include <array>
#include <cmath>

namespace vmlab::block {
namespace {

// Solves the 4x4 system m x = r by Gaussian elimination with partial pivoting; false when
// singular.
bool solve4(std::array<std::array<double, 5>, 4> m, std::array<double, 4>& x) {
  for (int col = 0; col < 4; ++col) {
    int piv = col;
    for (int r = col + 1; r < 4; ++r)
      if (std::fabs(m[r][col]) > std::fabs(m[piv][col])) piv = r;
    if (std::fabs(m[piv][col]) < 1e-300) return false;
    std::swap(m[col], m[piv]);
    for (int r = 0; r < 4; ++r) {
      if (r == col) continue;
      const double f = m[r][col] / m[col][col];
      for (int k = col; k < 5; ++k) m[r][k] -= f * m[col][k];
    }
  }
  for (int i = 0; i < 4; ++i) x[i] = m[i][4] / m[i][i];
  return true;
}

}  // namespace

std::optional<seek_curve> seek_curve::fit(const seek_datasheet& d) {
  if (d.cylinders < 16 || !(d.track_to_track_ms > 0) || !(d.average_ms > d.track_to_track_ms) ||
      !(d.full_stroke_ms > d.average_ms))
    return std::nullopt;
  seek_curve s;
  s.max_ = d.cylinders - 1;
  s.x0_ = std::max<uint32_t>(2, uint32_t(std::lround(kBoundaryFraction * s.max_)));
  // Weighted sums of the basis functions (1, sqrt n) below x0 and (1, n) from x0 on, with
  // the datasheet's weights (max + 1 - n).
  double w1 = 0, ws = 0, w2 = 0, wn = 0, wsum = 0;
  for (uint32_t n = 1; n <= s.max_; ++n) {
    const double w = double(s.max_ + 1 - n);
    wsum += w;
    if (n < s.x0_) {
      w1 += w;
      ws += w * std::sqrt(double(n));
    } else {
      w2 += w;
      wn += w * double(n);
    }
  }
  const double sx0 = std::sqrt(double(s.x0_));
  // Unknowns (a, b, c, e).
  std::array<std::array<double, 5>, 4> m = {{
      {1, 1, 0, 0, d.track_to_track_ms},                    // t(1)
      {0, 0, 1, double(s.max_), d.full_stroke_ms},          // t(max)
      {1, sx0, -1, -double(s.x0_), 0},                      // continuity at x0
      {w1 / wsum, ws / wsum, w2 / wsum, wn / wsum, d.average_ms},  // weighted average
  }};
  std::array<double, 4> x{};
  if (!solve4(m, x)) return std::nullopt;
  s.a_ = x[0];
  s.b_ = x[1];
  s.c_ = x[2];
  s.e_ = x[3];
  if (!(s.b_ > 0) || s.e_ < 0 || s.a_ < 0) return std::nullopt;
  return s;
}

double seek_curve::ms(uint32_t d) const {
  if (d == 0) return 0;
  if (d > max_) d = max_;
  return d < x0_ ? a_ + b_ * std::sqrt(double(d)) : c_ + e_ * double(d);
}

sim_ns seek_curve::time(uint32_t distance) const { return from_ms(ms(distance)); }

double seek_curve::weighted_average_ms() const {
  double num = 0, den = 0;
  for (uint32_t n = 1; n <= max_; ++n) {
    num += double(max_ + 1 - n) * ms(n);
    den += double(max_ + 1 - n);
  }
  return num / den;
}

}  // namespace vmlab::block
