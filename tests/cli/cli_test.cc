// End-to-end tests of the `vmlab` binary: exit codes, error messages with their
// file:line:col and caret, the JSON and table reports, determinism, trace round trips,
// a run that ends early, the listings, and (as root on x86-64 Linux) the live engine.
//
// Every test runs the built binary (VMLAB_BINARY) with fork/exec and looks only at what
// a user sees: the exit status, standard output and standard error. Inputs are written
// to a per-test temporary directory that an RAII guard removes, also when an assertion
// fails. Expected numbers are derived in comments next to them.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include "tests/known_profiles.h"

#include "tests/live_host.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/run_vmlab.h"

namespace vmlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// ---------------------------------------------------------------------------------------
// Running the binary

using cli_testing::cli_result;
using cli_testing::run_vmlab;

std::string describe(const std::vector<std::string>& args) {
  std::string s = "vmlab";
  for (const auto& a : args) s += " " + a;
  return s;
}

// ---------------------------------------------------------------------------------------
// Temporary files

// A fresh directory under the system temp dir, removed (with everything in it) when the
// guard goes out of scope — including when an ASSERT_* returns from the test early.
class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = (fs::temp_directory_path() / "vmlab-cli-test-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
    path_ = tmpl;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] std::string path(const std::string& name) const { return (path_ / name).string(); }
  // Writes `text` to NAME in the directory; returns the file's absolute path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = path(name);
    std::ofstream f(p, std::ios::binary);
    f << text;
    f.close();
    if (!f) throw std::runtime_error("cannot write " + p);
    return p;
  }

 private:
  fs::path path_;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// ---------------------------------------------------------------------------------------
// Output helpers

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// `vmlab scenarios` lines start with the name, then the description.
std::vector<std::string> scenario_names(const std::string& out) {
  std::vector<std::string> names;
  for (const std::string& l : lines_of(out)) names.push_back(l.substr(0, l.find(' ')));
  return names;
}

// Line `n` (1-based) of `text`.
std::string line_of(const std::string& text, size_t n) {
  const auto l = lines_of(text);
  return n >= 1 && n <= l.size() ? l[n - 1] : "<no line " + std::to_string(n) + ">";
}

json parse_json(const std::string& s) {
  json j = json::parse(s, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON:\n" << s.substr(0, 2000);
  return j;
}

// The report minus the fields that may legitimately differ between runs of the same
// workload: timing always; with `drop_name` also the scenario/source name.
json comparable(json j, bool drop_name = false) {
  j.erase("timing");
  if (drop_name) j.erase("scenario");
  return j;
}

// A bad input: exit 2, nothing on stdout, and exactly three lines on stderr —
//   vmlab: error: FILE:LINE:COL: MESSAGE
//     <line LINE of the file>
//     <spaces>^              (under column COL)
void expect_located_error(const cli_result& r, const std::string& file, const std::string& text, size_t line, size_t col,
                          const std::string& message) {
  SCOPED_TRACE("stderr was:\n" + r.err);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  const auto l = lines_of(r.err);
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0], "vmlab: error: " + file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + message);
  EXPECT_EQ(l[1], "  " + line_of(text, line));
  EXPECT_EQ(l[2], "  " + std::string(col - 1, ' ') + "^");
}

// The procs entry of `pid` in a sample, or null.
const json* proc_of(const json& sample, uint32_t pid) {
  for (const auto& p : sample.at("procs"))
    if (p.at("pid").get<uint32_t>() == pid) return &p;
  return nullptr;
}

const json* sample_named(const json& report, const std::string& name) {
  for (const auto& s : report.at("samples"))
    if (s.at("name") == name) return &s;
  return nullptr;
}


// Fixtures: one temp dir per test. Suites share the base so that 'Cli*' selects them all.
class CliTest : public ::testing::Test {
 protected:
  temp_dir tmp_;
};
class CliUsage : public CliTest {};
class CliScenarioErrors : public CliTest {};
class CliTraceErrors : public CliTest {};
class CliRun : public CliTest {};
class CliTrace : public CliTest {};
class CliList : public CliTest {};
class CliLive : public CliTest {};

// ---------------------------------------------------------------------------------------
// 1. Usage and exit codes

TEST_F(CliUsage, NoSubcommandIsAUsageError) {
  const auto r = run_vmlab({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("A subcommand is required"), std::string::npos) << r.err;
}

TEST_F(CliUsage, UnknownFlagIsAUsageError) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--bogus"},
                                              {"run", "validate/anon-64m", "--bogus"},
                                              {"profiles", "extra"}}) {
    SCOPED_TRACE(describe(args));
    const auto r = run_vmlab(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_FALSE(r.err.empty());
  }
  const auto r = run_vmlab({"run", "validate/anon-64m", "--bogus"});
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
}

TEST_F(CliUsage, RunOfAMissingFileNamesItAndTheBuiltins) {
  const std::string missing = tmp_.path("no-such-scenario.toml");
  const auto r = run_vmlab({"run", missing});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  const auto l = lines_of(r.err);
  ASSERT_EQ(l.size(), 1u) << r.err;  // no location, so no source line and no caret
  const std::string head = "vmlab: error: no scenario file or built-in scenario named '" + missing + "' (built-in: ";
  EXPECT_EQ(l[0].substr(0, head.size()), head);
  EXPECT_NE(l[0].find("validate/anon-64m"), std::string::npos);
  EXPECT_EQ(l[0].back(), ')');
}

