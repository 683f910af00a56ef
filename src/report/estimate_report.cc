// What `vmlab estimate` prints: the focused design in detail, then every design side by side.
#include <fmt/format.h>

#include "report/estimate.h"

namespace vmlab {
namespace {

std::string scaled(bytes b, double base, const char* const* units) {
  double x = double(b);
  int u = 0;
  while (x >= base && units[u + 1]) x /= base, ++u;
  return u == 0 ? fmt::format("{} {}", b, units[0]) : fmt::format("{:.1f} {}", x, units[u]);
}

// The memory a design costs beyond the data: every page-table page and every slab page.
bytes overhead(const estimate_figures& e) { return e.table_bytes + e.slab_bytes(); }

std::string per_level(const kernel_profile& p, const level_counts& c) {
  std::string names, counts;
  for (int i = 0; i < p.paging.nr_levels; ++i) {
    const auto l = p.paging.at(i).lvl;
    names += (i ? "/" : "") + std::string(level_name(l));
    counts += (i ? " / " : "") + fmt::format("{}", c[static_cast<size_t>(l)]);
  }
  return names + " pages: " + counts;
}

std::string touched_text(const estimate_shape& s) {
  return s.touched >= 1 ? "all of it touched" : fmt::format("the first {:g}% touched", s.touched * 100);
}

std::string caches_text(const estimate_figures& e, bool rmap) {
  std::string out;
  for (const auto& c : e.caches)
    if (c.rmap == rmap && c.objects) out += (out.empty() ? "" : ", ") + c.name;
  return out.empty() ? "none" : out;
}

}  // namespace

std::string binary_size(bytes b) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", nullptr};
  return scaled(b, 1024, units);
}

std::string decimal_size(bytes b) {
  static const char* const units[] = {"B", "kB", "MB", "GB", "TB", "PB", nullptr};
  return scaled(b, 1000, units);
}

bytes estimate_machine_need(const estimate_shape& s, const estimate_figures& e) {
  return s.shared + s.processes * s.private_bytes + overhead(e);
}

std::string format_estimate(const kernel_profile& p, const estimate_shape& s, const std::vector<estimate_figures>& all,
                            size_t focus, bytes memory) {
  const estimate_figures& e = all[focus];
  const uint64_t n = s.processes;
  const char* approx = s.touched >= 1 ? "" : "≈ ";  // a prefix is exact; scattered touches are not
  std::string out = fmt::format("vmlab estimate: {} processes, each mapping {} shared ({}) and writing {} private; kernel {}\n",
                                n, binary_size(s.shared), touched_text(s), binary_size(s.private_bytes), p.name);
  out += fmt::format("design: {} ({})\n\n", e.d.label, e.d.description);
  out += fmt::format("{:<34}{:>14}  {}\n", "", "per process", fmt::format("all {} processes", n));
  out += fmt::format("{:<34}{:>14}  {}{} ({})\n", "page tables (every level)", binary_size(e.proc_table_bytes), approx,
                     binary_size(e.table_bytes), decimal_size(e.table_bytes));
  out += fmt::format("{:<34}{:>14}  {}{}\n", "  PageTables (/proc/meminfo)", "", approx, binary_size(e.page_tables));
  out += fmt::format("{:<34}{:>14}\n", "  VmPTE (/proc/PID/status)", binary_size(e.vmpte));
  out += fmt::format("  {}\n", per_level(p, e.tables_per_proc));
  if (e.tables_shared[static_cast<size_t>(level::pmd)])
    out += fmt::format("  of which shared by all processes (huge_pmd_share): {} PMD pages, counted once in PageTables\n",
                       e.tables_shared[static_cast<size_t>(level::pmd)]);
  out += fmt::format("{:<34}{:>14}  {}\n", "rmap objects (" + caches_text(e, true) + ")", binary_size(e.rmap_bytes() / n),
                     binary_size(e.rmap_bytes()));
  out += fmt::format("{:<34}{:>14}  {}\n", "slab pages (all caches)", binary_size(e.slab_bytes() / n), binary_size(e.slab_bytes()));
  out += fmt::format("{:<34}{:>14}  {}{} ({})\n", "page tables + slab", binary_size(overhead(e) / n), approx,
                     binary_size(overhead(e)), decimal_size(overhead(e)));
  if (s.touched < 1)
    out += fmt::format("\n≈: exact for touches of a sequential prefix; the same fraction scattered at random would need "
                       "about {} of PageTables ({} processes)\n",
                       binary_size(e.scattered_page_tables), n);
  if (memory) {
    const bytes need = estimate_machine_need(s, e);
    out += need > memory ? fmt::format("\ndoes NOT fit --memory {}: needs at least {} (segment, private memory, page "
                                       "tables and slabs)\n", binary_size(memory), binary_size(need))
                         : fmt::format("\nfits --memory {} (needs {})\n", binary_size(memory), binary_size(need));
  }
  out += fmt::format("\n{:<28}{:>14}{:>14}{:>12}{:>12}{:>22}\n", "designs of " + p.name, "PageTables", "VmPTE/proc",
                     "rmap", "slab", "saves vs " + all.front().d.label);
  for (size_t i = 0; i < all.size(); ++i) {
    const estimate_figures& x = all[i];
    const int64_t saved = int64_t(overhead(all.front())) - int64_t(overhead(x));
    const std::string saves = i == 0 ? "-" : saved >= 0 ? binary_size(bytes(saved)) : "-" + binary_size(bytes(-saved));
    out += fmt::format("{:<28}{:>14}{:>14}{:>12}{:>12}{:>22}\n", (i == focus ? "* " : "  ") + x.d.label,
                       binary_size(x.page_tables), binary_size(x.vmpte), binary_size(x.rmap_bytes()),
                       binary_size(x.slab_bytes()), saves);
  }
  out += "\n(* the design above; GiB = 2^30 bytes, GB = 10^9; saves = page tables + slab pages;\n"
         " `vmlab estimate ... --scenario` prints the scenario these figures equal on the sim engine)\n";
  return out;
}

