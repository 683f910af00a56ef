// vmlab inspect and whatif from the command line: usage errors (exit 2, the message), a
// real process (this test binary, which waits in poll while vmlab reads it), the JSON
// convention, and the scenario inspect writes, run back through vmlab run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/run_vmlab.h"
#include "tests/live_host.h"

namespace vmlab {
namespace {

using cli_testing::run_vmlab;

TEST(InspectCli, UsageErrors) {
  auto r = run_vmlab({"inspect"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "vmlab: error: inspect needs PIDs, --all or --cgroup PATH\n");
  r = run_vmlab({"inspect", "4194305"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "vmlab: error: no process 4194305 on this host\n");
  r = run_vmlab({"inspect", std::to_string(::getpid()), "-o", "/tmp/x.toml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "vmlab: error: -o goes with --scenario\n");
  r = run_vmlab({"whatif", "1", "x.toml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "vmlab: error: whatif takes PIDs or one scenario file, not 'x.toml'\n");
  r = run_vmlab({"whatif", "4194305"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "vmlab: error: no process 4194305 on this host\n");
}

TEST(InspectCli, ThisProcessReconcilesAndItsScenarioRuns) {
  SKIP_UNLESS_LIVE_HOST();
  const std::string me = std::to_string(::getpid());
  auto r = run_vmlab({"inspect", me, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 1);
  ASSERT_EQ(j["processes"].size(), 1u);
  const auto& p = j["processes"][0];
  EXPECT_EQ(p["pid"], ::getpid());
  const double vmpte = p["vmpte_bytes"], residual = p["residual_bytes"];
  EXPECT_GT(vmpte, 0);
  EXPECT_LE(std::abs(residual), 0.01 * vmpte);
  double sum = 0;
  for (const auto& v : p["vmas"]) sum += v["table_bytes"].get<double>();
  EXPECT_NEAR(sum, p["attributed_bytes"].get<double>(), 1.0);

  // The replay is compared with the VmPTE of the reading it came from (the scenario's
  // header): this process is running, and the JSON reading above was another moment (its
  // heap may have taken a new PTE page in between: a flake seen 2 times in 15 runs).
  const std::string file = ::testing::TempDir() + "inspect-self-" + me + ".toml";
  r = run_vmlab({"inspect", me, "--scenario", "-o", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  double read_vmpte = -1;
  {
    std::ifstream in(file);
    const std::string tag = "# read: pid " + me + " (";
    for (std::string line; std::getline(in, line);)
      if (line.rfind(tag, 0) == 0) read_vmpte = std::stod(line.substr(line.find("VmPTE ") + 6));
  }
  ASSERT_GT(read_vmpte, 0) << "no '# read:' line for pid " << me << " in " << file;
  r = run_vmlab({"run", file, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto run = nlohmann::json::parse(r.out);
  EXPECT_TRUE(run["process_image"].get<bool>());  // image = "inspected": the mappings are the whole process
  const double sim = run["samples"].back()["procs"][0]["VmPTE"];
#if defined(VMLAB_SANITIZED)
  // Under ASan this test process's replay came out 3.6% above its VmPTE on CI (1,306,624
  // vs 1,261,568 bytes), while the forked children of InspectLive replay within 2%. That
  // compared two readings of a running process, as the Release flake did; until an ASan
  // run in CI shows the same-reading comparison within 2%, only the sanity bound is kept.
  EXPECT_LE(std::abs(sim - read_vmpte), 0.10 * read_vmpte) << "sim " << sim << ", inspected " << read_vmpte;
#else
  EXPECT_LE(std::abs(sim - read_vmpte), 0.02 * read_vmpte) << "sim " << sim << ", inspected " << read_vmpte;
#endif
  std::remove(file.c_str());

  r = run_vmlab({"whatif", me});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("vmlab whatif PIDs " + me), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("as read"), std::string::npos);
}

}  // namespace
}  // namespace vmlab
