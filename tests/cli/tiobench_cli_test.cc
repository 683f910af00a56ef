// `vmlab tiobench` through the binary: bad options (exit 2 and the message), a live run's
// table and JSON, the temporary directory removed after a normal end and after SIGINT.
#include <gtest/gtest.h>
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli/run_vmlab.h"

namespace vmlab {
namespace {

using cli_testing::cli_result;
using cli_testing::run_vmlab;

// A TMPDIR of the test's own, so it can see that vmlab's directory is gone afterwards.
class TiobenchCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string t = "/var/tmp/vmlab-tiobench-test.XXXXXX";
    ASSERT_NE(::mkdtemp(t.data()), nullptr);
    tmp_ = t;
    old_ = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "";
    ::setenv("TMPDIR", tmp_.c_str(), 1);
  }
  void TearDown() override {
    if (old_.empty())
      ::unsetenv("TMPDIR");
    else
      ::setenv("TMPDIR", old_.c_str(), 1);
    ::rmdir(tmp_.c_str());
  }
  std::vector<std::string> left_in_tmp() const {
    std::vector<std::string> names;
    if (DIR* d = ::opendir(tmp_.c_str())) {
      while (dirent* e = ::readdir(d))
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.emplace_back(e->d_name);
      ::closedir(d);
    }
    return names;
  }
  std::string tmp_, old_;
};