TEST_F(CliUsage, UnknownEngineIsAUsageError) {
  const auto r = run_vmlab({"run", "validate/anon-64m", "--engine", "bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("bogus"), std::string::npos) << r.err;
}

TEST_F(CliUsage, RunNeedsExactlyOneOfScenarioAndTrace) {
  const std::string trace = tmp_.write("t.trace", "spawn 1\n");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run"}, {"run", "validate/anon-64m", "--trace", trace}}) {
    SCOPED_TRACE(describe(args));
    const auto r = run_vmlab(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "vmlab: error: give exactly one of SCENARIO or --trace FILE\n");
  }
}

TEST_F(CliUsage, HelpOfEverySubcommandExitsZero) {
  for (const std::string sub : {"run", "validate", "trace", "profiles", "scenarios"}) {
    SCOPED_TRACE(sub);
    const auto r = run_vmlab({sub, "--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.err, "");
    EXPECT_NE(r.out.find("Usage:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" " + sub + " [OPTIONS]"), std::string::npos) << r.out;
  }
  const auto top = run_vmlab({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  for (const std::string sub : {"run", "validate", "trace", "profiles", "scenarios"})
    EXPECT_NE(top.out.find("  " + sub + " "), std::string::npos) << "top-level help does not list " << sub;
  const auto v = run_vmlab({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out, "vmlab 0.1\n");
}

TEST_F(CliUsage, BadMaxMemoryIsAUsageError) {
  // Checked before anything runs, so this needs no live host.
  const auto r = run_vmlab({"validate", "validate/anon-64m", "--max-memory", "3Gb"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "vmlab: error: --max-memory: unknown unit 'Gb' in '3Gb'\n");
}

TEST_F(CliUsage, MissingTraceFileAndUnwritableOutputAreErrors) {
  const std::string missing = tmp_.path("missing.trace");
  const auto r = run_vmlab({"run", "--trace", missing});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "vmlab: error: cannot open trace file '" + missing + "'\n");

  const std::string out = tmp_.path("no/such/dir/x.trace");
  const auto w = run_vmlab({"trace", "validate/anon-64m", "-o", out});
  EXPECT_EQ(w.exit_code, 3);  // the host failed us, not the input
  EXPECT_EQ(w.err, "vmlab: error: cannot write " + out + "\n");
  EXPECT_FALSE(fs::exists(out));
}

// ---------------------------------------------------------------------------------------
// 2. Bad scenarios: the whole first line of stderr, the source line and the caret

TEST_F(CliScenarioErrors, TomlSyntaxError) {
  {
    // The caret sits on the offending character: 'x' is column 10 of "seed = 12x".
    const std::string text = "# a scenario with a typo in a number\nseed = 12x\n";
    const std::string f = tmp_.write("syntax-number.toml", text);
    expect_located_error(run_vmlab({"run", f}), f, text, 2, 10,
                         "TOML syntax error: Error while parsing decimal integer: expected digit, saw 'x'");
  }
  {
    // An unclosed [[ header: the parser sees the end of line 2, one past "[[group]".
    const std::string text = "name = \"bad\"\n[[group]\nname = \"p\"\n";
    const std::string f = tmp_.write("syntax-header.toml", text);
    expect_located_error(run_vmlab({"run", f}), f, text, 2, 9,
                         "TOML syntax error: Error while parsing table header: expected ']', saw '\\n'");
  }
}

TEST_F(CliScenarioErrors, ImageOutsideTheUserAddressSpace) {
  // i386 PAE: 1 TiB of libraries from TASK_UNMAPPED_BASE cannot fit under 3 GiB; the
  // error points at the group's `image` value (line 5, column 9), exit 2.
  const std::string text =
      "[kernel]\nprofile = \"linux-2.6.15\"\n[[group]]\nname = \"g\"\nimage = { libraries = \"1TiB\" }\n";
  const std::string f = tmp_.write("image-too-big.toml", text);
  expect_located_error(run_vmlab({"run", f}), f, text, 5, 9,
                       "the process image's image.libs [0x40000000, 0x10040000000) lies outside the user address space "
                       "of the i386-pae format (TASK_SIZE 0xc0000000): make it smaller");
}

TEST_F(CliScenarioErrors, UnknownKey) {
  // The key, not its value, is the error: column 3 of the indented line 6.
  const std::string text = R"([[group]]
name = "p"
  [[group.map]]
  name = "heap"
  object = "anon"
  sizee = "1GiB"
)";
  const std::string f = tmp_.write("unknown-key.toml", text);
  expect_located_error(run_vmlab({"run", f}), f, text, 6, 3, "unknown key 'sizee' in [[group.map]]; did you mean 'size'?");
  // The same error from `trace`, which only parses.
  expect_located_error(run_vmlab({"trace", f}), f, text, 6, 3, "unknown key 'sizee' in [[group.map]]; did you mean 'size'?");
}

TEST_F(CliScenarioErrors, NegativeSize) {
  for (const std::string value : {"-4096", "\"-4KiB\""}) {
    SCOPED_TRACE(value);
    const std::string text = "[[group]]\nname = \"p\"\n  [[group.map]]\n  name = \"heap\"\n  object = \"anon\"\n  size = " +
                             value + "\n";
    const std::string f = tmp_.write("negative.toml", text);
    const std::string shown = value[0] == '"' ? value.substr(1, value.size() - 2) : value;
    expect_located_error(run_vmlab({"run", f}), f, text, 6, 10, "negative size '" + shown + "'");
  }
}

TEST_F(CliScenarioErrors, OverlappingFixedMappings) {
  // a = [1 GiB, 1 GiB + 2 MiB), b = [1 GiB + 1 MiB, 1 GiB + 3 MiB): they share 1 MiB.
  // The error points at the second mapping's address.
  const std::string text = R"([[group]]
name = "p"
  [[group.map]]
  name = "a"
  object = "anon"
  size = "2MiB"
  addr = "0x40000000"
  [[group.map]]
  name = "b"
  object = "anon"
  size = "2MiB"
  addr = "0x40100000"
)";
  const std::string f = tmp_.write("overlap.toml", text);
  expect_located_error(run_vmlab({"run", f}), f, text, 12, 10,
                       "fixed mapping 'b' [0x40100000, 0x40300000) overlaps fixed mapping 'a' [0x40000000, "
                       "0x40200000) in group 'p'");

  // Touching, not overlapping: b starts where a ends. Accepted.
  std::string ok = text;
  ok.replace(ok.find("0x40100000"), 10, "0x40200000");
  const auto r = run_vmlab({"trace", tmp_.write("adjacent.toml", ok)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CliScenarioErrors, MappingLargerThanTheAddressSpace) {
  auto scenario = [](const std::string& size) {
    return "[[group]]\nname = \"p\"\n  [[group.map]]\n  name = \"heap\"\n  object = \"anon\"\n  size = \"" + size + "\"\n";
  };
  // x86-64 4-level: task_size = 2^47 - 4096 = 0x7ffffffff000. 128 TiB = 2^47 does not fit.
  {
    const std::string text = scenario("128TiB");
    const std::string f = tmp_.write("huge.toml", text);
    expect_located_error(run_vmlab({"run", f}), f, text, 6, 10,
                         "mapping 'heap' (140737488355328 bytes) is larger than the address space of linux-6.18 "
                         "(task_size 0x7ffffffff000)");
  }
  // The limit is [64 KiB, task_size): 2^47 - 4096 - 65536 = 140737488285696 bytes fit;
  // one page more does not.
  {
    const std::string text = scenario("140737488289792");
    const std::string f = tmp_.write("one-page-over.toml", text);
    expect_located_error(run_vmlab({"trace", f}), f, text, 6, 10,
                         "mapping 'heap' (140737488289792 bytes) is larger than the address space of linux-6.18 "
                         "(task_size 0x7ffffffff000)");
  }
  {
    const auto r = run_vmlab({"trace", tmp_.write("just-fits.toml", scenario("140737488285696"))});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("mmap 1 heap obj=anon len=140737488285696 prot=rw private\n"), std::string::npos) << r.out;
  }
}

TEST_F(CliScenarioErrors, UnknownKernelProfile) {
  const std::string text = "[kernel]\nprofile = \"linux-9.99\"\n";
  const std::string f = tmp_.write("profile.toml", text);
  expect_located_error(run_vmlab({"run", f}), f, text, 2, 11,
                       "unknown kernel profile 'linux-9.99' (known: " + known_profiles() + ")");
}

TEST_F(CliScenarioErrors, BadOverrideValue) {
  // The value is wrong, so the caret is under the value (column 7), and the message is
  // the profile's own.
  const std::string text = R"([kernel]
profile = "linux-6.18"
[kernel.overrides]
pti = "maybe"
)";
  const std::string f = tmp_.write("override.toml", text);
  expect_located_error(run_vmlab({"run", f}), f, text, 4, 7, "kernel override 'pti' must be true or false, not 'maybe'");
}

// ---------------------------------------------------------------------------------------
// 3. Malformed traces

TEST_F(CliTraceErrors, UnknownOp) {
  const std::string text = "# a trace\nspawn 1\nfrobnicate 1 heap   # no such op\n";
  const std::string f = tmp_.write("unknown-op.trace", text);
  expect_located_error(run_vmlab({"run", "--trace", f}), f, text, 3, 1,
                       "unknown op 'frobnicate' (expected machine, override, object, spawn, fork, exit, mmap, munmap, "
                       "mprotect, madvise, touch, read, readv, write, fsync, msync, mremap, remap_file_pages, reclaim or phase)");
}

// The live engine cannot make the host reclaim a chosen amount of the run's page cache:
// it refuses the whole run before starting any process (exit 2), naming the op; the sim
// runs the same trace and reports what reclaim did.
TEST_F(CliTraceErrors, LiveEngineRefusesReclaimBeforeTheRun) {
  const std::string text = "object d file size=4MiB\nspawn 1\nmmap 1 m obj=d len=4MiB shared\ntouch 1 m\nreclaim len=1MiB\n";
  const std::string f = tmp_.write("reclaim.trace", text);
  const cli_result live = run_vmlab({"run", "--trace", f, "--engine", "live"});
  EXPECT_EQ(live.exit_code, 2) << live.err;
  EXPECT_NE(live.err.find("op 3 (reclaim len=1048576): the live engine cannot make this host's kernel reclaim"),
            std::string::npos)
      << live.err;
  EXPECT_EQ(live.out, "");
  const cli_result sim = run_vmlab({"run", "--trace", f, "--json"});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const auto j = nlohmann::json::parse(sim.out);
  EXPECT_EQ(j.at("reclaim").at("reclaimed"), 1 * MiB / 4096) << j.at("reclaim").dump();  // linux-6.18: 4 KiB pages
}

TEST_F(CliTraceErrors, PidUsedBeforeSpawn) {
  // "mmap 2": the pid token is column 6.
  const std::string text = "spawn 1\nmmap 2 heap len=64MiB\n";
  const std::string f = tmp_.write("pid.trace", text);
  expect_located_error(run_vmlab({"run", "--trace", f}), f, text, 2, 6, "pid 2 is used before spawn or fork");
}

TEST_F(CliTraceErrors, PidReusedAfterExitAndBadUnit) {
  {
    const std::string text = "spawn 1\nexit 1\n\nspawn 1\n";
    const std::string f = tmp_.write("reuse.trace", text);
    expect_located_error(run_vmlab({"run", "--trace", f}), f, text, 4, 7, "pid 1 has exited and pids are not reused");
  }
  {
    // A bad size points at the value, after "len=" (column 17).
    const std::string text = "spawn 1\nmmap 1 heap len=3Gb\n";
    const std::string f = tmp_.write("unit.trace", text);
    expect_located_error(run_vmlab({"run", "--trace", f}), f, text, 2, 17, "unknown unit 'Gb' in '3Gb'");
  }
}

// ---------------------------------------------------------------------------------------
// 4. The JSON report of the smallest validate scenario

TEST_F(CliRun, Anon64mJson) {
  const auto r = run_vmlab({"run", "validate/anon-64m", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const json j = parse_json(r.out);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.at("schema_version"), 2);
  EXPECT_EQ(j.at("engine"), "sim");
  EXPECT_EQ(j.at("scenario"), "validate/anon-64m");
  EXPECT_EQ(j.at("profile"), "linux-6.18");
  EXPECT_EQ(j.at("completed"), true);
  EXPECT_EQ(j.at("failures"), json::array());
  // spawn, mmap, touch, phase.
  EXPECT_EQ(j.at("ops_applied"), 4);
  // 64 MiB written once: 16384 anonymous write faults, no COW.
  EXPECT_EQ(j.at("faults"), 16384);
  EXPECT_EQ(j.at("cow_faults"), 0);

  const json& samples = j.at("samples");
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples.front().at("name"), "write");
  EXPECT_EQ(samples.back().at("name"), "end");
  // 64 MiB = 32 PTE pages (2 MiB each), under one PMD page, one PUD page and the PGD;
  // P4D is folded on 4-level paging.
  const json levels = {{"pgd", 1}, {"p4d", 0}, {"pud", 1}, {"pmd", 1}, {"pte", 32}};
  EXPECT_EQ(samples[0].at("pt_pages"), levels);
  EXPECT_EQ(j.at("peak").at("pt_pages"), levels);
  for (const auto& s : samples) {
    SCOPED_TRACE(s.at("name").get<std::string>());
    EXPECT_EQ(s.at("nr_procs"), 1);
    ASSERT_EQ(s.at("procs").size(), 1u);
    const json& p = s.at("procs")[0];
    EXPECT_EQ(p.at("pid"), 1);
    // VmPTE on 6.18 counts PTE + PMD + PUD pages (not the PGD): (32 + 1 + 1) * 4096.
    EXPECT_EQ(p.at("VmPTE"), 139264);
    EXPECT_EQ(p.at("VmPTE_workload"), 139264);
    EXPECT_EQ(p.at("RssAnon_pages"), 16384);
    EXPECT_EQ(p.at("min_flt"), 16384);
    // PageTables counts every level, and the PTI PGD is two pages: (34 + 2) * 4096.
    EXPECT_EQ(s.at("PageTables"), 147456);
  }
  EXPECT_EQ(j.at("peak").at("VmPTE_max_process"), 139264);
  EXPECT_EQ(j.at("peak").at("PageTables"), 147456);
  EXPECT_TRUE(j.at("timing").contains("wall_seconds"));

  // The table says the same in kB (--kb; by default in human units).
  const auto t = run_vmlab({"run", "validate/anon-64m", "--kb"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const auto tl = lines_of(t.out);
  ASSERT_FALSE(tl.empty());
  EXPECT_EQ(tl[0], "vmlab run validate/anon-64m  engine: sim  kernel: linux-6.18");
  EXPECT_NE(t.out.find("VmPTE (max, one process): 136 kB\n"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("PageTables (max):         144 kB\n"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("RUN ENDED EARLY"), std::string::npos);
}

// ---------------------------------------------------------------------------------------
// 5. Determinism

TEST_F(CliRun, SameScenarioSameReport) {
  const auto a = run_vmlab({"run", "examples/oltp-small", "--json"});
  const auto b = run_vmlab({"run", "examples/oltp-small", "--json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const json ja = parse_json(a.out), jb = parse_json(b.out);
  ASSERT_TRUE(ja.contains("timing"));
  // The random (zipf, uniform) touches must not depend on anything but the seed.
  EXPECT_EQ(comparable(ja).dump(2), comparable(jb).dump(2));
  EXPECT_EQ(ja.at("samples").size(), 4u);  // load, query, sort, end

  // The table has no timing in it: byte for byte.
  const auto ta = run_vmlab({"run", "examples/oltp-small"});
  const auto tb = run_vmlab({"run", "examples/oltp-small"});
  ASSERT_EQ(ta.exit_code, 0);
  EXPECT_EQ(ta.out, tb.out);
}

// ---------------------------------------------------------------------------------------
// 6. Trace round trip

TEST_F(CliTrace, RoundTripGivesTheSameRun) {
  const std::string f = tmp_.path("oltp.trace");
  const auto w = run_vmlab({"trace", "examples/oltp-small", "-o", f});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_EQ(w.out, "");
  const std::string text = read_file(f);
  EXPECT_EQ(text.rfind("# vmlab trace v1\n# source: examples/oltp-small\n", 0), 0u) << text.substr(0, 200);
  // Without -o the trace goes to stdout, identically.
  const auto s = run_vmlab({"trace", "examples/oltp-small"});
  ASSERT_EQ(s.exit_code, 0);
  EXPECT_EQ(s.out, text);

  const auto direct = run_vmlab({"run", "examples/oltp-small", "--json"});
  const auto replay = run_vmlab({"run", "--trace", f, "--json"});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  const json jd = parse_json(direct.out), jr = parse_json(replay.out);
  EXPECT_EQ(jd.at("scenario"), "examples/oltp-small");
  EXPECT_EQ(jr.at("scenario"), f);  // a trace's source name is its path
  EXPECT_EQ(jd.at("samples"), jr.at("samples"));
  EXPECT_EQ(jd.at("peak"), jr.at("peak"));
  EXPECT_EQ(comparable(jd, true).dump(2), comparable(jr, true).dump(2));
}

TEST_F(CliTrace, RoundTripOfEveryBuiltinScenario) {
  const auto list = run_vmlab({"scenarios"});
  ASSERT_EQ(list.exit_code, 0);
  const auto names = scenario_names(list.out);
  ASSERT_FALSE(names.empty());
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    std::string file = name;
    std::replace(file.begin(), file.end(), '/', '_');
    const std::string f = tmp_.path(file + ".trace");
    const auto w = run_vmlab({"trace", name, "-o", f});
    ASSERT_EQ(w.exit_code, 0) << w.err;
#ifdef VMLAB_SANITIZED
    // The sanitizer build simulates about 25 times slower; these scenarios simulate tens of
    // millions of mappings (Release: 2 s and 10 s; here: 1 and 5 minutes a run). Their
    // round trip is checked in Release (tests/cli/seeds_test.cc runs them too).
    if (name == "seeds/rmap-dss" || name == "examples/lowmem-sga-2.5" || name.rfind("scale/", 0) == 0) continue;
#endif
    // 1.2 billion random faults (BENCHMARKS.md "Datacenter scale"); its op stream is the
    // other scale scenarios' with a random pattern, which smaller scenarios round-trip.
    if (name == "scale/sga-1500x300g-1pct") continue;
    const auto direct = run_vmlab({"run", name, "--json"});
    const auto replay = run_vmlab({"run", "--trace", f, "--json"});
    EXPECT_EQ(direct.exit_code, replay.exit_code);
    EXPECT_EQ(comparable(parse_json(direct.out), true).dump(1), comparable(parse_json(replay.out), true).dump(1));
  }
}

// ---------------------------------------------------------------------------------------
// 7. A hand-written trace

TEST_F(CliTrace, HandWrittenTrace) {
  const std::string text = R"(# vmlab trace v1, written by hand for cli_test
machine profile=linux-6.18 memory=1GiB   # PTI on: the PGD is two pages

spawn 1
# 64 MiB at 1 GiB: 32 PTE pages under one PMD page (the 1 GiB at 0x40000000) and one
# PUD page (the 512 GiB at 0).
mmap 1 heap len=64MiB addr=0x40000000
# 4 MiB starting 1 MiB past a 2 MiB boundary, in another PGD slot (254).
mmap 1 buf len=2*2MiB addr=0x7f0000100000
touch 1 heap write                 # every page: an anon_vma, 16384 pages
touch 1 buf read stride=2MiB       # +0 and +2 MiB: zero page, two PTE pages, no anon_vma
phase touched
fork 1 2                           # copies heap's tables; skips buf (no anon_vma)
phase forked
munmap 1 heap len=32MiB            # frees the 16 PTE pages of the first 32 MiB
)";
  // pid 1 at 'touched': heap 32 PTE + 1 PMD + 1 PUD, buf 2 PTE + 1 PMD + 1 PUD
  //                     = 38 pages = 155648 bytes of VmPTE.
  // pid 2 after fork:   heap only: 34 pages = 139264.
  // pid 1 at the end:   38 - 16 = 22 pages = 90112.
  // PageTables at 'touched': 38 + the 2-page PGD = 40 pages = 163840.
  const std::string f = tmp_.write("hand.trace", text);
  const auto r = run_vmlab({"run", "--trace", f, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = parse_json(r.out);
  EXPECT_EQ(j.at("scenario"), f);
  EXPECT_EQ(j.at("completed"), true);
  EXPECT_EQ(j.at("ops_applied"), 9);
  // 16384 write faults on heap, 2 read faults on buf; fork copies, it does not fault.
  EXPECT_EQ(j.at("faults"), 16386);

  const json* touched = sample_named(j, "touched");
  const json* forked = sample_named(j, "forked");
  const json* end = sample_named(j, "end");
  ASSERT_TRUE(touched && forked && end);
  ASSERT_TRUE(proc_of(*touched, 1));
  EXPECT_EQ(proc_of(*touched, 1)->at("VmPTE"), 155648);
  EXPECT_EQ(touched->at("PageTables"), 163840);
  EXPECT_EQ(touched->at("pt_pages"), (json{{"pgd", 1}, {"p4d", 0}, {"pud", 2}, {"pmd", 2}, {"pte", 34}}));
  ASSERT_TRUE(proc_of(*forked, 1) && proc_of(*forked, 2));
  EXPECT_EQ(proc_of(*forked, 1)->at("VmPTE"), 155648);
  EXPECT_EQ(proc_of(*forked, 2)->at("VmPTE"), 139264);
  ASSERT_TRUE(proc_of(*end, 1) && proc_of(*end, 2));
  EXPECT_EQ(proc_of(*end, 1)->at("VmPTE"), 90112);
  EXPECT_EQ(proc_of(*end, 2)->at("VmPTE"), 139264);
  EXPECT_EQ(proc_of(*end, 1)->at("RssAnon_pages"), 8192);  // half of heap left
  // Both address spaces at the end: PTE 18 + 32, PMD 2 + 1, PUD 2 + 1, two PGDs.
  EXPECT_EQ(end->at("pt_pages"), (json{{"pgd", 2}, {"p4d", 0}, {"pud", 3}, {"pmd", 3}, {"pte", 50}}));
  EXPECT_EQ(j.at("peak").at("VmPTE_max_process"), 155648);

  // --check recounts the model's accounting after every op and must not change a figure.
  const auto c = run_vmlab({"run", "--trace", f, "--json", "--check"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(comparable(parse_json(c.out)).dump(1), comparable(j).dump(1));
}

// ---------------------------------------------------------------------------------------
// 8. A run the simulated kernel ends early

constexpr const char* kOutOfMemory = R"(# 64 MiB of memory, 128 MiB of anonymous memory written: the kernel runs out.
[machine]
memory = "64MiB"

[[group]]
name = "p"
  [[group.map]]
  name = "heap"
  object = "anon"
  size = "128MiB"

[[phase]]
name = "fill"
action = "touch"
map = "heap"
write = true
)";

TEST_F(CliRun, OutOfMemoryEndsTheRunEarly) {
  const std::string f = tmp_.write("oom.toml", kOutOfMemory);
  const auto r = run_vmlab({"run", f});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // a finding, not bad input
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("RUN ENDED EARLY at op 2 `touch 1 heap off=0 len=134217728 write`:\n  ENOMEM"),
            std::string::npos)
      << r.out;

  const auto rj = run_vmlab({"run", f, "--json"});
  EXPECT_EQ(rj.exit_code, 1);
  // Under JSON and CSV (which has no column for it) the failure also goes to stderr.
  const std::string said = "vmlab: the run ended early at op 2 `touch 1 heap off=0 len=134217728 write`: ENOMEM";
  EXPECT_EQ(rj.err.rfind(said, 0), 0u) << rj.err;
  const auto rc = run_vmlab({"run", f, "--format", "csv"});
  EXPECT_EQ(rc.exit_code, 1);
  EXPECT_EQ(rc.err.rfind(said, 0), 0u) << rc.err;
  EXPECT_EQ(rc.out.rfind("name,op_index,", 0), 0u) << rc.out;
  const json j = parse_json(rj.out);
  EXPECT_EQ(j.at("completed"), false);
  ASSERT_EQ(j.at("failures").size(), 1u);
  const json& fail = j.at("failures")[0];
  EXPECT_EQ(fail.at("op_index"), 2);
  EXPECT_EQ(fail.at("op"), "touch 1 heap off=0 len=134217728 write");
  EXPECT_EQ(fail.at("error").get<std::string>().rfind("ENOMEM: out of memory allocating an anonymous page", 0), 0u)
      << fail.at("error");
  // spawn and mmap were applied; the phase sample was never reached, the end sample is.
  EXPECT_EQ(j.at("ops_applied"), 2);
  ASSERT_EQ(j.at("samples").size(), 1u);
  const json& end = j.at("samples")[0];
  EXPECT_EQ(end.at("name"), "end");
  ASSERT_TRUE(proc_of(end, 1));
  // What was faulted in before the failure fits in 64 MiB (16384 pages) beside the boot
  // reservation (mem_map 16384 x 64 B = 256 pages, the 32 MiB kernel image 8192), the
  // page tables (20: PTI PGD 2, PUD 1, PMD 1, PTE 16) and the slab (11: mm_struct 8,
  // vm_area_struct, anon_vma and anon_vma_chain 1 each).
  const auto rss = proc_of(end, 1)->at("RssAnon_pages").get<uint64_t>();
  EXPECT_EQ(rss, 16384u - 256u - 8192u - 20u - 11u);
}

// The kernel faults page by page and fails only when no page is left, however the same
// pages are split into ops (a regression: the sim once charged a 64-page word at a time).
TEST_F(CliRun, OutOfMemoryOnlyWhenMemoryIsFull) {
  // 64 MiB = 16384 pages; boot, page tables and slab take 8479 (see above), so 7905
  // anonymous pages fit. Touch 7906 pages, once in one op and once as 7905 + 1.
  const std::string one = tmp_.write("one.trace", R"(machine memory=64MiB
spawn 1
mmap 1 heap len=128MiB
touch 1 heap len=32382976 write       # 7906 pages
)");
  const std::string two = tmp_.write("two.trace", R"(machine memory=64MiB
spawn 1
mmap 1 heap len=128MiB
touch 1 heap len=32378880 write       # 7905 pages: exactly what is free
touch 1 heap off=32378880 len=4KiB write
)");
  for (const auto& f : {one, two}) {
    SCOPED_TRACE(f);
    const auto r = run_vmlab({"run", "--trace", f, "--json"});
    EXPECT_EQ(r.exit_code, 1);
    const json j = parse_json(r.out);
    ASSERT_EQ(j.at("failures").size(), 1u);
    EXPECT_NE(j.at("failures")[0].at("error").get<std::string>().find("(16384 of 16384 pages in use"), std::string::npos)
        << j.at("failures")[0].at("error");
    ASSERT_TRUE(proc_of(j.at("samples").back(), 1));
    EXPECT_EQ(proc_of(j.at("samples").back(), 1)->at("RssAnon_pages"), 7905);
  }
}

// ---------------------------------------------------------------------------------------
// 9. Listings

TEST_F(CliList, Profiles) {
  const auto r = run_vmlab({"profiles"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto l = lines_of(r.out);
  ASSERT_GE(l.size(), 4u);
  EXPECT_EQ(l[0].rfind("profile ", 0), 0u) << l[0];
  std::map<std::string, std::vector<std::string>> rows;  // name -> whitespace-separated fields
  for (size_t i = 1; i < l.size(); ++i) {
    std::istringstream in(l[i]);
    std::vector<std::string> fields;
    for (std::string w; in >> w;) fields.push_back(w);
    if (!fields.empty()) rows[fields[0]] = fields;
  }
  for (const std::string p : {"linux-2.5.26", "linux-2.6.15", "linux-6.18"}) EXPECT_TRUE(rows.count(p)) << p << "\n" << r.out;
  // Columns: profile, paging, PageTables counts, VmPTE counts, PT_RECLAIM, description.
  ASSERT_GE(rows["linux-6.18"].size(), 5u);
  EXPECT_EQ(rows["linux-6.18"][1], "x86-64-4level");
  EXPECT_EQ(rows["linux-6.18"][3], "pud+pmd+pte");  // why anon-64m's VmPTE is 34 pages
  EXPECT_EQ(rows["linux-6.18"][4], "yes");
  ASSERT_GE(rows["linux-2.5.26"].size(), 3u);
  EXPECT_EQ(rows["linux-2.5.26"][1], "i386-2level");
  EXPECT_NE(l[0].find("VmPTE counts"), std::string::npos);
}

TEST_F(CliList, Scenarios) {
  const auto r = run_vmlab({"scenarios"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto names = scenario_names(r.out);
  // Each line: the name, then its description (every built-in scenario has one).
  for (const std::string& line : lines_of(r.out)) EXPECT_GT(line.size(), line.find(' ') + 3) << line;
  const std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size()) << "duplicate names:\n" << r.out;
  const auto validate = std::count_if(names.begin(), names.end(), [](const std::string& n) { return n.rfind("validate/", 0) == 0; });
  EXPECT_GE(validate, 18) << r.out;
  for (const std::string n : {"validate/anon-64m", "validate/shm-256m-4proc", "examples/oltp-small"})
    EXPECT_TRUE(unique.count(n)) << n;
  // Built-ins resolve with or without ".toml".
  const auto t = run_vmlab({"run", "validate/anon-64m.toml"});
  EXPECT_EQ(t.exit_code, 0) << t.err;
}

// ---------------------------------------------------------------------------------------
// 10. The live engine

TEST_F(CliLive, ValidateAnon64m) {
  SKIP_UNLESS_LIVE_HOST();
  // Per-process VmPTE is the process's own and must agree every time. PageTables and the
  // slab caches are host-wide: the live engine subtracts what other processes did to
  // PageTables and calls a figure "not measurable" when the host would not hold still, so
  // a FAIL means a wrong figure. Up to 3 attempts absorb what no process accounts for (the
  // kernel's own page tables); a wrong model or method fails all of them.
  std::string failures;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    const auto r = run_vmlab({"validate", "validate/anon-64m", "--json"});
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.exit_code << "\n" << r.err;
    const json j = parse_json(r.out);
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j.at("schema_version"), 2);
    std::set<std::string> metrics;
    size_t failed = 0;
    failures.clear();
    for (const auto& c : j.at("cases")) {
      const std::string metric = c.at("metric");
      const std::string verdict = c.at("verdict");
      metrics.insert(metric);
      EXPECT_EQ(c.at("scenario"), "validate/anon-64m");
      EXPECT_TRUE(verdict == "ok" || verdict == "FAIL" || verdict == "not measurable") << verdict;
      EXPECT_EQ(c.at("ok").get<bool>(), verdict == "ok");
      failed += verdict == "FAIL";
      if (metric.rfind("VmPTE_growth", 0) == 0) {
        EXPECT_EQ(verdict, "ok") << c.dump();
        EXPECT_EQ(c.at("sim"), 139264.0);
        EXPECT_EQ(c.at("live"), 139264.0) << c.dump();
        continue;
      }
      if (metric.rfind("slab ", 0) == 0) {
        // One written VMA: one vm_area_struct, one anon_vma, one anon_vma_chain. The live
        // figure is whole-system growth less the workers' images, within 4 slabs per CPU.
        EXPECT_EQ(c.at("unit"), "objects");
        EXPECT_EQ(c.at("sim"), 1.0) << c.dump();
      } else {
        // 34 pages + the PGD: one page, or two with PTI (the sim follows the host's PTI).
        EXPECT_TRUE(c.at("sim") == 143360.0 || c.at("sim") == 147456.0) << c.dump();
      }
      if (verdict == "not measurable") {
        EXPECT_FALSE(c.at("why").get<std::string>().empty()) << c.dump();
      }
      if (verdict == "FAIL") failures += c.dump() + "\n";
    }
    EXPECT_EQ(metrics, (std::set<std::string>{"VmPTE_growth[pid=1]@write", "PageTables_growth@write",
                                              "VmPTE_growth[pid=1]@end", "PageTables_growth@end",
                                              "slab vm_area_struct@end", "slab anon_vma@end",
                                              "slab anon_vma_chain@end"}));
    EXPECT_EQ(j.at("failed"), failed);
    EXPECT_EQ(r.exit_code, failed ? 1 : 0);
    for (const auto& n : j.at("notes")) {
      EXPECT_TRUE(n.at("id").is_string() && n.at("text").is_string() && n.at("finding").is_boolean()) << n.dump();
      EXPECT_EQ(n.at("text").get<std::string>().find('\n'), std::string::npos) << "a note is one line: " << n.dump();
    }
    if (HasFailure() || failed == 0) return;
#ifdef VMLAB_SANITIZED
    // Under ASan the instrumented processes grow page tables for shadow memory that no
    // VmPTE delta accounts for (docs/decisions.md): the system figure is judged in Release.
    GTEST_SKIP() << "sanitizer build: system PageTables not compared; the per-process cases passed";
#endif
  }
  FAIL() << "outside tolerance in 3 attempts:\n" << failures;
}

TEST_F(CliLive, Shm256m4procMatchesTheSim) {
  SKIP_UNLESS_LIVE_HOST();
  const auto live = run_vmlab({"run", "validate/shm-256m-4proc", "--engine", "live", "--json"});
  ASSERT_EQ(live.exit_code, 0) << live.err;
  const auto sim = run_vmlab({"run", "validate/shm-256m-4proc", "--json"});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const json jl = parse_json(live.out), js = parse_json(sim.out);
  EXPECT_EQ(jl.at("schema_version"), 2);
  EXPECT_EQ(jl.at("engine"), "live");
  EXPECT_EQ(jl.at("completed"), true);
  EXPECT_EQ(js.at("engine"), "sim");
  const json* le = sample_named(jl, "end");
  const json* se = sample_named(js, "end");
  ASSERT_TRUE(le && se);
  EXPECT_TRUE(le->at("pt_pages").is_null());  // not observable on a live kernel
  ASSERT_EQ(le->at("procs").size(), 4u);
  ASSERT_EQ(se->at("procs").size(), 4u);
  for (uint32_t pid = 1; pid <= 4; ++pid) {
    SCOPED_TRACE("pid " + std::to_string(pid));
    const json* lp = proc_of(*le, pid);
    const json* sp = proc_of(*se, pid);
    ASSERT_TRUE(lp && sp);
    // 256 MiB shared, all written: 128 PTE pages + 1 PMD + 1 PUD = 130 pages each.
    EXPECT_EQ(sp->at("VmPTE_workload"), 532480);
    EXPECT_EQ(lp->at("VmPTE_workload"), sp->at("VmPTE_workload"));
    EXPECT_EQ(lp->at("RssShmem_pages"), 65536);
  }
}

}  // namespace
}  // namespace vmlab
