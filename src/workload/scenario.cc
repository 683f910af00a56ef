// Scenario files (TOML): the reader. read_*() walks the TOML document into a
// scenario_spec (scenario_spec.h), checking every key and type and remembering where each
// value came from; generate() (generator.cc) then turns the spec into the op stream.
//
// The format is documented in docs/scenario-format.md; keep the two in step.
#include "workload/scenario.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_set>
#include <fmt/format.h>
#include <toml++/toml.h>

#include "model/profile.h"
#include "vmlab/sim_kernel.h"
#include "vmlab/suggest.h"
#include "workload/builtin.h"
#include "workload/image.h"
#include "workload/op_rules.h"
#include "workload/scenario_spec.h"
#include "workload/size.h"

namespace vmlab {
namespace {


// ---------------------------------------------------------------------------------------
// Source positions

class source_text {
 public:
  source_text(std::string file, std::string_view text) : file_(std::move(file)) {
    size_t pos = 0;
    while (pos <= text.size()) {
      size_t nl = text.find('\n', pos);
      std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      lines_.emplace_back(line);
      if (nl == std::string_view::npos) break;
      pos = nl + 1;
    }
  }
  [[nodiscard]] source_location loc(const toml::source_position& p) const {
    source_location l;
    l.file = file_;
    l.line = p.line;
    l.column = p.column;
    if (p.line >= 1 && p.line <= lines_.size()) l.text = lines_[p.line - 1];
    return l;
  }
  [[nodiscard]] source_location loc(const toml::source_region& r) const {
    // A value a --set put there: its place in the setting (setting_value() parsed it as
    // the document "v = VALUE" named after the setting).
    if (r.path && *r.path != file_ && r.path->rfind(kSetPrefix, 0) == 0) {
      const std::string setting = r.path->substr(kSetPrefix.size());
      source_location l;
      l.file = "--set " + setting;
      l.line = 1;
      // Column 0: a key the setting added (its path, at column 1); else a value.
      l.column = r.begin.column == 0 ? 1 : uint32_t(setting.find('=') + 1) + (r.begin.column > 4 ? r.begin.column - 4 : 1);
      l.text = setting;
      return l;
    }
    return loc(r.begin);
  }
  static constexpr std::string_view kSetPrefix = "\x01set:";
  [[nodiscard]] const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::vector<std::string> lines_;
};


const char* type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a floating-point number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

bool valid_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
          c == '.' || c == ':' || c == '/' || c == '+'))
      return false;
  return true;
}

std::string hex(uint64_t v) {
  std::ostringstream o;
  o << "0x" << std::hex << v;
  return o.str();
}

// ---------------------------------------------------------------------------------------
// A TOML table with a section name for messages ("[[group.map]]") and typed getters that
// report the key's or value's position.

class table_reader {
 public:
  table_reader(const source_text& src, const toml::table& t, std::string section)
      : src_(src), t_(t), section_(std::move(section)) {}

  [[nodiscard]] const toml::table& table() const { return t_; }
  [[nodiscard]] const std::string& section() const { return section_; }
  // "in [[group.map]]", "at the top level".
  [[nodiscard]] std::string in_section() const { return section_ == "the top level" ? "at " + section_ : "in " + section_; }
  [[nodiscard]] source_location where() const { return src_.loc(t_.source()); }
  [[nodiscard]] source_location where(std::string_view key) const {
    const toml::node* n = t_.get(key);
    return n ? src_.loc(n->source()) : where();
  }
  [[nodiscard]] bool has(std::string_view key) const { return t_.contains(key); }

  // Every key must be one of `allowed`; the first unknown one in file order is reported.
  [[nodiscard]] status check_keys(std::initializer_list<std::string_view> allowed) const {
    const toml::key* bad = nullptr;
    for (auto&& [k, v] : t_) {
      if (std::find(allowed.begin(), allowed.end(), k.str()) != allowed.end()) continue;
      if (!bad || before(k.source().begin, bad->source().begin)) bad = &k;
    }
    if (bad)
      return error_at(src_.loc(bad->source()),
                      "unknown key '" + std::string(bad->str()) + "' " + in_section() + did_you_mean(bad->str(), allowed));
    return {};
  }

  status missing(std::string_view key) const {
    return error_at(where(), "missing key '" + std::string(key) + "' " + in_section());
  }
  status wrong_type(std::string_view key, const toml::node& n, std::string_view want) const {
    return error_at(src_.loc(n.source()), "'" + std::string(key) + "' " + in_section() + " must be " +
                                              std::string(want) + ", not " + type_name(n.type()));
  }
  status bad_value(std::string_view key, std::string msg) const { return error_at(where(key), std::move(msg)); }

