// The live engine as a user meets it on a real server, through the binary: every signal a
// terminal or an administrator sends ends a run cleanly with the exit status shells use,
// one live run measures at a time (a second waits or refuses; the sim never waits), and
// `vmlab cleanup` says what it did. Root on Linux x86-64 only; elsewhere these skip.
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "engine/live/procfs.h"
#include "tests/cli/run_vmlab.h"
#include "tests/live_host.h"

namespace vmlab {
namespace {

using cli_testing::cli_result;
using cli_testing::lines_of;
using cli_testing::run_vmlab;
using cli_testing::stderr_on_a_tty;
namespace fs = std::filesystem;

// This test process's pid among the ancestors of `pid` (by /proc/PID/stat's ppid).
bool descends_from_us(const std::string& pid) {
  std::string p = pid;
  for (int depth = 0; depth < 64 && p != "0" && p != "1"; ++depth) {
    if (p == std::to_string(::getpid())) return true;
    std::ifstream f("/proc/" + p + "/stat");
    std::string stat;
    if (!std::getline(f, stat)) return false;
    auto ppid = live::parse_stat_field(stat, 4);
    if (!ppid.ok()) return false;
    p = std::string(ppid.value());
  }
  return false;
}

// The vmlab workers (and zygotes) this test's runs left behind. The test is made their
// subreaper before its first run, so that an orphan of its runs becomes its child;
// another vmlab on the host (a second copy of the suite) is not counted.
std::vector<std::string> vmlab_workers() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(e.path() / "comm");
    std::string comm;
    if (std::getline(f, comm) && (comm == "vmlab-worker" || comm == "vmlab-zygote") && descends_from_us(pid))
      out.push_back(pid + " " + comm);
  }
  return out;
}

// Journals of live runs that are gone (run-PID.journal, PID no longer running): what a
// run that did not clean up leaves. A journal of a run still going is another's.
std::vector<std::string> journals() {
  std::vector<std::string> out;
  if (fs::exists("/run/vmlab"))
    for (const auto& e : fs::directory_iterator("/run/vmlab")) {
      if (e.path().extension() != ".journal") continue;
      const std::string name = e.path().stem().string();  // run-PID
      const pid_t pid = name.rfind("run-", 0) == 0 ? static_cast<pid_t>(std::atol(name.c_str() + 4)) : 0;
      if (pid > 0 && ::kill(pid, 0) == 0) continue;
      out.push_back(e.path().string());
    }
  return out;
}

