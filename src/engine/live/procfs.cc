#include "engine/live/procfs.h"

#include <cerrno>
#include <cstring>
#include <optional>

#include <fcntl.h>
#include <unistd.h>

namespace vmlab::live {
namespace {

// The value of "Key:   1234 kB" lines, by key; nullopt when the key is absent.
// `malformed` is set when the key is present but its value is not a number.
std::optional<uint64_t> field(std::string_view text, std::string_view key, bool& malformed, bool& in_kb) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') continue;
    size_t i = key.size() + 1;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size() || line[i] < '0' || line[i] > '9') { malformed = true; return std::nullopt; }
    uint64_t v = 0;
    for (; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) {
      if (v > (UINT64_MAX - 9) / 10) { malformed = true; return std::nullopt; }
      v = v * 10 + uint64_t(line[i] - '0');
    }
    while (i < line.size() && line[i] == ' ') ++i;
    std::string_view unit = line.substr(i);
    while (!unit.empty() && (unit.back() == ' ' || unit.back() == '\r')) unit.remove_suffix(1);
    if (unit == "kB") in_kb = true;
    else if (unit.empty()) in_kb = false;
    else { malformed = true; return std::nullopt; }
    return v;
  }
  return std::nullopt;
}

// A kB-valued field as bytes.
result<std::optional<bytes>> kb_field(std::string_view text, std::string_view key, const char* file) {
  bool malformed = false, in_kb = false;
  auto v = field(text, key, malformed, in_kb);
  if (malformed || (v && !in_kb))
    return status::io_error(std::string("malformed ") + file + ": the " + std::string(key) + " line is not '<number> kB'");
  if (!v) return std::optional<bytes>{};
  if (*v > UINT64_MAX / 1024) return status::io_error(std::string("malformed ") + file + ": " + std::string(key) + " overflows");
  return std::optional<bytes>{*v * 1024};
}

}  // namespace

result<std::string> host_proc_source::read(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return status::io_error("cannot open " + path + ": " + std::strerror(errno));
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      return status::io_error("cannot read " + path + ": " + std::strerror(e));
    }
    if (n == 0) break;
    out.append(buf, size_t(n));
  }
  ::close(fd);
  return out;
}

result<std::string> text_proc_source::read(const std::string& path) {
  auto it = files_.find(path);
  if (it == files_.end()) return status::io_error("cannot open " + path + ": No such file or directory");
  return it->second;
}

result<meminfo> parse_meminfo(std::string_view text) {
  meminfo m;
  auto total = kb_field(text, "MemTotal", "/proc/meminfo");
  if (!total.ok()) return total.error();
  if (!total.value().has_value()) return status::io_error("malformed /proc/meminfo: no MemTotal line");
  m.mem_total = *total.value();
  auto avail = kb_field(text, "MemAvailable", "/proc/meminfo");
  if (!avail.ok()) return avail.error();
  if (avail.value().has_value()) { m.mem_available = *avail.value(); m.has_mem_available = true; }
  auto pt = kb_field(text, "PageTables", "/proc/meminfo");
  if (!pt.ok()) return pt.error();
  if (pt.value().has_value()) { m.page_tables = *pt.value(); m.has_page_tables = true; }
  return m;
}

result<proc_status> parse_status(std::string_view text) {
  proc_status p;
  auto pte = kb_field(text, "VmPTE", "/proc/PID/status");
  if (!pte.ok()) return pte.error();
  if (!pte.value().has_value())
    return status::io_error("malformed /proc/PID/status: no VmPTE line (a kernel thread, or a kernel before 2.6.10)");
  p.vmpte = *pte.value();
  struct { const char* key; uint64_t* out; } rss[] = {{"RssAnon", &p.rss_anon}, {"RssFile", &p.rss_file}, {"RssShmem", &p.rss_shmem}};
  for (auto& r : rss) {
    auto v = kb_field(text, r.key, "/proc/PID/status");
    if (!v.ok()) return v.error();
    if (v.value().has_value()) *r.out = *v.value() / 4096;
  }
  return p;
}

result<uint64_t> parse_stat_minflt(std::string_view text) {
  // "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt ..." : after the last
  // ')' come field 3 (state) onwards, so minflt (field 10) is the 8th token there.
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) return status::io_error("malformed /proc/PID/stat: no ')' after the command name");
  size_t i = close + 1;
  for (int token = 3;; ++token) {
    while (i < text.size() && text[i] == ' ') ++i;
    if (i >= text.size() || text[i] == '\n') return status::io_error("malformed /proc/PID/stat: fewer than 10 fields");
    size_t end = i;
    while (end < text.size() && text[end] != ' ' && text[end] != '\n') ++end;
    if (token == 10) {
      uint64_t v = 0;
      for (size_t j = i; j < end; ++j) {
        if (text[j] < '0' || text[j] > '9') return status::io_error("malformed /proc/PID/stat: minflt is not a number");
        if (v > (UINT64_MAX - 9) / 10) return status::io_error("malformed /proc/PID/stat: minflt overflows");
        v = v * 10 + uint64_t(text[j] - '0');
      }
      return v;
    }
    i = end;
  }
}

result<meminfo> read_meminfo(proc_source& src) {
  auto t = src.read("/proc/meminfo");
  if (!t.ok()) return t.error();
  return parse_meminfo(t.value());
}

result<proc_status> read_status(proc_source& src, int host_pid) {
  const std::string path = "/proc/" + std::to_string(host_pid) + "/status";
  auto t = src.read(path);
  if (!t.ok()) return t.error();
  auto r = parse_status(t.value());
  if (!r.ok()) return status::io_error(r.error().message() + " (" + path + ")");
  return r;
}

result<uint64_t> read_minflt(proc_source& src, int host_pid) {
  const std::string path = "/proc/" + std::to_string(host_pid) + "/stat";
  auto t = src.read(path);
  if (!t.ok()) return t.error();
  auto r = parse_stat_minflt(t.value());
  if (!r.ok()) return status::io_error(r.error().message() + " (" + path + ")");
  return r;
}

}  // namespace vmlab::live