  // The getters leave `out` untouched when the key is absent and return OK.
  status get(std::string_view key, std::string& out) const {
    const toml::node* n = t_.get(key);
    if (!n) return {};
    if (!n->is_string()) return wrong_type(key, *n, "a string");
    out = n->as_string()->get();
    return {};
  }
  status get_token(std::string_view key, std::string& out) const {
    if (status s = get(key, out); !s.ok()) return s;
    if (has(key) && !valid_token(out))
      return bad_value(key, "'" + std::string(key) + "' " + in_section() + " must be a name of letters, digits and _-.:/+, not '" + out + "'");
    return {};
  }
  status get(std::string_view key, bool& out) const {
    const toml::node* n = t_.get(key);
    if (!n) return {};
    if (!n->is_boolean()) return wrong_type(key, *n, "a boolean");
    out = n->as_boolean()->get();
    return {};
  }
  status get(std::string_view key, int64_t& out) const {
    const toml::node* n = t_.get(key);
    if (!n) return {};
    if (!n->is_integer()) return wrong_type(key, *n, "an integer");
    out = n->as_integer()->get();
    return {};
  }
  // An integer in [lo, hi].
  status get_count(std::string_view key, uint64_t& out, uint64_t lo, uint64_t hi) const {
    if (!has(key)) return {};
    int64_t v = 0;
    if (status s = get(key, v); !s.ok()) return s;
    if (v < 0 || uint64_t(v) < lo || uint64_t(v) > hi)
      return bad_value(key, "'" + std::string(key) + "' " + in_section() + " must be between " + std::to_string(lo) +
                                " and " + std::to_string(hi) + ", not " + std::to_string(v));
    out = uint64_t(v);
    return {};
  }
  status get(std::string_view key, double& out) const {
    const toml::node* n = t_.get(key);
    if (!n) return {};
    if (n->is_floating_point()) out = n->as_floating_point()->get();
    else if (n->is_integer()) out = double(n->as_integer()->get());
    else return wrong_type(key, *n, "a number");
    return {};
  }
  // A size: an integer number of bytes or a string in size syntax ("1GiB").
  status get_size(std::string_view key, bytes& out) const {
    const toml::node* n = t_.get(key);
    if (!n) return {};
    return size_of(key, *n, out);
  }
  status size_of(std::string_view key, const toml::node& node, bytes& out) const {
    const toml::node* n = &node;
    if (n->is_integer()) {
      const int64_t v = n->as_integer()->get();
      if (v < 0) return error_at(src_.loc(n->source()), "negative size '" + std::to_string(v) + "'");
      out = bytes(v);
      return {};
    }
    if (!n->is_string()) return wrong_type(key, *n, "a size (a string such as \"1GiB\" or an integer)");
    result<bytes> r = parse_size(n->as_string()->get());
    if (!r.ok()) return error_at(src_.loc(n->source()), r.error().message());
    out = *r;
    return {};
  }
  // A size that must be a multiple of the page size.
  status get_page_size(std::string_view key, bytes& out) const {
    if (status s = get_size(key, out); !s.ok()) return s;
    if (has(key) && out % kPage)
      return bad_value(key, "'" + std::string(key) + "' " + in_section() + " must be a multiple of 4KiB, not " + std::to_string(out));
    return {};
  }
  // [[OFFSET, LENGTH], ...]: page-aligned ranges (sizes as get_size takes them), none empty.
  status get_ranges(std::string_view key, std::vector<std::pair<bytes, bytes>>& out) const {
    const toml::node* n = t_.get(key);
    if (!n) return {};
    const toml::array* a = n->as_array();
    if (!a || a->empty()) return wrong_type(key, *n, "a non-empty array of [offset, length] pairs");
    for (const toml::node& e : *a) {
      const toml::array* pair = e.as_array();
      if (!pair || pair->size() != 2)
        return error_at(src_.loc(e.source()), "each of '" + std::string(key) + "' " + in_section() +
                                                  " must be an [offset, length] pair");
      bytes off = 0, len = 0;
      if (status s = size_of(key, (*pair)[0], off); !s.ok()) return s;
      if (status s = size_of(key, (*pair)[1], len); !s.ok()) return s;
      if (off % kPage || len % kPage || len == 0)
        return error_at(src_.loc(e.source()), "a range of '" + std::string(key) + "' " + in_section() +
                                                  " must be a multiple of 4KiB and not empty, not [" +
                                                  std::to_string(off) + ", " + std::to_string(len) + "]");
      out.emplace_back(off, len);
    }
    return {};
  }
  status get_prot(std::string_view key, uint8_t& out) const {
    std::string p;
    if (status s = get(key, p); !s.ok()) return s;
    if (!has(key)) return {};
    if (p == "r") out = prot_read;
    else if (p == "rw") out = prot_read | prot_write;
    else if (p == "none") out = prot_none;
    else return bad_value(key, "'" + std::string(key) + "' " + in_section() + " must be \"r\", \"rw\" or \"none\", not '" + p + "'");
    return {};
  }
  // An array of tables (written [[key]]); empty when absent.
  status get_tables(std::string_view key, std::vector<const toml::table*>& out) const {
    const toml::node* n = t_.get(key);
    if (!n) return {};
    const toml::array* a = n->as_array();
    if (!a || !a->is_array_of_tables()) return wrong_type(key, *n, "an array of tables ([[" + std::string(key) + "]])");
    for (const toml::node& e : *a) out.push_back(e.as_table());
    return {};
  }

 private:
  static bool before(const toml::source_position& a, const toml::source_position& b) {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  }
  const source_text& src_;
  const toml::table& t_;
  std::string section_;
};

// ---------------------------------------------------------------------------------------
status read_machine(const source_text& src, const table_reader& top, scenario_spec& sc) {
  if (!top.has("machine")) return {};
  const toml::node* n = top.table().get("machine");
  if (!n->is_table()) return top.wrong_type("machine", *n, "a table ([machine])");
  table_reader m(src, *n->as_table(), "[machine]");
  if (status s = m.check_keys({"memory", "cpus", "cache_line", "arch", "hugepages", "overcommit_hugepages", "fragmentation"});
      !s.ok())
    return s;
  for (const char* key : {"hugepages", "overcommit_hugepages"}) {
    if (!m.has(key)) continue;
    const toml::node* pn = m.table().get(key);
    if (!pn->is_table()) return m.wrong_type(key, *pn, "a table of counts by page size ({ \"2MiB\" = 512 })");
    auto& pools = std::string_view(key) == "hugepages" ? sc.machine.hugepages : sc.machine.overcommit_hugepages;
    table_reader pt(src, *pn->as_table(), std::string("[machine.") + key + "]");
    for (auto&& [size_key, v] : *pn->as_table()) {
      result<bytes> size = parse_size(size_key.str());
      if (!size.ok()) return error_at(src.loc(size_key.source()), size.error().message());
      uint64_t count = 0;
      if (status s = pt.get_count(size_key.str(), count, 0, uint64_t{1} << 40); !s.ok()) return s;
      pools.emplace_back(*size, count);
    }
  }
  if (m.has("fragmentation")) {
    if (status s = m.get("fragmentation", sc.machine.fragmentation); !s.ok()) return s;
    if (!(sc.machine.fragmentation >= 0 && sc.machine.fragmentation <= 1))
      return m.bad_value("fragmentation", "'fragmentation' in [machine] must be between 0 and 1, not " +
                                              fmt::format("{}", sc.machine.fragmentation));
  }
  if (status s = m.get_size("memory", sc.machine.memory); !s.ok()) return s;
  uint64_t cpus = 0, line = 0;  // 0: the profile's
  for (auto [key, v] : {std::pair<const char*, uint64_t*>{"cpus", &cpus}, {"cache_line", &line}}) {
    if (!m.has(key)) continue;
    int64_t given = 0;
    if (status s = m.get(key, given); !s.ok()) return s;
    if (auto e = check_machine_count(key, given)) return m.bad_value(key, e->message);
    *v = uint64_t(given);
  }
  sc.machine.cpus = uint32_t(cpus);
  sc.machine.cache_line = uint32_t(line);
  std::string arch;
  if (status s = m.get("arch", arch); !s.ok()) return s;
  if (m.has("arch") && arch != "x86-64" && arch != "i386")
    return m.bad_value("arch", "'arch' in [machine] must be \"x86-64\" or \"i386\", not '" + arch + "'");
  return {};
}

// The boot pools' sizes against the profile, once its overrides are read.
status check_pools(const source_text& src, const table_reader& top, const scenario_spec& sc) {
  const toml::node* mn = top.table().get("machine");
  if (!mn || !mn->is_table()) return {};
  for (const char* key : {"hugepages", "overcommit_hugepages"}) {
    const toml::node* pn = mn->as_table()->get(key);
    if (!pn || !pn->is_table()) continue;
    for (auto&& [size_key, v] : *pn->as_table())
      if (auto e = check_pool(sc.profile, parse_size(size_key.str()).value(), key))
        return error_at(src.loc(size_key.source()), e->message);
  }
  return {};
}

