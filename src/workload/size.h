// Sizes as scenarios write them: "4096", "4KiB", "2.66GiB", "680*4MiB", "0x40000000".
// Units are binary (KiB, MiB, GiB, TiB; also K/M/G/T and KB/MB/GB/TB meaning the same,
// since the seeds' "MB" are MiB). A fractional size is rounded down to whole bytes.
#pragma once

#include <string>
#include <string_view>

#include "vmlab/status.h"
#include "vmlab/units.h"

namespace vmlab {

// REQUIRES: nothing. Errors say what was wrong ("negative size", "unknown unit 'Gb'").
result<bytes> parse_size(std::string_view text);

}  // namespace vmlab