std::string fmt_rate(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

void expect_usage_error(const std::vector<std::string>& args, const std::string& message) {
  std::vector<std::string> all = {"tiobench"};
  all.insert(all.end(), args.begin(), args.end());
  const cli_result r = run_vmlab(all);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(TiobenchCli, BadOptionsExit2WithTheReason) {
  expect_usage_error({"--size", "8", "--threads", "0"}, "--threads must be between 1 and 1024");
  expect_usage_error({"--size", "8", "--block", "1000"}, "--block must be a positive multiple of 512");
  expect_usage_error({"--size", "8", "--mmap", "--direct"}, "--direct and --mmap together");
  expect_usage_error({"--size", "8", "--engine", "sim", "--mmap", "--profile", "linux-6.18"},
                     "profile linux-6.18 does not have it (use linux-2.4)");
  expect_usage_error({"--size", "8", "--engine", "sim", "--mmap", "--dir", tmp_}, "--dir are for --engine live");
  expect_usage_error({"--size", "8", "--memory", "64"}, "--memory are for --engine sim");
  expect_usage_error({"--size", "8", "--dir", "/nonexistent/vmlab"}, "--dir /nonexistent/vmlab: ENOENT");
  expect_usage_error({"--size", "8", "--dir", "/proc"}, "--dir /proc");
  expect_usage_error({"--size", "8", "--engine", "both"}, "--engine");
  expect_usage_error({"--size", "lots"}, "--size");
  expect_usage_error({"--size", "1", "--threads", "300"}, "less than one 4096-byte block per thread");
  expect_usage_error({"--size", "8", "--random", "-1"}, "--random: '-1' is negative");  // not 2^64 - 1 ops
  // A sim machine too small for a page cache (it crashed with SIGSEGV), or past 64 bits.
  expect_usage_error({"--size", "8", "--engine", "sim", "--mmap", "--memory", "1"},
                     "a 1 MiB machine leaves 0 page-cache pages after mem_map and the kernel image");
  expect_usage_error({"--engine", "sim", "--mmap", "--memory", "18446744073709551615"}, "16 EiB or more");
  if (::geteuid() != 0) expect_usage_error({"--size", "8", "--drop-caches"}, "needs root");
  // -o that cannot be written fails before the benchmark runs, not after it.
  expect_usage_error({"--size", "8", "-o", "/nonexistent/vmlab/out.json"},
                     "-o /nonexistent/vmlab/out.json: cannot write it (No such file or directory); nothing was run");
  expect_usage_error({"--size", "8", "-o", tmp_}, "-o " + tmp_ + ": cannot write it (Is a directory)");
  EXPECT_TRUE(left_in_tmp().empty());
}

// The sim engine (linux-2.4, the IBM 75GXP): tiobench.pl's table and the JSON of the same.
TEST_F(TiobenchCli, SimRunPrintsTheTableAndJson) {
  const cli_result r = run_vmlab({"tiobench", "--engine", "sim", "--mmap", "--size", "64", "--threads", "2",
                                  "--memory", "32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("sim engine, tiotest 0.3.1 -DUSE_MMAP (sequential tests mapped, random tests read()/write()), "
                       "2000 random ops per thread"),
            std::string::npos)
      << r.out;
  size_t rows = 0, at = 0;
  for (const char* title : {"Sequential Reads", "Random Reads", "Sequential Writes", "Random Writes"}) {
    const size_t p = r.out.find(std::string("\n") + title + "\n");
    ASSERT_NE(p, std::string::npos) << title;
    EXPECT_GT(p, at) << title << " out of tiobench.pl's order";
    at = p;
  }
  for (size_t p = r.out.find("\nlinux-2.4 "); p != std::string::npos; p = r.out.find("\nlinux-2.4 ", p + 1)) ++rows;
  EXPECT_EQ(rows, 4u) << r.out;
  const cli_result j = run_vmlab({"tiobench", "--engine", "sim", "--mmap", "--size", "64", "--threads", "2",
                                  "--memory", "32", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc.at("engine"), "sim");
  EXPECT_EQ(doc.at("identifier"), "linux-2.4");
  ASSERT_EQ(doc.at("tests").size(), 4u);
  for (const auto& t : doc.at("tests")) {
    EXPECT_GT(t.at("rate_mib_per_s").get<double>(), 0) << t.dump();
    EXPECT_GT(t.at("cpu_percent").get<double>(), 0) << t.dump();
  }
  // The table's rates are the JSON's, to the table's two decimals.
  EXPECT_NE(r.out.find(fmt_rate(doc.at("tests")[2].at("rate_mib_per_s").get<double>())), std::string::npos);
  // Without --mmap the sim replays tiotest's read()/write() build.
  const cli_result rw = run_vmlab({"tiobench", "--engine", "sim", "--size", "64", "--threads", "2", "--memory", "32"});
  ASSERT_EQ(rw.exit_code, 0) << rw.err;
  EXPECT_NE(rw.out.find("sim engine, read()/write() (tiotest 0.3.1), 2000 random ops per thread"), std::string::npos)
      << rw.out;
}

TEST_F(TiobenchCli, LiveRunPrintsTiobenchsTableAndRemovesItsDirectory) {
  const cli_result r = run_vmlab({"tiobench", "--size", "16", "--threads", "2", "--random", "400"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"Unit information", "Sequential Reads", "Random Reads", "Sequential Writes", "Random Writes",
                        "Identifier                    Size   Size  Thr      Rate     (CPU%)  Latency    Latency"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  // The row: identifier, File Size 16, Blk Size 4096, Num Thr 2, then Rate and CPU%.
  EXPECT_NE(r.out.find("     16   4096   2  "), std::string::npos) << r.out;
  EXPECT_TRUE(left_in_tmp().empty());
}

TEST_F(TiobenchCli, JsonHasTheFourTestsInTiotestsOrder) {
  for (const std::string mode : {"", "--mmap", "--direct"}) {
    SCOPED_TRACE(mode);
    const bool mmap = mode == "--mmap";
    std::vector<std::string> args = {"tiobench", "--size", "8", "--threads", "2", "--random", "300", "--json"};
    if (!mode.empty()) args.push_back(mode);
    const cli_result r = run_vmlab(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("schema_version"), 1);
    EXPECT_EQ(j.at("spec").at("mmap"), mmap);
    EXPECT_EQ(j.at("spec").at("direct"), mode == "--direct");
    const auto& t = j.at("tests");
    ASSERT_EQ(t.size(), 4u);
    const char* order[] = {"write", "random_write", "read", "random_read"};
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(t[i].at("test"), order[i]);
      EXPECT_GT(t[i].at("rate_mib_per_s").get<double>(), 0);
      EXPECT_GE(t[i].at("cpu_percent").get<double>(), 0);
    }
    // Blocks done: the files' blocks (4 MiB each = 1024), or random ops per thread x threads.
    EXPECT_EQ(t[0].at("blocks"), 2 * 1024);
    EXPECT_EQ(t[3].at("blocks"), 2 * 150);
    EXPECT_EQ(t[3].at("ops"), 2 * 150);
  }
  EXPECT_TRUE(left_in_tmp().empty());
}

TEST_F(TiobenchCli, FilesInADirectoryYouNameAreGoneAfterwardsAndTheDirectoryStays) {
  const cli_result r = run_vmlab({"tiobench", "--size", "8", "--threads", "2", "--random", "100", "--mmap", "--dir", tmp_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("files in " + tmp_), std::string::npos) << r.out;
  EXPECT_TRUE(left_in_tmp().empty());
  EXPECT_EQ(::access(tmp_.c_str(), F_OK), 0);
}

// An I/O error in a test (here EFBIG: a file-size limit below the files' size, SIGXFSZ
// ignored, as a full disk's ENOSPC would come back from the same calls) ends the run with
// the test and the call named, exit 3, and nothing left behind.
TEST_F(TiobenchCli, AnIoErrorEndsTheRunWithTheTestAndTheCallNamed) {
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit small = old;
  small.rlim_cur = 1 << 20;  // 1 MiB; each thread's file is 4 MiB
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  auto* const old_handler = ::signal(SIGXFSZ, SIG_IGN);
  const cli_result r = run_vmlab({"tiobench", "--size", "8", "--threads", "2", "--random", "100"});
  ::signal(SIGXFSZ, old_handler);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("vmlab: error: Sequential Writes: ftruncate of thread"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("EFBIG"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_TRUE(left_in_tmp().empty());
}

// `vmlab ARGS...` with --dir on a filesystem of the test's own: a tmpfs mounted with
// OPTS on DIR in a private mount namespace (unshare --mount), so the mount exists for
// this one run and goes with it, whatever happens to the test; the host's mounts are
// never touched. The shell then lists what vmlab left there on stderr ("files left: N").
// Exit 125 when the mount fails.
cli_result run_on_tmpfs(const std::string& dir, const std::string& opts, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                                   "mount -t tmpfs -o \"$1\" vmlab-test \"$0\" || exit 125; shift; \"$@\"; rc=$?; "
                                   "echo \"files left: $(ls -A \"$0\" | wc -l)\" >&2; exit $rc",
                                   dir, opts, VMLAB_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return cli_testing::run_command(std::move(argv));
}

// Why this host cannot mount a tmpfs of the test's own, or empty when it can.
std::string cannot_mount_tmpfs(const std::string& dir) {
  if (::geteuid() != 0) return "mounting a tmpfs needs root";
  if (::access("/usr/bin/unshare", X_OK) != 0) return "no /usr/bin/unshare (util-linux)";
  const cli_result r = cli_testing::run_command(
      {"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", "mount -t tmpfs -o size=1m vmlab-test \"$0\"", dir});
  return r.exit_code == 0 ? "" : "no private mount namespace with a tmpfs here: " + r.err;
}

// A directory without room for the run: refused before anything is written (exit 2,
// what is free and what the run needs), nothing left in it.
TEST_F(TiobenchCli, AFullFilesystemIsRefusedBeforeTheRun) {
  if (const std::string why = cannot_mount_tmpfs(tmp_); !why.empty()) GTEST_SKIP() << why;
  const cli_result r = run_on_tmpfs(tmp_, "size=1m", {"tiobench", "--dir", tmp_, "--size", "8", "--threads", "2"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--dir " + tmp_ + " has 1 MiB free; the run writes 8 MiB"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("files left: 0"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// A read-only filesystem: exit 2 naming the directory and EROFS.
TEST_F(TiobenchCli, AReadOnlyDirectoryIsRefused) {
  if (const std::string why = cannot_mount_tmpfs(tmp_); !why.empty()) GTEST_SKIP() << why;
  const cli_result r = run_on_tmpfs(tmp_, "ro,size=16m", {"tiobench", "--dir", tmp_, "--size", "8", "--threads", "2"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--dir " + tmp_ + ": cannot create files there: EROFS"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("files left: 0"), std::string::npos) << r.err;
}

// A filesystem that runs out after the check (here of inodes: room for one of the two
// threads' files): the host failed the run, exit 3, the call and ENOSPC named, and the
// file already made is gone (unlinked while open).
TEST_F(TiobenchCli, AFilesystemThatFillsUpEndsTheRunAndLeavesNothing) {
  if (const std::string why = cannot_mount_tmpfs(tmp_); !why.empty()) GTEST_SKIP() << why;
  const cli_result r =
      run_on_tmpfs(tmp_, "size=64m,nr_inodes=2", {"tiobench", "--dir", tmp_, "--size", "8", "--threads", "2"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("cannot create " + tmp_ + "/vmlab-tiobench."), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ENOSPC"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("files left: 0"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(TiobenchCli, SigintStopsTheRunAndRemovesEverything) {
  // 2 GiB with O_DIRECT-free writes takes seconds; the signal comes after 300 ms.
  const cli_result r = run_vmlab({"tiobench", "--size", "2048", "--threads", "2"}, std::chrono::seconds(120), SIGINT,
                                 std::chrono::milliseconds(300));
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  EXPECT_TRUE(left_in_tmp().empty());
}

}  // namespace
}  // namespace vmlab