// The machine's memory against what boot reserves on its kernel (sim_kernel::check_machine,
// the rule create() applies), once the profile's overrides are read: at the memory value.
status check_machine_memory(const source_text& src, const table_reader& top, const scenario_spec& sc) {
  const toml::node* mn = top.table().get("machine");
  const toml::node* mem = mn && mn->is_table() ? mn->as_table()->get("memory") : nullptr;
  if (!mem) return {};  // the profile's own memory
  if (status st = sim_kernel::check_machine(sc.machine); !st.ok()) return error_at(src.loc(mem->source()), st.message());
  return {};
}

status read_kernel(const source_text& src, const table_reader& top, scenario_spec& sc) {
  const toml::table* kt = nullptr;
  if (top.has("kernel")) {
    const toml::node* n = top.table().get("kernel");
    if (!n->is_table()) return top.wrong_type("kernel", *n, "a table ([kernel])");
    kt = n->as_table();
  }
  toml::table empty;
  table_reader k(src, kt ? *kt : empty, "[kernel]");
  if (status s = k.check_keys({"profile", "overrides"}); !s.ok()) return s;
  if (status s = k.get("profile", sc.machine.profile); !s.ok()) return s;
  result<kernel_profile> prof = find_profile(sc.machine.profile);
  if (!prof.ok()) return error_at(k.where("profile"), prof.error().message());
  sc.profile = *prof;
  if (!k.has("overrides")) return {};
  const toml::node* on = k.table().get("overrides");
  if (!on->is_table()) return k.wrong_type("overrides", *on, "a table ([kernel.overrides])");
  // Apply in file order: later keys may depend on earlier ones (paging before mmap_layout).
  std::vector<std::pair<const toml::key*, const toml::node*>> items;
  for (auto&& [key, v] : *on->as_table()) items.emplace_back(&key, &v);
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    const auto& pa = a.first->source().begin;
    const auto& pb = b.first->source().begin;
    return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
  });
  for (const auto& [key, v] : items) {
    std::string value;
    if (v->is_string()) value = v->as_string()->get();
    else if (v->is_boolean()) value = v->as_boolean()->get() ? "true" : "false";
    else if (v->is_integer()) value = std::to_string(v->as_integer()->get());
    else
      return error_at(src.loc(v->source()), "kernel override '" + std::string(key->str()) +
                                                "' must be a string, boolean or integer, not " + type_name(v->type()));
    if (status s = apply_override(sc.profile, std::string(key->str()), value); !s.ok())
      return error_at(src.loc(v->source()), s.message());
    sc.machine.overrides.emplace_back(std::string(key->str()), value);
  }
  return {};
}

status read_objects(const source_text& src, const table_reader& top, scenario_spec& sc) {
  std::vector<const toml::table*> tables;
  if (status s = top.get_tables("object", tables); !s.ok()) return s;
  sc.object_ids.reserve(tables.size());  // one rehash, not one per doubling (200,000 objects)
  for (const toml::table* t : tables) {
    table_reader o(src, *t, "[[object]]");
    if (status s = o.check_keys({"name", "kind", "size", "page_size", "mshare"}); !s.ok()) return s;
    object_decl d;
    if (!o.has("name")) return o.missing("name");
    if (status s = o.get_token("name", d.name); !s.ok()) return s;
    if (d.name == "anon") return o.bad_value("name", "'anon' is reserved for private anonymous mappings; choose another object name");
    if (sc.object_ids.count(d.name)) return o.bad_value("name", "duplicate object name '" + d.name + "'");
    std::string kind = "shm";
    if (status s = o.get("kind", kind); !s.ok()) return s;
    if (kind == "shm") d.kind = object_kind::shm;
    else if (kind == "file") d.kind = object_kind::file;
    else if (kind == "hugetlb") d.kind = object_kind::hugetlb;
    else return o.bad_value("kind", "'kind' in [[object]] must be \"shm\", \"file\" or \"hugetlb\", not '" + kind + "'");
    if (!o.has("size")) return o.missing("size");
    if (status s = o.get_size("size", d.size); !s.ok()) return s;
    if (d.size == 0) return o.bad_value("size", "object '" + d.name + "' has size 0");
    if (status s = o.get_size("page_size", d.page_size); !s.ok()) return s;
    if (status s = o.get("mshare", d.mshare); !s.ok()) return s;
    if (auto e = check_object(sc.profile, d)) return o.bad_value(o.has(e->field) ? e->field : "kind", e->message);
    sc.object_ids.emplace(d.name, int32_t(sc.objects.size()));
    sc.objects.push_back(std::move(d));
  }
  return {};
}

// What read_map checks each new mapping against, kept per group so that a group of
// 200,000 mappings is read in linear time: the names so far, and the fixed mappings by
// start address (an overlap can only be with the neighbours of the new one).
struct group_index {
  std::unordered_set<std::string> names;
  std::map<vaddr, size_t> fixed;  // start -> index in group_spec::maps
};

