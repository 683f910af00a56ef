// The scenario generator: a scenario_spec becomes the deterministic op stream.
//
// Pids are handed out in group order, then to children as they are forked; each process
// maps its group's mappings at spawn; each phase emits its ops for the acting processes in
// pid order and ends with a `phase` sample op. Random touches carry their own seed, a
// splitmix64 hash of the scenario seed and the op's index, so that the engines expand
// exactly the same pages (workload/pattern.h).
#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "workload/op_rules.h"
#include "workload/pattern.h"
#include "workload/scenario_spec.h"

namespace vmlab {
namespace {

class generator {
 public:
  explicit generator(const scenario_spec& sc) : sc_(sc) {}

  result<op_stream> run() {
    out_.machine = sc_.machine;
    out_.objects = sc_.objects;
    out_.source = sc_.name;
    procs_.push_back({});  // pid 0 is never used
    size_t maps = 0;
    for (const auto& g : sc_.groups) maps += g.maps.size();
    map_ids_.reserve(maps);  // one rehash for a scenario of 200,000 mappings
    for (const auto& g : sc_.groups) {
      out_.whole_process |= g.image;
      group_ids_.try_emplace(g.name, groups_.size());
      groups_.push_back({g.name, {}});
      for (uint32_t i = 0; i < g.count; ++i) {
        const uint32_t pid = next_pid_++;
        procs_.push_back({true, groups_.size() - 1, &g.maps, {}});
        groups_.back().pids.push_back(pid);
        op s;
        s.kind = op_kind::spawn;
        s.pid = pid;
        emit(std::move(s));
        for (const auto& m : g.maps) {
          emit(mmap_op(pid, m));
          if (m.spawn_touch_len) {  // a process image's mapping, in use from the start
            op t;
            t.kind = op_kind::touch;
            t.pid = pid;
            t.map = map_index(m.name);
            t.off = m.spawn_touch_off;
            t.len = m.spawn_touch_len;
            t.write = m.spawn_touch_write;
            emit(std::move(t));
          }
        }
      }
    }
    for (const auto& ph : sc_.phases)
      if (status s = run_phase(ph); !s.ok()) return s;
    return std::move(out_);
  }

 private:
  struct proc {
    bool alive = false;
    size_t group = 0;
    const std::vector<map_spec>* maps = nullptr;
    // Mappings an mremap phase gave another size, (name, bytes), inherited at fork: a
    // vector, as a process has few and a scenario may have a million processes.
    std::vector<std::pair<std::string, bytes>> resized;
  };
  struct live_group {
    std::string name;
    std::vector<uint32_t> pids;  // live members, ascending
  };

  void emit(op o) { out_.ops.push_back(std::move(o)); }

  uint32_t map_index(const std::string& name) {
    // A hash map, not a scan of map_names: a scenario may name 200,000 mappings.
    auto [it, added] = map_ids_.try_emplace(name, uint32_t(out_.map_names.size()));
    if (added) out_.map_names.push_back(name);
    return it->second;
  }

  op mmap_op(uint32_t pid, const map_spec& m) {
    op o;
    o.kind = op_kind::mmap;
    o.pid = pid;
    o.map = map_index(m.name);
    o.object = m.object;
    o.shared = m.shared;
    o.locked = m.locked;
    o.fixed = m.fixed;
    o.addr = m.addr;
    o.align = m.align;
    o.phase_off = m.phase;
    o.obj_off = m.offset;
    o.prot = m.prot;
    o.len = m.size;
    o.hugetlb = m.hugetlb;
    o.noreserve = m.noreserve;
    o.page_size = m.page_size;
    o.has_hint = m.has_hint;
    o.hint = m.hint;
    return o;
  }

  live_group* find_group(const std::string& name) {
    auto it = group_ids_.find(name);
    return it == group_ids_.end() ? nullptr : &groups_[it->second];
  }

