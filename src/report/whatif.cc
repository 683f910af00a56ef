#include "report/whatif.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

namespace vmlab {
namespace {

// A TOML basic string.
std::string quoted(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (uint8_t(c) < 0x20) o += fmt::format("\\u{:04x}", int(c));
    else o += c;
  }
  return o + "\"";
}

// A name scenarios accept: letters, digits and _-.:/+ (everything else becomes '_').
std::string token(std::string s) {
  for (char& c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
          c == '.' || c == ':' || c == '/' || c == '+'))
      c = '_';
  return s;
}

bool is_shm(const live::vma_info& v) {
  return v.path.rfind("/SYSV", 0) == 0 || v.path.rfind("/memfd:", 0) == 0 || v.path.rfind("/dev/zero", 0) == 0 ||
         v.path.find("(deleted)") != std::string::npos;
}

struct object_info {
  std::string name;
  const char* kind = "file";
  bytes size = 0, page_size = 0;
  std::vector<int> pids;
  bool moved = false;  // placed by the kernel (segment_backing), not at its address
};

using object_key = std::tuple<uint32_t, uint32_t, uint64_t>;

// The runs of `vt` as [offset, length] ranges from the mapping's start; per PTE-table
// window when there are too many runs.
std::vector<std::pair<bytes, bytes>> ranges_of(const live::vma_tables& vt, const paging_format& f) {
  std::vector<std::pair<bytes, bytes>> out;
  const vaddr s = vt.vma.start;
  if (vt.runs.size() <= kMaxRanges) {
    for (const live::page_run& r : vt.runs) out.emplace_back(r.start - s, r.end - r.start);
    return out;
  }
  const bytes window = f.pte().table_span();
  vaddr w = 0;
  bytes present = 0;
  auto flush = [&] {
    if (!present) return;
    const vaddr from = std::max(w, s);
    out.emplace_back(from - s, std::min(present, vt.vma.end - from));
    present = 0;
  };
  for (const live::page_run& r : vt.runs)
    for (vaddr a = r.start; a < r.end;) {
      const vaddr ws = a & ~(window - 1);
      if (ws != w) {
        flush();
        w = ws;
      }
      const vaddr e = std::min(r.end, ws + window);
      present += e - a;
      a = e;
    }
  flush();
  return out;
}

}  // namespace

