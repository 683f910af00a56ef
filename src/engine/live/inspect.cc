#include "engine/live/inspect.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>
#include <set>
#include <unordered_map>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace vmlab::live {
namespace {

// include/uapi/linux/fs.h (6.7+). Debian 12's linux-libc-dev (6.1) does not have it; the
// ABI is fixed, so it is spelt out here when the headers lack it.
#ifndef PAGEMAP_SCAN
struct page_region {
  uint64_t start;
  uint64_t end;
  uint64_t categories;
};
struct pm_scan_arg {
  uint64_t size;
  uint64_t flags;
  uint64_t start;
  uint64_t end;
  uint64_t walk_end;
  uint64_t vec;
  uint64_t vec_len;
  uint64_t max_pages;
  uint64_t category_inverted;
  uint64_t category_mask;
  uint64_t category_anyof_mask;
  uint64_t return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_FILE (1 << 2)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)
#define PAGE_IS_HUGE (1 << 6)
#endif

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

std::optional<uint64_t> parse_hex(std::string_view t) {
  if (t.empty() || t.size() > 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : t) {
    if (!is_hex(c)) return std::nullopt;
    v = v * 16 + uint64_t(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}

std::optional<uint64_t> parse_dec(std::string_view t) {
  if (t.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : t) {
    if (c < '0' || c > '9' || v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + uint64_t(c - '0');
  }
  return v;
}

// Next blank-separated token of `line` from `i`.
std::string_view next_token(std::string_view line, size_t& i) {
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  const size_t b = i;
  while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
  return line.substr(b, i - b);
}

// "start-end perms offset major:minor inode [path]"; false when `line` is not a VMA header.
bool parse_vma_header(std::string_view line, vma_info& v) {
  size_t i = 0;
  const std::string_view range = next_token(line, i);
  const size_t dash = range.find('-');
  if (dash == std::string_view::npos) return false;
  auto s = parse_hex(range.substr(0, dash)), e = parse_hex(range.substr(dash + 1));
  if (!s || !e || *e < *s) return false;
  const std::string_view perms = next_token(line, i);
  if (perms.size() != 4) return false;
  auto off = parse_hex(next_token(line, i));
  const std::string_view dev = next_token(line, i);
  const size_t colon = dev.find(':');
  if (!off || colon == std::string_view::npos) return false;
  auto maj = parse_hex(dev.substr(0, colon)), min = parse_hex(dev.substr(colon + 1));
  auto ino = parse_dec(next_token(line, i));
  if (!maj || !min || !ino) return false;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  std::string_view path = line.substr(i);
  while (!path.empty() && (path.back() == ' ' || path.back() == '\r')) path.remove_suffix(1);
  v = vma_info{};
  v.start = *s;
  v.end = *e;
  v.perms = std::string(perms);
  v.offset = *off;
  v.dev_major = uint32_t(*maj);
  v.dev_minor = uint32_t(*min);
  v.inode = *ino;
  v.path = std::string(path);
  return true;
}

// "Key:   123 kB" -> bytes; nullopt when the line is another key or not in kB.
std::optional<bytes> kb_line(std::string_view line, std::string_view key) {
  if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') return std::nullopt;
  size_t i = key.size() + 1;
  auto n = parse_dec(next_token(line, i));
  if (!n || next_token(line, i) != "kB") return std::nullopt;
  return *n * 1024;
}

}  // namespace

result<std::vector<vma_info>> parse_smaps(std::string_view text) {
  std::vector<vma_info> out;
  line_reader lines(text);
  auto bad = [&](const std::string& why) {
    return status::io_error("malformed /proc/PID/smaps line " + std::to_string(lines.number()) + ": " + why);
  };
  for (std::string_view line; lines.next(line);) {
    if (line.empty()) continue;
    vma_info v;
    if (is_hex(line[0]) && line.find(':') > line.find('-')) {
      if (!parse_vma_header(line, v))
        return bad("'" + std::string(line) + "'");
      if (!out.empty() && v.start < out.back().end)
        return bad("VMAs out of order");
      out.push_back(std::move(v));
      continue;
    }
    if (out.empty())
      return bad("a field before any VMA");
    vma_info& cur = out.back();
    if (auto b = kb_line(line, "KernelPageSize")) cur.kernel_page_size = *b;
    else if (auto r = kb_line(line, "Rss")) cur.rss = *r;
    else if (auto p = kb_line(line, "Pss")) cur.pss = *p;
  }
  return out;
}

result<std::vector<page_run>> host_pagemap_source::scan(int pid, vaddr start, vaddr end, bool& exact_huge) {
  const std::string path = "/proc/" + std::to_string(pid) + "/pagemap";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return status::io_error("cannot open " + path + ": " + std::strerror(errno));
  std::vector<page_run> runs;
  auto add = [&runs](vaddr s, vaddr e, bool huge, bool file) {
    if (!runs.empty() && runs.back().end == s && runs.back().huge == huge && runs.back().file == file) runs.back().end = e;
    else runs.push_back({s, e, huge, file});
  };
  std::vector<page_region> vec(4096);
  pm_scan_arg a{};
  a.size = sizeof a;
  a.start = start;
  a.end = end;
  a.vec = reinterpret_cast<uintptr_t>(vec.data());
  a.vec_len = vec.size();
  a.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED;
  a.return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_HUGE | PAGE_IS_FILE;
  bool first = true;
  while (a.start < end) {
    const int n = ::ioctl(fd, PAGEMAP_SCAN, &a);
    if (n < 0) {
      const int err = errno;
      if (first && (err == ENOTTY || err == EINVAL)) break;  // no PAGEMAP_SCAN: read the file below
      ::close(fd);
      return status::io_error("PAGEMAP_SCAN on " + path + ": " + std::strerror(err));
    }
    first = false;
    for (int i = 0; i < n; ++i)
      add(vec[size_t(i)].start, vec[size_t(i)].end, vec[size_t(i)].categories & PAGE_IS_HUGE,
          vec[size_t(i)].categories & PAGE_IS_FILE);
    if (a.walk_end <= a.start) break;
    a.start = a.walk_end;
  }
  if (!first) {
    ::close(fd);
    return runs;
  }
  // Before 6.7: one 64-bit entry per page (Documentation/admin-guide/mm/pagemap.rst).
  exact_huge = false;
  const bytes page = bytes(::sysconf(_SC_PAGESIZE));
  std::vector<uint64_t> buf(65536);
  for (vaddr a0 = start; a0 < end;) {
    const uint64_t want = std::min<uint64_t>(buf.size(), (end - a0) / page);
    if (want == 0) break;
    const ssize_t got = ::pread(fd, buf.data(), want * sizeof(uint64_t), off_t(a0 / page * sizeof(uint64_t)));
    if (got < 0) {
      const int err = errno;
      ::close(fd);
      return status::io_error("cannot read " + path + ": " + std::strerror(err));
    }
    const uint64_t entries = uint64_t(got) / sizeof(uint64_t);
    if (entries == 0) break;
    for (uint64_t i = 0; i < entries; ++i)
      if (buf[i] >> 62) add(a0 + i * page, a0 + (i + 1) * page, false, (buf[i] >> 61) & 1);
    a0 += entries * page;
  }
  ::close(fd);
  return runs;
}

void attribute_tables(const paging_format& f, level_mask vmpte_levels, process_inspection& p) {
  const int n = f.nr_levels;
  const int pte = n - 1;
  const bytes base = f.page_size();
  // Table (level index i, aligned start of its span) -> the VMAs whose entries need it.
  std::unordered_map<uint64_t, std::vector<uint32_t>> need;
  auto key = [&f](int i, vaddr a) { return (a & ~(f.at(i).table_span() - 1)) | uint64_t(i); };
  auto mark = [&](int i, vaddr s, vaddr e, uint32_t v) {
    const uint64_t span = f.at(i).table_span();
    for (vaddr a = s & ~(span - 1); a < e; a += span) {
      auto& vs = need[key(i, a)];
      if (vs.empty() || vs.back() != v) vs.push_back(v);
      if (a + span < a) break;  // the top of the address space
    }
  };
  std::vector<uint64_t> deposits(p.vmas.size(), 0);
  for (uint32_t v = 0; v < p.vmas.size(); ++v) {
    vma_tables& vt = p.vmas[v];
    const bool hugetlb = vt.vma.hugetlb(base);
    // A hugetlb page is a leaf at the level whose entry spans it; a THP at the PMD level.
    const int leaf = hugetlb ? f.leaf_index(vt.vma.kernel_page_size) : pte - 1;
    // do_huge_pmd_anonymous_page() deposits a PTE table for each anonymous THP (and for
    // the huge zero page) and counts it in nr_ptes; file and shmem THPs deposit none.
    const bool deposit = !hugetlb && vt.vma.anonymous() && !vt.vma.shared();
    vt.present_pages = 0;
    vt.huge_entries = 0;
    for (const page_run& r : vt.runs) {
      vt.present_pages += (r.end - r.start) / base;
      const bool huge = (r.huge || hugetlb) && leaf > 0;
      const int bottom = huge ? leaf : pte;
      for (int i = 1; i <= bottom; ++i) mark(i, r.start, r.end, v);
      if (huge) {
        const uint64_t span = f.at(leaf).span();
        const uint64_t entries = ((r.end + span - 1) / span) - (r.start / span);
        vt.huge_entries += entries;
        if (deposit) deposits[v] += entries;
      }
    }
  }
  p.tables.fill(0);
  for (vma_tables& vt : p.vmas) {
    vt.tables.fill(0);
    vt.table_bytes = 0;
  }
  for (const auto& [k, vs] : need) {
    const int i = int(k & 7);
    ++p.tables[size_t(f.at(i).lvl)];
    const double share = 1.0 / double(vs.size());
    for (uint32_t v : vs) p.vmas[v].tables[size_t(f.at(i).lvl)] += share;
  }
  for (uint32_t v = 0; v < p.vmas.size(); ++v) {
    p.vmas[v].tables[size_t(level::pte)] += double(deposits[v]);
    p.tables[size_t(level::pte)] += deposits[v];
  }
  p.attributed = 0;
  p.shared_pmd_bytes = 0;
  for (int i = 1; i < n; ++i) {
    const level l = f.at(i).lvl;
    if (!(vmpte_levels & mask_of(l))) continue;
    p.attributed += p.tables[size_t(l)] * f.at(i).table_bytes();
    for (vma_tables& vt : p.vmas) vt.table_bytes += vt.tables[size_t(l)] * double(f.at(i).table_bytes());
  }
  // huge_pmd_share() (mm/hugetlb.c): a shared hugetlb VMA covering a whole PUD-aligned
  // window can share the PMD table of that window with every other such mapping.
  const int pmd = f.index_of(level::pmd);
  if (pmd > 0) {
    const uint64_t span = f.at(pmd).table_span();
    for (vma_tables& vt : p.vmas) {
      if (!vt.vma.hugetlb(base) || !vt.vma.shared() || f.leaf_index(vt.vma.kernel_page_size) != pmd) continue;
      std::set<vaddr> windows;
      for (const page_run& r : vt.runs)
        for (vaddr a = r.start & ~(span - 1); a < r.end; a += span)
          if (a >= vt.vma.start && a + span <= vt.vma.end) windows.insert(a);
      if (windows.empty()) continue;
      vt.shared_pmd_windows.assign(windows.begin(), windows.end());
      if (vmpte_levels & mask_of(level::pmd)) p.shared_pmd_bytes += windows.size() * f.at(pmd).table_bytes();
    }
  }
  p.residual = int64_t(p.status.vmpte) - int64_t(p.attributed);
}

namespace {

// The runs of `all` inside each VMA (both in address order), clipped to it.
void split_runs(const std::vector<page_run>& all, std::vector<vma_tables>& vmas) {
  size_t r = 0;
  for (vma_tables& vt : vmas) {
    while (r < all.size() && all[r].end <= vt.vma.start) ++r;
    for (size_t j = r; j < all.size() && all[j].start < vt.vma.end; ++j) {
      page_run c = all[j];
      c.start = std::max(c.start, vt.vma.start);
      c.end = std::min(c.end, vt.vma.end);
      if (c.start < c.end) vt.runs.push_back(c);
    }
  }
}

image_resident image_of(const std::vector<vma_tables>& vmas, bytes page) {
  image_resident img;
  uint64_t exe = 0;
  for (const vma_tables& vt : vmas)
    if (vt.vma.inode) {
      exe = vt.vma.inode;
      break;
    }
  bool after_exe_data = false;
  for (const vma_tables& vt : vmas) {
    const vma_info& v = vt.vma;
    const bytes resident = vt.present_pages * page;
    const bool writable = v.perms.size() > 1 && v.perms[1] == 'w';
    const bool bss = after_exe_data && v.inode == 0 && v.path.empty() && !v.shared();
    after_exe_data = false;
    if (v.path == "[heap]") img.heap += resident;
    else if (v.path == "[stack]") img.stack += resident;
    else if ((v.inode == exe && exe && writable) || bss) {
      img.data += resident;
      after_exe_data = !bss;
    } else if (v.inode == exe && exe && !v.shared()) img.text += resident;
    else if (v.inode && !v.shared() && (v.path.size() > 3 && (v.path.ends_with(".so") || v.path.find(".so.") != std::string::npos)))
      img.libraries += resident;
  }
  return img;
}

std::string read_comm(proc_source& src, int pid) {
  auto t = src.read("/proc/" + std::to_string(pid) + "/comm");
  if (!t.ok()) return "?";
  std::string s = t.value();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// One process; io_error when it cannot be read (gone, no mm, no permission).
result<process_inspection> inspect_one(int pid, const paging_format& f, level_mask vmpte_levels, proc_source& src,
                                       pagemap_source& pm, bool keep_runs, bool& exact_huge) {
  process_inspection p;
  p.pid = pid;
  const std::string dir = "/proc/" + std::to_string(pid);
  auto st_text = src.read(dir + "/status");
  if (!st_text.ok()) return st_text.error();
  auto st = parse_status(st_text.value());
  if (!st.ok()) return status::io_error("no address space (a kernel thread, or exiting)");
  p.status = st.value();
  p.comm = read_comm(src, pid);
  auto smaps_text = src.read(dir + "/smaps");
  if (!smaps_text.ok()) return smaps_text.error();
  auto vmas = parse_smaps(smaps_text.value());
  if (!vmas.ok()) return status::io_error(vmas.error().message() + " (" + dir + "/smaps)");
  // Pss is the sum of the VMAs' (what smaps_rollup prints); reading smaps_rollup too would
  // walk every page table of the process a second time.
  for (const vma_info& v : vmas.value()) p.pss += v.pss;
  for (vma_info& v : vmas.value()) {
    if (v.path == "[vsyscall]") continue;  // the x86-64 gate area: in the kernel's tables, no VMA
    p.vmas.push_back(vma_tables{});
    p.vmas.back().vma = std::move(v);
  }
  if (!p.vmas.empty()) {
    auto runs = pm.scan(pid, p.vmas.front().vma.start, p.vmas.back().vma.end, exact_huge);
    if (!runs.ok()) return runs.error();
    split_runs(runs.value(), p.vmas);
  }
  attribute_tables(f, vmpte_levels, p);
  p.image = image_of(p.vmas, f.page_size());
  if (!keep_runs)
    for (vma_tables& vt : p.vmas) std::vector<page_run>().swap(vt.runs);
  return p;
}

// A cgroup's processes: PATH/cgroup.procs for an absolute PATH, else under the cgroup v2
// mount (/sys/fs/cgroup) or, on a hybrid hierarchy, its unified mount.
result<std::vector<int>> cgroup_pids(proc_source& src, const std::string& cgroup) {
  std::vector<std::string> dirs;
  if (cgroup.rfind("/sys/", 0) == 0) dirs = {cgroup};
  else for (const char* root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) dirs.push_back(root + ("/" + cgroup));
  std::string tried;
  for (std::string dir : dirs) {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    auto t = src.read(dir + "/cgroup.procs");
    if (!t.ok()) {
      tried += (tried.empty() ? "" : ", ") + dir + "/cgroup.procs";
      continue;
    }
    std::vector<int> pids;
    std::string_view s = t.value();
    while (!s.empty()) {
      const size_t eol = std::min(s.find('\n'), s.size());
      if (auto v = parse_dec(s.substr(0, eol)); v && *v <= uint64_t(INT32_MAX)) pids.push_back(int(*v));
      s.remove_prefix(std::min(eol + 1, s.size()));
    }
    return pids;
  }
  return status::invalid_argument("--cgroup " + cgroup + ": no cgroup.procs (tried " + tried + ")");
}

}  // namespace

result<inspection> inspect(const inspect_options& o, const kernel_profile& host, proc_source& src, pagemap_source& pm) {
  inspection in;
  const paging_format& f = host.paging;
  in.paging = f.name;
  in.page_size = f.page_size();
  in.vmpte_levels = host.vmpte_levels;
  in.pgd_bytes = host.pgd_bytes();
  in.all = o.all;
  std::vector<int> pids = o.pids;
  const bool listed = !o.all && o.cgroup.empty();
  if (o.all) {
    auto entries = src.list("/proc");
    if (!entries.ok()) return entries.error();
    for (const std::string& e : entries.value())
      if (auto v = parse_dec(e); v && *v <= uint64_t(INT32_MAX)) pids.push_back(int(*v));
  }
  if (!o.cgroup.empty()) {
    auto c = cgroup_pids(src, o.cgroup);
    if (!c.ok()) return c.error();
    pids.insert(pids.end(), c.value().begin(), c.value().end());
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  // A PID named that does not exist is a usage error; one that exits while the others are
  // read is a line of the report (a busy server's backends come and go).
  if (listed)
    for (int pid : pids)
      if (!src.read("/proc/" + std::to_string(pid) + "/stat").ok())
        return status::invalid_argument("no process " + std::to_string(pid) + " on this host");
  for (int pid : pids) {
    auto p = inspect_one(pid, f, host.vmpte_levels, src, pm, o.keep_runs, in.exact_huge);
    if (!p.ok()) {
      std::string why = p.error().message();
      const bool gone = why.find("No such file") != std::string::npos || why.find("No such process") != std::string::npos;
      if (gone) why = "exited while being read (" + why + ")";
      // Kernel threads are no one's question under --all.
      if (!listed && why.rfind("no address space", 0) == 0) continue;
      in.skipped.push_back({pid, why});
      continue;
    }
    in.processes.push_back(std::move(p.value()));
  }
  if (auto m = read_meminfo(src); m.ok()) in.mem = m.value();
  // "always [madvise] never": the bracketed word is the policy.
  auto policy = [&src](const char* file) -> std::string {
    auto t = src.read(std::string("/sys/kernel/mm/transparent_hugepage/") + file);
    if (!t.ok()) return "";
    const size_t b = t.value().find('['), e = t.value().find(']');
    return b == std::string::npos || e == std::string::npos || e < b ? "" : t.value().substr(b + 1, e - b - 1);
  };
  in.thp_enabled = policy("enabled");
  in.shmem_enabled = policy("shmem_enabled");

  // Segments mapped by two or more processes, by (device, inode).
  struct acc {
    shared_segment s;
    std::set<int> pids;
  };
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, acc> segs;
  // Shared hugetlb PMD tables: one page per (file, offset of the window), however many map it.
  std::map<std::tuple<uint32_t, uint32_t, uint64_t, uint64_t>, uint32_t> shared_pmds;
  for (const process_inspection& p : in.processes) {
    for (const vma_tables& vt : p.vmas) {
      const vma_info& v = vt.vma;
      if (v.inode == 0) continue;
      acc& a = segs[{v.dev_major, v.dev_minor, v.inode}];
      a.s.dev_major = v.dev_major;
      a.s.dev_minor = v.dev_minor;
      a.s.inode = v.inode;
      if (a.s.path.empty()) a.s.path = v.path;
      a.s.size = std::max(a.s.size, v.offset + (v.end - v.start));
      a.pids.insert(p.pid);
      a.s.table_bytes += vt.table_bytes;
      a.s.present_pages += vt.present_pages;
      for (vaddr w : vt.shared_pmd_windows) ++shared_pmds[{v.dev_major, v.dev_minor, v.inode, v.offset + (w - v.start)}];
    }
  }
  for (auto& [k, a] : segs) {
    if (a.pids.size() < 2) continue;
    a.s.pids.assign(a.pids.begin(), a.pids.end());
    in.segments.push_back(std::move(a.s));
  }
  std::stable_sort(in.segments.begin(), in.segments.end(),
                   [](const shared_segment& x, const shared_segment& y) { return x.table_bytes > y.table_bytes; });
  int64_t total = 0;
  for (const process_inspection& p : in.processes) total += int64_t(p.status.vmpte) + int64_t(in.pgd_bytes);
  if (const int pmd = f.index_of(level::pmd); pmd > 0 && (host.vmpte_levels & mask_of(level::pmd)))
    for (const auto& [k, sharers] : shared_pmds)
      if (sharers > 1) total -= int64_t(sharers - 1) * int64_t(f.at(pmd).table_bytes());
  in.processes_page_tables = bytes(std::max<int64_t>(total, 0));
  in.page_tables_residual = int64_t(in.mem.page_tables) - int64_t(in.processes_page_tables);
  return in;
}

}  // namespace vmlab::live
