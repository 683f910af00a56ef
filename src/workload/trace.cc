// The trace format: one op a line (docs/trace-format.md).
//
// The parser checks the op-stream invariants (op.h) as it reads: pids exist before use
// and are not used after exit, a mapping exists in the acting process (inheritance at
// fork included), objects are declared before use, ranges are page multiples inside the
// mapping as created. Errors point at the offending token.
#include "workload/trace.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "model/profile.h"
#include "vmlab/sim_kernel.h"
#include "workload/op_rules.h"
#include "workload/size.h"

namespace vmlab {
namespace {

constexpr bytes kPage = 4096;

struct token {
  std::string_view text;
  uint32_t column = 0;  // 1-based
  // For key=value tokens.
  [[nodiscard]] bool has_value() const { return text.find('=') != std::string_view::npos; }
  [[nodiscard]] std::string_view key() const { return text.substr(0, text.find('=')); }
  [[nodiscard]] std::string_view value() const {
    const size_t eq = text.find('=');
    return eq == std::string_view::npos ? std::string_view{} : text.substr(eq + 1);
  }
  [[nodiscard]] uint32_t value_column() const { return column + uint32_t(key().size()) + 1; }
};

// Names looked up by string_view without making a std::string (C++20 heterogeneous lookup).
struct name_hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class V>
using name_map = std::unordered_map<std::string, V, name_hash, std::equal_to<>>;

// A line's options by name (key=value tokens and flags): each allowed name at most once,
// so a few, kept in a flat array and searched in order. A std::map made a node per option
// and compared names at every level: a third of reading a 1,000,000-line trace.
class option_map {
 public:
  using entry = std::pair<std::string_view, const token*>;
  static constexpr size_t kMax = 32;  // more than any line's allowed names (options() checks)
  [[nodiscard]] const entry* find(std::string_view k) const {
    for (size_t i = 0; i < n_; ++i)
      if (items_[i].first == k) return &items_[i];
    return end();
  }
  [[nodiscard]] const entry* end() const { return items_.data() + n_; }
  [[nodiscard]] size_t count(std::string_view k) const { return find(k) != end() ? 1 : 0; }
  // The token named k (REQUIRES: count(k)).
  const token* operator[](std::string_view k) const { return find(k)->second; }
  void add(std::string_view k, const token* t) { items_[n_++] = {k, t}; }

 private:
  std::array<entry, kMax> items_{};
  size_t n_ = 0;
};

std::string prot_name(uint8_t p) {
  switch (p) {
    case prot_none: return "none";
    case prot_read: return "r";
    case prot_write: return "w";
    default: return "rw";
  }
}

bool parse_prot(std::string_view s, uint8_t& out) {
  if (s == "none") out = prot_none;
  else if (s == "r") out = prot_read;
  else if (s == "w") out = prot_write;
  else if (s == "rw") out = prot_read | prot_write;
  else return false;
  return true;
}

template <typename T>
bool parse_uint(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

struct proc_state {
  bool alive = true;
  std::map<uint32_t, bytes> maps;  // map index -> size as created
};

class trace_parser {
 public:
  trace_parser(std::string_view text, const std::string& name) : text_(text) {
    out_.source = name;
    file_ = name;
  }

  result<op_stream> run() {
    result<kernel_profile> p = find_profile(out_.machine.profile);
    if (!p.ok()) return p.error();
    prof_ = *p;
    size_t pos = 0;
    while (pos <= text_.size()) {
      const size_t nl = text_.find('\n', pos);
      std::string_view line = text_.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      ++lineno_;
      line_ = line;
      if (status s = parse_line(); !s.ok()) return s;
      if (nl == std::string_view::npos) break;
      pos = nl + 1;
    }
    // The machine's memory against what boot reserves on its kernel, now that every
    // override is read (the rule sim_kernel::create applies): at the memory value.
    if (memory_at_)
      if (status st = sim_kernel::check_machine(out_.machine); !st.ok())
        return status::invalid_argument(st.message()).at(*memory_at_);
    return std::move(out_);
  }

 private:
  // Column `column` of the line being read.
  source_location here(uint32_t column) const { return {file_, lineno_, column, std::string(line_)}; }
  status err(uint32_t column, std::string msg) const { return status::invalid_argument(std::move(msg)).at(here(column)); }
  status err(const token& t, std::string msg) const { return err(t.column, std::move(msg)); }
  status err_value(const token& t, std::string msg) const { return err(t.value_column(), std::move(msg)); }

  void tokenize() {
    toks_.clear();
    std::string_view line = line_;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i >= line.size()) break;
      const size_t start = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
      toks_.push_back({line.substr(start, i - start), uint32_t(start + 1)});
    }
  }

  status parse_line() {
    tokenize();
    if (toks_.empty()) return {};
    const std::string_view op = toks_[0].text;
    if (op == "machine") return parse_machine();
    if (op == "override") return parse_override();
    if (op == "object") return parse_object();
    if (op == "spawn") return parse_spawn();
    if (op == "fork") return parse_fork();
    if (op == "exit") return parse_exit();
    if (op == "mmap") return parse_mmap();
    if (op == "munmap" || op == "mprotect" || op == "madvise" || op == "touch" || op == "msync") return parse_range_op();
    if (op == "read" || op == "readv" || op == "write") return parse_io();
    if (op == "fsync") return parse_fsync();
    if (op == "mremap") return parse_mremap();
    if (op == "remap_file_pages") return parse_range_op();
    if (op == "reclaim") return parse_reclaim();
    if (op == "phase") return parse_phase();
    return err(toks_[0], "unknown op '" + std::string(op) +
                             "' (expected machine, override, object, spawn, fork, exit, mmap, munmap, mprotect, "
                             "madvise, touch, read, readv, write, fsync, msync, mremap, remap_file_pages, reclaim or phase)");
  }

