// The live engine's hold on the host, without a live run: the settings journal that lets a
// later run undo a killed one, and the lock of one live run at a time. Settings here are
// plain files in a temporary directory (a knob is a file to write), and VMLAB_RUN_DIR
// points the lock and the journals there, so these tests need neither root nor a real
// knob, and never touch one.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "engine/live/host_state.h"

namespace vmlab::live {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void die() {
  ::raise(SIGKILL);
  ::_exit(99);
}

// A temporary run directory for the lock and journals, and a "knob" file in it.
class HostState : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "vmlab-host-state-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    const char* old = std::getenv("VMLAB_RUN_DIR");
    if (old) old_run_dir_ = old;
    had_run_dir_ = old != nullptr;
    ::setenv("VMLAB_RUN_DIR", (dir_ + "/run").c_str(), 1);
    knob_ = dir_ + "/nr_hugepages";
    write(knob_, "0\n");
  }
  void TearDown() override {
    if (had_run_dir_) ::setenv("VMLAB_RUN_DIR", old_run_dir_.c_str(), 1);
    else ::unsetenv("VMLAB_RUN_DIR");
    fs::remove_all(dir_);
  }
  static void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
  static std::string read(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  std::vector<std::string> journals() const {
    std::vector<std::string> out;
    if (!fs::exists(dir_ + "/run")) return out;
    for (const auto& e : fs::directory_iterator(dir_ + "/run"))
      if (e.path().extension() == ".journal") out.push_back(e.path().filename().string());
    return out;
  }
  // Runs f in a child process, which ends it by SIGKILL (die()) with everything still in
  // scope, as a killed live run does: no destructor runs. Returns the child's pid.
  template <class F>
  pid_t killed_child(F&& f) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      f();
      ::raise(SIGKILL);
      ::_exit(99);
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    return pid;
  }

  std::string dir_, knob_, old_run_dir_;
  bool had_run_dir_ = false;
};

TEST_F(HostState, ARestoredSettingLeavesNoJournal) {
  auto lock = live_lock::acquire(live_lock::mode::no_wait, nullptr);
  ASSERT_TRUE(lock.ok()) << lock.error().to_string();
  {
    host_settings hs;
    ASSERT_TRUE(hs.set(knob_, "512").ok());
    EXPECT_EQ(read(knob_), "512\n");
    ASSERT_EQ(journals().size(), 1u);
    ASSERT_TRUE(hs.restore().ok());
    EXPECT_EQ(read(knob_), "0\n");
    EXPECT_TRUE(journals().empty());
    // A value the setting already has is neither written nor recorded.
    ASSERT_TRUE(hs.set(knob_, "0").ok());
    EXPECT_TRUE(journals().empty());
    ASSERT_TRUE(hs.set(knob_, "8").ok());
  }  // the destructor restores too
  EXPECT_EQ(read(knob_), "0\n");
  EXPECT_TRUE(journals().empty());
}

TEST_F(HostState, TheNextHolderUndoesAKilledRun) {
  const std::string knob2 = dir_ + "/shmem_enabled";
  write(knob2, "always within_size advise [never] deny force\n");
  const pid_t victim = killed_child([&] {
    auto lock = live_lock::acquire(live_lock::mode::no_wait, nullptr);
    if (!lock.ok()) ::_exit(2);
    host_settings hs;
    if (!hs.set(knob_, "512").ok() || !hs.set(knob2, "advise").ok()) ::_exit(3);
    write(knob2, "always within_size [advise] never deny force\n");  // how sysfs shows the new value
    die();
  });
  EXPECT_EQ(read(knob_), "512\n");
  ASSERT_EQ(journals().size(), 1u);
  EXPECT_EQ(journals()[0], "run-" + std::to_string(victim) + ".journal");

  // The kill released the lock: the next run takes it at once and puts both back, newest
  // first. sysfs shows a choice in brackets; the journal holds what was read and written.
  auto lock = live_lock::acquire(live_lock::mode::no_wait, nullptr);
  ASSERT_TRUE(lock.ok()) << lock.error().to_string();
  const recovery r = recover();
  EXPECT_TRUE(r.failed.empty()) << r.failed[0];
  EXPECT_EQ(read(knob_), "0\n");
  EXPECT_TRUE(journals().empty());
  const std::string want = "restored " + knob_ + " to 0 (a live run (pid " + std::to_string(victim) +
                           ") set it to 512 and did not finish)";
  EXPECT_NE(std::find(r.done.begin(), r.done.end(), want), r.done.end()) << (r.done.empty() ? "" : r.done[0]);
  // A sysfs choice is recorded and written back as its chosen word.
  EXPECT_EQ(read(knob2), "never\n");
  EXPECT_EQ(r.done.size(), 2u);
}

