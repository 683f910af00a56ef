// `vmlab compare`: variants of one scenario side by side (issue 7). The PostgreSQL-like
// example with 4 KiB pages, hugetlb 2 MiB pages and shmem THP; differences derived here
// from the x86-64 format (a PTE page maps 2 MiB, a PMD page 1 GiB).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli/run_vmlab.h"

namespace vmlab {
namespace {

using cli_testing::cli_result;
using cli_testing::lines_of;
using cli_testing::run_vmlab;
using nlohmann::json;

// The sanitizer build simulates about 25 times slower: 3 x 200 backends x 16 GiB take a
// minute there. These run in Release; the model's paths are covered by the unit tests.
#ifdef VMLAB_SANITIZED
#define SKIP_HEAVY_SIM_RUN() GTEST_SKIP() << "sanitizer build: 600 processes x 16 GiB; this test runs in Release"
#else
#define SKIP_HEAVY_SIM_RUN() (void)0
#endif

const std::vector<std::string> kPostgres = {
    "compare", "examples/postgres-200", "--variant", "4 KiB:",
    "--variant", "hugetlb 2 MiB: object.shared_buffers.kind=hugetlb; machine.hugepages={\"2MiB\"=8192}",
    "--variant", "shmem THP: kernel.overrides.shmem_enabled=always"};

std::vector<std::string> with(std::vector<std::string> args, const std::string& extra) {
  args.push_back(extra);
  return args;
}

const json* row(const json& j, const std::string& figure) {
  for (const auto& r : j.at("rows"))
    if (r.at("figure") == figure) return &r;
  return nullptr;
}

TEST(CliCompare, PostgresThreeKindsOfPage) {
  SKIP_HEAVY_SIM_RUN();
  const cli_result r = run_vmlab(with(kPostgres, "--json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j.at("variants").size(), 3u);
  EXPECT_EQ(j.at("variants")[1].at("label"), "hugetlb 2 MiB");
  EXPECT_EQ(j.at("variants")[1].at("settings"),
            (std::vector<std::string>{"object.shared_buffers.kind=hugetlb", "machine.hugepages={\"2MiB\"=8192}"}));
  for (const auto& v : j.at("variants")) EXPECT_EQ(v.at("completed"), true) << v.dump();

  // 200 backends map 16 GiB at 1 GiB boundaries and read all of it. With 4 KiB pages each
  // has 8,192 PTE pages and 16 PMD pages for it. hugetlb 2 MiB: no PTE page, and the 16
  // PMD pages are shared by all 200 (huge_pmd_share), counted once. Shmem THP: no PTE
  // page either (no deposit for shmem), but 16 PMD pages per backend. Everything else
  // (PGD, PUD, the 8 MiB of private memory) is the same in the three.
  const json* pt = row(j, "PageTables (max)");
  ASSERT_NE(pt, nullptr) << j.dump(2);
  EXPECT_EQ(pt->at("diff")[0].get<double>(), -double(200 * 8192 + 200 * 16 - 16) * 4096);
  EXPECT_EQ(pt->at("diff")[1].get<double>(), -double(200 * 8192) * 4096);
  const json* vmpte = row(j, "largest process's page tables (max)");
  ASSERT_NE(vmpte, nullptr);
  EXPECT_EQ(vmpte->at("diff")[1].get<double>(), -8192.0 * 4096);  // a backend's own PMDs stay

  const json* pool = row(j, "hugetlb pool (end)");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->at("values")[1].get<double>(), 16.0 * 1024 * 1024 * 1024);
  const json* pmd_mapped = row(j, "ShmemPmdMapped (max)");
  ASSERT_NE(pmd_mapped, nullptr);
  EXPECT_EQ(pmd_mapped->at("values")[2].get<double>(), 16.0 * 1024 * 1024 * 1024);

  // Faults with hugetlb: the first backend faults the 8,192 huge pages; each of the 199
  // others one per 1 GiB window (it attaches to the shared PMD table); each writes its
  // 2,048 private pages.
  const json* faults = row(j, "page faults");
  ASSERT_NE(faults, nullptr);
  EXPECT_EQ(faults->at("values")[1].get<double>(), 8192.0 + 199 * 16 + 200 * 2048);
}

TEST(CliCompare, TableHasAColumnPerVariantAndTheirDifferences) {
  SKIP_HEAVY_SIM_RUN();
  std::vector<std::string> args = kPostgres;
  args.emplace_back("--kb");
  const cli_result r = run_vmlab(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto l = lines_of(r.out);
  ASSERT_GE(l.size(), 8u) << r.out;
  EXPECT_EQ(l[0], "vmlab compare examples/postgres-200  engine: sim");
  std::string header;
  for (const auto& line : l)
    if (line.find("4 KiB") != std::string::npos && line.find("shmem THP - 4 KiB") != std::string::npos) header = line;
  ASSERT_FALSE(header.empty()) << r.out;
  EXPECT_LT(header.find("hugetlb 2 MiB"), header.find("shmem THP"));
  // 200 x 8,192 PTE pages of 4 KiB are 6,553,600 kB, all saved by shmem THP.
  bool found = false;
  for (const auto& line : l)
    if (line.rfind("PageTables (max) ", 0) == 0) {
      found = true;
      EXPECT_NE(line.find(" -6553600 kB"), std::string::npos) << line;
    }
  EXPECT_TRUE(found) << r.out;
}

TEST(CliCompare, BadVariantsAreUsageErrors) {
  const auto one = run_vmlab({"compare", "examples/postgres-200", "--variant", "only: group.backend.count=2"});
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_EQ(one.err, "vmlab: error: compare needs at least two --variant \"LABEL: PATH=VALUE; ...\" (got 1)\n");
  const auto nolabel = run_vmlab({"compare", "examples/postgres-200", "--variant", "a:", "--variant", "group.backend.count=2"});
  EXPECT_EQ(nolabel.exit_code, 2);
  EXPECT_NE(nolabel.err.find("--variant 'group.backend.count=2': a variant is \"LABEL: PATH=VALUE; PATH=VALUE\""),
            std::string::npos)
      << nolabel.err;
  const auto bad = run_vmlab({"compare", "examples/postgres-200", "--variant", "a:", "--variant", "b: group.nobody.count=2"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--set group.nobody.count=2:1:1: 'group' has no element named 'nobody' (it has: backend)"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(bad.out, "");
  // Two variants under one label would share a column (in CSV, one column for both).
  const auto twice = run_vmlab({"compare", "examples/oltp-small", "--variant", "a:", "--variant", "a: group.db.count=2",
                                "--format", "csv"});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_EQ(twice.err, "vmlab: error: --variant \"a: group.db.count=2\": the label 'a' is already another variant's; "
                       "give each its own\n");
  EXPECT_EQ(twice.out, "");
}

TEST(CliCompare, AVariantTheKernelRefusesIsExit1WithTheReason) {
  // A pool of 100 huge pages cannot back 16 GiB: the first backend's mmap fails to reserve.
  const auto r = run_vmlab({"compare", "examples/postgres-200", "--set", "group.backend.count=2", "--variant", "4 KiB:",
                            "--variant", "short pool: object.shared_buffers.kind=hugetlb; machine.hugepages={\"2MiB\"=100}"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("short pool: RUN ENDED EARLY at op 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ENOMEM: the hugetlb pool of 2 MiB pages is short: this mapping must reserve 8192 more"),
            std::string::npos)
      << r.out;
}

TEST(CliRunSet, SetChangesTheScenarioAndIsRefusedForTraces) {
  // validate/anon-64m has one process in group "p"; three with the setting.
  const auto r = run_vmlab({"run", "validate/anon-64m", "--set", "group.p.count=3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("samples").back().at("procs").size(), 3u);
  const auto t = run_vmlab({"run", "--trace", "/dev/null", "--set", "a=1"});
  EXPECT_EQ(t.exit_code, 2);
  EXPECT_EQ(t.err, "vmlab: error: --set changes a scenario before it is read; a trace has no such settings\n");
}

}  // namespace
}  // namespace vmlab