  status actors(const phase_spec& ph, std::vector<uint32_t>& pids) {
    if (ph.group) {
      live_group* g = find_group(*ph.group);
      if (!g) {
        for (const auto& later : sc_.phases)
          if (later.act == phase_action::fork && later.into == *ph.group)
            return error_at(ph.group_at, "group '" + *ph.group + "' does not exist yet: phase '" + later.name +
                                             "' forks it later");
        std::string known;
        for (const auto& e : groups_) known += (known.empty() ? "" : ", ") + e.name;
        return error_at(ph.group_at, "unknown group '" + *ph.group + "' (groups: " + known + ")");
      }
      if (g->pids.empty()) return error_at(ph.group_at, "group '" + *ph.group + "' has no live processes");
      pids = g->pids;
    } else {
      for (uint32_t pid = 1; pid < procs_.size(); ++pid)
        if (procs_[pid].alive) pids.push_back(pid);
      if (pids.empty()) return error_at(ph.where, "phase '" + ph.name + "': no live processes");
    }
    if (ph.processes) {
      if (*ph.processes > pids.size())
        return error_at(ph.processes_at, "'processes' is " + std::to_string(*ph.processes) + " but only " +
                                             std::to_string(pids.size()) + " processes are live");
      pids.resize(*ph.processes);
    }
    return {};
  }

  status run_phase(const phase_spec& ph) {
    if (ph.act == phase_action::reclaim) {  // the kernel's, once: no acting process
      op o;
      o.kind = op_kind::reclaim;
      o.len = ph.length.value_or(0);
      emit(std::move(o));
      return {};
    }
    std::vector<uint32_t> pids;
    if (status s = actors(ph, pids); !s.ok()) return s;
    if (ph.act == phase_action::fork) {
      if (find_group(ph.into)) return error_at(ph.into_at, "group '" + ph.into + "' already exists");
      if (uint64_t(next_pid_) + uint64_t(pids.size()) * ph.children > kPidMaxLimit + 1)
        return error_at(ph.where, "fork would exceed " + std::to_string(kPidMaxLimit) + " processes (PID_MAX_LIMIT)");
      live_group children{ph.into, {}};
      for (uint32_t parent : pids) {
        for (uint32_t c = 0; c < ph.children; ++c) {
          const uint32_t child = next_pid_++;
          procs_.push_back({true, groups_.size(), procs_[parent].maps, procs_[parent].resized});
          children.pids.push_back(child);
          op o;
          o.kind = op_kind::fork;
          o.pid = parent;
          o.child = child;
          emit(std::move(o));
        }
      }
      group_ids_.try_emplace(children.name, groups_.size());
      groups_.push_back(std::move(children));
    } else if (ph.act == phase_action::exit) {
      for (uint32_t pid : pids) {
        op o;
        o.kind = op_kind::exit;
        o.pid = pid;
        emit(std::move(o));
        procs_[pid].alive = false;
        auto& members = groups_[procs_[pid].group].pids;
        members.erase(std::find(members.begin(), members.end(), pid));
      }
    } else if (ph.act == phase_action::read || ph.act == phase_action::readv || ph.act == phase_action::write ||
               ph.act == phase_action::fsync) {
      for (uint32_t pid : pids)
        if (status s = io_ops(ph, pid); !s.ok()) return s;
    } else if (ph.act == phase_action::mremap) {
      for (uint32_t pid : pids)
        if (status s = mremap_op(ph, pid); !s.ok()) return s;
    } else if (!ph.ranges.empty()) {
      for (uint32_t pid : pids)
        for (const auto& [off, len] : ph.ranges) {
          phase_spec one = ph;
          one.ranges.clear();
          one.offset = off;
          one.length = len;
          one.offset_at = one.length_at = ph.ranges_at;
          if (status s = range_op(one, pid); !s.ok()) return s;
        }
    } else {
      for (uint32_t pid : pids)
        if (status s = range_op(ph, pid); !s.ok()) return s;
    }
    if (!ph.sample) return {};
    op p;
    p.kind = op_kind::phase;
    p.name = ph.name;
    emit(std::move(p));
    return {};
  }

