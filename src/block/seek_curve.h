// A disk's seek time as a function of seek distance (cylinders).
//
// Model: Ruemmler and Wilkes, "An introduction to disk drive modeling", IEEE Computer
// 27(3), March 1994, section "Seek time": short seeks are dominated by acceleration and
// grow with the square root of the distance; long seeks coast at maximum arm speed and
// grow linearly. Their HP 97560 curve is 3.24 + 0.400 sqrt(d) ms for d < 383 cylinders
// and 8.00 + 0.008 d ms beyond, of 1,962 cylinders: the boundary sits at 383/1962 = 19.5%
// of the stroke, which we keep for every drive (kBoundaryFraction).
//
//   t(d) = a + b sqrt(d)   for 1 <= d < x0
//   t(d) = c + e d         for x0 <= d <= max
//
// The four coefficients follow from four datasheet facts, all linear in (a, b, c, e):
//   t(1) = track-to-track (single-track) seek,
//   t(max) = full-stroke seek,
//   t continuous at x0,
//   the datasheet's weighted average equals its "average seek": IBM's and Seagate's
//   specifications define it as sum_{n=1..max} (max+1-n) t(n) / sum (max+1-n), every
//   start/end pair equally likely (DTLA-307075 specification, section 4.4.2.1).
//
// Invariants (checked by fit_seek_curve, which refuses a datasheet that breaks them):
//   1. t(0) = 0 (no seek); t is non-decreasing in d (b > 0, e >= 0, continuous at x0).
//   2. t(1), t(max) and the weighted average equal the datasheet's within 1 ns rounding.
#pragma once

#include <cstdint>
#include <optional>

#include "block/clock.h"

namespace vmlab::block {

inline constexpr double kBoundaryFraction = 383.0 / 1962.0;  // Ruemmler & Wilkes, HP 97560

struct seek_datasheet {
  double track_to_track_ms = 0;  // single-track seek, read, typical
  double average_ms = 0;         // weighted average seek, read, typical
  double full_stroke_ms = 0;     // full-stroke seek, read, typical
  uint32_t cylinders = 0;        // max = cylinders - 1
};

class seek_curve {
 public:
  // The curve through the datasheet's three points, or nullopt when no monotone sqrt-then-
  // linear curve passes through them (e.g. average below track-to-track).
  static std::optional<seek_curve> fit(const seek_datasheet& d);

  [[nodiscard]] sim_ns time(uint32_t distance) const;
  // The datasheet's weighted average of this curve over every seek distance, in ms.
  [[nodiscard]] double weighted_average_ms() const;
  [[nodiscard]] uint32_t max_distance() const { return max_; }
  [[nodiscard]] uint32_t boundary() const { return x0_; }

 private:
  double a_ = 0, b_ = 0, c_ = 0, e_ = 0;  // ms
  uint32_t x0_ = 1, max_ = 1;
  [[nodiscard]] double ms(uint32_t d) const;
};

}  // namespace vmlab::block
