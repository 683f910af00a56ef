// Readers for the kernel's reports that the live engine measures: /proc/meminfo,
// /proc/PID/status and /proc/PID/stat.
//
// Why a seam: the parsers are pure functions of text, and every read goes through a
// proc_source, so tests feed captured text from any kernel version without a live host,
// and the engine reads the real files. Figures come back in vmlab's units: bytes for
// sizes the kernel prints in kB, pages for RSS.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "vmlab/status.h"
#include "vmlab/units.h"

namespace vmlab::live {

// Where procfs text comes from.
class proc_source {
 public:
  virtual ~proc_source() = default;
  // The whole file at `path` (e.g. "/proc/meminfo"); io_error when it cannot be read.
  virtual result<std::string> read(const std::string& path) = 0;
};

// Reads the host's files.
class host_proc_source final : public proc_source {
 public:
  result<std::string> read(const std::string& path) override;
};

// Serves fixed text by path (tests).
class text_proc_source final : public proc_source {
 public:
  void set(const std::string& path, std::string text) { files_[path] = std::move(text); }
  result<std::string> read(const std::string& path) override;

 private:
  std::map<std::string, std::string> files_;
};

struct meminfo {
  bytes mem_total = 0;
  bytes mem_available = 0;
  bytes page_tables = 0;  // PageTables
  bool has_mem_available = false;  // 3.14+
  bool has_page_tables = false;
};

struct proc_status {
  bytes vmpte = 0;            // VmPTE, bytes
  uint64_t rss_anon = 0;      // RssAnon, pages
  uint64_t rss_file = 0;      // RssFile, pages
  uint64_t rss_shmem = 0;     // RssShmem, pages
};

// Parsers: io_error naming the file and what is missing or malformed.
result<meminfo> parse_meminfo(std::string_view text);
// VmPTE is required; the Rss* lines (4.5+) read as 0 when absent.
result<proc_status> parse_status(std::string_view text);
// Field 10 (minflt) of /proc/PID/stat. The comm field may hold spaces and parentheses,
// so fields are counted after the last ')'.
result<uint64_t> parse_stat_minflt(std::string_view text);

result<meminfo> read_meminfo(proc_source& src);
result<proc_status> read_status(proc_source& src, int host_pid);
result<uint64_t> read_minflt(proc_source& src, int host_pid);

}  // namespace vmlab::live
