// Running the vmlab binary from a test: exit status, stdout and stderr, with a timeout.
// Shared by the CLI tests.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <chrono>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace vmlab::cli_testing {

struct cli_result {
  int exit_code = -1;  // 128 + N when killed by signal N
  std::string out;
  std::string err;
  double seconds = 0;  // wall time of the run
};

// Whether process PID has a handler for signal SIG installed (the SigCgt mask of
// /proc/PID/status). A signal sent before that would meet the default action, which
// tests the C library, not vmlab; under ASan on a busy host start-up alone can take
// longer than a test's fixed delay.
inline bool catches_signal(pid_t pid, int sig) {
  const int fd = ::open(("/proc/" + std::to_string(pid) + "/status").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  const char* p = std::strstr(buf, "SigCgt:");
  if (p == nullptr) return false;
  const unsigned long long mask = std::strtoull(p + 7, nullptr, 16);
  return (mask >> (sig - 1)) & 1;
}

// Runs COMMAND ARGS... (an absolute path) with stdin from /dev/null, draining stdout
// and stderr with poll; a run longer than `timeout` is killed (exit 128 + SIGKILL). With
// `signal`, that signal is sent to it once `signal_after` has passed and the process
// has installed its handler for it (as a user's Ctrl-C, a `kill` or a closed terminal
// would, some time into the run).
inline cli_result run_command(std::vector<std::string> storage, std::chrono::seconds timeout = std::chrono::seconds(120),
                              int signal = 0, std::chrono::milliseconds signal_after = std::chrono::milliseconds(0)) {
  cli_result r;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw std::runtime_error("pipe2 failed");
  }
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execv(argv[0], argv.data());
    static const char msg[] = "run_command: cannot exec ";
    (void)!::write(2, msg, sizeof msg - 1);
    (void)!::write(2, argv[0], std::char_traits<char>::length(argv[0]));
    (void)!::write(2, "\n", 1);
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  const auto deadline = t0 + timeout;
  const auto signal_at = t0 + signal_after;
  bool signalled = signal == 0;
  bool killed = false;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 && !killed) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
    if (killed && left.count() < -5000) break;
    if (!signalled && std::chrono::steady_clock::now() >= signal_at && catches_signal(pid, signal)) {
      ::kill(pid, signal);
      signalled = true;
    }
    const int wait_ms = killed ? 1000 : signalled ? static_cast<int>(std::min<long long>(left.count(), 1000)) : 10;
    const int n = ::poll(fds, 2, wait_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(wstatus)) r.exit_code = WEXITSTATUS(wstatus);
  else if (WIFSIGNALED(wstatus)) r.exit_code = 128 + WTERMSIG(wstatus);
  if (killed) r.err += "\n[run_command: killed after " + std::to_string(timeout.count()) + " s]";
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// `vmlab ARGS...` (VMLAB_BINARY), as run_command runs it.
inline cli_result run_vmlab(const std::vector<std::string>& args,
                            std::chrono::seconds timeout = std::chrono::seconds(120), int signal = 0,
                            std::chrono::milliseconds signal_after = std::chrono::milliseconds(0)) {
  std::vector<std::string> argv{VMLAB_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(std::move(argv), timeout, signal, signal_after);
}

inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Whitespace-separated fields of a line.
inline std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// What `vmlab ARGS...` writes to its stderr when stderr is a terminal (a pseudo-terminal;
// stdin and stdout are /dev/null), for the progress lines that only a terminal gets.
inline std::string stderr_on_a_tty(const std::vector<std::string>& args) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) return "no pty";
  const std::string slave = ::ptsname(master);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int s = ::open(slave.c_str(), O_RDWR | O_NOCTTY);
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(s, 2);
    std::vector<std::string> storage{VMLAB_BINARY};
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO once the child closed the terminal
    out.append(buf, size_t(n));
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  ::close(master);
  return out;
}

}  // namespace vmlab::cli_testing
