// Readers for the kernel's reports that the live engine measures: /proc/meminfo,
// /proc/PID/status, /proc/PID/stat, /proc/PID/maps (VMA counts) and /proc/slabinfo (with
// /sys/kernel/slab/<cache>/ as the fallback).
//
// Why a seam: the parsers are pure functions of text, and every read goes through a
// proc_source, so tests feed captured text from any kernel version without a live host,
// and the engine reads the real files. Figures come back in vmlab's units: bytes for
// sizes the kernel prints in kB (the caller divides by its page size for pages).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "vmlab/run_result.h"
#include "vmlab/status.h"
#include "vmlab/units.h"

namespace vmlab::live {

// Where procfs text comes from.
class proc_source {
 public:
  virtual ~proc_source() = default;
  // The whole file at `path` (e.g. "/proc/meminfo"); io_error when it cannot be read.
  virtual result<std::string> read(const std::string& path) = 0;
  // The entries of directory `dir` (e.g. "/proc"), without "." and ".."; io_error when it
  // cannot be listed.
  virtual result<std::vector<std::string>> list(const std::string& dir) = 0;
};

// Reads the host's files.
class host_proc_source final : public proc_source {
 public:
  result<std::string> read(const std::string& path) override;
  result<std::vector<std::string>> list(const std::string& dir) override;
};

// Serves fixed text by path (tests); a directory lists the files set below it.
class text_proc_source final : public proc_source {
 public:
  void set(const std::string& path, std::string text) { files_[path] = std::move(text); }
  void erase(const std::string& path) { files_.erase(path); }
  result<std::string> read(const std::string& path) override;
  result<std::vector<std::string>> list(const std::string& dir) override;

 private:
  std::map<std::string, std::string> files_;
};

// The lines of a report, one at a time, without their '\n' (the last may lack one), and
// the number of the line last returned (1-based), for messages.
class line_reader {
 public:
  explicit line_reader(std::string_view text) : text_(text) {}
  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    size_t eol = text_.find('\n', pos_);
    if (eol == std::string_view::npos) eol = text_.size();
    line = text_.substr(pos_, eol - pos_);
    pos_ = eol + 1;
    ++number_;
    return true;
  }
  [[nodiscard]] uint32_t number() const { return number_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  uint32_t number_ = 0;
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
  bytes vmrss = 0;            // VmRSS, bytes (0 when absent)
  bytes rss_anon = 0;         // RssAnon, bytes
  bytes rss_file = 0;         // RssFile, bytes
  bytes rss_shmem = 0;        // RssShmem, bytes
  bytes hugetlb = 0;          // HugetlbPages, bytes (4.4+; 0 when absent)
};

// Parsers: io_error naming the file and what is missing or malformed.
result<meminfo> parse_meminfo(std::string_view text);
// VmPTE is required; the Rss* lines (4.5+) read as 0 when absent.
result<proc_status> parse_status(std::string_view text);
// Field `field` (numbered as in proc(5): 1 pid, 2 comm, 3 state, 4 ppid, ...; 3 or more)
// of /proc/PID/stat. The comm field may hold spaces and parentheses, so fields are
// counted after the last ')'.
result<std::string_view> parse_stat_field(std::string_view text, int field);
// Field 10 (minflt) of /proc/PID/stat.
result<uint64_t> parse_stat_minflt(std::string_view text);

// /proc/slabinfo, versions 2.0 and 2.1 (SLAB and SLUB, 2.6.0 onwards; a "(statistics)"
// header allows the extra columns of CONFIG_DEBUG_SLAB). Every row must be exactly
//   name active_objs num_objs objsize objperslab pagesperslab : tunables limit batchcount
//   sharedfactor : slabdata active_slabs num_slabs sharedavail
// (2.0 names the tunables in another order; the columns are the same). Rows come back in
// file order; io_error names the line of anything else.
result<std::vector<slab_row>> parse_slabinfo(std::string_view text);

// One cache from the files of /sys/kernel/slab/<name>/ (SLUB), as /proc/slabinfo would
// print it: `objects` ("1165 N0=1165": in-use objects, counting those free in per-CPU slabs,
// as slabinfo's active_objs does), `total_objects`, `slabs`, `objs_per_slab`, `order`
// (pagesperslab = 2^order) and `slab_size` (slabinfo's objsize). A merged cache's
// directory is a link to the shared cache, whose figures it reports.
struct sys_slab_files {
  std::string_view objects, total_objects, slabs, objs_per_slab, order, slab_size;
};
result<slab_row> parse_sys_slab(const std::string& name, const sys_slab_files& f);

// Number of VMAs in a /proc/PID/maps text: its lines, without the [vsyscall] line (the
// x86-64 gate area is listed but is no vm_area_struct).
result<uint64_t> parse_maps_vma_count(std::string_view text);

result<meminfo> read_meminfo(proc_source& src);
result<proc_status> read_status(proc_source& src, int host_pid);
result<uint64_t> read_minflt(proc_source& src, int host_pid);
// A file that holds one unsigned number (a sysfs or /proc/sys setting).
result<uint64_t> read_count(proc_source& src, const std::string& path);
// The rows of `caches`, in that order: from /proc/slabinfo, and for a cache without a row
// there (or for every cache when /proc/slabinfo cannot be read) from /sys/kernel/slab/.
// io_error when a cache is in neither.
result<std::vector<slab_row>> read_slab_caches(proc_source& src, const std::vector<std::string>& caches);
// VMAs of a process (/proc/PID/maps; host_pid 0 = "self").
result<uint64_t> read_vma_count(proc_source& src, int host_pid);

}  // namespace vmlab::live
