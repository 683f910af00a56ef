// libFuzzer target: the /proc readers of the live engine (src/engine/live/procfs.h).
// Every input goes to every parser (meminfo, PID/status, PID/stat minflt, slabinfo,
// PID/maps, and the /sys/kernel/slab files, each given the input), and to the read_*
// wrappers through a text_proc_source. Oracle: no crash, no sanitizer report, no
// exception.
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/live/procfs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)vmlab::live::parse_meminfo(text);
  (void)vmlab::live::parse_status(text);
  (void)vmlab::live::parse_stat_minflt(text);
  (void)vmlab::live::parse_slabinfo(text);
  (void)vmlab::live::parse_maps_vma_count(text);
  (void)vmlab::live::parse_sys_slab("c", {text, text, text, text, text, text});

  vmlab::live::text_proc_source src;
  src.set("/proc/meminfo", std::string(text));
  src.set("/proc/7/status", std::string(text));
  src.set("/proc/7/stat", std::string(text));
  src.set("/proc/slabinfo", std::string(text));
  src.set("/proc/7/maps", std::string(text));
  (void)vmlab::live::read_meminfo(src);
  (void)vmlab::live::read_status(src, 7);
  (void)vmlab::live::read_minflt(src, 7);
  (void)vmlab::live::read_slab_caches(src, {"vm_area_struct", "anon_vma"});
  (void)vmlab::live::read_vma_count(src, 7);
  return 0;
}
