// How tables print sizes: human units by default (as smem -k and free -h), or exact
// bytes or kB on request (--bytes, --kb). JSON and CSV are always in bytes.
#pragma once

#include <cstdint>
#include <string>

namespace vmlab {

enum class size_unit : uint8_t {
  human,        // "1.5 GiB", "512.0 KiB", "12 B": binary units, one decimal
  exact_bytes,  // "16818176 B": exact
  exact_kb,     // "16424 kB": whole kB of 1024 bytes, as /proc/meminfo prints them
};

// "1.5 GiB", "512.0 KiB", "12 B": binary units, one decimal (the largest unit not above
// the value).
std::string human_bytes(double b);

// A size of `b` bytes in `u` (kB are truncated, as the kernel truncates them).
std::string format_size(double b, size_unit u);
// The same with a sign, for differences: "+1.5 MiB", "-4 kB" (kB rounded), "+0 B".
std::string format_size_signed(double b, size_unit u);

// What a table's sizes mean, for its footnote: "KiB, MiB, GiB = 2^10, 2^20, 2^30 bytes".
std::string size_unit_legend(size_unit u);

}  // namespace vmlab