status read_map(const source_text& src, const toml::table& t, const scenario_spec& sc, group_spec& g, group_index& gi) {
  table_reader m(src, t, "[[group.map]]");
  if (status s = m.check_keys({"name", "object", "shared", "size", "offset", "prot", "locked", "addr", "align", "phase",
                               "hugetlb", "page_size", "noreserve", "advice"});
      !s.ok())
    return s;
  map_spec ms;
  ms.where = m.where();
  if (!m.has("name")) return m.missing("name");
  if (status s = m.get_token("name", ms.name); !s.ok()) return s;
  if (gi.names.count(ms.name)) return m.bad_value("name", "duplicate mapping name '" + ms.name + "' in group '" + g.name + "'");
  if (ms.name.rfind(kImagePrefix, 0) == 0)
    return m.bad_value("name", "mapping names starting with '" + std::string(kImagePrefix) + "' are the process image's (a group's 'image')");
  if (!m.has("object")) return m.missing("object");
  std::string obj;
  if (status s = m.get("object", obj); !s.ok()) return s;
  if (obj != "anon") {
    auto it = sc.object_ids.find(obj);
    if (it == sc.object_ids.end()) {
      // The first few names: a message, not a listing of 200,000 objects.
      constexpr size_t kListed = 20;
      std::string known;
      for (size_t i = 0; i < sc.objects.size() && i < kListed; ++i) known += ", " + sc.objects[i].name;
      if (sc.objects.size() > kListed) known += ", ... (" + std::to_string(sc.objects.size() - kListed) + " more)";
      return m.bad_value("object", "unknown object '" + obj + "' (objects: anon" + known + ")");
    }
    ms.object = it->second;
  }
  if (status s = m.get("shared", ms.shared); !s.ok()) return s;
  if (status s = m.get("hugetlb", ms.hugetlb); !s.ok()) return s;
  if (status s = m.get("noreserve", ms.noreserve); !s.ok()) return s;
  if (status s = m.get_size("page_size", ms.page_size); !s.ok()) return s;
  if (m.has("advice")) {
    std::string adv;
    if (status s = m.get("advice", adv); !s.ok()) return s;
    ms.has_hint = true;
    if (adv == "hugepage") ms.hint = advice::hugepage;
    else if (adv == "nohugepage") ms.hint = advice::nohugepage;
    else return m.bad_value("advice", "'advice' in [[group.map]] must be \"hugepage\" or \"nohugepage\", not '" + adv + "'");
  }
  if (ms.object < 0 && ms.shared && !ms.hugetlb)
    return m.bad_value("shared", "shared anonymous mappings: declare a shm object");
  if (status s = m.get("locked", ms.locked); !s.ok()) return s;
  if (status s = m.get_prot("prot", ms.prot); !s.ok()) return s;
  if (status s = m.get_page_size("offset", ms.offset); !s.ok()) return s;
  if (ms.object < 0 && m.has("offset") && ms.offset)
    return m.bad_value("offset", "'offset' applies to object mappings, not anon");

  ms.size_at = m.where("size");
  if (ms.object < 0) {
    if (!m.has("size")) return m.missing("size");
    if (status s = m.get_size("size", ms.size); !s.ok()) return s;
  } else {
    const object_decl& d = sc.objects[size_t(ms.object)];
    const bytes obj_pages = round_up(d.size, kPage);
    if (ms.offset >= obj_pages)
      return m.bad_value("offset", "offset " + std::to_string(ms.offset) + " is beyond the end of object '" + d.name +
                                       "' (" + std::to_string(d.size) + " bytes)");
    ms.size = obj_pages - ms.offset;
    if (status s = m.get_size("size", ms.size); !s.ok()) return s;
    if (round_up(ms.size, kPage) > obj_pages - ms.offset)
      return m.bad_value("size", "offset + size (" + std::to_string(ms.offset) + " + " + std::to_string(ms.size) +
                                     ") is beyond the end of object '" + d.name + "' (" + std::to_string(d.size) + " bytes)");
  }
  if (ms.size == 0) return m.bad_value("size", "mapping '" + ms.name + "' has size 0");
  if (ms.size > sc.profile.paging.task_size - kMmapMinAddr)
    return m.bad_value("size", "mapping '" + ms.name + "' (" + std::to_string(ms.size) +
                                   " bytes) is larger than the address space of " + sc.profile.name + " (task_size " +
                                   hex(sc.profile.paging.task_size) + ")");
  ms.size = round_up(ms.size, kPage);

  if (m.has("addr")) {
    ms.addr_at = m.where("addr");
    ms.fixed = true;
    if (status s = m.get_size("addr", ms.addr); !s.ok()) return s;
    if (ms.addr % kPage) return m.bad_value("addr", "fixed address " + hex(ms.addr) + " is not a multiple of 4KiB");
    if (ms.addr < kMmapMinAddr || ms.addr >= sc.profile.paging.task_size ||
        ms.size > sc.profile.paging.task_size - ms.addr)
      return m.bad_value("addr", "fixed mapping '" + ms.name + "' [" + hex(ms.addr) + ", " + hex(ms.addr + ms.size) +
                                     ") is outside the user address space [0x10000, " +
                                     hex(sc.profile.paging.task_size) + ") of " + sc.profile.name);
    if (m.has("align") || m.has("phase"))
      return m.bad_value(m.has("align") ? "align" : "phase", "'align' and 'phase' do not apply to a fixed mapping ('addr')");
    // Fixed mappings so far do not overlap each other: only the nearest one starting below
    // the new end can overlap it.
    if (auto nx = gi.fixed.lower_bound(ms.addr + ms.size); nx != gi.fixed.begin())
      if (const map_spec& e = g.maps[std::prev(nx)->second]; ms.addr < e.addr + e.size && e.addr < ms.addr + ms.size)
        return m.bad_value("addr", "fixed mapping '" + ms.name + "' [" + hex(ms.addr) + ", " + hex(ms.addr + ms.size) +
                                       ") overlaps fixed mapping '" + e.name + "' [" + hex(e.addr) + ", " +
                                       hex(e.addr + e.size) + ") in group '" + g.name + "'");
  }
  if (status s = m.get_size("align", ms.align); !s.ok()) return s;
  if (m.has("align") && (!is_pow2(ms.align) || ms.align < kPage))
    return m.bad_value("align", "'align' in [[group.map]] must be a power of two >= 4KiB, not " + std::to_string(ms.align));
  if (status s = m.get_page_size("phase", ms.phase); !s.ok()) return s;
  if (m.has("phase")) {
    if (!m.has("align")) return m.bad_value("phase", "'phase' needs 'align'");
    if (ms.phase >= ms.align)
      return m.bad_value("phase", "'phase' (" + std::to_string(ms.phase) + ") must be less than 'align' (" +
                                      std::to_string(ms.align) + ")");
  }
  // The rules every reader shares (op_rules.h), on the op this mapping becomes.
  op probe;
  probe.kind = op_kind::mmap;
  probe.object = ms.object;
  probe.shared = ms.shared;
  probe.hugetlb = ms.hugetlb;
  probe.noreserve = ms.noreserve;
  probe.page_size = ms.page_size;
  probe.obj_off = ms.offset;
  probe.len = ms.size;
  probe.fixed = ms.fixed;
  probe.addr = ms.addr;
  probe.align = ms.align;
  probe.phase_off = ms.phase;
  if (auto e = check_mmap(sc.profile, sc.objects, probe)) {
    static const std::map<std::string, std::string> key_of = {{"off", "offset"}, {"len", "size"}, {"obj", "object"}, {"private", "shared"}};
    const std::string key = key_of.count(e->field) ? key_of.at(e->field) : e->field;
    return m.bad_value(m.has(key) ? key : "object", e->message);
  }
  gi.names.insert(ms.name);
  if (ms.fixed) gi.fixed.emplace(ms.addr, g.maps.size());
  g.maps.push_back(std::move(ms));
  return {};
}