nlohmann::json estimate_json(const kernel_profile& p, const estimate_shape& s, const std::vector<estimate_figures>& all,
                             size_t focus, bytes memory) {
  auto levels = [&](const level_counts& c) {
    nlohmann::json j = nlohmann::json::object();
    for (int i = 0; i < p.paging.nr_levels; ++i) j[level_name(p.paging.at(i).lvl)] = c[static_cast<size_t>(p.paging.at(i).lvl)];
    return j;
  };
  nlohmann::json j;
  j["schema_version"] = 1;
  j["profile"] = p.name;
  j["shape"] = {{"processes", s.processes}, {"shared_bytes", s.shared}, {"private_bytes", s.private_bytes},
                {"touched", s.touched}, {"exact", s.touched >= 1}};
  j["focus"] = all[focus].d.label;
  if (memory) {
    j["memory_bytes"] = memory;
    j["fits_memory"] = estimate_machine_need(s, all[focus]) <= memory;
  }
  j["designs"] = nlohmann::json::array();
  for (const estimate_figures& e : all) {
    nlohmann::json caches = nlohmann::json::array();
    for (const auto& c : e.caches)
      caches.push_back({{"name", c.name}, {"rmap", c.rmap}, {"objects", c.objects}, {"objsize_bytes", c.objsize},
                        {"object_bytes", c.object_bytes()}, {"slab_bytes", c.slab_pages * e.page_size}});
    j["designs"].push_back({{"label", e.d.label},
                            {"description", e.d.description},
                            {"settings", e.d.settings},
                            {"page_tables_bytes", e.page_tables},
                            {"page_table_memory_bytes", e.table_bytes},
                            {"process_page_table_bytes", e.proc_table_bytes},
                            {"vmpte_bytes", e.vmpte},
                            {"tables_per_process", levels(e.tables_per_proc)},
                            {"tables_shared", levels(e.tables_shared)},
                            {"tables_total", levels(e.tables_total)},
                            {"rmap_bytes", e.rmap_bytes()},
                            {"slab_bytes", e.slab_bytes()},
                            {"caches", caches},
                            {"saves_bytes", int64_t(overhead(all.front())) - int64_t(overhead(e))},
                            {"scattered_page_tables_bytes", e.scattered_page_tables},
                            {"machine_need_bytes", estimate_machine_need(s, e)}});
  }
  return j;
}

}  // namespace vmlab
