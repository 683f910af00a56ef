// libFuzzer target: the /proc readers of the live engine (src/engine/live/procfs.h).
// Every input goes to all three parsers (meminfo, PID/status, PID/stat minflt), and to
// the read_* wrappers through a text_proc_source. Oracle: no crash, no sanitizer report,
// no exception.
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/live/procfs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)vmlab::live::parse_meminfo(text);
  (void)vmlab::live::parse_status(text);
  (void)vmlab::live::parse_stat_minflt(text);

  vmlab::live::text_proc_source src;
  src.set("/proc/meminfo", std::string(text));
  src.set("/proc/7/status", std::string(text));
  src.set("/proc/7/stat", std::string(text));
  (void)vmlab::live::read_meminfo(src);
  (void)vmlab::live::read_status(src, 7);
  (void)vmlab::live::read_minflt(src, 7);
  return 0;
}
