// `vmlab plot` and `vmlab report` through the binary (issue 13, item 4): gnuplot's PNG and
// SVG hold the expected series; the HTML report, rendered by headless Chromium, is not
// blank and shows the run's figures. Without gnuplot (or Chromium) a test skips and says why.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/run_vmlab.h"

namespace vmlab {
namespace {

using cli_testing::cli_result;
using cli_testing::run_vmlab;

bool have(const std::string& program) { return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0; }

#define NEED(program)                                                                                   \
  if (!have(program)) GTEST_SKIP() << program << " is not installed (Debian: apt-get install "          \
                                   << (std::string(program) == "gnuplot" ? "gnuplot-nox" : program) << ")"

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream b;
  b << in.rdbuf();
  return b.str();
}

// A directory of the test's own, removed at the end even after a failed assertion.
class scratch {
 public:
  scratch() {
    char t[] = "/tmp/vmlab-plot-test-XXXXXX";
    dir_ = ::mkdtemp(t) ? t : "/tmp";
  }
  ~scratch() {
    std::error_code ec;
    if (dir_ != "/tmp") std::filesystem::remove_all(dir_, ec);
  }
  std::string operator/(const std::string& name) const { return dir_ + "/" + name; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

void expect_svg(const std::string& svg, const std::vector<std::string>& titles) {
  EXPECT_TRUE(svg.rfind("<?xml", 0) == 0 || svg.rfind("<svg", 0) == 0) << svg.substr(0, 200);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  for (const auto& t : titles) EXPECT_NE(svg.find(t), std::string::npos) << "series title " << t;
}

TEST(CliPlot, SamplesAsSvg) {
  NEED("gnuplot");
  scratch tmp;
  const cli_result r = run_vmlab({"plot", "examples/oltp-small", "-o", tmp / "pt.svg"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_svg(slurp(tmp / "pt.svg"), {"PageTables", "query", "PageTables (MiB)"});
}

TEST(CliPlot, LevelsAsPng) {
  NEED("gnuplot");
  scratch tmp;
  const cli_result r = run_vmlab({"plot", "examples/oltp-small", "--kind", "levels", "-o", tmp / "levels.png"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string png = slurp(tmp / "levels.png");
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_GT(png.size(), 5000u);  // a 960x540 chart with text; an empty PNG is a few hundred bytes
}

TEST(CliPlot, DesignsSideBySideAndFromSavedJson) {
  NEED("gnuplot");
  scratch tmp;
  const std::vector<std::string> variants = {"--variant", "4 KiB:", "--variant",
                                             "THP: kernel.overrides.shmem_enabled=always"};
  std::vector<std::string> args = {"plot", "examples/oltp-small", "-o", tmp / "designs.svg"};
  args.insert(args.end(), variants.begin(), variants.end());
  cli_result r = run_vmlab(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_svg(slurp(tmp / "designs.svg"), {"4 KiB", "THP", "PageTables (max)"});

  // The same from what `vmlab compare --json` saved, and a run's JSON.
  std::vector<std::string> cmp = {"compare", "examples/oltp-small", "--json"};
  cmp.insert(cmp.end(), variants.begin(), variants.end());
  r = run_vmlab(cmp);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ofstream(tmp / "cmp.json") << r.out;
  r = run_vmlab({"plot", tmp / "cmp.json", "-o", tmp / "cmp.png"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(tmp / "cmp.png").substr(0, 4), "\x89PNG");
  r = run_vmlab({"run", "examples/oltp-small", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ofstream(tmp / "run.json") << r.out;
  r = run_vmlab({"plot", tmp / "run.json", "-o", tmp / "run.svg"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_svg(slurp(tmp / "run.svg"), {"PageTables", "query"});
}

TEST(CliPlot, BadInputIsExit2AndNoGnuplotIsExit3) {
  scratch tmp;
  cli_result r = run_vmlab({"plot", "examples/oltp-small", "-o", tmp / "x.pdf"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("vmlab: error: -o"), std::string::npos) << r.err;
  r = run_vmlab({"plot", "examples/oltp-small", "--kind", "memory", "-o", tmp / "x.svg"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  std::ofstream(tmp / "bad.json") << "{\"rows\": 3, \"variants\": []}";
  r = run_vmlab({"plot", tmp / "bad.json", "-o", tmp / "x.svg"});
  EXPECT_EQ(r.exit_code, 2) << r.err;

  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", tmp.dir().c_str(), 1);  // a PATH without gnuplot
  r = run_vmlab({"plot", "examples/oltp-small", "-o", tmp / "x.svg"});
  ::setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("gnuplot-nox"), std::string::npos) << r.err;
}

// Headless Chromium renders the report. Why the screenshot check is a size comparison:
// a blank 1200x1600 page compresses to a few kilobytes of PNG whatever the browser
// version, and text plus charts to tens of kilobytes or more, so "larger than a blank
// page's screenshot by 4x and 20 KB" tells a rendered page from a blank one without
// decoding the PNG.
std::string chromium(const scratch& tmp, const std::string& url, const std::string& what) {
  const std::string cmd = "timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
                          "--user-data-dir=" + tmp / "chromium-profile" + " --window-size=1200,1600 " + what + " '" +
                          url + "' 2>" + tmp / "chromium.log";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[65536];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

TEST(CliReport, RendersInHeadlessChromium) {
  NEED("gnuplot");
  NEED("chromium");
  scratch tmp;
  const std::vector<std::string> args = {"report", "examples/oltp-small", "-o", tmp / "report.html", "--variant",
                                         "4 KiB:", "--variant", "THP: kernel.overrides.shmem_enabled=always"};
  cli_result r = run_vmlab(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = slurp(tmp / "report.html");
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);  // self-contained
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);

  // The PageTables maximum as `vmlab run` prints it.
  r = run_vmlab({"run", "examples/oltp-small"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string pt_max;
  for (const auto& l : cli_testing::lines_of(r.out))
    if (l.rfind("PageTables (max):", 0) == 0) pt_max = l;
  ASSERT_FALSE(pt_max.empty()) << r.out;

  const std::string url = "file://" + tmp / "report.html";
  const std::string dom = chromium(tmp, url, "--dump-dom");
  ASSERT_FALSE(dom.empty()) << slurp(tmp / "chromium.log");
  EXPECT_NE(dom.find(pt_max), std::string::npos) << pt_max;
  EXPECT_NE(dom.find("<svg"), std::string::npos);
  EXPECT_NE(dom.find("4 KiB"), std::string::npos);
  EXPECT_NE(dom.find("examples/oltp-small"), std::string::npos);

  chromium(tmp, url, "--screenshot=" + tmp / "report.png");
  chromium(tmp, "about:blank", "--screenshot=" + tmp / "blank.png");
  const std::string shot = slurp(tmp / "report.png"), blank = slurp(tmp / "blank.png");
  ASSERT_EQ(shot.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << slurp(tmp / "chromium.log");
  ASSERT_EQ(blank.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << slurp(tmp / "chromium.log");
  std::cout << "screenshot " << shot.size() << " bytes, blank page " << blank.size() << " bytes\n";
  EXPECT_GT(shot.size(), 4 * blank.size());
  EXPECT_GT(shot.size(), blank.size() + 20000);
}

}  // namespace
}  // namespace vmlab