inspected_scenario inspection_scenario(const live::inspection& in, const kernel_profile& host,
                                       const std::vector<std::pair<std::string, std::string>>& profile_overrides,
                                       const segment_backing& backing) {
  const paging_format& f = host.paging;
  const bytes base = f.page_size();
  // The segments, by (device, inode), in order of first appearance.
  std::map<object_key, object_info> objects;
  std::vector<object_key> order;
  std::map<bytes, uint64_t> pool;  // hugetlb pages needed, per size
  for (const live::process_inspection& p : in.processes)
    for (const live::vma_tables& vt : p.vmas) {
      const live::vma_info& v = vt.vma;
      if (vt.runs.empty() || v.inode == 0) continue;
      auto [it, added] = objects.try_emplace({v.dev_major, v.dev_minor, v.inode});
      object_info& o = it->second;
      if (added) {
        order.push_back(it->first);
        std::string base_name = v.path.substr(v.path.rfind('/') + 1);
        base_name = base_name.substr(0, base_name.find(" (deleted)"));
        o.name = token(fmt::format("{}-{}", base_name.empty() ? "segment" : base_name, v.inode));
        if (v.hugetlb(base)) {
          o.kind = "hugetlb";
          o.page_size = v.kernel_page_size;
        } else if (is_shm(v)) {
          o.kind = "shm";
        }
      }
      const bytes unit = o.page_size ? o.page_size : base;
      o.size = std::max(o.size, (v.offset + (v.end - v.start) + unit - 1) / unit * unit);
      if (o.pids.empty() || o.pids.back() != p.pid) o.pids.push_back(p.pid);
    }
  for (const object_key& k : order) {
    object_info& o = objects[k];
    o.moved = backing.align && o.pids.size() > 1 && std::string(o.kind) == "shm";
    if (o.moved && backing.huge_page) {
      o.kind = "hugetlb";
      o.page_size = backing.huge_page;
      o.size = (o.size + o.page_size - 1) / o.page_size * o.page_size;
    }
    if (o.page_size) pool[o.page_size] += o.size / o.page_size;
  }

  inspected_scenario out;
  std::string& t = out.toml;
  std::string who;
  for (const live::process_inspection& p : in.processes)
    who += fmt::format("{}{} ({})", who.empty() ? "" : ", ", p.pid, p.comm);
  t += "# Written by `vmlab inspect --scenario`: the processes it read, as a scenario the sim\n"
       "# replays under other designs (`vmlab whatif FILE --set ...`). Each process is a group of\n"
       "# one; each mapping with pages present is mapped at its address and touched over the\n"
       "# runs that were present. Not reproduced: mappings with nothing present, who forked\n"
       "# whom (pages shared copy-on-write are each process's own here), tables emptied by\n"
       "# MADV_DONTNEED (inspect's residual).\n";
  // What the kernel reported at the moment of this reading: the figure a replay of an
  // unchanged design should give back. A later reading of a running process may differ.
  for (const live::process_inspection& p : in.processes)
    t += fmt::format("# read: pid {} ({}): VmPTE {} bytes, tables the mappings need {} bytes, residual {} bytes\n",
                     p.pid, p.comm, p.status.vmpte, p.attributed, p.residual);
  t += "name = \"inspected\"\n";
  t += "description = " + quoted("What inspect read: " + who) + "\n";
  t += "seed = 1\n\n[machine]\n";
  t += fmt::format("memory = \"{}KiB\"\n", std::max<bytes>(in.mem.mem_total, 1 << 30) / 1024);
  if (!pool.empty()) {
    t += "hugepages = {";
    bool first = true;
    for (const auto& [size, n] : pool) {
      t += fmt::format("{} \"{}KiB\" = {}", first ? "" : ",", size / 1024, n);
      first = false;
    }
    t += " }\n";
  }
  t += "\n[kernel]\nprofile = " + quoted(host.name) + "\n";
  std::vector<std::pair<std::string, std::string>> ov;
  if (!in.thp_enabled.empty() && host.huge.thp) ov.emplace_back("thp_enabled", in.thp_enabled);
  if (!in.shmem_enabled.empty() && host.huge.shmem_thp) ov.emplace_back("shmem_enabled", in.shmem_enabled);
  ov.insert(ov.end(), profile_overrides.begin(), profile_overrides.end());
  if (!ov.empty()) {
    t += "[kernel.overrides]\n";
    for (const auto& [k, v] : ov) t += k + " = " + quoted(v) + "\n";
  }
  for (const object_key& k : order) {
    const object_info& o = objects[k];
    t += fmt::format("\n[[object]]\nname = {}\nkind = \"{}\"\nsize = {}\n", quoted(o.name), o.kind, o.size);
    if (o.page_size) t += fmt::format("page_size = {}\n", o.page_size);
    if (o.pids.size() > 1 && std::string(o.kind) != "file") out.shared_objects.push_back(o.name);
  }
  std::stable_sort(out.shared_objects.begin(), out.shared_objects.end(), [&](const std::string& a, const std::string& b) {
    auto size = [&](const std::string& n) {
      for (const auto& [k, o] : objects)
        if (o.name == n) return o.size;
      return bytes{0};
    };
    return size(a) > size(b);
  });

  std::string phases;
  for (const live::process_inspection& p : in.processes) {
    const std::string g = fmt::format("pid{}", p.pid);
    t += fmt::format("\n# {} ({}): VmPTE {} bytes as read\n[[group]]\nname = \"{}\"\ncount = 1\nimage = \"inspected\"\n",
                     p.pid, p.comm, p.status.vmpte, g);
    // Fixed mappings first, so the kernel's placement of the others finds them mapped.
    std::vector<const live::vma_tables*> maps;
    for (const live::vma_tables& vt : p.vmas)
      if (!vt.runs.empty()) maps.push_back(&vt);
    auto placed = [&](const live::vma_tables* vt) {
      return vt->vma.inode != 0 && objects[{vt->vma.dev_major, vt->vma.dev_minor, vt->vma.inode}].moved;
    };
    std::stable_partition(maps.begin(), maps.end(), [&](const live::vma_tables* vt) { return !placed(vt); });
    for (const live::vma_tables* vtp : maps) {
      const live::vma_tables& vt = *vtp;
      const live::vma_info& v = vt.vma;
      // A moved mapping starts at a multiple of the unit in the object too (its offset is
      // rounded down) and covers whole units.
      const bytes unit = std::max<bytes>(backing.huge_page, base);
      const std::string m = fmt::format("m{:x}", v.start);
      const bool writable = v.perms.size() > 1 && v.perms[1] == 'w';
      t += fmt::format("  [[group.map]]  # {} {}\n  name = \"{}\"\n", v.perms, v.path.empty() ? "anonymous" : v.path, m);
      if (v.inode != 0) {
        t += "  object = " + quoted(objects[{v.dev_major, v.dev_minor, v.inode}].name) + "\n";
        const bytes off = placed(&vt) ? v.offset / unit * unit : v.offset;
        if (off) t += fmt::format("  offset = {:#x}\n", off);
      } else {
        t += "  object = \"anon\"\n";
      }
      if (v.shared()) t += "  shared = true\n";
      if (placed(&vt)) {
        const bytes hp = unit;
        const bytes off = v.offset / hp * hp;
        t += fmt::format("  size = {:#x}\n  align = {:#x}\n  prot = \"{}\"\n",
                         (v.offset + (v.end - v.start) + hp - 1) / hp * hp - off, std::max(backing.align, hp),
                         writable ? "rw" : "r");
        if (off != v.offset) t += fmt::format("  # offset {:#x} rounded down to a huge page\n", v.offset);
      } else {
        t += fmt::format("  size = {:#x}\n  addr = {:#x}\n  prot = \"{}\"\n", v.end - v.start, v.start,
                         writable ? "rw" : "r");
      }
      // One sample point at the end (a sample after each of thousands of phases would cost
      // more than the phases; everything only grows, so the end is the maximum).
      if (!phases.empty()) phases += "sample = false\n";
      phases += fmt::format("\n[[phase]]\ngroup = \"{}\"\naction = \"touch\"\nmap = \"{}\"\n", g, m);
      // Private anonymous memory is written (what makes it present, bar the zero page).
      // A private file mapping is read: a written page there is an anonymous copy, and
      // which pages were copied is not in pagemap's categories; its tables are the same.
      if (writable && !v.shared() && v.inode == 0) phases += "write = true\n";
      phases += "ranges = [";
      bool first = true;
      std::vector<std::pair<bytes, bytes>> rs = ranges_of(vt, f);
      if (placed(&vt)) {  // in units of the new mapping (which starts at a unit boundary of the object)
        const bytes hp = unit, shift = v.offset % hp;
        std::vector<std::pair<bytes, bytes>> hr;
        for (auto [off, len] : rs) {
          const bytes a = (off + shift) / hp * hp, e = (off + shift + len + hp - 1) / hp * hp;
          if (!hr.empty() && hr.back().first + hr.back().second >= a)
            hr.back().second = std::max(hr.back().first + hr.back().second, e) - hr.back().first;
          else
            hr.emplace_back(a, e - a);
        }
        rs = std::move(hr);
      }
      for (const auto& [off, len] : rs) {
        phases += fmt::format("{}[{:#x}, {:#x}]", first ? "" : ", ", off, len);
        first = false;
      }
      phases += "]\n";
    }
  }
  t += phases;
  return out;
}

}  // namespace vmlab
