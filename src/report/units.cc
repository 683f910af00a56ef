#include "report/units.h"

#include <cmath>
#include <iterator>

#include <fmt/format.h>

namespace vmlab {

std::string human_bytes(double b) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  const bool neg = b < 0;
  double v = std::fabs(b);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  return (neg ? "-" : "") + (u == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.1f} {}", v, units[u]));
}

std::string format_size(double b, size_unit u) {
  switch (u) {
    case size_unit::human: return human_bytes(b);
    case size_unit::exact_bytes: return fmt::format("{:.0f} B", b);
    case size_unit::exact_kb:
      return b < 0 ? fmt::format("-{} kB", uint64_t(-b) / 1024) : fmt::format("{} kB", uint64_t(b) / 1024);
  }
  return "?";
}

std::string format_size_signed(double b, size_unit u) {
  switch (u) {
    case size_unit::human: return (b < 0 ? "" : "+") + human_bytes(b);
    case size_unit::exact_bytes: return fmt::format("{:+.0f} B", b);
    case size_unit::exact_kb: return fmt::format("{:+.0f} kB", b / 1024);
  }
  return "?";
}

std::string size_unit_legend(size_unit u) {
  switch (u) {
    case size_unit::human: return "KiB, MiB, GiB = 2^10, 2^20, 2^30 bytes";
    case size_unit::exact_bytes: return "sizes in bytes";
    case size_unit::exact_kb: return "kB = 1024 bytes, as /proc/meminfo counts them";
  }
  return "?";
}

}  // namespace vmlab
