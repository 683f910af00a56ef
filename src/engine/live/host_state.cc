#include "engine/live/host_state.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <set>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/live/driver.h"

namespace vmlab::live {
namespace {

// The lock of this process: its descriptor and how many holders share it, and whether
// the holder before us died holding it (the lock file still named it).
int g_lock_fd = -1;
int g_lock_depth = 0;
bool g_holder_died = false;
pid_t g_dead_holder_pgrp = 0;  // its process group, which its workers share

std::string lock_path() { return run_dir() + "/lock"; }

status make_run_dir() {
  const std::string d = run_dir();
  if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST)
    return status::io_error("cannot create " + d + " (where live runs keep their lock and the settings they change): " +
                            errno_text(errno));
  return {};
}

result<std::string> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return status::io_error("cannot open " + path + ": " + errno_text(errno));
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return status::io_error("cannot read " + path + ": " + errno_text(e));
    }
    if (n == 0) break;
    out.append(buf, size_t(n));
  }
  ::close(fd);
  return out;
}


std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// "1234 pgrp 1230: vmlab validate": the pid for the waiter's message, the process group
// its workers share, for a recovery after it died.
std::string self_description() {
  std::string out = std::to_string(::getpid()) + " pgrp " + std::to_string(::getpgrp()) + ":";
  auto cmd = read_file("/proc/self/cmdline");
  if (cmd.ok()) {
    std::string c = cmd.value();
    for (char& ch : c)
      if (ch == '\0') ch = ' ';
    while (!c.empty() && c.back() == ' ') c.pop_back();
    out += " " + c.substr(0, 200);
  }
  return out;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  return out;
}

// One journal line: "set\t<path>\t<old>\t<new>".
struct journal_entry {
  std::string path, old_value, new_value;
};

std::vector<journal_entry> parse_journal(const std::string& text) {
  std::vector<journal_entry> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) break;  // a line cut short by the kill: its write never happened
    const std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    std::vector<std::string> f;
    for (size_t a = 0;;) {
      size_t t = line.find('\t', a);
      f.push_back(line.substr(a, t == std::string::npos ? std::string::npos : t - a));
      if (t == std::string::npos) break;
      a = t + 1;
    }
    if (f.size() == 4 && f[0] == "set") out.push_back({f[1], f[2], f[3]});
  }
  return out;
}

// Workers of a run whose driver died. PR_SET_PDEATHSIG kills them with the driver, but
// tearing down an address space takes a while, and the next run must not measure while
// they still free their page tables: wait until every one is gone (or a zombie: a zombie
// holds nothing and is its reaper's to collect; after the driver's death that is init,
// which in some containers seldom or never reaps). One that is not even exiting (the
// driver's death raced with its creation) is killed. The dead holder's workers are the
// vmlab workers in its process group (workers never leave the driver's), so a live run
// elsewhere on the host, under another lock directory, is never touched.
void finish_workers(recovery& r) {
  constexpr unsigned kPfExiting = 0x4;  // PF_EXITING, include/linux/sched.h
  if (!g_holder_died || g_dead_holder_pgrp <= 0) return;  // a run that ended reaped its workers
  std::set<pid_t> killed, dying;
  // Until two scans 50 ms apart find none alive (a clone the dead driver's zygote was
  // making may show up only after the first scan), at most 10 s.
  constexpr int need_quiet = 2;
  int quiet = 0;
  for (int i = 0; i < 200 && quiet < need_quiet; ++i) {
    bool any = false;
    for (const std::string& name : list_dir("/proc")) {
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      auto comm = read_file("/proc/" + name + "/comm");
      if (!comm.ok()) continue;
      const std::string c = first_line(comm.value());
      if (c != "vmlab-worker" && c != "vmlab-zygote") continue;
      // /proc/PID/stat: "pid (comm) state ppid pgrp session tty_nr tpgid flags ..."
      auto st = read_file("/proc/" + name + "/stat");
      if (!st.ok()) continue;
      const size_t paren = st->rfind(')');
      if (paren == std::string::npos || paren + 2 >= st->size()) continue;
      const char state = (*st)[paren + 2];
      if (state == 'Z' || state == 'X') continue;
      unsigned long flags = 0;
      long pgrp = 0;
      const char* p = st->c_str() + paren + 3;
      for (int field = 4; field <= 9 && *p; ++field) {  // field 5 pgrp, 9 flags
        while (*p == ' ') ++p;
        if (field == 5) pgrp = std::strtol(p, nullptr, 10);
        if (field == 9) flags = std::strtoul(p, nullptr, 10);
        while (*p && *p != ' ') ++p;
      }
      if (pgrp != g_dead_holder_pgrp) continue;  // another run's, or not a live run's
      any = true;
      const pid_t pid = static_cast<pid_t>(std::strtol(name.c_str(), nullptr, 10));
      if (flags & kPfExiting) {
        if (!killed.count(pid)) dying.insert(pid);
      } else if (!killed.count(pid) && ::kill(pid, SIGKILL) == 0) {
        killed.insert(pid);
        r.done.push_back("killed " + c + " " + name + ", left by a live run that was killed");
      }
    }
    quiet = any ? 0 : quiet + 1;
    if (quiet < need_quiet) ::usleep(50000);
  }
  if (!dying.empty())
    r.done.push_back("waited for " + std::to_string(dying.size()) + " worker" + (dying.size() == 1 ? "" : "s") +
                     " of a killed live run to finish exiting");
  if (quiet < need_quiet) r.failed.push_back("vmlab workers were still alive after 10 s");
}