// `image = "typical"`, `"none"` or a table of resident sizes (image.h): the image's
// mappings go first in the group, fixed, touched at spawn; its files are the objects
// image.exe and image.libs, shared by every group with an image.
// An image's mappings must lie in the format's user space and apart from each other (a
// size a table gives can push one into the next, or past TASK_SIZE on i386).
status check_image_fits(const table_reader& gr, std::vector<image_map> maps, const paging_format& f) {
  auto hex = [](vaddr a) { return fmt::format("{:#x}", a); };
  std::sort(maps.begin(), maps.end(), [](const image_map& a, const image_map& b) { return a.addr < b.addr; });
  for (size_t i = 0; i < maps.size(); ++i) {
    const image_map& m = maps[i];
    const vaddr end = m.addr + m.size;
    if (end > f.task_size || end < m.addr)
      return gr.bad_value("image", "the process image's " + m.name + " [" + hex(m.addr) + ", " + hex(end) +
                                       ") lies outside the user address space of the " + f.name + " format (TASK_SIZE " +
                                       hex(f.task_size) + "): make it smaller");
    if (i + 1 < maps.size() && end > maps[i + 1].addr)
      return gr.bad_value("image", "the process image's " + m.name + " [" + hex(m.addr) + ", " + hex(end) +
                                       ") runs into its " + maps[i + 1].name + " at " + hex(maps[i + 1].addr) +
                                       ": make it smaller");
  }
  return {};
}

status read_image(const source_text& src, const table_reader& gr, scenario_spec& sc, group_spec& g, group_index& gi) {
  if (!gr.has("image")) return {};
  image_spec img;
  const toml::node* n = gr.table().get("image");
  if (n->is_string()) {
    const std::string v = n->as_string()->get();
    if (v == "none") return {};
    if (v == "inspected") {  // the group's own mappings are the whole process (vmlab inspect --scenario)
      g.image = true;
      return {};
    }
    if (v != "typical")
      return gr.bad_value("image", "'image' in [[group]] must be \"typical\", \"inspected\", \"none\" or a table "
                                   "of sizes (text, data, heap, libraries, stack), not '" + v + "'");
  } else if (const toml::table* t = n->as_table()) {
    table_reader it(src, *t, "the image of group '" + g.name + "'");
    if (status s = it.check_keys({"text", "data", "heap", "libraries", "stack"}); !s.ok()) return s;
    for (auto [key, field] : {std::pair{"text", &img.text}, {"data", &img.data}, {"heap", &img.heap},
                              {"libraries", &img.libraries}, {"stack", &img.stack}}) {
      if (status s = it.get_size(key, *field); !s.ok()) return s;
      if (*field > (bytes{1} << 40))
        return it.bad_value(key, std::string("'") + key + "' of a process image must be at most 1TiB, not " + std::to_string(*field));
    }
  } else {
    return gr.wrong_type("image", *n, "\"typical\", \"inspected\", \"none\" or a table of sizes");
  }
  g.image = true;
  const std::vector<image_map> maps = image_maps(img, sc.profile.paging);
  if (status s = check_image_fits(gr, maps, sc.profile.paging); !s.ok()) return s;
  for (const image_map& im : maps) {
    map_spec ms;
    ms.name = im.name;
    ms.where = ms.size_at = ms.addr_at = gr.where("image");
    if (im.object != "anon") {
      auto [it, added] = sc.object_ids.try_emplace(im.object, int32_t(sc.objects.size()));
      if (added) sc.objects.push_back({im.object, object_kind::file, im.size, 0});
      object_decl& d = sc.objects[size_t(it->second)];
      if (d.kind != object_kind::file)
        return gr.bad_value("image", "object '" + im.object + "' is the image's file: declare no object of that name");
      d.size = std::max(d.size, im.size);
      ms.object = it->second;
      ms.prot = prot_read;
    }
    ms.fixed = true;
    ms.addr = im.addr;
    ms.size = im.size;
    ms.spawn_touch_off = im.touch_off;
    ms.spawn_touch_len = im.touch_len;
    ms.spawn_touch_write = im.write;
    gi.names.insert(ms.name);
    gi.fixed.emplace(ms.addr, g.maps.size());
    g.maps.push_back(std::move(ms));
  }
  return {};
}

status read_groups(const source_text& src, const table_reader& top, scenario_spec& sc) {
  std::vector<const toml::table*> tables;
  if (status s = top.get_tables("group", tables); !s.ok()) return s;
  std::unordered_set<std::string> names;
  for (const toml::table* t : tables) {
    table_reader gr(src, *t, "[[group]]");
    if (status s = gr.check_keys({"name", "count", "map", "image"}); !s.ok()) return s;
    group_spec g;
    if (!gr.has("name")) return gr.missing("name");
    if (status s = gr.get_token("name", g.name); !s.ok()) return s;
    if (!names.insert(g.name).second) return gr.bad_value("name", "duplicate group name '" + g.name + "'");
    uint64_t count = 1;
    if (status s = gr.get_count("count", count, 1, kPidMaxLimit); !s.ok()) return s;
    g.count = uint32_t(count);
    std::vector<const toml::table*> maps;
    if (status s = gr.get_tables("map", maps); !s.ok()) return s;
    group_index gi;
    gi.names.reserve(maps.size());
    if (status s = read_image(src, gr, sc, g, gi); !s.ok()) return s;
    for (const toml::table* mt : maps)
      if (status s = read_map(src, *mt, sc, g, gi); !s.ok()) return s;
    sc.groups.push_back(std::move(g));
  }
  return {};
}

// An optional size of a [[phase]] in whole pages, not 0 ('length', 'request').
status get_phase_size(const table_reader& p, const char* key, std::optional<bytes>& out, source_location& at) {
  if (!p.has(key)) return {};
  bytes v = 0;
  if (status s = p.get_page_size(key, v); !s.ok()) return s;
  if (v == 0) return p.bad_value(key, std::string("'") + key + "' in [[phase]] must not be 0");
  out = v;
  at = p.where(key);
  return {};
}

// A [[phase]]'s 'map' and the 'offset' in it.
status get_phase_map(const table_reader& p, phase_spec& ph) {
  if (status s = p.get("map", ph.map); !s.ok()) return s;
  ph.map_at = p.where("map");
  ph.offset_at = p.where("offset");
  return p.get_page_size("offset", ph.offset);
}

// The keys of an mremap phase: the mapping, its new 'size', 'maymove' and a fixed
// 'address' (which implies maymove, as MREMAP_FIXED needs MREMAP_MAYMOVE).
status read_mremap_phase(const table_reader& p, phase_spec& ph) {
  if (!p.has("map")) return p.missing("map");
  if (status s = p.get("map", ph.map); !s.ok()) return s;
  ph.map_at = p.where("map");
  if (!p.has("size")) return p.missing("size");
  if (status s = get_phase_size(p, "size", ph.length, ph.length_at); !s.ok()) return s;
  if (status s = p.get("maymove", ph.maymove); !s.ok()) return s;
  if (p.has("address")) {
    bytes a = 0;
    if (status s = p.get_size("address", a); !s.ok()) return s;
    ph.address = a;
    ph.address_at = p.where("address");
    ph.maymove = true;
  }
  return {};
}

