// vmlab profiles | vmlab scenarios
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"
#include "model/profile.h"
#include "workload/builtin.h"

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

action add_scenarios(CLI::App&) {
  return []() -> int {
    for (const auto& b : builtin_scenarios()) std::cout << b.name << "\n";
    return 0;
  };
}

}  // namespace vmlab::cli