// A live run of several seconds: one process writes 1 GiB and drops it, `rounds` times
// (about 0.6 s a round on this project's hosts).
class LongTrace {
 public:
  explicit LongTrace(int rounds) {
    path_ = (fs::temp_directory_path() / ("vmlab-long-" + std::to_string(::getpid()) + ".trace")).string();
    std::ofstream f(path_);
    f << "# vmlab trace v1\nspawn 1\nmmap 1 a obj=anon len=1GiB prot=rw private align=2MiB\n";
    for (int i = 0; i < rounds; ++i) f << "touch 1 a off=0 len=1GiB write\nmadvise 1 a off=0 len=1GiB dontneed\n";
    f << "phase never\n";
  }
  ~LongTrace() { fs::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(CliLiveSignals, EachSignalEndsTheRunCleanlyWithTheShellsStatus) {
  SKIP_UNLESS_LIVE_HOST();
  // vmlab_workers(): orphans of this test's runs come to it, for this test only.
  struct subreaper {
    subreaper() { EXPECT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0); }
    ~subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 0); }
  } reaper;
  LongTrace t(4);
  const struct {
    int sig;
    const char* name;
  } cases[] = {{SIGINT, "SIGINT"}, {SIGTERM, "SIGTERM"}, {SIGHUP, "SIGHUP"}, {SIGQUIT, "SIGQUIT"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const cli_result r = run_vmlab({"run", "--trace", t.path(), "--engine", "live"}, std::chrono::seconds(60), c.sig,
                                   std::chrono::milliseconds(900));
    EXPECT_EQ(r.exit_code, 128 + c.sig) << r.err;
    EXPECT_NE(r.err.find(std::string("interrupted by ") + c.name), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");  // no partial result presented as whole
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(vmlab_workers().empty()) << vmlab_workers()[0];
    EXPECT_TRUE(journals().empty());
  }
}

TEST(CliLiveLock, ASecondLiveRunWaitsOrRefusesAndTheSimNeverWaits) {
  SKIP_UNLESS_LIVE_HOST();
  LongTrace t(6);
  cli_result first;
  std::thread a([&] { first = run_vmlab({"run", "--trace", t.path(), "--engine", "live"}, std::chrono::seconds(120)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // the first run holds the lock by now

  const cli_result refused = run_vmlab({"run", "validate/anon-64m", "--engine", "live", "--no-wait"});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_NE(refused.err.find("another live run holds /run/vmlab/lock (pid "), std::string::npos) << refused.err;
  EXPECT_EQ(refused.out, "");

  const cli_result sim = run_vmlab({"run", "validate/anon-64m"});
  EXPECT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_EQ(sim.err, "");  // no waiting for the sim

  const cli_result waited = run_vmlab({"run", "validate/anon-64m", "--engine", "live"}, std::chrono::seconds(120));
  a.join();
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_NE(waited.err.find("vmlab: waiting for another live run to finish (pid "), std::string::npos) << waited.err;
  // It measured after the first run had ended: the first run's 1 GiB is not in its figures.
  EXPECT_NE(waited.out.find("VmPTE"), std::string::npos);
  EXPECT_GT(waited.seconds, 0.0);
}

TEST(CliLiveLock, TwoConcurrentValidatesBothFinishAndAgree) {
  SKIP_UNLESS_LIVE_HOST();
  // Two users validating at once: the second waits for the first's whole matrix, so
  // neither measures while the other's workers run, and neither reports a wrong figure.
  const std::vector<std::string> args = {"validate", "validate/shm-256m-4proc", "validate/fork-cow", "--json"};
  cli_result a, b;
  std::thread ta([&] { a = run_vmlab(args); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::thread tb([&] { b = run_vmlab(args); });
  ta.join();
  tb.join();
  EXPECT_NE((a.err + b.err).find("vmlab: waiting for another live run to finish"), std::string::npos) << a.err << b.err;
#ifdef VMLAB_SANITIZED
  // Under ASan the instrumented workers' images differ between the image pass and the run
  // (docs/decisions.md): the system-wide figures are judged in the Release build only.
  for (const cli_result* r : {&a, &b}) EXPECT_TRUE(r->exit_code == 0 || r->exit_code == 1) << r->err;
#else
  EXPECT_EQ(a.exit_code, 0) << a.err << a.out.substr(0, 3000);
  EXPECT_EQ(b.exit_code, 0) << b.err << b.out.substr(0, 3000);
  for (const cli_result* r : {&a, &b}) EXPECT_EQ(r->out.find("\"verdict\": \"FAIL\""), std::string::npos);
#endif
}

// `vmlab validate` on a terminal shows which scenario of how many it is on and the time
// elapsed, redrawn in place while the live run goes on and erased before the table; with
// --quiet, or into a pipe, none of that (the per-scenario timing lines stay).
TEST(CliLiveProgress, ValidateShowsProgressOnATerminalOnly) {
  SKIP_UNLESS_LIVE_HOST();
  const std::vector<std::string> args = {"validate", "validate/anon-64m"};
  const std::string tty = stderr_on_a_tty(args);
  EXPECT_NE(tty.find("\r\033[Kvmlab: validate 1/1 validate/anon-64m: live run, "), std::string::npos) << tty;
  EXPECT_NE(tty.find(" s elapsed"), std::string::npos) << tty;
  // Erased before the timing line and at the end: the last thing written is an erase.
  EXPECT_NE(tty.find("\r\033[Kvalidate/anon-64m: sim "), std::string::npos) << tty;
  ASSERT_GE(tty.size(), 4u);
  EXPECT_EQ(tty.substr(tty.size() - 4), "\r\033[K") << tty;

  auto quiet = args;
  quiet.emplace_back("--quiet");
  const std::string q = stderr_on_a_tty(quiet);
  EXPECT_EQ(q.find("vmlab: validate 1/1"), std::string::npos) << q;
  EXPECT_EQ(q.find('\033'), std::string::npos) << q;
  EXPECT_NE(q.find("validate/anon-64m: sim "), std::string::npos) << q;

  const cli_result piped = run_vmlab(args);
  ASSERT_TRUE(piped.exit_code == 0 || piped.exit_code == 1) << piped.err;
  EXPECT_EQ(piped.err.find("vmlab: validate 1/1"), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find('\r'), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find('\033'), std::string::npos) << piped.err;
  EXPECT_NE(piped.err.find("validate/anon-64m: sim "), std::string::npos) << piped.err;
}

// A live run's notes: one line each by default; --verbose follows each that has one with
// its long form (indented lines under it).
TEST(CliLiveNotes, OneLineEachAndTheLongFormWithVerbose) {
  SKIP_UNLESS_LIVE_HOST();
  auto notes_of = [](const std::string& out, size_t& long_lines) {
    std::vector<std::string> notes;
    long_lines = 0;
    bool in_notes = false;
    for (const auto& l : lines_of(out)) {
      if (l.rfind("note: ", 0) == 0) {
        in_notes = true;
        notes.push_back(l);
      } else if (in_notes) {
        EXPECT_EQ(l.rfind("      ", 0), 0u) << "after the notes, only their long forms: " << l;
        ++long_lines;
      }
    }
    return notes;
  };
  const cli_result r = run_vmlab({"run", "validate/anon-64m", "--engine", "live"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t long_default = 0, long_verbose = 0;
  const auto brief = notes_of(r.out, long_default);
  ASSERT_GE(brief.size(), 3u) << r.out;
  EXPECT_EQ(long_default, 0u) << r.out;
  // A line, not a paragraph (the long forms run to 300-700 characters).
  for (const auto& n : brief) EXPECT_LE(n.size(), 200u) << "a note is one short line: " << n;

  const cli_result v = run_vmlab({"run", "validate/anon-64m", "--engine", "live", "--verbose"});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const auto full = notes_of(v.out, long_verbose);
  EXPECT_GE(long_verbose, 3u) << v.out;  // PageTables_workload, VmPTE_workload, min_flt, peaks, THP have one
  EXPECT_GT(v.out.size(), r.out.size() + 500) << v.out;
  // The method notes (not findings, which depend on what the host did) are the same lines.
  for (const char* id : {"note: PageTables_workload: ", "note: VmPTE_workload: ", "note: peaks: "}) {
    EXPECT_NE(r.out.find(id), std::string::npos) << id;
    EXPECT_NE(v.out.find(id), std::string::npos) << id;
  }
}

TEST(CliCleanup, SaysWhenThereIsNothingToDo) {
  SKIP_UNLESS_LIVE_HOST();
  const cli_result r = run_vmlab({"cleanup"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "nothing to clean up: no live run left anything behind\n");
}

}  // namespace
}  // namespace vmlab
