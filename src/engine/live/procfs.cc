#include "engine/live/procfs.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

namespace vmlab::live {
namespace {

// The value of "Key:   1234 kB" lines, by key; nullopt when the key is absent.
// `malformed` is set when the key is present but its value is not a number.
std::optional<uint64_t> field(std::string_view text, std::string_view key, bool& malformed, bool& in_kb) {
  line_reader lines(text);
  for (std::string_view line; lines.next(line);) {
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

// Splits a line at blanks (spaces and tabs); a trailing '\r' is a blank too.
std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (i < line.size()) {
    while (i < line.size() && blank(line[i])) ++i;
    size_t j = i;
    while (j < line.size() && !blank(line[j])) ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

// A decimal number that fits `max`; nullopt for anything else (signs, blanks, overflow).
std::optional<uint64_t> number(std::string_view t, uint64_t max = UINT64_MAX) {
  if (t.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = uint64_t(c - '0');
    if (v > (max - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

// The leading number of a /sys/kernel/slab file ("1165 N0=1165\n", "21\n").
std::optional<uint64_t> sys_number(std::string_view text, uint64_t max = UINT64_MAX) {
  const size_t eol = text.find('\n');
  auto t = tokens(text.substr(0, eol));
  if (t.empty()) return std::nullopt;
  for (size_t i = 1; i < t.size(); ++i)  // per-node figures: "N0=1165"
    if (t[i].size() < 3 || t[i][0] != 'N' || t[i].find('=') == std::string_view::npos) return std::nullopt;
  return number(t[0], max);
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

result<std::vector<std::string>> host_proc_source::list(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return status::io_error("cannot list " + dir + ": " + std::strerror(errno));
  std::vector<std::string> out;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  return out;
}

result<std::string> text_proc_source::read(const std::string& path) {
  auto it = files_.find(path);
  if (it == files_.end()) return status::io_error("cannot open " + path + ": No such file or directory");
  return it->second;
}

result<std::vector<std::string>> text_proc_source::list(const std::string& dir) {
  const std::string prefix = dir + "/";
  std::set<std::string> names;
  for (auto it = files_.lower_bound(prefix); it != files_.end() && it->first.rfind(prefix, 0) == 0; ++it)
    names.insert(it->first.substr(prefix.size(), it->first.find('/', prefix.size()) - prefix.size()));
  if (names.empty()) return status::io_error("cannot list " + dir + ": No such file or directory");
  return std::vector<std::string>(names.begin(), names.end());
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
    if (v.value().has_value()) *r.out = *v.value();
  }
  auto vmrss = kb_field(text, "VmRSS", "/proc/PID/status");
  if (!vmrss.ok()) return vmrss.error();
  if (vmrss.value().has_value()) p.vmrss = *vmrss.value();
  auto huge = kb_field(text, "HugetlbPages", "/proc/PID/status");  // 4.4+
  if (!huge.ok()) return huge.error();
  if (huge.value().has_value()) p.hugetlb = *huge.value();
  return p;
}

result<std::string_view> parse_stat_field(std::string_view text, int field) {
  // "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt ..." : after the last
  // ')' come field 3 (state) onwards.
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) return status::io_error("malformed /proc/PID/stat: no ')' after the command name");
  size_t i = close + 1;
  for (int token = 3;; ++token) {
    while (i < text.size() && text[i] == ' ') ++i;
    if (i >= text.size() || text[i] == '\n')
      return status::io_error("malformed /proc/PID/stat: fewer than " + std::to_string(field) + " fields");
    size_t end = i;
    while (end < text.size() && text[end] != ' ' && text[end] != '\n') ++end;
    if (token == field) return text.substr(i, end - i);
    i = end;
  }
}

result<uint64_t> parse_stat_minflt(std::string_view text) {
  auto f = parse_stat_field(text, 10);
  if (!f.ok()) return f.error();
  uint64_t v = 0;
  for (char c : f.value()) {
    if (c < '0' || c > '9') return status::io_error("malformed /proc/PID/stat: minflt is not a number");
    if (v > (UINT64_MAX - 9) / 10) return status::io_error("malformed /proc/PID/stat: minflt overflows");
    v = v * 10 + uint64_t(c - '0');
  }
  return v;
}

result<std::vector<slab_row>> parse_slabinfo(std::string_view text) {
  std::vector<slab_row> rows;
  line_reader lines(text);
  bool statistics = false;
  auto bad = [&](const std::string& why) {
    return status::io_error("malformed /proc/slabinfo line " + std::to_string(lines.number()) + ": " + why);
  };
  for (std::string_view line; lines.next(line);) {
    if (lines.number() == 1) {
      constexpr std::string_view kHead = "slabinfo - version: ";
      if (line.substr(0, kHead.size()) != kHead) return bad("expected 'slabinfo - version: 2.x'");
      auto t = tokens(line.substr(kHead.size()));
      if (t.empty() || (t[0] != "2.0" && t[0] != "2.1"))
        return status::io_error("unsupported /proc/slabinfo version '" + std::string(t.empty() ? "" : t[0]) +
                                "' (2.0 and 2.1 are read)");
      if (t.size() == 2 && t[1] == "(statistics)") statistics = true;
      else if (t.size() != 1) return bad("unexpected text after the version");
      continue;
    }
    if (!line.empty() && line[0] == '#') continue;  // the column header
    auto t = tokens(line);
    if (t.empty()) continue;
    if (t.size() < 16 || (t.size() > 16 && !statistics) || (t.size() > 16 && t[16] != ":"))
      return bad("expected 16 columns 'name active_objs num_objs objsize objperslab pagesperslab : tunables l b s "
                 ": slabdata active_slabs num_slabs sharedavail', found " + std::to_string(t.size()));
    if (t[6] != ":" || t[7] != "tunables" || t[11] != ":" || t[12] != "slabdata")
      return bad("expected ': tunables' and ': slabdata' separators in row '" + std::string(t[0]) + "'");
    slab_row r;
    r.name = std::string(t[0]);
    struct field { size_t col; uint64_t* out64; uint32_t* out32; };
    const field fields[] = {{1, &r.active_objs, nullptr}, {2, &r.num_objs, nullptr},  {3, nullptr, &r.objsize},
                            {4, nullptr, &r.objperslab},  {5, nullptr, &r.pagesperslab}, {8, nullptr, &r.limit},
                            {9, nullptr, &r.batchcount},  {10, nullptr, &r.sharedfactor}, {13, &r.active_slabs, nullptr},
                            {14, &r.num_slabs, nullptr},  {15, nullptr, nullptr}};
    for (const field& f : fields) {
      auto v = number(t[f.col], f.out64 || !f.out32 ? UINT64_MAX : UINT32_MAX);
      if (!v) return bad("column " + std::to_string(f.col + 1) + " of row '" + r.name + "' is not a number: '" +
                         std::string(t[f.col]) + "'");
      if (f.out64) *f.out64 = *v;
      if (f.out32) *f.out32 = static_cast<uint32_t>(*v);
    }
    if (r.active_objs > r.num_objs) return bad("row '" + r.name + "' has more active objects than objects");
    rows.push_back(std::move(r));
  }
  if (lines.number() == 0) return status::io_error("malformed /proc/slabinfo: empty");
  return rows;
}

result<slab_row> parse_sys_slab(const std::string& name, const sys_slab_files& f) {
  const std::string where = "/sys/kernel/slab/" + name + "/";
  slab_row r;
  r.name = name;
  struct field { const char* file; std::string_view text; uint64_t* out64; uint32_t* out32; };
  uint64_t order = 0;
  const field fields[] = {{"objects", f.objects, &r.active_objs, nullptr},
                          {"total_objects", f.total_objects, &r.num_objs, nullptr},
                          {"slabs", f.slabs, &r.num_slabs, nullptr},
                          {"objs_per_slab", f.objs_per_slab, nullptr, &r.objperslab},
                          {"order", f.order, &order, nullptr},
                          {"slab_size", f.slab_size, nullptr, &r.objsize}};
  for (const field& x : fields) {
    auto v = sys_number(x.text, x.out32 ? UINT32_MAX : UINT64_MAX);
    if (!v) return status::io_error("malformed " + where + x.file + ": '" + std::string(x.text.substr(0, 40)) + "'");
    if (x.out64) *x.out64 = *v;
    if (x.out32) *x.out32 = static_cast<uint32_t>(*v);
  }
  if (order > 20) return status::io_error("malformed " + where + "order: " + std::to_string(order));
  r.pagesperslab = 1u << order;
  r.active_slabs = r.num_slabs;  // SLUB: every slab counts as active (get_slabinfo())
  if (r.active_objs > r.num_objs) return status::io_error("malformed " + where + ": more objects than total_objects");
  return r;
}

result<uint64_t> parse_maps_vma_count(std::string_view text) {
  uint64_t n = 0;
  line_reader lines(text);
  for (std::string_view line; lines.next(line);) {
    if (line.empty()) continue;
    // "start-end perms offset dev inode [path]"
    const size_t dash = line.find('-');
    const size_t sp = line.find(' ');
    if (dash == std::string_view::npos || sp == std::string_view::npos || dash > sp || dash == 0)
      return status::io_error("malformed /proc/PID/maps line: '" + std::string(line.substr(0, 80)) + "'");
    if (line.ends_with("[vsyscall]")) continue;
    ++n;
  }
  return n;
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

result<uint64_t> read_count(proc_source& src, const std::string& path) {
  auto t = src.read(path);
  if (!t.ok()) return t.error();
  try {
    return uint64_t(std::stoull(t.value()));
  } catch (const std::exception&) {
    return status::io_error("malformed " + path + ": '" + t.value() + "'");
  }
}

result<uint64_t> read_minflt(proc_source& src, int host_pid) {
  const std::string path = "/proc/" + std::to_string(host_pid) + "/stat";
  auto t = src.read(path);
  if (!t.ok()) return t.error();
  auto r = parse_stat_minflt(t.value());
  if (!r.ok()) return status::io_error(r.error().message() + " (" + path + ")");
  return r;
}

result<std::vector<slab_row>> read_slab_caches(proc_source& src, const std::vector<std::string>& caches) {
  std::vector<slab_row> all;
  auto t = src.read("/proc/slabinfo");
  status slabinfo_error;
  if (t.ok()) {
    auto r = parse_slabinfo(t.value());
    if (!r.ok()) return r.error();  // readable but wrong: say so rather than guess
    all = std::move(r.value());
  } else {
    slabinfo_error = t.error();
  }
  std::vector<slab_row> out;
  for (const std::string& c : caches) {
    auto it = std::find_if(all.begin(), all.end(), [&](const slab_row& r) { return r.name == c; });
    if (it != all.end()) {
      out.push_back(*it);
      continue;
    }
    const std::string dir = "/sys/kernel/slab/" + c + "/";
    std::string text[6];
    const char* files[6] = {"objects", "total_objects", "slabs", "objs_per_slab", "order", "slab_size"};
    for (int i = 0; i < 6; ++i) {
      auto f = src.read(dir + files[i]);
      if (!f.ok())
        return status::io_error("no slab cache '" + c + "': " +
                                (slabinfo_error.ok() ? std::string("no row in /proc/slabinfo") : slabinfo_error.message()) +
                                ", and " + f.error().message());
      text[i] = std::move(f.value());
    }
    auto r = parse_sys_slab(c, {text[0], text[1], text[2], text[3], text[4], text[5]});
    if (!r.ok()) return r.error();
    out.push_back(std::move(r.value()));
  }
  return out;
}

result<uint64_t> read_vma_count(proc_source& src, int host_pid) {
  const std::string path = host_pid ? "/proc/" + std::to_string(host_pid) + "/maps" : std::string("/proc/self/maps");
  auto t = src.read(path);
  if (!t.ok()) return t.error();
  auto r = parse_maps_vma_count(t.value());
  if (!r.ok()) return status::io_error(r.error().message() + " (" + path + ")");
  return r;
}

}  // namespace vmlab::live
