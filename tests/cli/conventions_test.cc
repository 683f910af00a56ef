// The command-line conventions of issue 13, item 1, one test each: --profile, -o FILE,
// --format json|csv, sizes in tables (human, --bytes, --kb), vmlab show, "did you mean",
// an empty scenario.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cli/run_vmlab.h"

namespace vmlab {
namespace {

using cli_testing::run_vmlab;

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(Conventions, ProfileIsTheSameAsSettingKernelProfile) {
  const auto a = run_vmlab({"run", "validate/anon-64m", "--profile", "linux-2.6.15-x86_64", "--json"});
  const auto b = run_vmlab({"run", "validate/anon-64m", "--set", "kernel.profile=linux-2.6.15-x86_64", "--json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(ja["profile"], "linux-2.6.15-x86_64");
  ja.erase("timing");
  jb.erase("timing");
  EXPECT_EQ(ja, jb);
  // An explicit --set wins over --profile (it is applied after).
  const auto c = run_vmlab({"run", "validate/anon-64m", "--profile", "linux-2.6.15", "--set",
                            "kernel.profile=linux-6.18", "--json"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(nlohmann::json::parse(c.out)["profile"], "linux-6.18");
  for (const char* cmd : {"compare", "seeds", "validate"}) {
    const auto h = run_vmlab({cmd, "--help"});
    EXPECT_NE(h.out.find("--profile"), std::string::npos) << cmd;
    EXPECT_NE(h.out.find("--set"), std::string::npos) << cmd;
    EXPECT_NE(h.out.find("--format"), std::string::npos) << cmd;
    EXPECT_NE(h.out.find("--output"), std::string::npos) << cmd;
  }
}

TEST(Conventions, OutputFileHoldsWhatStandardOutputWouldHave) {
  const std::string f = ::testing::TempDir() + "conventions-out.txt";
  const auto to_file = run_vmlab({"run", "validate/anon-64m", "-o", f});
  const auto to_stdout = run_vmlab({"run", "validate/anon-64m"});
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  EXPECT_EQ(to_file.out, "");
  EXPECT_EQ(slurp(f), to_stdout.out);
  std::remove(f.c_str());
  const auto bad = run_vmlab({"run", "validate/anon-64m", "-o", "/nonexistent-dir/x.txt"});
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_EQ(bad.err, "vmlab: error: cannot write /nonexistent-dir/x.txt: No such file or directory\n");
}

TEST(Conventions, FormatJsonAndCsv) {
  const auto j = run_vmlab({"run", "validate/anon-64m", "--format", "json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto run = nlohmann::json::parse(j.out);
  const auto c = run_vmlab({"run", "validate/anon-64m", "--format", "csv"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  // A header and one line per sample, CRLF-terminated (RFC 4180); PageTables as in the JSON.
  std::vector<std::string> lines;
  for (size_t at = 0, e; (e = c.out.find("\r\n", at)) != std::string::npos; at = e + 2) lines.push_back(c.out.substr(at, e - at));
  ASSERT_EQ(lines.size(), run["samples"].size() + 1);
  EXPECT_EQ(lines[0].rfind("name,op_index,nr_procs,PageTables,PageTables_workload,", 0), 0u) << lines[0];
  const auto& end = run["samples"].back();
  EXPECT_EQ(lines.back().rfind("end," + std::to_string(end["op_index"].get<uint64_t>()) + "," +
                                   std::to_string(end["nr_procs"].get<uint64_t>()) + "," +
                                   std::to_string(end["PageTables"].get<uint64_t>()) + ",",
                               0),
            0u)
      << lines.back();
  const auto cmp = run_vmlab({"compare", "validate/anon-64m", "--variant", "6.18:", "--variant",
                              "2.6.15, \"x86_64\": kernel.profile=linux-2.6.15-x86_64", "--format", "csv"});
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  EXPECT_EQ(cmp.out.substr(0, cmp.out.find("\r\n")), "figure,unit,6.18,\"2.6.15, \"\"x86_64\"\"\"");
  const auto bad = run_vmlab({"run", "validate/anon-64m", "--format", "xml"});
  EXPECT_EQ(bad.exit_code, 2);
}

// The "PageTables (max):" line of `vmlab run`'s table, its figure after the colon.
std::string page_tables_max(const std::string& table) {
  const std::string key = "\nPageTables (max):";
  const size_t at = table.find(key);
  if (at == std::string::npos) return "";
  const size_t b = table.find_first_not_of(' ', at + key.size());
  return table.substr(b, table.find('\n', b) - b);
}

// Sizes in tables: human units by default (as smem -k, free -h), --bytes and --kb exact;
// JSON (and CSV) in bytes whatever they say. examples/oltp-small's PageTables are tens of
// MiB, so the default shows MiB with one decimal.
TEST(Conventions, TableSizesAreHumanByDefault) {
  const auto j = run_vmlab({"run", "examples/oltp-small", "--json", "--kb"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto pt = nlohmann::json::parse(j.out)["peak"]["PageTables"].get<uint64_t>();
  ASSERT_GE(pt, uint64_t(1) << 20);
  ASSERT_LT(pt, uint64_t(1) << 30);
  const auto t = run_vmlab({"run", "examples/oltp-small"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  char want[64];
  std::snprintf(want, sizeof want, "%.1f MiB", double(pt) / 1048576.0);
  EXPECT_EQ(page_tables_max(t.out), want) << t.out;
  EXPECT_EQ(t.out.find(" kB"), std::string::npos) << t.out;
  // compare and sweep print their byte figures the same way.
  const auto cmp = run_vmlab({"compare", "examples/oltp-small", "--variant", "a:", "--variant", "b:"});
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  EXPECT_NE(cmp.out.find(want), std::string::npos) << cmp.out;
  const auto sw = run_vmlab({"sweep", "examples/oltp-small", "--set", "kernel.profile=linux-6.18", "-j", "1", "-q"});
  ASSERT_EQ(sw.exit_code, 0) << sw.err;
  EXPECT_NE(sw.out.find(want), std::string::npos) << sw.out;
}

TEST(Conventions, BytesGivesTheExactFigureOfTheJson) {
  const auto j = run_vmlab({"run", "examples/oltp-small", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto pt = nlohmann::json::parse(j.out)["peak"]["PageTables"].get<uint64_t>();
  const auto t = run_vmlab({"run", "examples/oltp-small", "--bytes"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(page_tables_max(t.out), std::to_string(pt) + " B") << t.out;
  const auto cmp = run_vmlab({"compare", "examples/oltp-small", "--variant", "a:", "--variant", "b:", "--bytes"});
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  EXPECT_NE(cmp.out.find(" " + std::to_string(pt) + " B "), std::string::npos) << cmp.out;
  EXPECT_NE(cmp.out.find(" +0 B\n"), std::string::npos) << cmp.out;  // a - b, exactly
}

TEST(Conventions, KbGivesTheJsonFigureOver1024) {
  const auto j = run_vmlab({"run", "examples/oltp-small", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto pt = nlohmann::json::parse(j.out)["peak"]["PageTables"].get<uint64_t>();
  const auto t = run_vmlab({"run", "examples/oltp-small", "--kb"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(page_tables_max(t.out), std::to_string(pt / 1024) + " kB") << t.out;
  const auto sw = run_vmlab({"sweep", "examples/oltp-small", "--set", "kernel.profile=linux-6.18", "-j", "1", "-q", "--kb"});
  ASSERT_EQ(sw.exit_code, 0) << sw.err;
  // (one variant: no settings column, the row starts with the first figure)
  EXPECT_NE(sw.out.find("\n" + std::to_string(pt / 1024) + " kB "), std::string::npos) << sw.out;
  // CSV stays in bytes.
  const auto c = run_vmlab({"run", "examples/oltp-small", "--format", "csv", "--kb"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out.find(" kB"), std::string::npos) << c.out;
}

TEST(Conventions, BytesAndKbTogetherIsAUsageError) {
  for (const char* cmd : {"run", "compare", "validate", "seeds", "sweep"}) {
    const auto h = run_vmlab({cmd, "--help"});
    EXPECT_NE(h.out.find("--bytes"), std::string::npos) << cmd;
    EXPECT_NE(h.out.find("--kb"), std::string::npos) << cmd;
    const auto r = run_vmlab({cmd, "validate/anon-64m", "--bytes", "--kb"});
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.out << r.err;
    EXPECT_EQ(r.out, "") << cmd;
    EXPECT_NE(r.err.find("--bytes excludes --kb"), std::string::npos) << cmd << ": " << r.err;
  }
}

TEST(Conventions, ShowPrintsABuiltinScenario) {
  const auto r = run_vmlab({"show", "validate/anon-64m"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("name = \"validate/anon-64m\""), std::string::npos) << r.out;
  const auto bad = run_vmlab({"show", "validate/anon-64"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err,
            "vmlab: error: no built-in scenario named 'validate/anon-64'; did you mean 'validate/anon-64m'? (vmlab "
            "scenarios lists them)\n");
}

TEST(Conventions, DidYouMean) {
  auto r = run_vmlab({"rnu", "validate/anon-64m"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "vmlab: error: unknown command 'rnu'; did you mean 'run'? (vmlab --help lists them)\n");
  r = run_vmlab({"frobnicate"});
  EXPECT_EQ(r.err, "vmlab: error: unknown command 'frobnicate' (vmlab --help lists them)\n");
  r = run_vmlab({"run", "validate/anon-64m", "--profile", "linux-6.8"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown kernel profile 'linux-6.8'; did you mean 'linux-6.18'?"), std::string::npos) << r.err;
  r = run_vmlab({"run", "validate/anon-64"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("named 'validate/anon-64'; did you mean 'validate/anon-64m'?"), std::string::npos) << r.err;
}

TEST(Conventions, EmptyScenarioIsAnError) {
  const std::string f = ::testing::TempDir() + "conventions-empty.toml";
  std::ofstream(f) << "# nothing here\n";
  const auto r = run_vmlab({"run", f});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')),
            "vmlab: error: " + f +
                ":1:1: the scenario has no [[group]]: no process would run (a scenario needs at least one group of "
                "processes)");
  std::remove(f.c_str());
}

}  // namespace
}  // namespace vmlab
