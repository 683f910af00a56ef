// `vmlab sweep --emit parallel|slurm` and `--collect`: the variants as job lists for
// other schedulers, and variants.json, which says what each result file holds.
#include <fmt/format.h>

#include "report/sweep.h"

namespace vmlab {

std::string variant_command(const std::string& vmlab_path, const std::string& scenario, const sweep_variant& v,
                            const std::string& dir, size_t count) {
  std::string cmd = shell_quote(vmlab_path) + " run " + shell_quote(scenario);
  for (const auto& s : v.settings) cmd += " --set " + shell_quote(s);
  // Redirected, not -o: what `vmlab run --json` prints is the result file.
  return cmd + " --quiet --json > " + shell_quote(dir + "/" + variant_name(v.index, count) + ".json");
}

nlohmann::json variants_json(const std::string& scenario, const std::vector<sweep_axis>& axes,
                             const std::vector<sweep_variant>& variants) {
  nlohmann::json j = {{"schema_version", 1}, {"scenario", scenario}};
  j["axes"] = nlohmann::json::array();
  for (const auto& a : axes) j["axes"].push_back({{"key", a.key}, {"values", a.values}});
  j["variants"] = nlohmann::json::array();
  for (const auto& v : variants) {
    nlohmann::json settings = nlohmann::json::object();
    for (size_t k = 0; k < axes.size(); ++k) settings[axes[k].key] = v.settings[k].substr(axes[k].key.size() + 1);
    j["variants"].push_back(
        {{"index", v.index}, {"file", variant_name(v.index, variants.size()) + ".json"}, {"settings", settings}});
  }
  return j;
}

std::string parallel_jobs(const std::vector<std::string>& commands, const std::string& dir) {
  std::string out = fmt::format(
      "# vmlab sweep: {} variants, one command a line (settings in {}/variants.json). Run them with\n"
      "#   parallel --jobs N < {}/jobs.txt     (or: parallel --sshloginfile HOSTS ... for several machines)\n"
      "# then print the results with: vmlab sweep --collect {}\n",
      commands.size(), dir, dir, dir);
  for (const auto& c : commands) out += c + "\n";
  return out;
}

std::string slurm_script(const std::vector<std::string>& commands, const std::string& dir) {
  std::string out = fmt::format(
      "#!/bin/bash\n"
      "#SBATCH --job-name=vmlab-sweep\n"
      "#SBATCH --array=0-{}\n"
      "#SBATCH --output={}/slurm-%A_%a.out\n"
      "# vmlab sweep: {} variants, task N runs variant N (settings in {}/variants.json).\n"
      "# Submit with: sbatch {}/sweep.slurm; then print the results with: vmlab sweep --collect {}\n"
      "set -u\n"
      "case \"${{SLURM_ARRAY_TASK_ID:?run as a Slurm array task}}\" in\n",
      commands.size() - 1, dir, commands.size(), dir, dir, dir);
  for (size_t i = 0; i < commands.size(); ++i) out += fmt::format("  {}) {} ;;\n", i, commands[i]);
  out += "  *) echo \"vmlab sweep: no variant $SLURM_ARRAY_TASK_ID\" >&2; exit 2 ;;\nesac\n";
  return out;
}

result<sweep_plan> parse_variants_json(const nlohmann::json& j, const std::string& where) {
  auto bad = [&](const std::string& what) {
    return status::invalid_argument(where + ": " + what + " (it is written by `vmlab sweep --emit`)");
  };
  try {
    if (j.at("schema_version").get<int>() != 1) return bad("schema_version is not 1");
    sweep_plan p;
    p.scenario = j.at("scenario").get<std::string>();
    for (const auto& a : j.at("axes"))
      p.axes.push_back({a.at("key").get<std::string>(), a.at("values").get<std::vector<std::string>>()});
    for (const auto& v : j.at("variants")) {
      sweep_variant sv;
      sv.index = v.at("index").get<size_t>();
      if (sv.index != p.variants.size()) return bad("variant indices are not 0, 1, 2, ...");
      for (const auto& a : p.axes) sv.settings.push_back(a.key + "=" + v.at("settings").at(a.key).get<std::string>());
      p.variants.push_back(std::move(sv));
      p.files.push_back(v.at("file").get<std::string>());
    }
    if (p.variants.empty()) return bad("no variants");
    return p;
  } catch (const nlohmann::json::exception& e) {
    return bad(e.what());
  }
}

}  // namespace vmlab