  // Positional arguments: toks_[1..n]; returns an error naming what is missing.
  status need_args(size_t n, const char* what) const {
    if (toks_.size() < n + 1) return err(uint32_t(line_.size() + 1), std::string(toks_[0].text) + " needs " + what);
    for (size_t i = 1; i <= n; ++i)
      if (toks_[i].has_value())
        return err(toks_[i], std::string(toks_[0].text) + " needs " + what + " before any key=value");
    return {};
  }

  // key=value and bare-flag options after the positional arguments. Each option may
  // appear once.
  status options(size_t first, std::initializer_list<std::string_view> keys, std::initializer_list<std::string_view> flags,
                 option_map& out) const {
    if (keys.size() + flags.size() > option_map::kMax) std::abort();  // a parser's own lists: a bug here
    for (size_t i = first; i < toks_.size(); ++i) {
      const token& t = toks_[i];
      const std::string_view k = t.has_value() ? t.key() : t.text;
      const auto& allowed = t.has_value() ? keys : flags;
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
        const bool other = std::find(t.has_value() ? flags.begin() : keys.begin(), t.has_value() ? flags.end() : keys.end(),
                                     k) != (t.has_value() ? flags.end() : keys.end());
        if (other)
          return err(t, t.has_value() ? "'" + std::string(k) + "' is a flag and takes no value"
                                      : "'" + std::string(k) + "' needs a value (" + std::string(k) + "=...)");
        return err(t, "unknown key '" + std::string(k) + "' for " + std::string(toks_[0].text));
      }
      if (out.count(k)) return err(t, "duplicate key '" + std::string(k) + "'");
      out.add(k, &t);
    }
    return {};
  }

  status size_value(const token& t, bytes& out) const {
    result<bytes> r = parse_size(t.value());
    if (!r.ok()) return err_value(t, r.error().message());
    out = *r;
    return {};
  }
  status page_value(const token& t, bytes& out) const {
    if (status s = size_value(t, out); !s.ok()) return s;
    if (out % kPage) return err_value(t, std::string(t.key()) + "=" + std::to_string(out) + " is not a multiple of 4096");
    return {};
  }
  status u64_value(const token& t, uint64_t& out) const {
    if (!parse_uint(t.value(), out))
      return err_value(t, std::string(t.key()) + " must be a non-negative integer, not '" + std::string(t.value()) + "'");
    return {};
  }

  status pid_arg(const token& t, uint32_t& pid) const {
    if (!parse_uint(t.text, pid) || pid == 0) return err(t, "'" + std::string(t.text) + "' is not a pid (an integer >= 1)");
    return {};
  }
  // The pid must be live.
  status live_pid(const token& t, uint32_t& pid) const {
    if (status s = pid_arg(t, pid); !s.ok()) return s;
    auto it = procs_.find(pid);
    if (it == procs_.end()) return err(t, "pid " + std::to_string(pid) + " is used before spawn or fork");
    if (!it->second.alive) return err(t, "pid " + std::to_string(pid) + " has exited");
    return {};
  }
  // The pid must be new.
  status new_pid(const token& t, uint32_t& pid) const {
    if (status s = pid_arg(t, pid); !s.ok()) return s;
    auto it = procs_.find(pid);
    if (it != procs_.end())
      return err(t, it->second.alive ? "pid " + std::to_string(pid) + " already exists"
                                     : "pid " + std::to_string(pid) + " has exited and pids are not reused");
    return {};
  }

  uint32_t map_index(std::string_view name) {
    // Hash maps for every name lookup: reading is linear in the trace (1,000,000 lines).
    if (auto it = map_ids_.find(name); it != map_ids_.end()) return it->second;
    const auto id = uint32_t(out_.map_names.size());
    map_ids_.emplace(std::string(name), id);
    out_.map_names.emplace_back(name);
    return id;
  }

  status before_ops(const char* what) const {
    if (!out_.ops.empty()) return err(toks_[0], std::string("'") + what + "' lines must come before the first op");
    return {};
  }