  // The mapping `ph.map` of process pid, and its size now (as created, or as an mremap
  // phase left it).
  result<std::pair<const map_spec*, bytes>> find_map(const phase_spec& ph, uint32_t pid) {
    const auto& maps = *procs_[pid].maps;
    auto it = std::find_if(maps.begin(), maps.end(), [&](const map_spec& m) { return m.name == ph.map; });
    if (it == maps.end())
      return error_at(ph.map_at, "unknown mapping '" + ph.map + "': process " + std::to_string(pid) + " (group '" +
                                     groups_[procs_[pid].group].name + "') has no such mapping");
    const bytes* r = resized(pid, ph.map);
    return std::pair<const map_spec*, bytes>{&*it, r ? *r : it->size};
  }

  // The size an mremap phase gave process pid's mapping `name`, or nullptr.
  bytes* resized(uint32_t pid, const std::string& name) {
    auto& rs = procs_[pid].resized;
    auto r = std::find_if(rs.begin(), rs.end(), [&](const auto& e) { return e.first == name; });
    return r == rs.end() ? nullptr : &r->second;
  }

  // mremap of the whole mapping to ph.length bytes (op_rules.h check_mremap's rules).
  status mremap_op(const phase_spec& ph, uint32_t pid) {
    auto m = find_map(ph, pid);
    if (!m.ok()) return m.error();
    op o;
    o.kind = op_kind::mremap;
    o.pid = pid;
    o.map = map_index(ph.map);
    o.len = *ph.length;
    o.maymove = ph.maymove;
    if (ph.address) {
      o.fixed = true;
      o.addr = *ph.address;
    }
    if (auto e = check_mremap(sc_.profile, o)) return error_at(e->field == "addr" ? ph.address_at : ph.length_at, e->message);
    // vmlab models no page past an object's end (mremap.cc): a load error, not a run's.
    if (const map_spec& ms = *m->first; ms.object >= 0) {
      const object_decl& d = sc_.objects[size_t(ms.object)];
      if (ms.offset > d.size || o.len > d.size - ms.offset)
        return error_at(ph.length_at, "mremap of '" + ph.map + "' to " + std::to_string(o.len) + " bytes would map past the end "
                                      "of object '" + d.name + "' (" + std::to_string(d.size) + " bytes from offset " +
                                      std::to_string(ms.offset) + "; vmlab models no page beyond an object's end)");
    }
    if (bytes* r = resized(pid, ph.map)) *r = o.len;
    else procs_[pid].resized.emplace_back(ph.map, o.len);
    emit(std::move(o));
    return {};
  }

  status range_op(const phase_spec& ph, uint32_t pid) {
    auto found = find_map(ph, pid);
    if (!found.ok()) return found.error();
    const map_spec* it = found->first;
    const bytes size = found->second;
    if (ph.offset >= size)
      return error_at(ph.offset_at, "offset " + std::to_string(ph.offset) + " is beyond the end of mapping '" + ph.map +
                                        "' (" + std::to_string(size) + " bytes)");
    const bytes len = ph.length.value_or(size - ph.offset);
    if (len > size - ph.offset)
      return error_at(ph.length_at, "offset + length (" + std::to_string(ph.offset) + " + " + std::to_string(len) +
                                        ") is beyond the end of mapping '" + ph.map + "' (" + std::to_string(size) +
                                        " bytes)");
    op o;
    o.pid = pid;
    o.map = map_index(ph.map);
    o.off = ph.offset;
    o.len = len;
    switch (ph.act) {
      case phase_action::touch: {
        o.kind = op_kind::touch;
        o.write = ph.write;
        o.pattern = ph.pattern;
        if (ph.pattern == touch_pattern::stride) o.stride = ph.stride;
        if (ph.pattern == touch_pattern::uniform || ph.pattern == touch_pattern::zipf) {
          const double pages = double(len / sc_.profile.paging.page_size());  // the kernel's pages
          o.count = std::max<uint64_t>(1, uint64_t(std::llround(ph.fraction * pages)));
          o.seed = splitmix64(splitmix64(sc_.seed) ^ uint64_t(out_.ops.size()));
          if (ph.pattern == touch_pattern::zipf) o.theta = ph.theta;
        }
        break;
      }
      case phase_action::munmap: o.kind = op_kind::munmap; break;
      case phase_action::mprotect: o.kind = op_kind::mprotect; o.prot = ph.prot; break;
      case phase_action::madvise: o.kind = op_kind::madvise; o.adv = ph.adv; break;
      case phase_action::msync: o.kind = op_kind::msync; break;
      case phase_action::remap_file_pages: {
        // A shared mapping of a file or shm object, and object pages that exist: the
        // kernel's EINVAL cases that the scenario alone decides.
        if (it->object < 0 || !it->shared)
          return error_at(ph.map_at, "remap_file_pages needs a shared mapping of an object; '" + ph.map + "' is " +
                                         (it->object < 0 ? "anonymous" : "private"));
        const object_decl& d = sc_.objects[size_t(it->object)];
        if (ph.file_offset > d.size || len > d.size - ph.file_offset)
          return error_at(ph.file_offset_at, "file_offset + length (" + std::to_string(ph.file_offset) + " + " +
                                                 std::to_string(len) + ") is beyond the end of object '" + d.name + "' (" +
                                                 std::to_string(d.size) + " bytes)");
        o.kind = op_kind::remap_file_pages;
        o.obj_off = ph.file_offset;
        break;
      }
      default: break;
    }
    emit(std::move(o));
    return {};
  }

