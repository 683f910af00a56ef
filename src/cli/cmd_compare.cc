// vmlab compare SCENARIO --variant "LABEL: PATH=VALUE; ..." --variant ... [--set ...] [--profile NAME]
//               [-o FILE] [--format table|json|csv]
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "engine/engine.h"
#include "report/compare.h"
#include "report/csv.h"

namespace vmlab::cli {

result<std::vector<compare_variant>> run_variants(const std::string& scenario, const std::vector<std::string>& settings,
                                                  const std::vector<std::string>& variants) {
  // Every variant is read before any runs: bad input fails at once.
  std::vector<compare_variant> vs;
  std::vector<op_stream> inputs;
  for (const auto& text : variants) {
    auto v = parse_variant(text);
    if (!v.ok()) return v.error();
    // Labels name the columns (and the CSV's keys): two alike would show one variant twice
    // or, in CSV, one column for both.
    for (const compare_variant& seen : vs)
      if (seen.label == v->label)
        return status::invalid_argument("--variant \"" + text + "\": the label '" + v->label +
                                        "' is already another variant's; give each its own");
    std::vector<std::string> all = settings;  // --set first, then the variant's own
    all.insert(all.end(), v->settings.begin(), v->settings.end());
    auto in = load_input(scenario, false, all);
    if (!in.ok()) return in.error();
    inputs.push_back(std::move(in.value()));
    vs.push_back(std::move(v.value()));
  }
  for (size_t i = 0; i < vs.size(); ++i) {
    auto r = run_sim(inputs[i]);
    if (!r.ok()) return r.error();
    vs[i].result = std::move(r.value());
  }
  return vs;
}

action add_compare(CLI::App& app) {
  struct opts {
    std::string scenario, profile;
    std::vector<std::string> settings, variants;
    output_options out;
  };
  auto o = std::make_shared<opts>();
  app.footer(
      "Runs the scenario once per variant on the sim engine and prints the figures side by side (maxima over the "
      "run: PageTables, the rmap's slab objects, low memory, the largest VmPTE, huge pages, faults), with each "
      "variant's difference from the first.\n"
      "Example: vmlab compare examples/postgres-200 --variant \"4 KiB:\" --variant \"hugetlb 2 MiB: "
      "object.shared_buffers.kind=hugetlb; machine.hugepages={\\\"2MiB\\\"=8192}\" --variant \"shmem THP: "
      "kernel.overrides.shmem_enabled=always\"\n"
      "Exit status: 0 when every variant ran to its end, 1 when one ended early (the kernel refused an op), 2 for "
      "bad input.");
  app.add_option("scenario", o->scenario, "Scenario file or built-in name")->required();
  add_variant_option(app, o->variants);
  add_set_option(app, o->settings);
  add_profile_option(app, o->profile);
  add_output_options(app, o->out);
  return [o]() -> int {
    if (o->variants.size() < 2)
      return report_error(status::invalid_argument("compare needs at least two --variant \"LABEL: PATH=VALUE; ...\" (got " +
                                                   std::to_string(o->variants.size()) + ")"));
    auto vs = run_variants(o->scenario, with_profile(o->profile, o->settings), o->variants);
    if (!vs.ok()) return report_error(vs.error());
    const std::string f = o->out.chosen();
    const std::string text = f == "json"  ? compare_json(o->scenario, vs.value()).dump(2) + "\n"
                             : f == "csv" ? to_csv(compare_csv_rows(vs.value()), compare_csv_columns(vs.value()))
                                          : format_compare(o->scenario, vs.value(), "compare", o->out.sizes());
    if (int rc = write_output(o->out, text); rc) return rc;
    int rc = 0;
    for (const auto& v : vs.value()) rc |= report_ended_early(v.result, o->out, "variant '" + v.label + "' ");
    return rc;
  };
}

}  // namespace vmlab::cli
