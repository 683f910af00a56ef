#include "report/inspect_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace vmlab {
namespace {

constexpr level kShown[] = {level::pte, level::pmd, level::pud};

std::string hex(vaddr a) { return fmt::format("{:x}", a); }

std::string tables_text(const std::array<double, kLevels>& t) {
  std::string s;
  for (level l : kShown) {
    const double v = t[size_t(l)];
    if (v == 0) continue;
    if (!s.empty()) s += " ";
    s += (std::fabs(v - std::round(v)) < 1e-9 ? fmt::format("{:.0f}", v) : fmt::format("{:.2f}", v)) + " " +
         level_name(l);
  }
  return s.empty() ? "-" : s;
}

std::string vma_name(const live::vma_info& v) {
  if (!v.path.empty()) return v.path;
  return v.shared() ? "[shared anon]" : "[anon]";
}

}  // namespace

std::string format_inspection(const live::inspection& in, const inspect_format& how) {
  std::string out;
  out += fmt::format("{:>8} {:<16} {:>10} {:>10} {:>10} {:>10} {:>10}  {}\n", "PID", "COMMAND", "VmPTE", "mappings",
                     "residual", "RSS", "PSS", "tables (pages: needed by the mappings)");
  bytes sum_vmpte = 0, sum_attr = 0;
  for (const live::process_inspection& p : in.processes) {
    std::array<double, kLevels> t{};
    for (int i = 0; i < kLevels; ++i) t[size_t(i)] = double(p.tables[size_t(i)]);
    out += fmt::format("{:>8} {:<16} {:>10} {:>10} {:>10} {:>10} {:>10}  {}\n", p.pid, p.comm.substr(0, 16),
                       human_bytes(double(p.status.vmpte)), human_bytes(double(p.attributed)),
                       human_bytes(double(p.residual)), human_bytes(double(p.status.vmrss)), human_bytes(double(p.pss)),
                       tables_text(t));
    sum_vmpte += p.status.vmpte;
    sum_attr += p.attributed;
    if (!how.vmas) continue;
    // The image as a scenario writes it (resident sizes, KiB): image = { ... } in a group.
    auto kib = [](bytes b) { return fmt::format("\"{}KiB\"", (b + 1023) / 1024); };
    out += fmt::format("{:>8} image = {{ text = {}, data = {}, heap = {}, libraries = {}, stack = {} }}\n", "",
                       kib(p.image.text), kib(p.image.data), kib(p.image.heap), kib(p.image.libraries),
                       kib(p.image.stack));
    std::vector<const live::vma_tables*> rows;
    for (const live::vma_tables& vt : p.vmas)
      if (vt.table_bytes > 0) rows.push_back(&vt);
    for (const live::vma_tables* vt : rows) {
      const live::vma_info& v = vt->vma;
      out += fmt::format("{:>8} {:>12}-{:<12} {} {:>10} {:>9} present {:>10}  {}  {}{}\n", "", hex(v.start),
                         hex(v.end), v.perms, human_bytes(double(v.end - v.start)), vt->present_pages,
                         human_bytes(vt->table_bytes), tables_text(vt->tables), vma_name(v),
                         vt->shared_pmd_windows.empty() ? "" : " (hugetlb PMD tables shareable)");
    }
  }
  if (in.processes.size() > 1)
    out += fmt::format("{:>8} {:<16} {:>10} {:>10} {:>10}\n", "", "total", human_bytes(double(sum_vmpte)),
                       human_bytes(double(sum_attr)), human_bytes(double(int64_t(sum_vmpte) - int64_t(sum_attr))));
  out += "\nVmPTE counts the " ;
  std::string lv;
  for (level l : kShown)
    if (in.vmpte_levels & mask_of(l)) lv += std::string(lv.empty() ? "" : ", ") + level_name(l);
  out += lv + " pages of each process; 'mappings' is what its present and swapped entries need (" + in.paging +
         "), 'residual' the rest (tables emptied by MADV_DONTNEED or reclaim stay until munmap).\n";
  if (!in.exact_huge)
    out += "This kernel has no PAGEMAP_SCAN (6.7+): transparent huge pages were counted as 4 KiB pages.\n";

  if (!in.segments.empty()) {
    out += fmt::format("\nShared segments (mapped by two or more of these processes, by page tables):\n");
    out += fmt::format("{:<44} {:>10} {:>6} {:>12} {:>12}\n", "SEGMENT", "SIZE", "PROCS", "PAGE TABLES", "PRESENT");
    for (size_t i = 0; i < in.segments.size() && i < how.top_segments; ++i) {
      const live::shared_segment& s = in.segments[i];
      std::string name = s.path.empty() ? fmt::format("inode {}", s.inode) : s.path;
      if (name.size() > 44) name = "..." + name.substr(name.size() - 41);
      out += fmt::format("{:<44} {:>10} {:>6} {:>12} {:>12}\n", name, human_bytes(double(s.size)), s.pids.size(),
                         human_bytes(s.table_bytes), human_bytes(double(s.present_pages) * double(in.page_size)));
    }
    if (in.segments.size() > how.top_segments)
      out += fmt::format("({} more; --json lists them all)\n", in.segments.size() - how.top_segments);
  }
  if (in.mem.has_page_tables) {
    out += fmt::format("\nPageTables {} = these processes {} (their VmPTE and PGDs, shared hugetlb PMD tables once)",
                       human_bytes(double(in.mem.page_tables)), human_bytes(double(in.processes_page_tables)));
    out += fmt::format(" + {} {}\n", human_bytes(double(in.page_tables_residual)),
                       !in.all ? "(other processes and the kernel)"
                       : in.skipped.empty() ? "(the kernel's own tables, and processes that came or went while reading)"
                                            : "(the kernel's own tables, the processes not read, and processes that came "
                                              "or went while reading)");
  }
  // Permission refusals (a non-root user's --all) are one line; every other reason its own.
  std::vector<int> denied;
  for (const live::unreadable& u : in.skipped) {
    if (u.reason.find("Permission denied") != std::string::npos) denied.push_back(u.pid);
    else out += fmt::format("not read: PID {}: {}\n", u.pid, u.reason);
  }
  if (!denied.empty()) {
    std::string list;
    for (size_t i = 0; i < denied.size() && i < 8; ++i) list += (i ? ", " : "") + std::to_string(denied[i]);
    if (denied.size() > 8) list += ", ...";
    out += fmt::format("not read: {} process{} of other users (PID {}): reading them needs root or CAP_SYS_PTRACE\n",
                       denied.size(), denied.size() == 1 ? "" : "es", list);
  }
  return out;
}

