// Kernel designs a profile offers for a shared segment and private memory: 4 KiB pages,
// THP, hugetlb of each size, hugetlb with PMD sharing. One table (designs.cc) lists them;
// `vmlab estimate` computes each in closed form and `whatif` (issue 12, item 3) runs each
// as scenario settings, so a new design (a profile flag, say shared page tables) is one
// more row there.
//
// A design is two things that must say the same: a `design_spec` (what the design
// changes, as data the closed form reads: the shared object's page size, PMD sharing, THP)
// and `settings` (the same, as `--set PATH=VALUE` strings for load_scenario, as
// `vmlab compare --variant` and `vmlab run --set` take them). design_settings() derives
// the second from the first, so they cannot drift.
#pragma once

#include <string>
#include <vector>

#include "model/profile.h"
#include "vmlab/units.h"

namespace vmlab {

// How the shared segment's pages are mapped.
enum class shared_pages : uint8_t {
  small,      // 4 KiB pages (the PTE level's page)
  shmem_thp,  // shmem huge folios mapped by PMD (mm/shmem.c, shmem_enabled=always)
  hugetlb,    // a hugetlbfs / SHM_HUGETLB object of hugetlb_page pages
};

struct design_spec {
  shared_pages shared = shared_pages::small;
  bytes hugetlb_page = 0;  // hugetlb: the page size (a leaf level's span)
  bool pmd_share = false;  // hugetlb: huge_pmd_share() (kernel.overrides.hugetlb_pmd_share)
  bool anon_thp = false;   // private anonymous memory in THPs (thp_enabled=always)
};

struct design {
  std::string label;        // "4 KiB", "THP", "hugetlb 2 MiB", "hugetlb 2 MiB + PMD share", ...
  std::string description;  // one line
  design_spec spec;
  std::vector<std::string> settings;  // PATH=VALUE, as --set takes them
};

// What the designs act on in a scenario: the shared object (by its [[object]] name) and
// its size (for the hugetlb pool a hugetlb design needs).
struct design_target {
  std::string object;
  bytes object_size = 0;
};

// The designs profile `p` offers, 4 KiB first (the baseline every other is compared with).
std::vector<design> designs_for(const kernel_profile& p, const design_target& t);

// The settings that make `spec` on profile `p` for target `t`. Every design states both
// THP policies where the profile has them, so a design means the same on any scenario.
std::vector<std::string> design_settings(const kernel_profile& p, const design_spec& spec, const design_target& t);

// "4 KiB", "2 MiB", "1 GiB": a power-of-two size in the largest binary unit it fills.
std::string page_size_label(bytes b);

}  // namespace vmlab
