// Issue 11, "never crash on size": inputs the reader accepts but that once aborted vmlab
// with an uncaught std::bad_alloc (exit 134) now end with a message and an exit status:
// 0 when the size costs nothing (a declared, untouched object), 1 when the simulated
// kernel or the host runs out of memory (the op named), 2 for bad input (file:line:col).
// Also the progress line: only on a terminal, never into a pipe, off with --quiet.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/run_vmlab.h"

namespace vmlab {
namespace {

namespace fs = std::filesystem;
using cli_testing::run_vmlab;

// A scenario file in a fresh directory, removed with it.
class scenario_file {
 public:
  scenario_file(const std::string& name, const std::string& text) {
    dir_ = fs::temp_directory_path() / ("vmlab-size-" + std::to_string(::getpid()) + "-" + name);
    fs::create_directories(dir_);
    path_ = (dir_ / (name + ".toml")).string();
    std::ofstream(path_) << text;
  }
  ~scenario_file() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  fs::path dir_;
  std::string path_;
};

std::string huge_object(const std::string& size) {
  return "name = \"huge\"\n[[object]]\nname = \"o\"\nsize = \"" + size + "\"\n[[group]]\nname = \"g\"\n";
}

std::string random_touch(const std::string& pattern, const std::string& fraction, const std::string& memory = "") {
  std::string s = "name = \"" + pattern + "\"\n";
  if (!memory.empty()) s += "[machine]\nmemory = \"" + memory + "\"\n";
  return s + "[[group]]\nname = \"g\"\n  [[group.map]]\n  name = \"a\"\n  object = \"anon\"\n  size = \"64TiB\"\n"
             "[[phase]]\naction = \"touch\"\nmap = \"a\"\npattern = \"" + pattern + "\"\nfraction = " + fraction + "\n";
}

// A declared object costs what is touched: 2^64 - 4096 bytes and 2^60 bytes, never mapped,
// run in well under a second and a few MiB (their page-cache bitmaps were 512 TiB and
// 32 TiB dense).
TEST(SizeLimits, HugeUntouchedObjectsCostNothing) {
  for (const std::string size : {"0xfffffffffffff000", "1048576TiB"}) {
    scenario_file f("object", huge_object(size));
    auto r = run_vmlab({"run", f.path(), "--json"}, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_code, 0) << size << ": " << r.err;
    EXPECT_EQ(r.err, "") << size;
    EXPECT_LT(r.seconds, 10) << size;
  }
}

// An integer past 2^63 is bad input, reported where it is (TOML integers are signed).
TEST(SizeLimits, UnrepresentableIntegerIsBadInput) {
  scenario_file f("int", "name = \"x\"\n[[object]]\nname = \"o\"\nsize = 0xfffffffffffff000\n");
  auto r = run_vmlab({"run", f.path()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(f.path() + ":4:26: TOML syntax error: Error while parsing hexadecimal integer: "
                                  "'0xfffffffffffff000' is not representable in 64 bits"),
            std::string::npos)
      << r.err;
}

// A uniform touch of every page of a 64 TiB mapping (2^34 pages) reserved 128 GiB for its
// page list; a zipf touch of 100 x 2^34 accesses asked `reserve` for 12.8 TiB. Generated a
// batch at a time, they run until the simulated machine (1 GiB) is out of memory: a
// finding of the simulated kernel, exit 1, reported in the table.
TEST(SizeLimits, RandomTouchesOfTerabytesEndInTheSimulatedOom) {
  for (const auto& [pattern, fraction] : {std::pair{"uniform", "1"}, std::pair{"zipf", "100"}}) {
    scenario_file f(pattern, random_touch(pattern, fraction, "1GiB"));
    auto r = run_vmlab({"run", f.path()}, std::chrono::seconds(120));
    EXPECT_EQ(r.exit_code, 1) << pattern << ": " << r.err;
    EXPECT_EQ(r.err, "") << pattern;
    EXPECT_NE(r.out.find("ENOMEM: out of memory"), std::string::npos) << pattern << ": " << r.out;
  }
}

// --max-host-memory stops a run whose model outgrows it, naming the op (exit 1).
TEST(SizeLimits, MaxHostMemoryNamesTheOp) {
  scenario_file f("zipf", random_touch("zipf", "100"));
  auto r = run_vmlab({"run", f.path(), "--max-host-memory", "64MiB"}, std::chrono::seconds(120));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string head =
      "vmlab: error: op 2 (touch 1 a off=0 len=70368744177664 read zipf theta=0.99 count=1717986918400 seed=";
  EXPECT_EQ(r.err.substr(0, head.size()), head) << r.err;
  EXPECT_NE(r.err.find("more than --max-host-memory 64.0 MiB (67108864 bytes); give a larger limit, or fewer "
                       "processes or pages\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

// 10^6 processes: the op stream is read, and the guard stops the run at a spawn.
TEST(SizeLimits, MillionProcessesStopAtTheGuard) {
  scenario_file f("procs", "name = \"procs\"\n[[object]]\nname = \"o\"\nsize = \"1GiB\"\n[[group]]\nname = \"g\"\n"
                           "count = 1000000\n  [[group.map]]\n  name = \"a\"\n  object = \"o\"\n  shared = true\n");
  auto r = run_vmlab({"run", f.path(), "--max-host-memory", "16MiB"}, std::chrono::seconds(120));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("vmlab: error: op ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(" (spawn "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("more than --max-host-memory 16.0 MiB (16777216 bytes)"), std::string::npos) << r.err;
}

// A sequential touch of a 64 TiB shm object needed a 2 GiB dense bitmap of the object;
// now it costs what it touches, until the simulated page cache fills the machine.
TEST(SizeLimits, SequentialTouchOf64TiBShm) {
  scenario_file f("seq", "name = \"seq\"\n[[object]]\nname = \"o\"\nsize = \"64TiB\"\n[[group]]\nname = \"g\"\n"
                         "  [[group.map]]\n  name = \"a\"\n  object = \"o\"\n  shared = true\n"
                         "[[phase]]\naction = \"touch\"\nmap = \"a\"\n");
  auto r = run_vmlab({"run", f.path()}, std::chrono::seconds(120));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("ENOMEM: out of memory allocating a page-cache page"), std::string::npos) << r.out;
}

TEST(SizeLimits, MaxHostMemoryOptionErrors) {
  scenario_file f("opt", huge_object("1GiB"));
  auto r = run_vmlab({"run", f.path(), "--max-host-memory", "3Gb"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "vmlab: error: --max-host-memory: unknown unit 'Gb' in '3Gb'\n");
  r = run_vmlab({"run", f.path(), "--engine", "live", "--max-host-memory", "1GiB"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "vmlab: error: --max-host-memory is for the sim engine (the live engine has --max-memory)\n");
}

// When the host truly cannot hold the run (here: an address-space limit of 1 GiB), the
// std::bad_alloc is caught and the op named: exit 1, never SIGABRT.
TEST(SizeLimits, HostOutOfMemoryIsAMessage) {
#ifdef VMLAB_SANITIZED
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space at start-up: under an "
                  "address-space limit the binary aborts before main (the Release build runs this test)";
#endif
  scenario_file f("host", "name = \"host\"\n[[object]]\nname = \"o\"\nsize = \"1GiB\"\n[[group]]\nname = \"g\"\n"
                          "count = 1000000\n  [[group.map]]\n  name = \"a\"\n  object = \"o\"\n  shared = true\n");
  const std::string err = f.path() + ".err";
  const std::string cmd = "ulimit -v 1000000; exec " + std::string(VMLAB_BINARY) + " run '" + f.path() + "' >/dev/null 2>'" + err + "'";
  const int st = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(st)) << "status " << st;
  EXPECT_EQ(WEXITSTATUS(st), 1);
  std::ifstream in(err);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(text.rfind("vmlab: error: op ", 0) == 0 || text.rfind("vmlab: error: the host ran out of memory", 0) == 0)
      << text;
  EXPECT_NE(text.find("memory"), std::string::npos) << text;
}

// The progress line: on a terminal (a pseudo-terminal here) after half a second, with the
// op counts and an ETA; nothing with --quiet; nothing into a pipe.
using cli_testing::stderr_on_a_tty;

// About two seconds of model work, most of it in one op whose batches report progress: a
// uniform touch of a 64 TiB mapping until the 4 GiB machine is out of memory.
std::string long_run() { return random_touch("uniform", "1", "4GiB"); }

TEST(Progress, OnATerminalOnly) {
  scenario_file f("long", long_run());
  const std::string tty = stderr_on_a_tty({"run", f.path()});
  EXPECT_NE(tty.find("vmlab: op "), std::string::npos) << tty;
  EXPECT_NE(tty.find(" touch "), std::string::npos) << tty;  // the op being simulated
  EXPECT_NE(tty.find(" elapsed, ETA "), std::string::npos) << tty;
  EXPECT_EQ(stderr_on_a_tty({"run", f.path(), "--quiet"}), "");
  auto piped = run_vmlab({"run", f.path()}, std::chrono::seconds(120));
  EXPECT_EQ(piped.exit_code, 1);  // the simulated OOM
  EXPECT_EQ(piped.err, "");
}

}  // namespace
}  // namespace vmlab
