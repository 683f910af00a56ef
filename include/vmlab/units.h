// Sizes and addresses. The seeds' "MB" are MiB (3,411,018 x 32 B = 104 MiB), so vmlab
// speaks binary units throughout.
#pragma once

#include <cstdint>

namespace vmlab {

using vaddr = uint64_t;  // a simulated virtual address
using bytes = uint64_t;  // a size in bytes

inline constexpr bytes KiB = 1024;
inline constexpr bytes MiB = 1024 * KiB;
inline constexpr bytes GiB = 1024 * MiB;
inline constexpr bytes TiB = 1024 * GiB;

constexpr bytes operator""_KiB(unsigned long long v) { return v * KiB; }
constexpr bytes operator""_MiB(unsigned long long v) { return v * MiB; }
constexpr bytes operator""_GiB(unsigned long long v) { return v * GiB; }

constexpr uint64_t round_down(uint64_t v, uint64_t a) { return v & ~(a - 1); }  // a: power of 2
constexpr uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }
constexpr uint64_t div_round_up(uint64_t v, uint64_t d) { return (v + d - 1) / d; }
constexpr bool is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

}  // namespace vmlab