  status parse_machine() {
    if (status s = before_ops("machine"); !s.ok()) return s;
    if (seen_machine_) return err(toks_[0], "duplicate 'machine' line");
    if (!out_.machine.overrides.empty()) return err(toks_[0], "'machine' must come before 'override' lines");
    seen_machine_ = true;
    option_map o;
    if (status s = options(1, {"profile", "memory", "cpus", "cache_line", "hugepages", "overcommit_hugepages", "fragmentation"},
                           {}, o);
        !s.ok())
      return s;
    if (auto it = o.find("profile"); it != o.end()) {
      out_.machine.profile = std::string(it->second->value());
      result<kernel_profile> p = find_profile(out_.machine.profile);
      if (!p.ok()) return err_value(*it->second, p.error().message());
      prof_ = *p;
    }
    if (auto it = o.find("memory"); it != o.end()) {
      if (status s = size_value(*it->second, out_.machine.memory); !s.ok()) return s;
      memory_at_ = here(it->second->value_column());
    }
    for (const char* k : {"cpus", "cache_line"}) {
      auto it = o.find(k);
      if (it == o.end()) continue;
      uint32_t v = 0;
      if (!parse_uint(it->second->value(), v) || v == 0)
        return err_value(*it->second, std::string(k) + " must be a positive integer, not '" + std::string(it->second->value()) + "'");
      if (auto e = check_machine_count(k, v)) return err_value(*it->second, e->message);
      (std::string_view(k) == "cpus" ? out_.machine.cpus : out_.machine.cache_line) = v;
    }
    for (const char* k : {"hugepages", "overcommit_hugepages"}) {
      auto it = o.find(k);
      if (it == o.end()) continue;
      auto& pools = std::string_view(k) == "hugepages" ? out_.machine.hugepages : out_.machine.overcommit_hugepages;
      if (status s = pool_list(*it->second, pools); !s.ok()) return s;
      for (const auto& [size, n] : pools)
        if (auto e = check_pool(prof_, size, k)) return err_value(*it->second, e->message);
    }
    if (auto it = o.find("fragmentation"); it != o.end()) {
      const std::string v(it->second->value());
      char* end = nullptr;
      const double f = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(f >= 0 && f <= 1))
        return err_value(*it->second, "fragmentation must be a number between 0 and 1, not '" + v + "'");
      out_.machine.fragmentation = f;
    }
    return {};
  }

  // "2MiB:512,1GiB:2": a count of huge pages per size. Checked against the profile once
  // the overrides are read (check_pools).
  status pool_list(const token& t, std::vector<std::pair<bytes, uint64_t>>& out) const {
    const std::string_view v = t.value();
    size_t pos = 0;
    while (pos <= v.size()) {
      const size_t comma = std::min(v.find(',', pos), v.size());
      const std::string_view item = v.substr(pos, comma - pos);
      const size_t colon = item.find(':');
      uint64_t n = 0;
      result<bytes> size = colon == std::string_view::npos ? result<bytes>(status::invalid_argument("")) : parse_size(item.substr(0, colon));
      if (!size.ok() || !parse_uint(item.substr(colon + 1), n))
        return err_value(t, std::string(t.key()) + " must be SIZE:COUNT[,SIZE:COUNT...], e.g. 2MiB:512, not '" + std::string(v) + "'");
      out.emplace_back(*size, n);
      pos = comma + 1;
    }
    return {};
  }

  status parse_override() {
    if (status s = before_ops("override"); !s.ok()) return s;
    if (toks_.size() < 2) return err(uint32_t(line_.size() + 1), "override needs key=value");
    for (size_t i = 1; i < toks_.size(); ++i) {
      const token& t = toks_[i];
      if (!t.has_value() || t.key().empty()) return err(t, "override needs key=value, not '" + std::string(t.text) + "'");
      const std::string key(t.key()), value(t.value());
      if (status s = apply_override(prof_, key, value); !s.ok()) return err(t, s.message());
      out_.machine.overrides.emplace_back(key, value);
    }
    return {};
  }

  status parse_object() {
    if (status s = need_args(2, "a name and a kind (shm, file or hugetlb)"); !s.ok()) return s;
    object_decl d;
    d.name = std::string(toks_[1].text);
    if (d.name == "anon") return err(toks_[1], "'anon' is reserved for anonymous mappings");
    if (object_ids_.count(d.name)) return err(toks_[1], "duplicate object '" + d.name + "'");
    if (toks_[2].text == "shm") d.kind = object_kind::shm;
    else if (toks_[2].text == "file") d.kind = object_kind::file;
    else if (toks_[2].text == "hugetlb") d.kind = object_kind::hugetlb;
    else return err(toks_[2], "object kind must be shm, file or hugetlb, not '" + std::string(toks_[2].text) + "'");
    option_map o;
    if (status s = options(3, {"size", "page_size"}, {"mshare"}, o); !s.ok()) return s;
    d.mshare = o.count("mshare") > 0;
    if (!o.count("size")) return err(uint32_t(line_.size() + 1), "object needs size=");
    if (status s = size_value(*o["size"], d.size); !s.ok()) return s;
    if (d.size == 0) return err_value(*o["size"], "object '" + d.name + "' has size 0");
    if (o.count("page_size"))
      if (status s = size_value(*o["page_size"], d.page_size); !s.ok()) return s;
    if (auto e = check_object(prof_, d)) return o.count(e->field) ? err_value(*o[e->field], e->message) : err(toks_[2], e->message);
    object_ids_.emplace(d.name, int32_t(out_.objects.size()));
    out_.objects.push_back(std::move(d));
    return {};
  }

  status parse_spawn() {
    if (status s = need_args(1, "a pid"); !s.ok()) return s;
    if (toks_.size() > 2) return err(toks_[2], "unexpected '" + std::string(toks_[2].text) + "' after spawn PID");
    op o;
    o.kind = op_kind::spawn;
    if (status s = new_pid(toks_[1], o.pid); !s.ok()) return s;
    procs_[o.pid] = proc_state{};
    out_.ops.push_back(std::move(o));
    return {};
  }

  status parse_fork() {
    if (status s = need_args(2, "a parent pid and a child pid"); !s.ok()) return s;
    if (toks_.size() > 3) return err(toks_[3], "unexpected '" + std::string(toks_[3].text) + "' after fork PARENT CHILD");
    op o;
    o.kind = op_kind::fork;
    if (status s = live_pid(toks_[1], o.pid); !s.ok()) return s;
    if (status s = new_pid(toks_[2], o.child); !s.ok()) return s;
    proc_state child;
    child.maps = procs_[o.pid].maps;
    procs_[o.child] = std::move(child);
    out_.ops.push_back(std::move(o));
    return {};
  }

  status parse_exit() {
    if (status s = need_args(1, "a pid"); !s.ok()) return s;
    if (toks_.size() > 2) return err(toks_[2], "unexpected '" + std::string(toks_[2].text) + "' after exit PID");
    op o;
    o.kind = op_kind::exit;
    if (status s = live_pid(toks_[1], o.pid); !s.ok()) return s;
    procs_[o.pid].alive = false;
    out_.ops.push_back(std::move(o));
    return {};
  }

  status parse_mmap() {
    if (status s = need_args(2, "a pid and a mapping name"); !s.ok()) return s;
    op o;
    o.kind = op_kind::mmap;
    if (status s = live_pid(toks_[1], o.pid); !s.ok()) return s;
    option_map opt;
    if (status s = options(3, {"obj", "off", "len", "prot", "addr", "align", "phase", "page_size", "advice"},
                           {"shared", "private", "locked", "hugetlb", "noreserve"}, opt);
        !s.ok())
      return s;
    o.hugetlb = opt.count("hugetlb") > 0;
    o.noreserve = opt.count("noreserve") > 0;
    if (opt.count("page_size"))
      if (status s = size_value(*opt["page_size"], o.page_size); !s.ok()) return s;
    if (opt.count("advice")) {
      const std::string_view a = opt["advice"]->value();
      o.has_hint = true;
      if (a == "hugepage") o.hint = advice::hugepage;
      else if (a == "nohugepage") o.hint = advice::nohugepage;
      else return err_value(*opt["advice"], "advice must be hugepage or nohugepage, not '" + std::string(a) + "'");
    }
    if (opt.count("shared") && opt.count("private")) return err(*opt["private"], "a mapping is either shared or private");
    o.shared = opt.count("shared") > 0;
    o.locked = opt.count("locked") > 0;
    bytes limit = 0;  // the object's size rounded up to pages; 0 for anon
    if (opt.count("obj") && opt["obj"]->value() != "anon") {
      const token& t = *opt["obj"];
      auto id = object_ids_.find(t.value());
      if (id == object_ids_.end())
        return err_value(t, "object '" + std::string(t.value()) + "' is used before its 'object' line");
      o.object = id->second;
      limit = round_up(out_.objects[size_t(id->second)].size, kPage);
    } else if (o.shared && !o.hugetlb) {
      return err(*opt["shared"], "shared anonymous mappings: declare a shm object");
    }
    if (opt.count("off")) {
      if (status s = page_value(*opt["off"], o.obj_off); !s.ok()) return s;
      if (o.object < 0 && o.obj_off) return err(*opt["off"], "off= applies to object mappings, not anon");
      if (o.object >= 0 && o.obj_off >= limit)
        return err_value(*opt["off"], "off=" + std::to_string(o.obj_off) + " is beyond the end of object '" +
                                          out_.objects[size_t(o.object)].name + "'");
    }
    if (opt.count("len")) {
      if (status s = page_value(*opt["len"], o.len); !s.ok()) return s;
      if (o.len == 0) return err_value(*opt["len"], "len must not be 0");
      if (o.object >= 0 && o.len > limit - o.obj_off)
        return err_value(*opt["len"], "off+len (" + std::to_string(o.obj_off) + "+" + std::to_string(o.len) +
                                          ") is beyond the end of object '" + out_.objects[size_t(o.object)].name + "'");
    } else if (o.object >= 0) {
      o.len = limit - o.obj_off;
    } else {
      return err(uint32_t(line_.size() + 1), "an anonymous mmap needs len=");
    }
    if (o.len > prof_.paging.task_size - kMmapMinAddr)
      return opt.count("len") ? err_value(*opt["len"], "len=" + std::to_string(o.len) + " is larger than the address space of " + prof_.name)
                              : err(toks_[2], "mapping of " + std::to_string(o.len) + " bytes is larger than the address space of " + prof_.name);
    if (opt.count("prot") && !parse_prot(opt["prot"]->value(), o.prot))
      return err_value(*opt["prot"], "prot must be r, rw or none, not '" + std::string(opt["prot"]->value()) + "'");
    if (opt.count("addr")) {
      const token& t = *opt["addr"];
      if (status s = page_value(t, o.addr); !s.ok()) return s;
      if (o.addr < kMmapMinAddr || o.addr >= prof_.paging.task_size || o.len > prof_.paging.task_size - o.addr)
        return err_value(t, fmt::format("fixed mapping [{:#x}, {:#x}) is outside the user address space [0x10000, {:#x})",
                                        o.addr, o.addr + o.len, prof_.paging.task_size));
      o.fixed = true;
      if (opt.count("align") || opt.count("phase"))
        return err(*opt[opt.count("align") ? "align" : "phase"], "align= and phase= do not apply to a fixed mapping");
    }
    if (opt.count("align")) {
      if (status s = size_value(*opt["align"], o.align); !s.ok()) return s;
      if (!is_pow2(o.align) || o.align < kPage)
        return err_value(*opt["align"], "align must be a power of two >= 4096, not " + std::to_string(o.align));
    }
    if (opt.count("phase")) {
      if (!opt.count("align")) return err(*opt["phase"], "phase= needs align=");
      if (status s = page_value(*opt["phase"], o.phase_off); !s.ok()) return s;
      if (o.phase_off >= o.align) return err_value(*opt["phase"], "phase must be less than align");
    }
    if (auto e = check_mmap(prof_, out_.objects, o))
      return opt.count(e->field) ? err_value(*opt[e->field], e->message) : err(toks_[2], e->message);
    o.map = map_index(toks_[2].text);
    auto& maps = procs_[o.pid].maps;
    if (maps.count(o.map))
      return err(toks_[2], "pid " + std::to_string(o.pid) + " already has a mapping '" + std::string(toks_[2].text) + "'");
    maps[o.map] = o.len;
    out_.ops.push_back(std::move(o));
    return {};
  }

  status parse_range_op() {
    const std::string_view kind = toks_[0].text;
    if (status s = need_args(2, "a pid and a mapping name"); !s.ok()) return s;
    op o;
    if (status s = live_pid(toks_[1], o.pid); !s.ok()) return s;
    option_map opt;
    status s;
    if (kind == "touch") {
      o.kind = op_kind::touch;
      s = options(3, {"off", "len", "stride", "count", "seed", "theta"}, {"read", "write", "uniform", "zipf"}, opt);
    } else if (kind == "munmap") {
      o.kind = op_kind::munmap;
      s = options(3, {"off", "len"}, {}, opt);
    } else if (kind == "mprotect") {
      o.kind = op_kind::mprotect;
      s = options(3, {"off", "len", "prot"}, {}, opt);
    } else if (kind == "msync") {
      o.kind = op_kind::msync;
      s = options(3, {"off", "len"}, {}, opt);
    } else if (kind == "remap_file_pages") {
      o.kind = op_kind::remap_file_pages;
      s = options(3, {"off", "len", "file_off"}, {}, opt);
    } else {
      o.kind = op_kind::madvise;
      s = options(3, {"off", "len"}, {"dontneed", "hugepage", "nohugepage", "sequential", "random"}, opt);
      if (s.ok()) {
        if (opt.count("dontneed") + opt.count("hugepage") + opt.count("nohugepage") + opt.count("sequential") +
                opt.count("random") > 1)
          return err(toks_[3], "madvise takes one advice: dontneed, hugepage, nohugepage, sequential or random");
        o.adv = opt.count("hugepage")     ? advice::hugepage
                : opt.count("nohugepage") ? advice::nohugepage
                : opt.count("sequential") ? advice::sequential
                : opt.count("random")     ? advice::random
                                          : advice::dontneed;
      }
    }
    if (!s.ok()) return s;
    // The mapping must exist in this process (mmap'd here or inherited at fork).
    const std::string_view map_name = toks_[2].text;
    const auto m = map_of(o.pid, map_name);
    if (!m) return err(toks_[2], no_map(o.pid, map_name));
    o.map = *m;
    const bytes size = procs_[o.pid].maps.at(o.map);
    if (opt.count("off")) {
      if (status e = page_value(*opt["off"], o.off); !e.ok()) return e;
      if (o.off >= size)
        return err_value(*opt["off"], "off=" + std::to_string(o.off) + " is beyond the end of mapping '" +
                                          std::string(map_name) + "' (" + std::to_string(size) + " bytes)");
    }
    o.len = size - o.off;
    if (opt.count("len")) {
      if (status e = page_value(*opt["len"], o.len); !e.ok()) return e;
      if (o.len == 0) return err_value(*opt["len"], "len must not be 0");
      if (o.len > size - o.off)
        return err_value(*opt["len"], "off+len (" + std::to_string(o.off) + "+" + std::to_string(o.len) +
                                          ") is beyond the end of mapping '" + std::string(map_name) + "' (" +
                                          std::to_string(size) + " bytes)");
    }
    if (o.kind == op_kind::mprotect) {
      if (!opt.count("prot")) return err(uint32_t(line_.size() + 1), "mprotect needs prot=");
      if (!parse_prot(opt["prot"]->value(), o.prot))
        return err_value(*opt["prot"], "prot must be r, rw or none, not '" + std::string(opt["prot"]->value()) + "'");
    }
    if (o.kind == op_kind::touch) {
      if (status e = touch_options(opt, o); !e.ok()) return e;
    }
    if (o.kind == op_kind::remap_file_pages) {
      // The file offset in bytes (the syscall's pgoff times the page size).
      if (!opt.count("file_off")) return err(uint32_t(line_.size() + 1), "remap_file_pages needs file_off= (bytes into the file)");
      if (status e = page_value(*opt["file_off"], o.obj_off); !e.ok()) return e;
    }
    out_.ops.push_back(std::move(o));
    return {};
  }

  status touch_options(option_map& opt, op& o) const {
    if (opt.count("read") && opt.count("write")) return err(*opt["write"], "a touch is either read or write");
    o.write = opt.count("write") > 0;
    if (opt.count("uniform") && opt.count("zipf")) return err(*opt["zipf"], "a touch is either uniform or zipf");
    if (opt.count("stride") && (opt.count("uniform") || opt.count("zipf")))
      return err(*opt["stride"], "stride= does not combine with uniform or zipf");
    if (opt.count("uniform")) o.pattern = touch_pattern::uniform;
    else if (opt.count("zipf")) o.pattern = touch_pattern::zipf;
    else if (opt.count("stride")) o.pattern = touch_pattern::stride;
    if (o.pattern == touch_pattern::stride) {
      if (status s = size_value(*opt["stride"], o.stride); !s.ok()) return s;
      if (!is_pow2(o.stride) || o.stride < kPage)
        return err_value(*opt["stride"], "stride must be a power of two >= 4096, not " + std::to_string(o.stride));
    }
    const bool random = o.pattern == touch_pattern::uniform || o.pattern == touch_pattern::zipf;
    for (const char* k : {"count", "seed"})
      if (opt.count(k) && !random) return err(*opt[k], std::string(k) + "= applies only to uniform and zipf touches");
    if (opt.count("theta") && o.pattern != touch_pattern::zipf) return err(*opt["theta"], "theta= applies only to zipf touches");
    if (!random) return {};
    if (!opt.count("count")) return err(uint32_t(line_.size() + 1), "a uniform or zipf touch needs count=");
    if (status s = u64_value(*opt["count"], o.count); !s.ok()) return s;
    if (o.count == 0) return err_value(*opt["count"], "count must not be 0");
    // Pages of the kernel's page size: the unit the engines draw (touch_page_gen).
    const uint64_t pages = o.len / prof_.paging.page_size();
    if (o.pattern == touch_pattern::uniform && o.count > pages)
      return err_value(*opt["count"], "count=" + std::to_string(o.count) + " is more than the " +
                                          std::to_string(pages) + " pages in the range");
    // The engines materialise the access list: bound it as scenarios do (fraction <= 100).
    if (o.pattern == touch_pattern::zipf && pages < UINT64_MAX / 100 && o.count > pages * 100)
      return err_value(*opt["count"], "count=" + std::to_string(o.count) + " is more than 100 accesses per page of the " +
                                          std::to_string(pages) + " pages in the range");
    o.seed = 1;
    if (opt.count("seed"))
      if (status s = u64_value(*opt["seed"], o.seed); !s.ok()) return s;
    if (o.pattern == touch_pattern::zipf) {
      o.theta = 0.99;
      if (opt.count("theta")) {
        const std::string_view v = opt["theta"]->value();
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), o.theta);
        if (ec != std::errc() || p != v.data() + v.size() || !(o.theta > 0 && o.theta <= 10))
          return err_value(*opt["theta"], "theta must be a number in (0, 10], not '" + std::string(v) + "'");
      }
    }
    return {};
  }

  // The object named by token t (declared before).
  status object_arg(const token& t, int32_t& obj) const {
    auto it = object_ids_.find(t.text);
    if (it == object_ids_.end()) return err(t, "no object '" + std::string(t.text) + "' (declare it with an object line first)");
    obj = it->second;
    return {};
  }

  // read PID OBJECT off= len= [buf=MAP bufoff=] [direct]; readv adds iovecs= [stride=];
  // write as read.
  status parse_io() {
    const std::string_view kind = toks_[0].text;
    if (status s = need_args(2, "a pid and an object name"); !s.ok()) return s;
    op o;
    o.kind = kind == "read" ? op_kind::read : kind == "readv" ? op_kind::readv : op_kind::write;
    if (status s = live_pid(toks_[1], o.pid); !s.ok()) return s;
    if (status s = object_arg(toks_[2], o.object); !s.ok()) return s;
    option_map opt;
    status s = o.kind == op_kind::readv ? options(3, {"off", "len", "buf", "bufoff", "iovecs", "stride"}, {"direct"}, opt)
                                        : options(3, {"off", "len", "buf", "bufoff"}, {"direct"}, opt);
    if (!s.ok()) return s;
    const bytes size = out_.objects[size_t(o.object)].size;
    if (opt.count("off"))
      if (status e = size_value(*opt["off"], o.obj_off); !e.ok()) return e;
    o.len = size > o.obj_off ? size - o.obj_off : 0;
    if (opt.count("len"))
      if (status e = size_value(*opt["len"], o.len); !e.ok()) return e;
    o.count = 1;
    if (opt.count("iovecs"))
      if (status e = u64_value(*opt["iovecs"], o.count); !e.ok()) return e;
    if (opt.count("stride"))
      if (status e = size_value(*opt["stride"], o.stride); !e.ok()) return e;
    o.direct = opt.count("direct") > 0;
    bytes bufsize = 0;
    if (opt.count("buf")) {
      const token& t = *opt["buf"];
      const auto m = map_of(o.pid, t.value());
      if (!m) return err_value(t, no_map(o.pid, t.value()));
      o.buffer = true;
      o.map = *m;
      bufsize = procs_[o.pid].maps.at(o.map);
      if (opt.count("bufoff"))
        if (status e = size_value(*opt["bufoff"], o.off); !e.ok()) return e;
    } else if (opt.count("bufoff")) {
      return err(*opt["bufoff"], "bufoff= needs buf=");
    }
    if (auto e = check_io(out_.objects, o, bufsize)) {
      const std::string_view key = e->field == "obj" ? "" : std::string_view(e->field);
      if (!key.empty() && opt.count(key)) return err_value(*opt[key], e->message);
      return err(e->field == "obj" ? toks_[2] : toks_[0], e->message);
    }
    out_.ops.push_back(std::move(o));
    return {};
  }

  // The id of mapping `name` of `pid` (mmap'd in that process or inherited at fork), or
  // nothing; no_map() is the error for the token that named it.
  std::optional<uint32_t> map_of(uint32_t pid, std::string_view name) {
    auto mi = map_ids_.find(name);
    if (mi == map_ids_.end() || !procs_[pid].maps.count(mi->second)) return std::nullopt;
    return mi->second;
  }
  static std::string no_map(uint32_t pid, std::string_view name) {
    return "pid " + std::to_string(pid) + " has no mapping '" + std::string(name) + "'";
  }

  // mremap PID MAP len=SIZE [maymove] [addr=ADDR]: the whole mapping to SIZE bytes;
  // maymove is MREMAP_MAYMOVE, addr= MREMAP_MAYMOVE | MREMAP_FIXED.
  status parse_mremap() {
    if (status s = need_args(2, "a pid and a mapping name"); !s.ok()) return s;
    op o;
    o.kind = op_kind::mremap;
    if (status s = live_pid(toks_[1], o.pid); !s.ok()) return s;
    option_map opt;
    if (status s = options(3, {"len", "addr"}, {"maymove"}, opt); !s.ok()) return s;
    const auto m = map_of(o.pid, toks_[2].text);
    if (!m) return err(toks_[2], no_map(o.pid, toks_[2].text));
    o.map = *m;
    if (!opt.count("len")) return err(uint32_t(line_.size() + 1), "mremap needs len= (the new length)");
    if (status e = page_value(*opt["len"], o.len); !e.ok()) return e;
    o.maymove = opt.count("maymove") > 0;
    if (opt.count("addr")) {
      if (status e = page_value(*opt["addr"], o.addr); !e.ok()) return e;
      o.fixed = o.maymove = true;
    }
    if (auto e = check_mremap(prof_, o)) return err_value(*opt[e->field], e->message);
    procs_[o.pid].maps[o.map] = o.len;
    out_.ops.push_back(std::move(o));
    return {};
  }

  status parse_fsync() {
    if (status s = need_args(2, "a pid and an object name"); !s.ok()) return s;
    if (toks_.size() > 3) return err(toks_[3], "fsync takes a pid and an object name only");
    op o;
    o.kind = op_kind::fsync;
    if (status s = live_pid(toks_[1], o.pid); !s.ok()) return s;
    if (status s = object_arg(toks_[2], o.object); !s.ok()) return s;
    out_.ops.push_back(std::move(o));
    return {};
  }

  // reclaim [len=SIZE]: kernel-wide, no pid.
  status parse_reclaim() {
    option_map opt;
    if (status s = options(1, {"len"}, {}, opt); !s.ok()) return s;
    op o;
    o.kind = op_kind::reclaim;
    if (opt.count("len")) {
      if (status s = page_value(*opt["len"], o.len); !s.ok()) return s;
      if (o.len == 0) return err_value(*opt["len"], "len=0 reclaims nothing; leave len= out to reclaim everything");
    }
    out_.ops.push_back(std::move(o));
    return {};
  }

  status parse_phase() {
    if (status s = need_args(1, "a name"); !s.ok()) return s;
    if (toks_.size() > 2) return err(toks_[2], "a phase name is one word; unexpected '" + std::string(toks_[2].text) + "'");
    // As in a scenario, a phase name names one sample: two alike would be one row twice.
    if (!phase_names_.emplace(toks_[1].text).second)
      return err(toks_[1], "duplicate phase name '" + std::string(toks_[1].text) + "'");
    op o;
    o.kind = op_kind::phase;
    o.name = std::string(toks_[1].text);
    out_.ops.push_back(std::move(o));
    return {};
  }

  std::string_view text_;
  std::string file_;
  op_stream out_;
  name_map<uint32_t> map_ids_;   // name -> index in out_.map_names
  name_map<int32_t> object_ids_;  // name -> index in out_.objects
  std::unordered_set<std::string, name_hash, std::equal_to<>> phase_names_;  // the phase names seen
  std::optional<source_location> memory_at_;  // where the machine line gave memory=
  kernel_profile prof_;
  bool seen_machine_ = false;
  uint32_t lineno_ = 0;
  std::string_view line_;
  std::vector<token> toks_;
  std::map<uint32_t, proc_state> procs_;
};

}  // namespace

