// The seeds' published figures and how vmlab reproduces each one: `vmlab seeds`.
//
// A seed is a text from the project's sources (a mailing-list report, a paper) that
// publishes measured figures. Each figure is one row of seed_figures(): the seed's id, the
// built-in scenario that models the seed's workload, the figure's name, the value as
// published, a relative tolerance, and an extractor that reads vmlab's value from the
// scenario's RunResult. A new figure (a new seed, a new issue) is a new row; nothing else
// changes. docs/seeds.md gives each row's source line and the inference behind its
// scenario.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/tiobench_sim.h"
#include "workload/tiobench.h"
#include "report/units.h"
#include "vmlab/run_result.h"

namespace vmlab {

struct seed_figure {
  std::string_view seed;      // "000": the seed file's number
  std::string_view scenario;  // the built-in scenario that models it, e.g. "seeds/rmap-dss"
  std::string_view metric;    // "ReverseMaps_max"
  double paper = 0;           // the published value, in `unit`
  std::string_view unit;      // "bytes", or what is counted ("mappings", "objects", "slabs")
  std::string_view note;      // the value as the seed prints it ("104 MB"), and where
  double tolerance = 0;       // |vmlab - paper| / paper allowed
  // vmlab's value, or nullopt when the result does not carry the figure (e.g. no
  // pte_chain cache: the profile has no such rmap).
  std::optional<double> (*extract)(const run_result&) = nullptr;
  // The scenario's variant this figure is measured on: settings as `vmlab compare
  // --variant` and --set take them ("PATH=VALUE; PATH=VALUE"; "" = as written).
  std::string_view settings;
  // A saving between two variants: vmlab's value is extract(the run with `settings`) -
  // extract(the run with `minus`), when `difference` is set.
  bool difference = false;
  std::string_view minus;
  // A band instead of a tolerance, when band_high > 0: ok when band_low <= vmlab <=
  // band_high (in `unit`). For a seed that gives a bound ("over 14 GB") and an issue that
  // sets the band; rel_error is still against `paper`, and `tolerance` is unused (0).
  double band_low = 0, band_high = 0;
  // A figure the seed does not publish but its scenarios answer (seed 004's 64 GB runs with
  // huge pages, for which the seed gives throughput only): `paper` is 0 and unused, the
  // figure has no tolerance, and it is ok when its run completes. Printed in a block of its
  // own under the compared figures.
  bool published = true;
  // A tiobench figure (seed 003): vmlab's value from the sim's tiobench run of the spec
  // seed_tiobench_spec(scenario) gives, instead of `extract` on a scenario's result.
  std::optional<double> (*extract_tiobench)(const tiobench_run&) = nullptr;
};

// The tiobench run a tiobench figure's `scenario` names ("tiobench/seed-003"), and the
// machine and tiotest the sim replays it on (docs/seeds.md, seed 003).
tiobench_spec seed_tiobench_spec(std::string_view scenario);
sim::tiobench_sim_options seed_tiobench_options(std::string_view scenario);

// Every figure of every seed, by seed and then in the order the seed states them.
const std::vector<seed_figure>& seed_figures();

// One figure compared.
struct seed_check {
  const seed_figure* figure = nullptr;
  std::optional<double> vmlab;
  double rel_error = 0;    // (vmlab - paper) / paper: signed, so "+2.1%" reads as "vmlab is above"
  bool completed = true;   // the scenario ran to its end (a run cut short reproduces nothing)
  bool ok = false;         // completed, a value, and |rel_error| <= tolerance (or within the band)
};

// `minus`: the run of f.minus, for a difference figure (else unused).
seed_check check_seed_figure(const seed_figure& f, const run_result& r, const run_result* minus = nullptr);
// A tiobench figure (f.extract_tiobench set) against the sim's tiobench run.
seed_check check_seed_figure(const seed_figure& f, const tiobench_run& r);

// {"figures":[{"seed","metric","paper","vmlab","rel_error","unit","tolerance","band","scenario",
// "settings","note","ok"}, ...]}; vmlab and rel_error are null when the result lacks the figure;
// band is [low, high] for a band figure, else null; an unpublished figure has "published":
// false and null paper and rel_error.
nlohmann::json seeds_json(const std::vector<seed_check>& checks);
// One line per figure (sizes in `u`, counts as they are), the unpublished figures under
// a heading of their own, then "N figures, M outside tolerance" (N: the published ones).
std::string format_seeds_table(const std::vector<seed_check>& checks, size_unit u = size_unit::human);

}  // namespace vmlab
