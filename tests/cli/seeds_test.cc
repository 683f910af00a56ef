// End-to-end tests of issue 3's CLI: `vmlab seeds` (exit status, JSON shape, unknown
// names, every figure of seeds 000, 001 and 004 within tolerance), `vmlab run --slabinfo` (the
// profile's slabinfo format, the pte_chain row of the seed scenario), and the lowmem
// example that must run out of ZONE_NORMAL. Expected figures are derived in comments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

#include "tests/cli/run_vmlab.h"

namespace vmlab {
namespace {

using cli_testing::cli_result;
using cli_testing::fields_of;
using cli_testing::lines_of;
using cli_testing::run_vmlab;
using nlohmann::json;

json parse_json(const std::string& s) {
  json j = json::parse(s, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON:\n" << s.substr(0, 2000);
  return j;
}

// Seed 000's scenario (seeds/rmap-dss): 33 agents map a 2720 MiB pool = 696,320 pages,
// and write 1 MiB (256 pages) of private memory each.
constexpr uint64_t kPoolPages = 680 * 1024;  // 680 x 4 MiB / 4 KiB
constexpr uint64_t kAgents = 33;
// Every pool page mapped 33 times, every private page once (PageDirect counts too).
constexpr uint64_t kReverseMaps = kAgents * kPoolPages + kAgents * 256;  // 22,987,008
// NRPTE = 7: a page mapped 33 times needs ceil(33 / 7) = 5 chains; nothing is freed.
constexpr uint64_t kChains = 5 * kPoolPages;  // 3,481,600
// 113 chains of 32 bytes in a one-page slab (2.5 SLAB, on-slab management).
constexpr uint64_t kSlabs = (kChains + 112) / 113;  // 30,811

// ---------------------------------------------------------------------------------------
// vmlab seeds

// The sanitizer build (Debug, ASan+UBSan) simulates about 25 times slower: seed 000 takes
// about a minute there and the lowmem example five. Those runs are checked in Release;
// the sanitizer build still runs the model's code paths in its unit and property tests.
#ifdef VMLAB_SANITIZED
#define SKIP_HEAVY_SIM_RUN() \
  GTEST_SKIP() << "sanitizer build: this test simulates tens of millions of mappings; it runs in Release"
#else
#define SKIP_HEAVY_SIM_RUN() (void)0
#endif

class CliSeeds : public ::testing::Test {
 protected:
  // One run of the whole seed table per test process, made by the first test that needs it.
  static const cli_result& json_run() {
    static const cli_result r = run_vmlab({"seeds", "--json"});
    return r;
  }
};

TEST_F(CliSeeds, HelpSaysWhatTheExitStatusMeans) {
  const auto r = run_vmlab({"seeds", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find(" seeds [OPTIONS] [name]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Exit status: 0 when every figure is within its tolerance, 1 when one is not"), std::string::npos)
      << r.out;
  const auto top = run_vmlab({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("  seeds "), std::string::npos) << top.out;
}

TEST_F(CliSeeds, UnknownSeedIsExit2) {
  for (const std::string name : {"999", "rmap-dss", "0000"}) {
    SCOPED_TRACE(name);
    const auto r = run_vmlab({"seeds", name});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "vmlab: error: unknown seed '" + name + "' (known: 000, 001, 003, 004)\n");
  }
  const auto extra = run_vmlab({"seeds", "000", "001"});
  EXPECT_EQ(extra.exit_code, 2);
  EXPECT_EQ(extra.out, "");
}

TEST_F(CliSeeds, JsonShape) {
  SKIP_HEAVY_SIM_RUN();
  const cli_result& r = json_run();
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.exit_code << "\n" << r.err;
  const json j = parse_json(r.out);
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j.size(), 2u) << j.dump(2);  // {"schema_version": 1, "figures": [...]}
  EXPECT_EQ(j.at("schema_version"), 1);
  const json& figs = j.at("figures");
  ASSERT_TRUE(figs.is_array());
  std::vector<std::string> metrics;
  bool all_ok = true;
  for (const auto& f : figs) {
    SCOPED_TRACE(f.dump());
    for (const char* k : {"seed", "metric", "paper", "vmlab", "rel_error", "unit", "tolerance", "scenario", "ok"})
      EXPECT_TRUE(f.contains(k)) << k;
    EXPECT_TRUE(f.at("seed").is_string());
    EXPECT_TRUE(f.at("published").is_boolean());
    EXPECT_TRUE(f.at("published") == true ? f.at("paper").is_number() : f.at("paper").is_null());
    EXPECT_TRUE(f.at("vmlab").is_number() || f.at("vmlab").is_null());
    metrics.push_back(f.at("metric"));
    all_ok &= f.at("ok").get<bool>();
  }
  EXPECT_EQ(metrics, (std::vector<std::string>{"ReverseMaps_max", "pte_chain_active_objs_max", "pte_chain_bytes_max",
                                               "pte_chain_slabs_max", "pte_chain_slab_bytes_max",
                                               "pte_chain_slab_bytes_max_readv", "pte_chain_max_4KiB",
                                               "pte_chain_max_huge", "PageTables_max_4KiB", "PageTables_max_huge",
                                               "lowmem_saved", "seq_write_rate", "random_write_rate", "seq_read_rate",
                                               "random_read_rate", "freed_x86_64_64g", "freed_ppc64_64g",
                                               "PageTables_8g_4KiB", "PageTables_8g_4KiB_shared", "PageTables_8g_huge",
                                               "PageTables_8g_huge_shared", "PageTables_x86_64_64g_4KiB",
                                               "PageTables_x86_64_64g_huge", "pmd_tables_x86_64_64g_huge",
                                               "PageTables_ppc64_64g_4KiB", "PageTables_ppc64_64g_huge",
                                               "pmd_tables_ppc64_64g_huge"}));
  // The exit status follows the figures.
  EXPECT_EQ(r.exit_code, all_ok ? 0 : 1);
}

TEST_F(CliSeeds, Seed000WithinTolerance) {
  SKIP_HEAVY_SIM_RUN();
  const cli_result& r = json_run();
  const json j = parse_json(r.out);
  ASSERT_TRUE(j.is_object() && j.contains("figures"));
  std::map<std::string, json> by_metric;
  for (const auto& f : j.at("figures")) {
    if (f.at("seed") != "000") continue;
    const bool readv = f.at("metric") == "pte_chain_slab_bytes_max_readv";
    EXPECT_EQ(f.at("scenario"), readv ? "seeds/rmap-dss-readv" : "seeds/rmap-dss");
    EXPECT_EQ(f.at("settings"), "");
    by_metric[f.at("metric")] = f;
  }
  EXPECT_EQ(by_metric.size(), 6u);
  // The readv variant (docs/seeds.md): 33 agents + 33 I/O servers map each of the 696,320
  // pool pages: PageDirect plus ceil(65 / 7) = 10 chains per page, 113 chains per slab.
  {
    const json& f = by_metric["pte_chain_slab_bytes_max_readv"];
    const double slabs = std::ceil(696320.0 * 10 / 113);
    EXPECT_EQ(f.at("paper").get<double>(), 223.0 * 1024 * 1024);
    EXPECT_EQ(f.at("vmlab").get<double>(), slabs * 4096);
    EXPECT_LE(std::abs(f.at("rel_error").get<double>()), 0.10);
    EXPECT_TRUE(f.at("ok").get<bool>());
  }
  // The published values, as the seed states them.
  const std::map<std::string, std::pair<double, double>> paper = {
      {"ReverseMaps_max", {22817885, 0.05}},
      {"pte_chain_active_objs_max", {3411018, 0.05}},
      {"pte_chain_bytes_max", {3411018.0 * 32, 0.05}},         // "about 104 MB"
      {"pte_chain_slabs_max", {30186, 0.10}},                  // "with 4KB each"
      {"pte_chain_slab_bytes_max", {30186.0 * 4096, 0.10}}};   // "about 118 MB"
  // What the scenario must give, by the inference in docs/seeds.md.
  const std::map<std::string, double> expected = {{"ReverseMaps_max", double(kReverseMaps)},
                                                  {"pte_chain_active_objs_max", double(kChains)},
                                                  {"pte_chain_bytes_max", double(kChains) * 32},
                                                  {"pte_chain_slabs_max", double(kSlabs)},
                                                  {"pte_chain_slab_bytes_max", double(kSlabs) * 4096}};
  for (const auto& [metric, pv] : paper) {
    SCOPED_TRACE(metric);
    ASSERT_TRUE(by_metric.count(metric));
    const json& f = by_metric[metric];
    EXPECT_EQ(f.at("paper").get<double>(), pv.first);
    EXPECT_EQ(f.at("tolerance").get<double>(), pv.second);
    ASSERT_TRUE(f.at("vmlab").is_number()) << f.dump();
    const double v = f.at("vmlab").get<double>();
    EXPECT_EQ(v, expected.at(metric));
    const double rel = f.at("rel_error").get<double>();
    EXPECT_NEAR(rel, (v - pv.first) / pv.first, 1e-12);
    EXPECT_LE(std::abs(rel), pv.second);
    EXPECT_EQ(f.at("ok"), true);
  }
  // Every seed together: exit 1 while seed 003's random read is outside its 25% (a known
  // miss, docs/seeds.md), else 0.
  bool all_ok = true;
  for (const auto& f : j.at("figures")) all_ok &= f.at("ok").get<bool>();
  EXPECT_EQ(r.exit_code, all_ok ? 0 : 1) << r.err;
  // Keep the seed check fast: one simulation of seed 000, two of seed 001 and eight of
  // seed 004 (Release: about five seconds).
  EXPECT_LT(r.seconds, 30.0);
}

// Seed 001's scenario (seeds/hugetlb-dss, docs/seeds.md): 54 agents; each maps the 2720 MiB
// pool (680 PTE pages with 4 KiB pages, none with huge pages), 69 MiB of other shared
// memory at a 4 MiB boundary (17,664 pages, 18 PTE pages) and writes one page per 4 MiB of
// a 108 MiB private area (27 PTE pages). A page mapped by 54 agents has ceil(54 / 7) = 8
// chains of 32 bytes; a hugetlb page none; a private page is PageDirect.
constexpr uint64_t kAgents001 = 54;
constexpr uint64_t kRestPtePages = 18 + 27;
constexpr double kChainBytesPerPage = 8 * 32;
constexpr double kPte4k = double(kAgents001 * (680 + kRestPtePages) * 4096);  // 160,358,400
constexpr double kPteHuge = double(kAgents001 * kRestPtePages * 4096);        // 9,953,280
constexpr double kChains4k = double(kPoolPages + 17'664) * kChainBytesPerPage;  // 182,779,904
constexpr double kChainsHuge = 17'664 * kChainBytesPerPage;                    // 4,521,984

TEST_F(CliSeeds, Seed001WithinTolerance) {
  SKIP_HEAVY_SIM_RUN();
  const cli_result& r = json_run();
  const json j = parse_json(r.out);
  ASSERT_TRUE(j.is_object() && j.contains("figures"));
  const double mib = 1024.0 * 1024.0;
  const std::string pool_4k = "object.bufferpool.kind=shm; machine.hugepages={}";
  // metric -> published (the post's MB are MiB, as seed 000's), vmlab by the inference, settings
  const std::map<std::string, std::tuple<double, double, std::string>> want = {
      {"pte_chain_max_4KiB", {182.4 * mib, kChains4k, pool_4k}},
      {"pte_chain_max_huge", {4.3 * mib, kChainsHuge, ""}},
      {"PageTables_max_4KiB", {153.7 * mib, kPte4k, pool_4k}},
      {"PageTables_max_huge", {9.5 * mib, kPteHuge, ""}},
      {"lowmem_saved", {322 * mib, kChains4k + kPte4k - kChainsHuge - kPteHuge, pool_4k}}};
  size_t seen = 0;
  for (const auto& f : j.at("figures")) {
    if (f.at("seed") != "001") continue;
    const std::string metric = f.at("metric");
    SCOPED_TRACE(metric);
    ASSERT_TRUE(want.count(metric));
    const auto& [paper, vmlab, settings] = want.at(metric);
    ++seen;
    EXPECT_EQ(f.at("scenario"), "seeds/hugetlb-dss");
    EXPECT_EQ(f.at("settings"), settings);
    EXPECT_DOUBLE_EQ(f.at("paper").get<double>(), paper);
    EXPECT_EQ(f.at("vmlab").get<double>(), vmlab);
    EXPECT_EQ(f.at("tolerance").get<double>(), 0.05);
    EXPECT_EQ(f.at("ok"), true);
  }
  EXPECT_EQ(seen, want.size());
}

// Seed 004's scenarios (docs/seeds.md "Seed 004"; 2.6.15's PageTables counts PTE pages
// only, one per 2 MiB mapped). x86-64 64 GB: 150 agents on a 48.5 GiB pool (24,832 PTE
// pages each), 90 PTE pages of their own each, 27 of them the library text PTSHARE shares.
// ppc64: 100 processes on a 52.5 GiB SGA (26,880), 28 of shared text and 63 private each.
// 8 GB: 150 agents on 5.75 GiB (2,944), the x86-64 agent; the hugetlb pool has no PTE page.
constexpr double kPage = 4096;
constexpr double kX86Unshared = 150 * (24'832 + 90) * kPage;           // 15,312,076,800
constexpr double kX86Shared = (24'832 + 27 + 150 * 63) * kPage;        // 140,529,664
constexpr double kPpcUnshared = 100 * (26'880 + 28 + 63) * kPage;      // 11,047,321,600
constexpr double kPpcShared = (26'880 + 28 + 100 * 63) * kPage;        // 136,019,968
constexpr double k8g4k = 150 * (2'944 + 90) * kPage;                   // 1,864,089,600
constexpr double k8g4kShared = (2'944 + 27 + 150 * 63) * kPage;        // 50,876,416
constexpr double k8gHuge = 150 * 90 * kPage;                           // 55,296,000
constexpr double k8gHugeShared = (27 + 150 * 63) * kPage;              // 38,817,792

TEST_F(CliSeeds, Seed004WithinBands) {
  SKIP_HEAVY_SIM_RUN();
  const cli_result& r = json_run();
  const json j = parse_json(r.out);
  ASSERT_TRUE(j.is_object() && j.contains("figures"));
  const double mib = 1024.0 * 1024.0, gib = 1024 * mib;
  const std::string ptshare = "kernel.profile=linux-2.6.15-ptshare";
  const std::string huge = "object.bufferpool.kind=hugetlb; machine.hugepages={\"2MiB\"=2944}";
  struct want {
    std::string scenario, settings;
    double paper, vmlab, tolerance, low, high;
  };
  // The bands: freed 14..16 GB (x86-64) and 10..12 GB (ppc64); the follow-up's
  // four figures within 10%. The seed's GB and MB are GiB and MiB (the kernel's kB are KiB).
  const std::map<std::string, want> wants = {
      {"freed_x86_64_64g", {"seeds/ptshare-oltp-x86_64", "", 14 * gib, kX86Unshared - kX86Shared, 0, 14 * gib, 16 * gib}},
      {"freed_ppc64_64g", {"seeds/ptshare-oltp-ppc64", "", 10 * gib, kPpcUnshared - kPpcShared, 0, 10 * gib, 12 * gib}},
      {"PageTables_8g_4KiB", {"seeds/ptshare-oltp-8g", "", 1.65 * gib, k8g4k, 0.10, 0, 0}},
      {"PageTables_8g_4KiB_shared", {"seeds/ptshare-oltp-8g", ptshare, 51 * mib, k8g4kShared, 0.10, 0, 0}},
      {"PageTables_8g_huge", {"seeds/ptshare-oltp-8g", huge, 53 * mib, k8gHuge, 0.10, 0, 0}},
      {"PageTables_8g_huge_shared", {"seeds/ptshare-oltp-8g", huge + "; " + ptshare, 37 * mib, k8gHugeShared, 0.10, 0, 0}}};
  // Not published (the seed gives throughput only): the 64 GB boxes unshared, on 4 KiB
  // pages and with the pool on huge pages of the format's PMD-level size. With huge pages
  // the pool needs no PTE page: what is left is each process's own 90 (x86-64) or 28 + 63
  // (ppc64) PTE pages; on ppc64-4k the 52.5 GiB SGA takes 210 PMD tables (one per 256 MiB
  // segment) in each of the 100 processes, plus one each for the text and the private part.
  const std::map<std::string, double> measures = {{"PageTables_x86_64_64g_4KiB", kX86Unshared},
                                                  {"PageTables_x86_64_64g_huge", 150 * 90 * kPage},
                                                  {"PageTables_ppc64_64g_4KiB", kPpcUnshared},
                                                  {"PageTables_ppc64_64g_huge", 100 * (28 + 63) * kPage},
                                                  {"pmd_tables_ppc64_64g_huge", 100 * (52.5 * 4 + 2)}};
  size_t seen = 0, unpublished = 0;
  for (const auto& f : j.at("figures")) {
    if (f.at("seed") != "004") continue;
    const std::string metric = f.at("metric");
    if (f.at("published") == false) {
      SCOPED_TRACE(metric);
      ++unpublished;
      EXPECT_TRUE(f.at("paper").is_null());
      EXPECT_TRUE(f.at("rel_error").is_null());
      EXPECT_EQ(f.at("ok"), true);
      if (metric == "pmd_tables_x86_64_64g_huge") {
        EXPECT_GE(f.at("vmlab").get<double>(), 150 * 49.0);  // 48.5 GiB: 49 PMD pages each at least
        continue;
      }
      ASSERT_TRUE(measures.count(metric));
      EXPECT_EQ(f.at("vmlab").get<double>(), measures.at(metric));
      continue;
    }
    SCOPED_TRACE(metric);
    ASSERT_TRUE(wants.count(metric));
    const want& w = wants.at(metric);
    ++seen;
    EXPECT_EQ(f.at("scenario"), w.scenario);
    EXPECT_EQ(f.at("settings"), w.settings);
    EXPECT_DOUBLE_EQ(f.at("paper").get<double>(), w.paper);
    EXPECT_EQ(f.at("tolerance").get<double>(), w.tolerance);
    ASSERT_TRUE(f.at("vmlab").is_number()) << f.dump();
    const double v = f.at("vmlab").get<double>();
    EXPECT_EQ(v, w.vmlab);
    EXPECT_NEAR(f.at("rel_error").get<double>(), (v - w.paper) / w.paper, 1e-12);
    if (w.high > 0) {
      EXPECT_EQ(f.at("band"), json::array({w.low, w.high}));
      EXPECT_GE(v, w.low);
      EXPECT_LE(v, w.high);
    } else {
      EXPECT_TRUE(f.at("band").is_null());
      EXPECT_LE(std::abs(v - w.paper) / w.paper, w.tolerance);
    }
    EXPECT_EQ(f.at("completed"), true);
    EXPECT_EQ(f.at("ok"), true);
  }
  EXPECT_EQ(seen, wants.size());
  EXPECT_EQ(unpublished, measures.size() + 1);
}

// Seed 003 (docs/seeds.md): the sim's tiobench against the "2.4.1pre3 + Marcelo's patch"
// row, 25% each; the random read is a known miss, so the exit status is 1.
TEST_F(CliSeeds, Seed003TiobenchRates) {
  const auto r = run_vmlab({"seeds", "003", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const json j = parse_json(r.out);
  const std::map<std::string, double> paper = {{"seq_write_rate", 10.57}, {"random_write_rate", 0.594},
                                               {"seq_read_rate", 12.68}, {"random_read_rate", 0.497}};
  ASSERT_EQ(j.at("figures").size(), paper.size());
  for (const auto& f : j.at("figures")) {
    SCOPED_TRACE(f.dump());
    EXPECT_EQ(f.at("seed"), "003");
    EXPECT_EQ(f.at("unit"), "MiB/s");
    EXPECT_EQ(f.at("paper").get<double>(), paper.at(f.at("metric")));
    EXPECT_EQ(f.at("tolerance").get<double>(), 0.25);
    const double rel = f.at("rel_error").get<double>();
    EXPECT_EQ(f.at("ok").get<bool>(), std::abs(rel) <= 0.25);
    EXPECT_EQ(f.at("ok").get<bool>(), f.at("metric") != "random_read_rate");
  }
  EXPECT_LT(r.seconds, 5.0);
}

TEST_F(CliSeeds, Seed004Table) {
  SKIP_HEAVY_SIM_RUN();
  const auto r = run_vmlab({"seeds", "004"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto l = lines_of(r.out);
  ASSERT_GE(l.size(), 8u) << r.out;
  size_t rows = 0, unpublished = 0;
  bool below = false;  // under the heading of the figures the seed does not publish
  for (const auto& line : l) {
    below = below || line.rfind("vmlab's figures for runs the seeds publish no memory figure", 0) == 0;
    const auto f = fields_of(line);
    if (f.empty() || f[0] != "004") continue;
    ++(below ? unpublished : rows);
    // The verdict follows the tolerance column: "band" or "10%"; "-" for an unpublished one.
    // (paper, rel.err and tol are the three "-" of an unpublished one).
    size_t tol = 0, dashes = 0;
    while (tol < f.size() && f[tol] != "band" && f[tol] != "10%" && !(below && f[tol] == "-" && ++dashes == 3)) ++tol;
    ASSERT_LT(tol + 1, f.size()) << line;
    EXPECT_EQ(f[tol + 1], "ok") << line;
  }
  EXPECT_EQ(rows, 6u) << r.out;
  EXPECT_EQ(unpublished, 6u) << r.out;
  EXPECT_NE(r.out.find("\"over 14 GB of memory was freed\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"Over 10 GB of memory was freed\""), std::string::npos) << r.out;
  EXPECT_EQ(l.back(), "6 figures, 0 outside tolerance");
  // Eight sim runs: 64 GiB machines, but each shared segment's full PTE pages are one host
  // node (Release: about a second in all).
  EXPECT_LT(r.seconds, 20.0);
}

TEST_F(CliSeeds, TableListsEveryFigure) {
  SKIP_HEAVY_SIM_RUN();
  const auto r = run_vmlab({"seeds", "0"});  // "0" names seed 000
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto l = lines_of(r.out);
  ASSERT_GE(l.size(), 7u) << r.out;
  EXPECT_EQ(fields_of(l[0]), (std::vector<std::string>{"seed", "metric", "paper", "vmlab", "rel.err", "tol", "as",
                                                        "published"}));
  // Sizes are in human units ("104.1 MiB": two fields), so the verdict is found after the
  // tolerance ("5%", the first unsigned percentage).
  size_t rows = 0, sizes = 0;
  for (const auto& line : l) {
    const auto f = fields_of(line);
    if (f.size() < 7 || f[0] != "000") continue;
    ++rows;
    sizes += line.find(" MiB ") != std::string::npos;
    size_t tol = 0;
    while (tol < f.size() && !(f[tol].back() == '%' && f[tol][0] != '+' && f[tol][0] != '-')) ++tol;
    ASSERT_LT(tol + 1, f.size()) << line;
    EXPECT_EQ(f[tol + 1], "ok") << line;
  }
  EXPECT_EQ(sizes, 3u) << r.out;  // pte_chain_bytes_max, pte_chain_slab_bytes_max and its readv variant
  EXPECT_EQ(rows, 6u) << r.out;
  EXPECT_NE(r.out.find("\"about 104 MB\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"about 118 MB\""), std::string::npos) << r.out;
  EXPECT_EQ(l.back(), "6 figures, 0 outside tolerance");
}

// ---------------------------------------------------------------------------------------
// vmlab run --slabinfo

TEST(CliSlabinfo, SeedScenarioHasPteChainRowsIn11Format) {
  SKIP_HEAVY_SIM_RUN();
  const auto r = run_vmlab({"run", "seeds/rmap-dss", "--slabinfo"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto l = lines_of(r.out);
  ASSERT_GE(l.size(), 4u) << r.out;
  EXPECT_EQ(l[0], "slabinfo - version: 1.1 (SMP)");  // 2.5's s_show, SMP kernel
  // 1.1 columns: name active_objs num_objs objsize active_slabs num_slabs pagesperslab :
  // limit batchcount. The end rows come first, then the maxima.
  std::optional<std::vector<std::string>> at_end, at_max;
  bool in_maxima = false;
  for (size_t i = 1; i < l.size(); ++i) {
    if (l[i] == "# maxima over the run (each column's maximum on its own)") {
      EXPECT_FALSE(in_maxima) << "two maxima headers";
      in_maxima = true;
      continue;
    }
    EXPECT_NE(l[i][0], '#') << l[i];
    const auto f = fields_of(l[i]);
    ASSERT_EQ(f.size(), 10u) << l[i];
    EXPECT_EQ(f[7], ":") << l[i];
    if (f[0] == "pte_chain") (in_maxima ? at_max : at_end) = f;
  }
  EXPECT_TRUE(in_maxima) << r.out;
  ASSERT_TRUE(at_end && at_max) << r.out;
  for (const auto* f : {&*at_end, &*at_max}) {
    EXPECT_EQ((*f)[3], "32");  // objsize: one Pentium III cache line
    EXPECT_EQ((*f)[6], "1");   // pagesperslab
  }
  // Nothing is unmapped, so the end is the maximum: 3,481,600 chains in 30,811 slabs.
  EXPECT_EQ((*at_max)[1], std::to_string(kChains));
  EXPECT_EQ((*at_max)[5], std::to_string(kSlabs));
  EXPECT_EQ((*at_end)[1], std::to_string(kChains));
}

TEST(CliSlabinfo, Linux618Uses21AndExcludesJson) {
  const auto r = run_vmlab({"run", "validate/anon-64m", "--slabinfo"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto l = lines_of(r.out);
  ASSERT_GE(l.size(), 3u) << r.out;
  EXPECT_EQ(l[0], "slabinfo - version: 2.1");
  EXPECT_EQ(l[1].rfind("# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables "
                       "<limit> <batchcount> <sharedfactor> : slabdata",
                       0),
            0u)
      << l[1];
  EXPECT_NE(r.out.find("\n# maxima over the run"), std::string::npos) << r.out;

  const auto both = run_vmlab({"run", "validate/anon-64m", "--slabinfo", "--json"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_EQ(both.out, "");
  EXPECT_EQ(both.err, "vmlab: error: --slabinfo prints /proc/slabinfo's own format: not with --format json\n");
}

// ---------------------------------------------------------------------------------------
// The lowmem example: pte_chains for 1,000 sharers do not fit in ZONE_NORMAL.

TEST(CliLowmem, SgaOn25RunsOutOfZoneNormal) {
  SKIP_HEAVY_SIM_RUN();
  // One run (about 10 s in Release): the table prints the same failure from the same
  // RunResult (CliRun.OutOfMemoryEndsTheRunEarly checks that path).
  const auto r = run_vmlab({"run", "examples/lowmem-sga-2.5", "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out.substr(0, 2000);  // a finding, not bad input
  EXPECT_EQ(r.err.rfind("vmlab: the run ended early at op ", 0), 0u) << r.err;  // JSON: said on stderr too
  const json j = parse_json(r.out);
  EXPECT_EQ(j.at("completed"), false);
  ASSERT_EQ(j.at("failures").size(), 1u);
  const json& fail = j.at("failures")[0];
  const std::string op = fail.at("op"), error = fail.at("error");
  // The failing op is one process's read of the SGA, and what failed is a pte_chain
  // allocation in ZONE_NORMAL (HighMem still has the room the SGA's pages need).
  EXPECT_EQ(op.rfind("touch ", 0), 0u) << op;
  EXPECT_NE(op.find(" sga "), std::string::npos) << op;
  EXPECT_EQ(error.rfind("ENOMEM", 0), 0u) << error;
  EXPECT_NE(error.find("Normal"), std::string::npos) << error;
  EXPECT_NE(error.find("pte_chain"), std::string::npos) << error;
  // ZONE_NORMAL is gone long before 1,000 processes: each process adds about 1.5 MiB of
  // PTE pages and 393,216 / 7 chains of 32 B (1.7 MiB) to 880 MiB of lowmem.
  const auto pid = std::stoul(op.substr(6));
  EXPECT_GT(pid, 100u) << op;
  EXPECT_LT(pid, 500u) << op;
  // At the end low memory is exhausted and the figures say where it went.
  const json& mi = j.at("samples").back().at("meminfo");
  EXPECT_EQ(mi.at("LowFree"), 0);
  EXPECT_GT(mi.at("HighFree").get<uint64_t>(), 0u);
  EXPECT_GT(mi.at("ReverseMaps").get<uint64_t>(), 100u * 393216u);
}

}  // namespace
}  // namespace vmlab