// The keys of a read, readv, write or fsync phase (the generator checks them against the
// object and the mapping, which it knows).
status read_io_phase(const table_reader& p, phase_spec& ph) {
  if (!p.has("object")) return p.missing("object");
  if (status s = p.get_token("object", ph.object); !s.ok()) return s;
  ph.object_at = p.where("object");
  if (ph.act == phase_action::fsync) return {};
  ph.file_offset_at = p.where("file_offset");
  if (status s = p.get_page_size("file_offset", ph.file_offset); !s.ok()) return s;
  if (status s = get_phase_size(p, "length", ph.length, ph.length_at); !s.ok()) return s;
  if (status s = get_phase_size(p, "request", ph.request, ph.request_at); !s.ok()) return s;
  if (p.has("map")) {
    if (status s = get_phase_map(p, ph); !s.ok()) return s;
  } else if (ph.act == phase_action::readv) {
    return p.missing("map");
  } else if (p.has("offset")) {
    return p.bad_value("offset", "'offset' is the buffer's offset in 'map': give 'map' too");
  }
  if (ph.act == phase_action::readv) {
    if (!p.has("iovecs")) return p.missing("iovecs");
    if (status s = p.get_count("iovecs", ph.iovecs, 1, 1024); !s.ok()) return s;
    ph.iovecs_at = p.where("iovecs");
  }
  return p.get("direct", ph.direct);
}

status read_phases(const source_text& src, const table_reader& top, scenario_spec& sc) {
  std::vector<const toml::table*> tables;
  if (status s = top.get_tables("phase", tables); !s.ok()) return s;
  for (const toml::table* t : tables) {
    table_reader p(src, *t, "[[phase]]");
    if (status s = p.check_keys({"name", "group", "action", "map", "offset", "length", "ranges", "pattern", "stride",
                                 "fraction", "theta", "write", "prot", "advice", "children", "into", "processes", "sample",
                                 "object", "file_offset", "request", "iovecs", "direct", "size", "maymove", "address"});
        !s.ok())
      return s;
    phase_spec ph;
    ph.where = p.where();
    ph.name = "phase" + std::to_string(sc.phases.size() + 1);
    if (status s = p.get_token("name", ph.name); !s.ok()) return s;
    for (const auto& e : sc.phases)
      if (e.name == ph.name) return p.bad_value("name", "duplicate phase name '" + ph.name + "'");
    if (p.has("group")) {
      std::string g;
      if (status s = p.get("group", g); !s.ok()) return s;
      ph.group = g;
      ph.group_at = p.where("group");
    }
    if (!p.has("action")) return p.missing("action");
    std::string act;
    if (status s = p.get("action", act); !s.ok()) return s;
    static constexpr std::pair<std::string_view, phase_action> kActions[] = {
        {"touch", phase_action::touch},       {"fork", phase_action::fork},       {"exit", phase_action::exit},
        {"munmap", phase_action::munmap},     {"mprotect", phase_action::mprotect}, {"madvise", phase_action::madvise},
        {"read", phase_action::read},         {"readv", phase_action::readv},     {"write", phase_action::write},
        {"fsync", phase_action::fsync},       {"msync", phase_action::msync},     {"reclaim", phase_action::reclaim},
        {"mremap", phase_action::mremap},     {"remap_file_pages", phase_action::remap_file_pages}};
    auto it = std::find_if(std::begin(kActions), std::end(kActions), [&](const auto& a) { return a.first == act; });
    if (it == std::end(kActions))
      return p.bad_value("action", "unknown action '" + act + "' (expected touch, fork, exit, munmap, mprotect, madvise, "
                                   "read, readv, write, fsync, msync, mremap, remap_file_pages or reclaim)");
    ph.act = it->second;

    // Keys that do not apply to the action are mistakes, not silently ignored. reclaim is
    // the kernel's, not a process's: no group, no processes.
    std::vector<std::string_view> applies = {"name", "action", "sample"};
    if (ph.act != phase_action::reclaim) applies.insert(applies.end(), {"group", "processes"});
    switch (ph.act) {
      case phase_action::reclaim: applies.push_back("size"); break;
      case phase_action::touch: applies.insert(applies.end(), {"map", "offset", "length", "ranges", "pattern", "stride", "fraction", "theta", "write"}); break;
      case phase_action::fork: applies.insert(applies.end(), {"children", "into"}); break;
      case phase_action::exit: break;
      case phase_action::munmap: applies.insert(applies.end(), {"map", "offset", "length"}); break;
      case phase_action::mprotect: applies.insert(applies.end(), {"map", "offset", "length", "prot"}); break;
      case phase_action::madvise: applies.insert(applies.end(), {"map", "offset", "length", "advice"}); break;
      case phase_action::read:
      case phase_action::write:
        applies.insert(applies.end(), {"object", "file_offset", "length", "request", "map", "offset", "direct"});
        break;
      case phase_action::readv:
        applies.insert(applies.end(), {"object", "file_offset", "length", "request", "map", "offset", "iovecs", "direct"});
        break;
      case phase_action::fsync: applies.insert(applies.end(), {"object"}); break;
      case phase_action::msync: applies.insert(applies.end(), {"map", "offset", "length"}); break;
      case phase_action::mremap: applies.insert(applies.end(), {"map", "size", "maymove", "address"}); break;
      case phase_action::remap_file_pages:
        applies.insert(applies.end(), {"map", "offset", "length", "file_offset"});
        break;
    }
    for (auto&& [k, v] : *t)
      if (std::find(applies.begin(), applies.end(), k.str()) == applies.end())
        return error_at(src.loc(k.source()), "key '" + std::string(k.str()) + "' does not apply to action '" + act + "'");

    if (status s = p.get("sample", ph.sample); !s.ok()) return s;
    if (p.has("processes")) {
      uint64_t n = 0;
      if (status s = p.get_count("processes", n, 1, kPidMaxLimit); !s.ok()) return s;
      ph.processes = n;
      ph.processes_at = p.where("processes");
    }
    if (ph.act == phase_action::fork) {
      uint64_t c = 1;
      if (status s = p.get_count("children", c, 1, 65536); !s.ok()) return s;
      ph.children = uint32_t(c);
      if (!p.has("into")) return p.missing("into");
      if (status s = p.get_token("into", ph.into); !s.ok()) return s;
      ph.into_at = p.where("into");
    } else if (ph.act == phase_action::read || ph.act == phase_action::readv || ph.act == phase_action::write ||
               ph.act == phase_action::fsync) {
      if (status s = read_io_phase(p, ph); !s.ok()) return s;
    } else if (ph.act == phase_action::reclaim) {
      if (status s = get_phase_size(p, "size", ph.length, ph.length_at); !s.ok()) return s;
    } else if (ph.act == phase_action::mremap) {
      if (status s = read_mremap_phase(p, ph); !s.ok()) return s;
    } else if (ph.act != phase_action::exit) {
      if (!p.has("map")) return p.missing("map");
      if (status s = get_phase_map(p, ph); !s.ok()) return s;
      if (status s = get_phase_size(p, "length", ph.length, ph.length_at); !s.ok()) return s;
      if (ph.act == phase_action::remap_file_pages) {
        if (!p.has("file_offset")) return p.missing("file_offset");
        ph.file_offset_at = p.where("file_offset");
        if (status s = p.get_page_size("file_offset", ph.file_offset); !s.ok()) return s;
      }
    }
    if (ph.act == phase_action::touch) {
      std::string pat = "sequential";
      if (status s = p.get("pattern", pat); !s.ok()) return s;
      if (pat == "sequential") ph.pattern = touch_pattern::all;
      else if (pat == "stride") ph.pattern = touch_pattern::stride;
      else if (pat == "uniform") ph.pattern = touch_pattern::uniform;
      else if (pat == "zipf") ph.pattern = touch_pattern::zipf;
      else return p.bad_value("pattern", "unknown pattern '" + pat + "' (expected sequential, stride, uniform or zipf)");
      if (status s = p.get("write", ph.write); !s.ok()) return s;
      if (p.has("ranges")) {
        for (const char* k : {"offset", "length", "pattern"})
          if (p.has(k)) return p.bad_value(k, std::string("'") + k + "' does not go with 'ranges' (each range is [offset, length], touched in full)");
        if (status s = p.get_ranges("ranges", ph.ranges); !s.ok()) return s;
        ph.ranges_at = p.where("ranges");
      }
      const bool random = ph.pattern == touch_pattern::uniform || ph.pattern == touch_pattern::zipf;
      if (p.has("stride") && ph.pattern != touch_pattern::stride)
        return p.bad_value("stride", "'stride' applies only to pattern = \"stride\"");
      if (p.has("fraction") && !random) return p.bad_value("fraction", "'fraction' applies only to pattern = \"uniform\" or \"zipf\"");
      if (p.has("theta") && ph.pattern != touch_pattern::zipf) return p.bad_value("theta", "'theta' applies only to pattern = \"zipf\"");
      if (ph.pattern == touch_pattern::stride) {
        if (!p.has("stride")) return p.missing("stride");
        if (status s = p.get_size("stride", ph.stride); !s.ok()) return s;
        if (!is_pow2(ph.stride) || ph.stride < kPage)
          return p.bad_value("stride", "'stride' in [[phase]] must be a power of two >= 4KiB, not " + std::to_string(ph.stride));
      }
      if (random) {
        if (!p.has("fraction")) return p.missing("fraction");
        if (status s = p.get("fraction", ph.fraction); !s.ok()) return s;
        ph.fraction_at = p.where("fraction");
        if (ph.pattern == touch_pattern::uniform && !(ph.fraction > 0 && ph.fraction <= 1))
          return p.bad_value("fraction", "'fraction' for a uniform touch must be in (0, 1], not " + fmt::format("{}", ph.fraction));
        // Engines expand the access list in memory: 100 accesses per page is plenty.
        if (ph.pattern == touch_pattern::zipf && !(ph.fraction > 0 && ph.fraction <= 100))
          return p.bad_value("fraction", "'fraction' for a zipf touch must be in (0, 100], not " + fmt::format("{}", ph.fraction));
      }
      if (ph.pattern == touch_pattern::zipf) {
        if (status s = p.get("theta", ph.theta); !s.ok()) return s;
        if (!(ph.theta > 0 && ph.theta <= 10))
          return p.bad_value("theta", "'theta' must be in (0, 10], not " + fmt::format("{}", ph.theta));
      }
    }
    if (ph.act == phase_action::mprotect) {
      if (!p.has("prot")) return p.missing("prot");
      if (status s = p.get_prot("prot", ph.prot); !s.ok()) return s;
    }
    if (ph.act == phase_action::madvise) {
      std::string adv = "dontneed";
      if (status s = p.get("advice", adv); !s.ok()) return s;
      if (adv == "dontneed") ph.adv = advice::dontneed;
      else if (adv == "hugepage") ph.adv = advice::hugepage;
      else if (adv == "nohugepage") ph.adv = advice::nohugepage;
      else if (adv == "sequential") ph.adv = advice::sequential;
      else if (adv == "random") ph.adv = advice::random;
      else return p.bad_value("advice", "unknown advice '" + adv + "' (expected \"dontneed\", \"hugepage\", \"nohugepage\", "
                                        "\"sequential\" or \"random\")");
    }
    sc.phases.push_back(std::move(ph));
  }
  return {};
}