// Directories vmlab versions before O_TMPFILE objects left under /var/tmp when killed.
void remove_legacy_dirs(recovery& r) {
  for (const std::string& name : list_dir("/var/tmp")) {
    if (name.rfind("vmlab-live-", 0) != 0) continue;
    const std::string dir = "/var/tmp/" + name;
    uint64_t bytes_freed = 0;
    for (const std::string& f : list_dir(dir)) {
      const std::string p = dir + "/" + f;
      struct stat st{};
      if (::stat(p.c_str(), &st) == 0) bytes_freed += uint64_t(st.st_blocks) * 512;
      ::unlink(p.c_str());
    }
    if (::rmdir(dir.c_str()) == 0)
      r.done.push_back("removed " + dir + " (" + std::to_string(bytes_freed >> 20) +
                       " MiB), left by a live run of an older vmlab that was killed");
    else
      r.failed.push_back("cannot remove " + dir + ": " + errno_text(errno));
  }
}

}  // namespace

status write_file(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return status::io_error("cannot open " + path + " for writing: " + errno_text(errno));
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size()))
    return status::io_error("cannot write '" + text.substr(0, text.find('\n')) + "' to " + path + ": " +
                            (n < 0 ? errno_text(e) : std::string("short write")));
  return {};
}

std::string run_dir() {
  const char* d = std::getenv("VMLAB_RUN_DIR");
  return d && *d ? d : "/run/vmlab";
}

// ---- live_lock ----

result<live_lock> live_lock::acquire(mode m, const std::function<void(const std::string&)>& on_wait) {
  live_lock l;
  if (g_lock_depth > 0) {
    ++g_lock_depth;
    l.held_ = true;
    return l;
  }
  if (status s = make_run_dir(); !s.ok()) return s;
  const std::string path = lock_path();
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return status::io_error("cannot open " + path + ": " + errno_text(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) {
      const int e = errno;
      ::close(fd);
      return status::io_error("flock " + path + ": " + errno_text(e));
    }
    auto holder = read_file(path);
    const std::string who = holder.ok() && !first_line(holder.value()).empty()
                                ? "pid " + first_line(holder.value())
                                : "a process that has not said who it is yet";
    if (m == mode::no_wait) {
      ::close(fd);
      return status::io_error("another live run holds " + path + " (" + who +
                              "); live runs measure system-wide figures and take turns: try again when it is done, "
                              "or leave out --no-wait to wait for it");
    }
    if (on_wait) on_wait("waiting for another live run to finish (" + who + " holds " + path + ")");
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      return status::io_error("flock " + path + ": " + errno_text(e));
    }
  }
  // A holder that ended cleared the file; one that was killed left its name in it.
  auto previous = read_file(path);
  g_holder_died = previous.ok() && !first_line(previous.value()).empty();
  g_dead_holder_pgrp = 0;
  if (g_holder_died) {
    const size_t at = previous->find(" pgrp ");
    if (at != std::string::npos) g_dead_holder_pgrp = static_cast<pid_t>(std::strtol(previous->c_str() + at + 6, nullptr, 10));
  }
  // Who holds it, for the next waiter's message.
  const std::string me = self_description() + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, me.data(), me.size(), 0);
  g_lock_fd = fd;
  g_lock_depth = 1;
  l.held_ = true;
  return l;
}

