#include "workload/designs.h"

#include <fmt/format.h>

namespace vmlab {
namespace {

// One row of the design table: the specs it gives on a profile (none when the profile
// lacks the feature; several for a row per hugetlb size) and how to name each.
struct design_row {
  const char* label;  // "{}" is the page size: the hugetlb page, else the base page
  const char* description;
  std::vector<design_spec> (*specs)(const kernel_profile& p);
};

// hugetlb pages of every size the profile has (hugetlb_page_sizes: default first, then
// the gigantic 1 GiB one where huge.gigantic), without or with PMD sharing.
std::vector<design_spec> hugetlb_specs(const kernel_profile& p, bool share) {
  std::vector<design_spec> out;
  for (bytes size : hugetlb_page_sizes(p)) {
    // huge_pmd_share() acts on PMD-level pages only (want_pmd_share, mm/hugetlb.c).
    if (share && (!p.huge.pmd_share || size != p.paging.pmd_huge_size())) continue;
    out.push_back({.shared = shared_pages::hugetlb, .hugetlb_page = size, .pmd_share = share, .anon_thp = false});
  }
  return out;
}

// The table. A new design is a row here (and, for `estimate`, a closed form of what its
// spec changes: estimate.cc).
const design_row kDesigns[] = {
    {"{}", "every page is a base page (THP off): the baseline",
     [](const kernel_profile&) { return std::vector<design_spec>{design_spec{}}; }},
    {"THP", "transparent huge pages: shmem THP for the shared object (shmem_enabled=always), anon THP for private memory (enabled=always)",
     [](const kernel_profile& p) {
       if (!p.huge.thp && !p.huge.shmem_thp) return std::vector<design_spec>{};
       return std::vector<design_spec>{{.shared = p.huge.shmem_thp ? shared_pages::shmem_thp : shared_pages::small,
                                        .hugetlb_page = 0, .pmd_share = false, .anon_thp = p.huge.thp}};
     }},
    {"hugetlb {}", "the shared object in hugetlb pages (SHM_HUGETLB / hugetlbfs), from a boot-time pool; no PMD sharing",
     [](const kernel_profile& p) { return hugetlb_specs(p, false); }},
    {"hugetlb {} + PMD share", "hugetlb pages with huge_pmd_share(): every 1 GiB-aligned window's PMD page is one page for all processes",
     [](const kernel_profile& p) { return hugetlb_specs(p, true); }},
};

std::string size_setting(bytes b) {  // "2MiB": as scenario sizes are written
  std::string s = page_size_label(b);
  s.erase(s.find(' '), 1);
  return s;
}

}  // namespace

std::string page_size_label(bytes b) {
  if (b >= GiB && b % GiB == 0) return fmt::format("{} GiB", b / GiB);
  if (b >= MiB && b % MiB == 0) return fmt::format("{} MiB", b / MiB);
  if (b >= KiB && b % KiB == 0) return fmt::format("{} KiB", b / KiB);
  return fmt::format("{} B", b);
}

std::vector<std::string> design_settings(const kernel_profile& p, const design_spec& spec, const design_target& t) {
  std::vector<std::string> out;
  if (p.huge.thp) out.push_back(std::string("kernel.overrides.thp_enabled=") + (spec.anon_thp ? "always" : "never"));
  if (p.huge.shmem_thp)
    out.push_back(std::string("kernel.overrides.shmem_enabled=") + (spec.shared == shared_pages::shmem_thp ? "always" : "never"));
  if (spec.shared == shared_pages::hugetlb) {
    const std::string size = size_setting(spec.hugetlb_page);
    out.push_back("object." + t.object + ".kind=hugetlb");
    // A hugetlb object is a whole number of its pages (as hugetlbfs rounds a SHM_HUGETLB
    // segment up): the object grows to the next one.
    if (t.object_size % spec.hugetlb_page)
      out.push_back(fmt::format("object.{}.size={}", t.object, round_up(t.object_size, spec.hugetlb_page)));
    out.push_back("object." + t.object + ".page_size=" + size);
    // A pool of exactly the pages the object needs (the mapping rounds up to them).
    out.push_back(fmt::format("machine.hugepages={{\"{}\"={}}}", size, div_round_up(t.object_size, spec.hugetlb_page)));
    if (spec.hugetlb_page == p.paging.pmd_huge_size())
      out.push_back(std::string("kernel.overrides.hugetlb_pmd_share=") + (spec.pmd_share ? "true" : "false"));
  }
  return out;
}

std::vector<design> designs_for(const kernel_profile& p, const design_target& t) {
  std::vector<design> out;
  for (const design_row& row : kDesigns)
    for (const design_spec& spec : row.specs(p)) {
      const bytes size = spec.shared == shared_pages::hugetlb ? spec.hugetlb_page : p.paging.page_size();
      out.push_back({fmt::format(fmt::runtime(row.label), page_size_label(size)), row.description, spec,
                     design_settings(p, spec, t)});
    }
  return out;
}

}  // namespace vmlab
