// `vmlab sweep` (issue 13, item 3): 3 profiles x 4 process counts of a small OLTP server,
// locally in parallel; the same variants as a GNU parallel job list and a Slurm job array,
// collected into the same CSV; errors that name the setting.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/run_vmlab.h"

namespace vmlab {
namespace {

using cli_testing::cli_result;
using cli_testing::lines_of;
using cli_testing::run_vmlab;
using nlohmann::json;
namespace fs = std::filesystem;

const std::string kScenario = "examples/oltp-small";
const std::vector<std::string> kProfiles = {"linux-2.6.15-x86_64", "linux-6.18", "linux-2.6.15"};
const std::vector<std::string> kCounts = {"1", "2", "4", "8"};

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

std::vector<std::string> sweep_args(std::vector<std::string> extra) {
  std::vector<std::string> a = {"sweep", kScenario, "--set", "kernel.profile=" + joined(kProfiles),
                                "--set", "group.db.count=" + joined(kCounts), "-j", "2"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// A fresh directory under the test's temporary directory.
std::string temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("vmlab-sweep-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int sh(const std::string& cmd) { return std::system(("bash -c " + cmd).c_str()); }

// The local sweep's CSV, computed once for the tests that compare with it.
const std::string& local_csv() {
  static const std::string csv = [] {
    const cli_result r = run_vmlab(sweep_args({"--format", "csv"}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }();
  return csv;
}

TEST(CliSweep, TwelveVariantsEqualTheirRuns) {
  const cli_result r = run_vmlab(sweep_args({"--format", "json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("schema_version"), 1);
  EXPECT_EQ(j.at("scenario"), kScenario);
  ASSERT_EQ(j.at("variants").size(), 12u);
  // The cross product in the order given: the first --set varies slowest.
  for (size_t i = 0; i < 12; ++i) {
    const json& s = j.at("variants")[i].at("settings");
    EXPECT_EQ(s.at("kernel.profile"), kProfiles[i / 4]) << i;
    EXPECT_EQ(s.at("group.db.count"), kCounts[i % 4]) << i;
  }
  // Two variants against `vmlab run --json` of the same settings.
  for (size_t i : {size_t{2}, size_t{11}}) {
    const cli_result run = run_vmlab({"run", kScenario, "--set", "kernel.profile=" + kProfiles[i / 4], "--set",
                                      "group.db.count=" + kCounts[i % 4], "--json"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json rj = json::parse(run.out);
    const json& f = j.at("variants")[i].at("figures");
    EXPECT_EQ(f.at("PageTables (max)").get<double>(), rj.at("peak").at("PageTables").get<double>()) << i;
    EXPECT_EQ(f.at("largest process's page tables (max)").get<double>(),
              rj.at("peak").at("VmPTE_max_process").get<double>())
        << i;
    EXPECT_EQ(f.at("page faults").get<double>(), rj.at("faults").get<double>()) << i;
    EXPECT_EQ(j.at("variants")[i].at("profile"), rj.at("profile"));
  }
  // More processes, more page tables, under every profile.
  for (size_t p = 0; p < 3; ++p)
    for (size_t c = 1; c < 4; ++c)
      EXPECT_GT(j.at("variants")[p * 4 + c].at("figures").at("PageTables (max)").get<double>(),
                j.at("variants")[p * 4 + c - 1].at("figures").at("PageTables (max)").get<double>());
}

TEST(CliSweep, CsvHasAHeaderAndARowPerVariant) {
  const auto lines = lines_of(local_csv());
  ASSERT_EQ(lines.size(), 13u);
  EXPECT_EQ(lines[0].rfind("kernel.profile,group.db.count,completed,PageTables (max) [bytes],", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("linux-2.6.15-x86_64,1,true,", 0), 0u) << lines[1];
  EXPECT_EQ(lines[12].rfind("linux-2.6.15,8,true,", 0), 0u) << lines[12];
}

TEST(CliSweep, ParallelJobListCollectsTheSameCsv) {
  if (sh("'command -v parallel >/dev/null'") != 0) GTEST_SKIP() << "GNU parallel is not installed (apt-get install parallel)";
  const std::string dir = temp_dir("parallel");
  const cli_result e = run_vmlab(sweep_args({"--emit", "parallel", dir}));
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const auto jobs = lines_of(slurp(dir + "/jobs.txt"));
  size_t commands = 0;
  for (const auto& l : jobs) commands += !l.empty() && l[0] != '#';
  EXPECT_EQ(commands, 12u);
  EXPECT_EQ(json::parse(slurp(dir + "/variants.json")).at("variants").size(), 12u);
  ASSERT_EQ(sh("'parallel --will-cite --jobs 2 < " + dir + "/jobs.txt'"), 0);
  const cli_result c = run_vmlab({"sweep", "--collect", dir, "--format", "csv"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out, local_csv());

  // A missing result is named, and the collect fails.
  fs::remove(dir + "/005.json");
  const cli_result m = run_vmlab({"sweep", "--collect", dir, "--format", "csv"});
  EXPECT_EQ(m.exit_code, 1);
  EXPECT_NE(m.err.find("variant 5 (kernel.profile=linux-6.18, group.db.count=2)"), std::string::npos) << m.err;
  EXPECT_NE(m.err.find("005.json: missing"), std::string::npos) << m.err;
  EXPECT_EQ(m.out, "");
  fs::remove_all(dir);
}

TEST(CliSweep, SlurmArrayTasksCollectTheSameCsv) {
  const std::string dir = temp_dir("slurm");
  const cli_result e = run_vmlab(sweep_args({"--emit", "slurm", dir}));
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const std::string script = slurp(dir + "/sweep.slurm");
  EXPECT_EQ(script.rfind("#!/bin/bash\n", 0), 0u);
  EXPECT_NE(script.find("\n#SBATCH --array=0-11\n"), std::string::npos) << script;
  // One task per variant, as Slurm would start them.
  for (int task = 0; task < 12; ++task)
    ASSERT_EQ(sh("'SLURM_ARRAY_TASK_ID=" + std::to_string(task) + " bash " + dir + "/sweep.slurm'"), 0) << task;
  EXPECT_NE(sh("'SLURM_ARRAY_TASK_ID=12 bash " + dir + "/sweep.slurm 2>/dev/null'"), 0);
  const cli_result c = run_vmlab({"sweep", "--collect", dir, "--format", "csv"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out, local_csv());
  fs::remove_all(dir);
}

TEST(CliSweep, BadSettingsAreNamed) {
  cli_result r = run_vmlab({"sweep", kScenario, "--set", "group.db.count=1,banana", "--format", "csv"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("group.db.count=banana"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  r = run_vmlab({"sweep", kScenario, "--set", "group.db.cuont=1,2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("group.db.cuont"), std::string::npos) << r.err;
  r = run_vmlab({"sweep", kScenario, "--set", "kernel.profile=linux-9.99,linux-6.18"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("linux-9.99"), std::string::npos) << r.err;
  r = run_vmlab({"sweep", kScenario, "--set", "group.db.count="});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("an empty value in the list of group.db.count"), std::string::npos) << r.err;
  r = run_vmlab({"sweep", kScenario, "--set", "group.db.count=1,,2"});
  EXPECT_EQ(r.exit_code, 2);
  r = run_vmlab({"sweep", kScenario});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("at least one --set"), std::string::npos) << r.err;
}

TEST(CliSweep, TomlValuesKeepTheirCommas) {
  // Commas inside {...} do not split; --set-list splits at ';' only. Both give 2 variants.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--set", "machine.hugepages={\"2MiB\"=8,\"1GiB\"=1},{\"2MiB\"=16}"},
           {"--set-list", "machine.hugepages={\"2MiB\"=8,\"1GiB\"=1};{\"2MiB\"=16}"}}) {
    std::vector<std::string> a = {"sweep", "validate/anon-64m", "--format", "json"};
    a.insert(a.end(), args.begin(), args.end());
    const cli_result r = run_vmlab(a);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    ASSERT_EQ(j.at("variants").size(), 2u);
    EXPECT_EQ(j.at("variants")[0].at("settings").at("machine.hugepages"), "{\"2MiB\"=8,\"1GiB\"=1}");
  }
}

}  // namespace
}  // namespace vmlab
