// vmlab profiles | vmlab scenarios | vmlab show NAME
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "model/profile.h"
#include "vmlab/suggest.h"
#include "workload/builtin.h"
#include "workload/scenario.h"

namespace vmlab::cli {
namespace {

std::string levels_of(level_mask m) {
  std::string s;
  for (int l = 0; l < kLevels; ++l)
    if (m & (1u << l)) s += (s.empty() ? "" : "+") + std::string(level_name(static_cast<level>(l)));
  return s;
}

}  // namespace

action add_profiles(CLI::App&) {
  return []() -> int {
    std::cout << fmt::format("{:<22} {:<15} {:<20} {:<12} {:<9} {}\n", "profile", "paging", "PageTables counts",
                             "VmPTE counts", "PT_RECLAIM", "description");
    for (const auto& n : profile_names()) {
      const kernel_profile p = find_profile(n).value();
      std::cout << fmt::format("{:<22} {:<15} {:<20} {:<12} {:<9} {}\n", p.name, p.paging.name, levels_of(p.page_tables_levels),
                               p.reports_vmpte ? levels_of(p.vmpte_levels) : "(no VmPTE)", p.pt_reclaim ? "yes" : "no",
                               p.description);
    }
    return 0;
  };
}

action add_scenarios(CLI::App& app) {
  app.footer("One line each: the name (what run, compare and show take) and its description. vmlab show NAME prints one.");
  return []() -> int {
    size_t w = 0;
    for (const auto& b : builtin_scenarios()) w = std::max(w, b.name.size());
    for (const auto& b : builtin_scenarios())
      std::cout << fmt::format("{:<{}}  {}\n", b.name, w, scenario_description(b.text));
    return 0;
  };
}

action add_show(CLI::App& app) {
  auto name = std::make_shared<std::string>();
  app.add_option("name", *name, "A built-in scenario (see vmlab scenarios)")->required();
  return [name]() -> int {
    std::string n = *name;
    if (n.size() > 5 && n.ends_with(".toml")) n.resize(n.size() - 5);
    if (const builtin_scenario* b = find_builtin(n)) {
      std::cout << b->text;
      return 0;
    }
    std::vector<std::string_view> names;
    for (const auto& b : builtin_scenarios()) names.push_back(b.name);
    return report_error(status::invalid_argument("no built-in scenario named '" + *name + "'" + did_you_mean(n, names) +
                                                 " (vmlab scenarios lists them)"));
  };
}

}  // namespace vmlab::cli
