// The simulated clock: integer nanoseconds since the start of a run.
//
// Why integers: a simulation replayed with the same input must give the same time bit
// for bit on every host and compiler; doubles summed in a different order would not.
// 2^64 ns is 584 years, so overflow is not a concern for any run vmlab can do. Device
// models (src/block) take "now" and return the completion time; nothing here reads a
// real clock.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>

namespace vmlab::block {

// A point in simulated time, or a duration: nanoseconds.
struct sim_ns {
  uint64_t ns = 0;

  friend constexpr auto operator<=>(sim_ns, sim_ns) = default;
  friend constexpr sim_ns operator+(sim_ns a, sim_ns b) { return {a.ns + b.ns}; }
  // REQUIRES: a >= b (durations are never negative).
  friend constexpr sim_ns operator-(sim_ns a, sim_ns b) { return {a.ns - b.ns}; }
  constexpr sim_ns& operator+=(sim_ns b) {
    ns += b.ns;
    return *this;
  }
  [[nodiscard]] constexpr double seconds() const { return double(ns) * 1e-9; }
  [[nodiscard]] constexpr double ms() const { return double(ns) * 1e-6; }
  [[nodiscard]] constexpr double us() const { return double(ns) * 1e-3; }
};

// Datasheet figures are decimal milliseconds or microseconds; they become whole
// nanoseconds once, here, rounded to nearest.
inline sim_ns from_ms(double v) { return {uint64_t(std::llround(v * 1e6))}; }
inline sim_ns from_us(double v) { return {uint64_t(std::llround(v * 1e3))}; }
constexpr sim_ns max(sim_ns a, sim_ns b) { return a < b ? b : a; }

// Time to move `n` bytes at `bytes_per_s`, rounded up to a whole nanosecond.
constexpr sim_ns transfer_time(uint64_t n, uint64_t bytes_per_s) {
  // n * 1e9 overflows past 18 GB; split to stay exact.
  const uint64_t whole = n / bytes_per_s, rest = n % bytes_per_s;
  return {whole * 1'000'000'000ull + (rest * 1'000'000'000ull + bytes_per_s - 1) / bytes_per_s};
}

}  // namespace vmlab::block