result<scenario_spec> read_scenario(const source_text& src, const toml::table& root, const std::string& default_name) {
  scenario_spec sc;
  sc.name = default_name;
  table_reader top(src, root, "the top level");
  if (status s = top.check_keys({"name", "description", "seed", "machine", "kernel", "object", "group", "phase"}); !s.ok())
    return s;
  if (status s = top.get("name", sc.name); !s.ok()) return s;
  std::string description;
  if (status s = top.get("description", description); !s.ok()) return s;
  if (top.has("seed")) {
    int64_t seed = 0;
    if (status s = top.get("seed", seed); !s.ok()) return s;
    if (seed < 0) return top.bad_value("seed", "'seed' must not be negative, not " + std::to_string(seed));
    sc.seed = uint64_t(seed);
  }
  if (status s = read_machine(src, top, sc); !s.ok()) return s;
  if (status s = read_kernel(src, top, sc); !s.ok()) return s;
  if (status s = check_pools(src, top, sc); !s.ok()) return s;
  if (status s = check_machine_memory(src, top, sc); !s.ok()) return s;
  if (status s = read_objects(src, top, sc); !s.ok()) return s;
  if (status s = read_groups(src, top, sc); !s.ok()) return s;
  if (status s = read_phases(src, top, sc); !s.ok()) return s;
  // A scenario without processes would run and print zeros: a mistake, not a result.
  if (sc.groups.empty())
    return error_at(top.where(), "the scenario has no [[group]]: no process would run (a scenario needs at least one "
                                 "group of processes)");
  uint64_t total = 0;
  for (const auto& g : sc.groups) total += g.count;
  if (total > kPidMaxLimit)
    return top.bad_value("group", "the groups have " + std::to_string(total) + " processes; at most " +
                                      std::to_string(kPidMaxLimit) + " (PID_MAX_LIMIT)");
  return sc;
}

