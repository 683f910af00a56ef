// `vmlab estimate` through the binary: the issue's figure, --json, --scenario (run back
// through `vmlab run`), the focused design, and bad input (exit 2, a clear message).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli/run_vmlab.h"

namespace vmlab {
namespace {

using cli_testing::cli_result;
using cli_testing::run_vmlab;
using nlohmann::json;

const std::vector<std::string> kSga = {"estimate", "--processes", "1500", "--shared", "300GB"};

std::vector<std::string> with(std::vector<std::string> args, std::initializer_list<std::string> extra) {
  args.insert(args.end(), extra);
  return args;
}

TEST(EstimateCli, TheIssueFigureInBothUnits) {
  const cli_result r = run_vmlab(kSga);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("601.2 MiB"), std::string::npos) << r.out;           // per process
  EXPECT_NE(r.out.find("880.6 GiB (945.6 GB)"), std::string::npos) << r.out;  // total, both units
  for (const char* design : {"4 KiB", "THP", "hugetlb 2 MiB", "hugetlb 2 MiB + PMD share", "hugetlb 1 GiB"})
    EXPECT_NE(r.out.find(design), std::string::npos) << design;
  EXPECT_LT(r.seconds, 1.0);  // 50 ms on a quiet machine (BENCHMARKS.md); slack for a busy one
}

TEST(EstimateCli, JsonHasSchemaAndBytes) {
  const cli_result r = run_vmlab(with(kSga, {"--json", "--page-size", "2MiB", "--sharing", "pmd-share"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("schema_version"), 1);
  EXPECT_EQ(j.at("focus"), "hugetlb 2 MiB + PMD share");
  EXPECT_EQ(j.at("shape").at("shared_bytes"), 300ull << 30);
  const json& first = j.at("designs").at(0);
  EXPECT_EQ(first.at("label"), "4 KiB");
  EXPECT_EQ(first.at("vmpte_bytes"), (153600ull + 300 + 1) << 12);
  EXPECT_EQ(first.at("saves_bytes"), 0);
}

TEST(EstimateCli, ScenarioRunsToTheSameFigure) {
  const std::vector<std::string> shape = {"estimate", "--processes", "3", "--shared", "1GiB", "--private", "6MiB",
                                          "--page-size", "1GiB"};
  const cli_result sc = run_vmlab(with(shape, {"--scenario"}));
  ASSERT_EQ(sc.exit_code, 0) << sc.err;
  const std::string path = ::testing::TempDir() + "estimate_cli.toml";
  std::ofstream(path) << sc.out;
  const cli_result run = run_vmlab({"run", path, "--json", "--quiet"});
  std::remove(path.c_str());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const cli_result est = run_vmlab(with(shape, {"--json"}));
  ASSERT_EQ(est.exit_code, 0) << est.err;
  const json e = json::parse(est.out), s = json::parse(run.out);
  const json* focus = nullptr;
  for (const auto& d : e.at("designs"))
    if (d.at("label") == e.at("focus")) focus = &d;
  ASSERT_NE(focus, nullptr);
  EXPECT_EQ(s.at("peak").at("PageTables"), focus->at("page_tables_bytes")) << run.out.substr(0, 2000);
}

TEST(EstimateCli, MemoryLimitIsReported) {
  const cli_result r = run_vmlab(with(kSga, {"--memory", "512GiB"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;  // a calculator: still computed
  EXPECT_NE(r.out.find("does NOT fit --memory 512.0 GiB"), std::string::npos) << r.out;
}

struct bad_case {
  std::vector<std::string> extra;
  const char* message;
};

TEST(EstimateCli, BadInputIsExit2WithAMessage) {
  const std::vector<bad_case> cases = {
      {{"--shared", "3Gb"}, "--shared: "},
      {{"--private", "-1MiB"}, "--private: "},
      {{"--touched", "150%"}, "--touched: '150%' is outside (0%, 100%]"},
      {{"--touched", "lots"}, "--touched: 'lots' is not a percentage"},
      {{"--profile", "linux-9.9"}, "unknown kernel profile 'linux-9.9'"},
      {{"--page-size", "4MiB"}, "offers no such design"},
      {{"--page-size", "4KiB", "--sharing", "pmd-share"}, "offers no such design"},
      {{"--sharing", "mshare"}, "--sharing must be none or pmd-share"},
      {{"--processes", "0"}, "--processes must be at least 1"},
      {{"--memory", "lots"}, "--memory: "},
  };
  for (const bad_case& c : cases) {
    std::vector<std::string> args = {"estimate"};
    for (const char* opt : {"--processes", "--shared"})  // a valid value unless the case gives one
      if (std::find(c.extra.begin(), c.extra.end(), opt) == c.extra.end()) args.insert(args.end(), {opt, "2"});
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const cli_result r = run_vmlab(args);
    SCOPED_TRACE(c.extra.front() + " " + c.extra.back());
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.err.find("vmlab: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  EXPECT_EQ(run_vmlab({"estimate", "--shared", "1GiB"}).exit_code, 2);  // --processes is required
  // The i386 PAE profile has 3 GiB of address space.
  const cli_result big = run_vmlab({"estimate", "--processes", "2", "--shared", "4GiB", "--profile", "linux-2.6.15"});
  EXPECT_EQ(big.exit_code, 2);
  EXPECT_NE(big.err.find("do not fit"), std::string::npos) << big.err;
}

// PTSHARE profiles share the segment's page tables by rules the closed form does not
// have (it billed every process its own: 84 MB against the sim's 8.7 MB for 10 x 4 GiB):
// the figures are refused, the scenario to run them is still written.
TEST(EstimateCli, PtshareIsRefusedButItsScenarioIsWritten) {
  const std::vector<std::string> shape = {"estimate", "--processes", "10", "--shared", "4GiB", "--private", "16MiB",
                                          "--profile", "linux-2.6.15-ptshare"};
  const cli_result r = run_vmlab(shape);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("linux-2.6.15-ptshare shares page tables between processes (PTSHARE), which the estimate's "
                       "closed form does not model"),
            std::string::npos)
      << r.err;
  const cli_result sc = run_vmlab(with(shape, {"--scenario"}));
  ASSERT_EQ(sc.exit_code, 0) << sc.err;
  EXPECT_NE(sc.out.find("profile = 'linux-2.6.15-ptshare'"), std::string::npos) << sc.out;
  // --scenario prints TOML, so --json with it is a usage error, not ignored.
  EXPECT_EQ(run_vmlab(with(shape, {"--scenario", "--json"})).exit_code, 2);
}

// Numbers that would wrap past 2^64 are refused, not printed as figures: a negative count
// (strtoull reads "-5" as 2^64 - 5), more processes than Linux can run, a shape whose
// totals pass 64-bit byte counts, sizes that a round-up would wrap to nothing.
TEST(EstimateCli, NumbersThatWouldWrapAreRefused) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--processes", "-5", "--shared", "5GB"}, "--processes: '-5' is negative"},
      {{"--processes", "4000000000", "--shared", "64TiB"}, "at most 4194304 processes (PID_MAX_LIMIT"},
      {{"--processes", "4000000", "--shared", "64TiB"}, "need more than 4 EiB"},
      {{"--processes", "10", "--shared", "18446744073709551615"}, "do not fit in linux-6.18's user address space"},
      {{"--processes", "2", "--shared", "1GB", "--private", "18446744073709551615"}, "do not fit"},
  };
  for (const auto& [extra, message] : cases) {
    std::vector<std::string> args = {"estimate"};
    args.insert(args.end(), extra.begin(), extra.end());
    const cli_result r = run_vmlab(args);
    SCOPED_TRACE(extra[1]);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  // The largest count Linux allows still gives figures.
  EXPECT_EQ(run_vmlab({"estimate", "--processes", "4194304", "--shared", "16TiB"}).exit_code, 0);
}

}  // namespace
}  // namespace vmlab