nlohmann::json inspection_json(const live::inspection& in) {
  auto tables = [](const auto& t) {
    nlohmann::json j = nlohmann::json::object();
    for (level l : kShown) j[level_name(l)] = t[size_t(l)];
    return j;
  };
  nlohmann::json j;
  j["schema_version"] = 1;
  j["paging"] = in.paging;
  j["exact_huge"] = in.exact_huge;
  j["processes"] = nlohmann::json::array();
  for (const live::process_inspection& p : in.processes) {
    nlohmann::json jp = {{"pid", p.pid},
                         {"comm", p.comm},
                         {"vmpte_bytes", p.status.vmpte},
                         {"vmrss_bytes", p.status.vmrss},
                         {"pss_bytes", p.pss},
                         {"attributed_bytes", p.attributed},
                         {"residual_bytes", p.residual},
                         {"shared_pmd_bytes", p.shared_pmd_bytes},
                         {"image_resident_bytes",
                          {{"text", p.image.text}, {"data", p.image.data}, {"heap", p.image.heap},
                           {"libraries", p.image.libraries}, {"stack", p.image.stack}}},
                         {"tables", tables(p.tables)}};
    jp["vmas"] = nlohmann::json::array();
    for (const live::vma_tables& vt : p.vmas) {
      const live::vma_info& v = vt.vma;
      jp["vmas"].push_back({{"start", v.start},
                            {"end", v.end},
                            {"perms", v.perms},
                            {"offset", v.offset},
                            {"inode", v.inode},
                            {"path", v.path},
                            {"kernel_page_size_bytes", v.kernel_page_size},
                            {"rss_bytes", v.rss},
                            {"present_pages", vt.present_pages},
                            {"huge_entries", vt.huge_entries},
                            {"tables", tables(vt.tables)},
                            {"table_bytes", vt.table_bytes},
                            {"shared_pmd_windows", vt.shared_pmd_windows.size()}});
    }
    j["processes"].push_back(std::move(jp));
  }
  j["segments"] = nlohmann::json::array();
  for (const live::shared_segment& s : in.segments)
    j["segments"].push_back({{"path", s.path},
                             {"device", fmt::format("{:02x}:{:02x}", s.dev_major, s.dev_minor)},
                             {"inode", s.inode},
                             {"size_bytes", s.size},
                             {"pids", s.pids},
                             {"table_bytes", s.table_bytes},
                             {"present_pages", s.present_pages}});
  j["skipped"] = nlohmann::json::array();
  for (const live::unreadable& u : in.skipped) j["skipped"].push_back({{"pid", u.pid}, {"reason", u.reason}});
  j["page_tables"] = {{"meminfo_bytes", in.mem.page_tables},
                      {"processes_bytes", in.processes_page_tables},
                      {"residual_bytes", in.page_tables_residual},
                      {"all_processes", in.all}};
  return j;
}

}  // namespace vmlab