  // A read, readv, write or fsync phase for one process: the I/O in calls of `request`
  // bytes at increasing file offsets, the buffer reused cyclically when it is smaller.
  status io_ops(const phase_spec& ph, uint32_t pid) {
    auto oi = sc_.object_ids.find(ph.object);
    if (oi == sc_.object_ids.end()) return error_at(ph.object_at, "unknown object '" + ph.object + "'");
    op o;
    o.pid = pid;
    o.object = oi->second;
    if (ph.act == phase_action::fsync) {
      o.kind = op_kind::fsync;
      emit(std::move(o));
      return {};
    }
    o.kind = ph.act == phase_action::read ? op_kind::read : ph.act == phase_action::readv ? op_kind::readv : op_kind::write;
    o.direct = ph.direct;
    const object_decl& d = sc_.objects[size_t(o.object)];
    if (ph.file_offset >= d.size)
      return error_at(ph.file_offset_at, "file_offset " + std::to_string(ph.file_offset) + " is beyond the end of object '" +
                                             d.name + "' (" + std::to_string(d.size) + " bytes)");
    const bytes total = ph.length.value_or(d.size - ph.file_offset);
    const bytes request = std::min(ph.request.value_or(total), total);
    if (total % request)
      return error_at(ph.request_at, "length " + std::to_string(total) + " is not a whole number of requests of " +
                                         std::to_string(request) + " bytes");
    bytes region = 0;
    if (!ph.map.empty()) {
      auto found = find_map(ph, pid);
      if (!found.ok()) return found.error();
      const bytes size = found->second;
      region = size > ph.offset ? (size - ph.offset) / request * request : 0;
      if (region == 0)
        return error_at(ph.offset_at, "mapping '" + ph.map + "' has no room for a request of " + std::to_string(request) +
                                          " bytes after offset " + std::to_string(ph.offset));
      o.buffer = true;
      o.map = map_index(ph.map);
    }
    o.count = ph.act == phase_action::readv ? ph.iovecs : 1;
    for (bytes done = 0; done < total; done += request) {
      op c = o;
      c.obj_off = ph.file_offset + done;
      c.len = request;
      if (c.buffer) c.off = ph.offset + done % region;
      if (auto e = check_io(sc_.objects, c, c.buffer ? ph.offset + region : 0)) {
        const source_location& at = e->field == "iovecs" ? ph.iovecs_at
                                    : e->field == "len"  ? (ph.request ? ph.request_at : ph.length_at)
                                    : e->field == "off"  ? ph.file_offset_at
                                                         : ph.object_at;
        return error_at(at, e->message);
      }
      emit(std::move(c));
    }
    return {};
  }

  const scenario_spec& sc_;
  op_stream out_;
  std::vector<proc> procs_;
  std::vector<live_group> groups_;
  std::unordered_map<std::string, size_t> group_ids_;  // name -> index in groups_ (the first of that name)
  std::unordered_map<std::string, uint32_t> map_ids_;  // name -> index in out_.map_names
  uint32_t next_pid_ = 1;
};

}  // namespace

result<op_stream> generate(const scenario_spec& sc) { return generator(sc).run(); }

}  // namespace vmlab