live_lock::~live_lock() {
  if (!held_) return;
  if (--g_lock_depth > 0) return;
  (void)!::ftruncate(g_lock_fd, 0);
  ::close(g_lock_fd);  // releases the flock
  g_lock_fd = -1;
}

// ---- host_settings ----

host_settings::host_settings() : journal_(run_dir() + "/run-" + std::to_string(::getpid()) + ".journal") {}

host_settings::~host_settings() { (void)restore(); }

result<std::string> host_settings::get(const std::string& path) {
  auto t = read_file(path);
  if (!t.ok()) return t.error();
  const std::string line = first_line(t.value());
  // A sysfs choice ("always [madvise] never"): the chosen word, which is what it takes.
  const size_t open = line.find('['), close = line.find(']');
  if (open != std::string::npos && close != std::string::npos && close > open)
    return line.substr(open + 1, close - open - 1);
  return line;
}

status host_settings::set(const std::string& path, const std::string& value) {
  auto old = get(path);
  if (!old.ok()) return old.error();
  if (old.value() == value) return {};
  if (status s = make_run_dir(); !s.ok()) return s;
  // The journal line is on disk before the setting changes: a kill between the two leaves
  // a line whose restore writes the value the setting still has.
  int fd = ::open(journal_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return status::io_error("cannot open " + journal_ + ": " + errno_text(errno));
  const std::string line = "set\t" + path + "\t" + old.value() + "\t" + value + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  const int e = errno;
  ::close(fd);
  if (!ok) return status::io_error("cannot record the old value of " + path + " in " + journal_ + ": " + errno_text(e));
  changes_.push_back({path, old.value(), value});
  return write_file(path, value + "\n");
}

status host_settings::restore() {
  std::string failed;
  for (auto it = changes_.rbegin(); it != changes_.rend(); ++it)
    if (status s = write_file(it->path, it->old_value + "\n"); !s.ok()) failed += (failed.empty() ? "" : "; ") + s.message();
  if (!failed.empty()) return status::io_error("could not restore every host setting (the journal " + journal_ +
                                               " is kept for `vmlab cleanup`): " + failed);
  changes_.clear();
  ::unlink(journal_.c_str());
  return {};
}

// ---- recover ----

recovery recover() {
  recovery r;
  // The workers a killed run left go first: one that still holds huge pages keeps a pool
  // from shrinking, and the pool's restore would not take.
  finish_workers(r);
  const std::string dir = run_dir();
  const std::string mine = "run-" + std::to_string(::getpid()) + ".journal";
  for (const std::string& name : list_dir(dir)) {
    if (name.rfind("run-", 0) != 0 || name.size() < 12 || name.substr(name.size() - 8) != ".journal") continue;
    if (name == mine) continue;  // this process's own run is still going
    const std::string path = dir + "/" + name;
    const std::string pid = name.substr(4, name.size() - 12);
    auto text = read_file(path);
    if (!text.ok()) {
      r.failed.push_back(text.error().message());
      continue;
    }
    const std::vector<journal_entry> entries = parse_journal(text.value());
    bool all = true;
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
      auto now = host_settings::get(it->path);
      if (!now.ok()) {
        r.failed.push_back(now.error().message());
        all = false;
        continue;
      }
      const std::string why = "a live run (pid " + pid + ") set it to " + it->new_value + " and did not finish";
      if (now.value() == it->old_value) continue;  // the kill came before the write
      if (now.value() != it->new_value) {
        r.done.push_back("left " + it->path + " at " + now.value() + ": " + why +
                         ", and something else has changed it since (it was " + it->old_value + " before that run)");
        continue;
      }
      if (status s = write_file(it->path, it->old_value + "\n"); !s.ok()) {
        r.failed.push_back(s.message() + " (" + why + ")");
        all = false;
        continue;
      }
      // A write the kernel takes only in part (a huge-page pool whose pages are still in
      // use) is not a restore: said, and the journal kept for `vmlab cleanup`.
      if (auto back = host_settings::get(it->path); !back.ok() || back.value() != it->old_value) {
        r.failed.push_back("wrote " + it->old_value + " to " + it->path + " but it reads " +
                           (back.ok() ? back.value() : back.error().message()) + " (" + why + ")");
        all = false;
        continue;
      }
      r.done.push_back("restored " + it->path + " to " + it->old_value + " (" + why + ")");
    }
    if (all) ::unlink(path.c_str());
  }
  remove_legacy_dirs(r);
  return r;
}

}  // namespace vmlab::live