// ---------------------------------------------------------------------------------------
std::string stem_of(const std::string& path) {
  std::string n = std::filesystem::path(path).filename().string();
  if (n.size() > 5 && n.substr(n.size() - 5) == ".toml") n.resize(n.size() - 5);
  return n;
}

// ---------------------------------------------------------------------------------------
// Settings (--set PATH=VALUE): changes to the TOML document before it is read, so that
// every rule of the reader applies to them as to the file.

status setting_error(const std::string& setting, std::string msg) {
  source_location l;
  l.file = "--set " + setting;
  l.line = 1;
  l.column = 1;
  l.text = setting;
  return error_at(l, std::move(msg));
}

// The path's keys: split at dots outside double quotes, quotes removed.
std::vector<std::string> setting_path(std::string_view path) {
  std::vector<std::string> keys(1);
  bool quoted = false;
  for (char c : path) {
    if (c == '"') quoted = !quoted;
    else if (c == '.' && !quoted) keys.emplace_back();
    else keys.back() += c;
  }
  return keys;
}

status apply_setting(toml::table& root, const std::string& setting) {
  const size_t eq = setting.find('=');
  if (eq == std::string::npos || eq == 0)
    return setting_error(setting, "a setting is PATH=VALUE (e.g. object.pool.kind=hugetlb, group.db.count=200), not '" +
                                      setting + "'");
  const std::vector<std::string> keys = setting_path(std::string_view(setting).substr(0, eq));
  const std::string value = setting.substr(eq + 1);
  toml::node* at = &root;
  std::string where;  // the path so far, for messages
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    if (key.empty()) return setting_error(setting, "empty key in the path '" + setting.substr(0, eq) + "'");
    const bool last = i + 1 == keys.size();
    if (toml::array* arr = at->as_array()) {
      // An array of tables ([[object]], [[group]], a group's map): the element named `key`.
      toml::node* found = nullptr;
      std::string names;
      for (auto& e : *arr) {
        const toml::table* t = e.as_table();
        const std::string name = t ? t->get("name") && t->get("name")->is_string() ? **t->get("name")->as_string() : "" : "";
        names += (names.empty() ? "" : ", ") + name;
        if (t && name == key) found = &e;
      }
      if (!found)
        return setting_error(setting, "'" + where + "' has no element named '" + key + "' (it has: " +
                                          (names.empty() ? "none" : names) + ")");
      if (last) return setting_error(setting, "'" + where + "." + key + "' is a whole element: set one of its keys");
      at = found;
    } else if (toml::table* t = at->as_table()) {
      if (last) {
        // A value: TOML if it parses as TOML, else the text as a string (parsed as one, so
        // that the reader's errors can point into the setting).
        const std::string doc_name = std::string(source_text::kSetPrefix) + setting;
        toml::table doc;
        try {
          doc = toml::parse("v = " + value, doc_name);
        } catch (const toml::parse_error&) {
          std::string quoted = "\"";
          for (char c : value) {
            if (c == '"' || c == '\\') quoted += '\\';
            quoted += c;
          }
          try {
            doc = toml::parse("v = " + quoted + "\"", doc_name);
          } catch (const toml::parse_error& e) {
            return setting_error(setting, "cannot read the value '" + value + "': " + std::string(e.description()));
          }
        }
        toml::source_region key_at;  // for "unknown key" errors: the setting's path
        key_at.begin = {1, 0};
        key_at.end = {1, 0};
        key_at.path = std::make_shared<const std::string>(doc_name);
        t->insert_or_assign(toml::key(key, std::move(key_at)), std::move(*doc.get("v")));
        return {};
      }
      toml::node* next = t->get(key);
      if (!next) next = &t->insert_or_assign(key, toml::table{}).first->second;  // e.g. [kernel.overrides]
      at = next;
    } else {
      return setting_error(setting, "'" + where + "' is a value, not a table: it has no key '" + key + "'");
    }
    where += (where.empty() ? "" : ".") + key;
  }
  return {};
}

result<op_stream> parse_named(std::string_view text, const std::string& file, const std::string& default_name,
                              const std::vector<std::string>& settings = {}) {
  try {
    source_text src(file, text);
    toml::table root;
    try {
      root = toml::parse(text, file);
    } catch (const toml::parse_error& e) {
      return error_at(src.loc(e.source().begin), "TOML syntax error: " + std::string(e.description()));
    }
    for (const std::string& s : settings)
      if (status st = apply_setting(root, s); !st.ok()) return st;
    result<scenario_spec> sc = read_scenario(src, root, default_name);
    if (!sc.ok()) return sc.error();
    return generate(*sc);
  } catch (const std::exception& e) {
    return status::invalid_argument(file + ": cannot read scenario: " + e.what());
  }
}

}  // namespace

result<op_stream> parse_scenario(std::string_view text, const std::string& name, const std::vector<std::string>& settings) {
  return parse_named(text, name, stem_of(name), settings);
}

result<std::string> scenario_with_settings(std::string_view text, const std::string& name,
                                           const std::vector<std::string>& settings) {
  if (auto r = parse_named(text, name, stem_of(name), settings); !r.ok()) return r.error();
  toml::table root = toml::parse(text, name);  // it parsed above
  for (const std::string& s : settings)
    if (status st = apply_setting(root, s); !st.ok()) return st;
  std::ostringstream out;
  out << root << "\n";
  return out.str();
}

result<op_stream> load_scenario(const std::string& name_or_path, const std::vector<std::string>& settings) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(name_or_path, ec)) {
    std::ifstream in(name_or_path, std::ios::binary);
    std::ostringstream buf;
    buf << in.rdbuf();
    if (!in && !in.eof()) return status::io_error("cannot read scenario file '" + name_or_path + "'");
    return parse_named(buf.str(), name_or_path, stem_of(name_or_path), settings);
  }
  if (const builtin_scenario* b = find_builtin(name_or_path)) {
    const std::string name(b->name);
    return parse_named(b->text, "scenarios/" + name + ".toml", name, settings);
  }
  std::string known;
  std::vector<std::string_view> names;
  for (const auto& b : builtin_scenarios()) {
    known += (known.empty() ? "" : ", ") + std::string(b.name);
    names.push_back(b.name);
  }
  return status::invalid_argument("no scenario file or built-in scenario named '" + name_or_path + "'" +
                                  did_you_mean(name_or_path, names) + " (built-in: " + (known.empty() ? "none" : known) +
                                  ")");
}

std::string scenario_description(std::string_view text) {
  try {
    const toml::table t = toml::parse(text);
    return t["description"].value_or(std::string());
  } catch (const toml::parse_error&) {
    return "";
  }
}

}  // namespace vmlab