result<op_stream> parse_trace(std::string_view text, const std::string& name) {
  try {
    return trace_parser(text, name).run();
  } catch (const std::exception& e) {
    return status::invalid_argument(name + ": cannot read trace: " + e.what());
  }
}

result<op_stream> load_trace(const std::string& path) {
  // A directory opens as a stream and reads as nothing: an empty trace that runs no op.
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    return status::invalid_argument("trace file '" + path + "' is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return status::invalid_argument("cannot open trace file '" + path + "'");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return status::io_error("cannot read trace file '" + path + "'");
  return parse_trace(buf.str(), path);
}

namespace {
std::string object_name(const op_stream& s, int32_t obj) {
  return obj >= 0 && obj < int32_t(s.objects.size()) ? s.objects[size_t(obj)].name : "object#" + std::to_string(obj);
}
}  // namespace

std::string format_op(const op_stream& s, const op& o) {
  const std::string map = o.map < s.map_names.size() ? s.map_names[o.map] : "map#" + std::to_string(o.map);
  const std::string range = fmt::format("{} {} off={} len={}", o.pid, map, o.off, o.len);
  switch (o.kind) {
    case op_kind::spawn: return fmt::format("spawn {}", o.pid);
    case op_kind::fork: return fmt::format("fork {} {}", o.pid, o.child);
    case op_kind::exit: return fmt::format("exit {}", o.pid);
    case op_kind::phase: return "phase " + o.name;
    case op_kind::mmap: {
      std::string l = fmt::format("mmap {} {} obj=", o.pid, map);
      if (o.object < 0) {
        l += fmt::format("anon len={}", o.len);
      } else {
        l += o.object < int32_t(s.objects.size()) ? s.objects[size_t(o.object)].name : "object#" + std::to_string(o.object);
        l += fmt::format(" off={} len={}", o.obj_off, o.len);
      }
      l += " prot=" + prot_name(o.prot);
      l += o.shared ? " shared" : " private";
      if (o.locked) l += " locked";
      if (o.hugetlb) l += " hugetlb";
      if (o.page_size) l += fmt::format(" page_size={}", o.page_size);
      if (o.noreserve) l += " noreserve";
      if (o.has_hint) l += o.hint == advice::hugepage ? " advice=hugepage" : " advice=nohugepage";
      if (o.fixed) l += fmt::format(" addr={:#x}", o.addr);
      if (o.align) l += fmt::format(" align={} phase={}", o.align, o.phase_off);
      return l;
    }
    case op_kind::munmap: return "munmap " + range;
    case op_kind::mprotect: return "mprotect " + range + " prot=" + prot_name(o.prot);
    case op_kind::madvise: {
      static constexpr const char* kAdvice[] = {" dontneed", " hugepage", " nohugepage", " sequential", " random"};
      return "madvise " + range + kAdvice[static_cast<int>(o.adv)];
    }
    case op_kind::msync: return "msync " + range;
    case op_kind::mremap:
      return fmt::format("mremap {} {} len={}", o.pid, map, o.len) +
             (o.fixed ? fmt::format(" addr={:#x}", o.addr) : o.maymove ? " maymove" : "");
    case op_kind::remap_file_pages: return fmt::format("remap_file_pages {} file_off={}", range, o.obj_off);
    case op_kind::fsync: return fmt::format("fsync {} {}", o.pid, object_name(s, o.object));
    case op_kind::reclaim: return o.len ? fmt::format("reclaim len={}", o.len) : "reclaim";
    case op_kind::read:
    case op_kind::readv:
    case op_kind::write: {
      std::string l = fmt::format("{} {} {} off={} len={}", o.kind == op_kind::read ? "read" : o.kind == op_kind::readv ? "readv" : "write",
                                  o.pid, object_name(s, o.object), o.obj_off, o.len);
      if (o.buffer) l += fmt::format(" buf={} bufoff={}", map, o.off);
      if (o.kind == op_kind::readv) l += fmt::format(" iovecs={}", o.count);
      if (o.stride) l += fmt::format(" stride={}", o.stride);
      if (o.direct) l += " direct";
      return l;
    }
    case op_kind::touch: {
      std::string l = "touch " + range + (o.write ? " write" : " read");
      switch (o.pattern) {
        case touch_pattern::all: break;
        case touch_pattern::stride: l += fmt::format(" stride={}", o.stride); break;
        case touch_pattern::uniform: l += fmt::format(" uniform count={} seed={}", o.count, o.seed); break;
        case touch_pattern::zipf: l += fmt::format(" zipf theta={} count={} seed={}", o.theta, o.count, o.seed); break;
      }
      return l;
    }
  }
  return "?";
}

std::string write_trace(const op_stream& s) {
  std::string out = "# vmlab trace v1\n";
  if (!s.source.empty()) out += "# source: " + s.source + "\n";
  out += fmt::format("machine profile={} memory={}", s.machine.profile, s.machine.memory);
  if (s.machine.cpus) out += fmt::format(" cpus={}", s.machine.cpus);
  if (s.machine.cache_line) out += fmt::format(" cache_line={}", s.machine.cache_line);
  auto pools = [](const std::vector<std::pair<bytes, uint64_t>>& v) {
    std::string l;
    for (const auto& [size, n] : v) l += fmt::format("{}{}:{}", l.empty() ? "" : ",", size, n);
    return l;
  };
  if (!s.machine.hugepages.empty()) out += " hugepages=" + pools(s.machine.hugepages);
  if (!s.machine.overcommit_hugepages.empty()) out += " overcommit_hugepages=" + pools(s.machine.overcommit_hugepages);
  if (s.machine.fragmentation > 0) out += fmt::format(" fragmentation={}", s.machine.fragmentation);
  out += '\n';
  for (const auto& [k, v] : s.machine.overrides) out += "override " + k + "=" + v + "\n";
  for (const auto& d : s.objects) {
    out += fmt::format("object {} {} size={}", d.name,
                       d.kind == object_kind::shm ? "shm" : d.kind == object_kind::file ? "file" : "hugetlb", d.size);
    if (d.page_size) out += fmt::format(" page_size={}", d.page_size);
    if (d.mshare) out += " mshare";
    out += '\n';
  }
  for (const auto& o : s.ops) {
    out += format_op(s, o);
    out += '\n';
  }
  return out;
}

}  // namespace vmlab
