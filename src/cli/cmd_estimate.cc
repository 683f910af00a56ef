// vmlab estimate --processes N --shared SIZE [--private SIZE] [--touched PCT] [--profile NAME]
//                [--page-size SIZE|thp] [--sharing none|pmd-share] [--memory SIZE] [--json] [--scenario]
#include <charconv>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "report/estimate.h"
#include "workload/scenario.h"
#include "workload/size.h"

namespace vmlab::cli {
namespace {

struct opts {
  uint64_t processes = 0;
  std::string shared, priv = "0", touched = "100%", profile = "linux-6.18", page_size, sharing = "none", memory;
  bool json = false, scenario = false;
};

// "100%", "37.5%", or a fraction "0.375": a number in (0, 1] after the percent is divided out.
result<double> parse_touched(const std::string& text) {
  const bool pct = !text.empty() && text.back() == '%';
  const std::string num = pct ? text.substr(0, text.size() - 1) : text;
  double v = 0;
  auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (num.empty() || ec != std::errc() || end != num.data() + num.size())
    return status::invalid_argument("--touched: '" + text + "' is not a percentage (e.g. 100%, 37.5%) or a fraction (0.375)");
  if (pct) v /= 100;
  if (!(v > 0 && v <= 1))
    return status::invalid_argument("--touched: '" + text + "' is outside (0%, 100%]");
  return v;
}

result<bytes> parse_size_option(const std::string& option, const std::string& text) {
  auto r = parse_size(text);
  if (!r.ok()) return status::invalid_argument(option + ": " + r.error().message());
  return r;
}

std::string design_names(const std::vector<design>& all) {
  std::string s;
  for (const auto& d : all) s += (s.empty() ? "" : ", ") + d.label;
  return s;
}

// The design --page-size and --sharing pick, by what it changes (its spec), not its label.
result<size_t> pick_design(const kernel_profile& p, const opts& o, const std::vector<design>& all) {
  if (o.sharing != "none" && o.sharing != "pmd-share")
    return status::invalid_argument("--sharing must be none or pmd-share, not '" + o.sharing + "'");
  const bool share = o.sharing == "pmd-share";
  if (o.page_size.empty() && !share) return size_t{0};
  const bool thp = o.page_size == "thp" || o.page_size == "THP";
  bytes size = share ? p.paging.pmd_huge_size() : p.paging.page_size();
  if (!o.page_size.empty() && !thp) {
    auto r = parse_size_option("--page-size", o.page_size);
    if (!r.ok()) return r.error();
    size = r.value();
  }
  for (size_t i = 0; i < all.size(); ++i) {
    const design_spec& d = all[i].spec;
    const bool match = thp ? d.shared == shared_pages::shmem_thp || (d.shared == shared_pages::small && d.anon_thp)
                       : size == p.paging.page_size() ? d.shared == shared_pages::small && !d.anon_thp
                                                      : d.shared == shared_pages::hugetlb && d.hugetlb_page == size;
    if (match && d.pmd_share == share) return i;
  }
  return status::invalid_argument("--page-size " + (o.page_size.empty() ? page_size_label(size) : o.page_size) +
                                  " --sharing " + o.sharing + ": " + p.name + " offers no such design (it offers: " +
                                  design_names(all) + ")");
}

int run_estimate(const opts& o) {
  auto prof = estimate_profile(o.profile);
  if (!prof.ok()) return report_error(prof.error());
  const kernel_profile& p = prof.value();
  estimate_shape s;
  s.processes = o.processes;
  auto shared = parse_size_option("--shared", o.shared);
  if (!shared.ok()) return report_error(shared.error());
  auto priv = parse_size_option("--private", o.priv);
  if (!priv.ok()) return report_error(priv.error());
  auto touched = parse_touched(o.touched);
  if (!touched.ok()) return report_error(touched.error());
  auto memory = parse_memory_option(o.memory, "--memory");
  if (!memory.ok()) return report_error(memory.error());
  s.shared = shared.value();
  s.private_bytes = priv.value();
  s.touched = touched.value();
  if (status st = estimate_check_shape(p, s); !st.ok()) return report_error(st);
  const std::vector<design> designs = designs_for(p, estimate_target(s));
  auto focus = pick_design(p, o, designs);
  if (!focus.ok()) return report_error(focus.error());
  // The scenario needs no figures: it is what to run where the closed form has none.
  if (o.scenario) {
    auto text = scenario_with_settings(estimate_scenario(p, s), "estimate.toml", designs[*focus].settings);
    if (!text.ok()) return report_error(text.error());
    std::cout << "# vmlab estimate --scenario: design " << designs[*focus].label << "\n" << text.value();
    return 0;
  }
  auto all = estimate_all(p, s);
  if (!all.ok()) return report_error(all.error());
  if (o.json)
    std::cout << estimate_json(p, s, all.value(), *focus, memory.value()).dump(2) << "\n";
  else
    std::cout << format_estimate(p, s, all.value(), *focus, memory.value());
  return 0;
}

}  // namespace

action add_estimate(CLI::App& app) {
  auto o = std::make_shared<opts>();
  app.footer(
      "Page tables, reverse maps and slab objects of N processes that each map one shared segment (and write some "
      "private memory), in closed form: instant, and equal byte for byte to the sim engine on the scenario "
      "--scenario prints (PTSHARE profiles excepted: their figures are refused, as the closed form has no term for shared "
      "page tables, and --scenario still writes the run). Sizes as in scenarios: binary units (300GB = 300 GiB = 2^30 x 300); totals are printed in "
      "GiB and GB (10^9).\n"
      "Example: vmlab estimate --processes 1500 --shared 300GB\n"
      "Exit status: 0, or 2 for bad input.");
  app.add_option("--processes", o->processes, "Processes that map the segment")->required();
  app.add_option("--shared", o->shared, "Size of the shared segment (e.g. 300GB, 16GiB)")->required();
  app.add_option("--private", o->priv, "Private anonymous memory each process writes (default 0)");
  app.add_option("--touched", o->touched, "How much of the segment each process touches, as a prefix (default 100%)");
  app.add_option("--profile", o->profile, "Kernel profile (vmlab profiles; default linux-6.18)");
  app.add_option("--page-size", o->page_size, "Focus on a design: the base page (4KiB), a hugetlb size (2MiB, 1GiB) or thp");
  app.add_option("--sharing", o->sharing, "Focus on a design: none or pmd-share (hugetlb PMD sharing)");
  app.add_option("--memory", o->memory, "Machine memory: say whether the shape fits (e.g. 512GiB)");
  CLI::Option* json = app.add_flag("--json", o->json, "Print the figures as JSON (schema_version 1, sizes in _bytes keys)");
  app.add_flag("--scenario", o->scenario, "Print the scenario (TOML) whose sim run the figures equal")->excludes(json);
  return [o]() -> int { return run_estimate(*o); };
}

}  // namespace vmlab::cli
