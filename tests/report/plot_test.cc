// The gnuplot scripts `vmlab plot` and `vmlab report` draw from: the data block holds the
// run's figures (PageTables per sample in the unit the axis names, pages per level) and
// compare's rows, a series per variant; strings are quoted so that gnuplot reads them.
// No gnuplot is run here (tests/cli/plot_cli_test.cc runs it).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "report/html_report.h"
#include "report/plot.h"
#include "workload/scenario.h"

namespace vmlab {
namespace {

// The rows of the script's `$data << EOD` block, each split into fields (a quoted field
// keeps its spaces, without the quotes).
std::vector<std::vector<std::string>> data_rows(const std::string& script) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(script);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "$data << EOD") { inside = true; continue; }
    if (line == "EOD") break;
    if (!inside) continue;
    std::vector<std::string> f;
    for (size_t i = 0; i < line.size();) {
      if (line[i] == ' ') { ++i; continue; }
      if (line[i] == '"') {
        const size_t end = line.find('"', i + 1);
        f.push_back(line.substr(i + 1, end - i - 1));
        i = end + 1;
      } else {
        const size_t end = line.find(' ', i);
        f.push_back(line.substr(i, end == std::string::npos ? std::string::npos : end - i));
        i = end == std::string::npos ? line.size() : end;
      }
    }
    rows.push_back(f);
  }
  return rows;
}

run_result oltp_small() {
  auto in = load_scenario("examples/oltp-small", {});
  EXPECT_TRUE(in.ok());
  auto r = run_sim(in.value());
  EXPECT_TRUE(r.ok());
  return r.value();
}

TEST(Plot, SamplesScriptHoldsPageTablesOfEverySample) {
  const run_result r = oltp_small();
  const chart c = samples_chart(r);
  const std::string s = gnuplot_script(c, plot_format::svg, "out.svg");
  const byte_unit u = unit_for(double(r.peak.page_tables));
  EXPECT_NE(s.find("set terminal svg"), std::string::npos);
  EXPECT_NE(s.find(std::string("set ylabel \"PageTables (") + u.name + ")\""), std::string::npos) << s;
  EXPECT_NE(s.find("title \"PageTables\""), std::string::npos);
  const auto rows = data_rows(s);
  ASSERT_EQ(rows.size(), r.samples.size() + 1);  // header + one per sample
  EXPECT_EQ(rows[0][1], "PageTables");
  for (size_t i = 0; i < r.samples.size(); ++i) {
    SCOPED_TRACE(r.samples[i].name);
    ASSERT_EQ(rows[i + 1].size(), 2u);
    EXPECT_EQ(rows[i + 1][0], r.samples[i].name);
    const double want = double(r.samples[i].page_tables) / u.size;
    EXPECT_NEAR(std::stod(rows[i + 1][1]), want, want * 1e-5);
  }
}

TEST(Plot, LevelsScriptHoldsTheEndSamplesPagesPerLevel) {
  const run_result r = oltp_small();
  const auto rows = data_rows(gnuplot_script(levels_chart(r), plot_format::png, "out.png"));
  ASSERT_EQ(rows.size(), size_t(kLevels) + 1);
  for (int l = 0; l < kLevels; ++l) {
    EXPECT_EQ(rows[l + 1][0], level_name(static_cast<level>(l)));
    EXPECT_EQ(std::stod(rows[l + 1][1]), double(r.samples.back().pt_pages[l]));
  }
}

TEST(Plot, CompareScriptHasASeriesPerVariantAndOnlyByteRows) {
  const std::vector<compare_row> rows = {{"PageTables (max)", "bytes", {3.0 * 1024 * 1024, 1024.0 * 1024}},
                                         {"page faults", "faults", {10, 20}},
                                         {"huge pages (end)", "bytes", {std::nullopt, 2.0 * 1024 * 1024}}};
  const std::string s = gnuplot_script(compare_chart(rows, {"4 KiB", "THP \"always\""}, true), plot_format::svg, "x.svg");
  EXPECT_NE(s.find("title \"4 KiB\""), std::string::npos) << s;
  EXPECT_NE(s.find("title \"THP \\\"always\\\"\""), std::string::npos) << s;  // escaped in the script
  EXPECT_NE(s.find("(MiB)"), std::string::npos);
  const auto d = data_rows(s);
  ASSERT_EQ(d.size(), 3u);  // header, the two byte rows
  EXPECT_EQ(d[1], (std::vector<std::string>{"PageTables (max)", "3", "1"}));
  EXPECT_EQ(d[2], (std::vector<std::string>{"huge pages (end)", "NaN", "2"}));
  const auto counts = data_rows(gnuplot_script(compare_chart(rows, {"a", "b"}, false), plot_format::svg, "x.svg"));
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts[1], (std::vector<std::string>{"page faults", "10", "20"}));
}

TEST(Plot, UnitsAndFormats) {
  EXPECT_STREQ(unit_for(512).name, "B");
  EXPECT_STREQ(unit_for(1536).name, "KiB");
  EXPECT_STREQ(unit_for(880.0 * 1024 * 1024 * 1024).name, "GiB");
  EXPECT_EQ(plot_format_for("a/b.svg").value(), plot_format::svg);
  EXPECT_EQ(plot_format_for("b.png").value(), plot_format::png);
  EXPECT_EQ(plot_format_for("b.pdf").error().code(), status_code::invalid_argument);
}

TEST(Plot, RunResultReadBackFromItsJson) {
  const nlohmann::json j = {{"schema_version", 2}, {"scenario", "s"}, {"profile", "linux-6.18"},
                            {"samples", {{{"name", "load"}, {"PageTables", 8192}, {"pt_pages", nullptr}},
                                         {{"name", "end"}, {"PageTables", 4096},
                                          {"pt_pages", {{"pgd", 1}, {"p4d", 0}, {"pud", 1}, {"pmd", 1}, {"pte", 2}}}}}}};
  auto r = run_result_from_json(j);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->samples.size(), 2u);
  EXPECT_EQ(r->samples[0].page_tables, 8192u);
  EXPECT_FALSE(r->samples[0].pt_pages_known);
  EXPECT_EQ(r->samples[1].pt_pages[4], 2u);
  EXPECT_EQ(r->peak.page_tables, 8192u);
  EXPECT_FALSE(run_result_from_json(nlohmann::json{{"rows", 1}}).ok());
}

TEST(HtmlReport, EscapesEverythingAndInlinesSvg) {
  EXPECT_EQ(html_escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  EXPECT_EQ(inline_svg("<?xml version=\"1.0\"?>\n<!DOCTYPE svg>\n<svg a='1'></svg>"), "<svg a='1'></svg>");
  html_report h;
  h.title = "t <script>";
  h.scenario_text = "name = \"<x>\"";
  h.run_table = "PageTables (max): 1 kB";
  h.charts.push_back({"c", "<?xml?><svg></svg>"});
  const std::string s = format_html_report(h);
  EXPECT_EQ(s.find("<script>"), std::string::npos);
  EXPECT_NE(s.find("t &lt;script&gt;"), std::string::npos);
  EXPECT_NE(s.find("name = &quot;&lt;x&gt;&quot;"), std::string::npos);
  EXPECT_NE(s.find("<figure><svg></svg>"), std::string::npos);
  EXPECT_EQ(s.find("<?xml"), std::string::npos);
  EXPECT_EQ(s.find("http"), std::string::npos);  // nothing to fetch
}

}  // namespace
}  // namespace vmlab