TEST_F(HostState, ASettingSomeoneElseChangedSinceIsLeftAlone) {
  const pid_t victim = killed_child([&] {
    auto lock = live_lock::acquire(live_lock::mode::no_wait, nullptr);
    host_settings hs;
    if (!hs.set(knob_, "512").ok()) ::_exit(3);
    die();
  });
  write(knob_, "7\n");  // an administrator changed it after the kill
  auto lock = live_lock::acquire(live_lock::mode::no_wait, nullptr);
  ASSERT_TRUE(lock.ok());
  const recovery r = recover();
  EXPECT_EQ(read(knob_), "7\n");
  ASSERT_EQ(r.done.size(), 1u);
  EXPECT_EQ(r.done[0], "left " + knob_ + " at 7: a live run (pid " + std::to_string(victim) +
                           ") set it to 512 and did not finish, and something else has changed it since (it was 0 "
                           "before that run)");
  EXPECT_TRUE(journals().empty());
}

TEST_F(HostState, AJournalLineCutShortByTheKillIsIgnored) {
  // The kill landed inside write(): the line has no newline, so the setting was never written.
  ASSERT_TRUE(fs::create_directories(dir_ + "/run"));
  write(dir_ + "/run/run-4242.journal", "set\t" + knob_ + "\t0\t512\nset\t" + knob_ + "\t512\t10");
  write(knob_, "512\n");
  auto lock = live_lock::acquire(live_lock::mode::no_wait, nullptr);
  ASSERT_TRUE(lock.ok());
  const recovery r = recover();
  EXPECT_EQ(read(knob_), "0\n");
  ASSERT_EQ(r.done.size(), 1u);
  EXPECT_TRUE(journals().empty());
}

TEST_F(HostState, OneLiveRunAtATime) {
  // A child holds the lock until we close its pipe.
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t holder = ::fork();
  if (holder == 0) {
    ::close(go[1]);
    ::close(ready[0]);
    auto lock = live_lock::acquire(live_lock::mode::no_wait, nullptr);
    const char c = lock.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    char b;
    (void)!::read(go[0], &b, 1);  // EOF when the parent closes it
    ::_exit(0);
  }
  ::close(go[0]);
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');

  auto refused = live_lock::acquire(live_lock::mode::no_wait, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), status_code::io_error);
  EXPECT_NE(refused.error().message().find("another live run holds " + dir_ + "/run/lock (pid " +
                                           std::to_string(holder)),
            std::string::npos)
      << refused.error().message();

  std::atomic<int> waits{0};
  std::string said;
  std::thread release([&] {
    while (!waits.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ::close(go[1]);  // the holder exits and its lock goes with it
  });
  auto waited = live_lock::acquire(live_lock::mode::wait, [&](const std::string& msg) {
    said = msg;
    ++waits;
  });
  release.join();
  ASSERT_TRUE(waited.ok()) << waited.error().to_string();
  EXPECT_EQ(waits.load(), 1);
  EXPECT_EQ(said.rfind("waiting for another live run to finish (pid " + std::to_string(holder), 0), 0u) << said;
  ::waitpid(holder, nullptr, 0);
  ::close(ready[0]);

  // Re-entrant within a process: `vmlab validate` holds it around every run it makes.
  auto again = live_lock::acquire(live_lock::mode::no_wait, nullptr);
  EXPECT_TRUE(again.ok());
}

}  // namespace
}  // namespace vmlab::live
