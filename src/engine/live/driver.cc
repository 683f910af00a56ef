#include "engine/live/driver.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cctype>
#include <cstring>
#include <iterator>

#include <fcntl.h>
#include <poll.h>
#include <linux/memfd.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace vmlab::live {
namespace {

volatile sig_atomic_t g_signal = 0;
volatile int g_pipe_w = -1;
std::atomic<bool> g_active{false};

void on_signal(int sig) {
  const int saved = errno;
  if (!g_signal) g_signal = sig;
  if (g_pipe_w >= 0) {
    const char c = 1;
    [[maybe_unused]] ssize_t n = ::write(g_pipe_w, &c, 1);
  }
  errno = saved;
}

// SIGHUP and SIGQUIT as SIGTERM: a dropped terminal must clean up too.
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

std::string signal_text(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string wait_text(int st) {
  if (WIFSIGNALED(st)) return "killed by " + signal_text(WTERMSIG(st));
  if (WIFEXITED(st)) return "exited with status " + std::to_string(WEXITSTATUS(st));
  return "stopped";
}

std::string sanitize(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return out.substr(0, 64);
}

}  // namespace

std::string errno_text(int err) {
  if (err == kErrSigbus) return "SIGBUS";
  const char* name = ::strerrorname_np(err);
  return std::string(name ? name : "errno " + std::to_string(err)) + ": " + std::strerror(err);
}

// ---- signal_guard ----

struct signal_guard::saved {
  struct sigaction old[sizeof kSignals / sizeof kSignals[0]];
};

status signal_guard::install() {
  if (g_active.exchange(true)) return status::not_supported("another live run is in progress in this process");
  if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    g_active = false;
    return status::io_error("pipe2: " + errno_text(errno));
  }
  g_signal = 0;
  g_pipe_w = pipe_[1];
  old_ = new saved;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking call in this thread returns EINTR
  for (size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &sa, &old_->old[i]);
  installed_ = true;
  return {};
}

int signal_guard::signal() const { return installed_ ? static_cast<int>(g_signal) : 0; }

signal_guard::~signal_guard() {
  if (!installed_) return;
  for (size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &old_->old[i], nullptr);
  delete old_;
  g_pipe_w = -1;
  ::close(pipe_[0]);
  ::close(pipe_[1]);
  g_active = false;
}

// ---- driver ----

driver::driver(proc_source& src, const signal_guard& sig) : src_(src), sig_(sig), self_(::getpid()) {}

driver::~driver() { shutdown(); }

status driver::interrupted_status() const {
  return status::interrupted(sig_.signal(), "interrupted by " + signal_text(sig_.signal()) +
                                                ": the live run was stopped, its processes killed, its objects "
                                                "removed and every host setting it changed restored");
}

status driver::sleep_ms(int ms) {
  pollfd p{sig_.fd(), POLLIN, 0};
  int n = ::poll(&p, 1, ms);
  if (interrupted() || (n > 0 && p.revents)) return interrupted_status();
  return {};
}

namespace {

// An unnamed regular file in `dir`: O_TMPFILE (3.11+; ext4, xfs, btrfs, tmpfs), else a
// named file unlinked at once. Either way no name survives the run, however it ends.
result<int> unnamed_file(const std::string& dir, const std::string& what) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
    return status::io_error("cannot create a file for object '" + what + "' in " + dir + ": " + errno_text(errno));
  std::string path = dir + "/vmlab-object-XXXXXX";
  fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) return status::io_error("cannot create a file for object '" + what + "' in " + dir + ": " + errno_text(errno));
  ::unlink(path.c_str());
  return fd;
}

}  // namespace

status driver::create_objects(const std::vector<object_decl>& objects, const std::vector<bytes>& huge_sizes,
                              const std::string& file_dir) {
  for (size_t i = 0; i < objects.size(); ++i) {
    const object_decl& o = objects[i];
    int fd = -1;
    if (o.kind == object_kind::hugetlb) {
      // A hugetlbfs file of its own (MFD_HUGETLB, the size as log2 << MFD_HUGE_SHIFT).
      const unsigned log2 = unsigned(__builtin_ctzll(huge_sizes[i]));
      fd = ::memfd_create(("vmlab-" + sanitize(o.name)).c_str(), MFD_CLOEXEC | MFD_HUGETLB | (log2 << MFD_HUGE_SHIFT));
      if (fd < 0) return status::io_error("memfd_create (MFD_HUGETLB) for object '" + o.name + "': " + errno_text(errno));
    } else if (o.kind == object_kind::shm) {
      fd = ::memfd_create(("vmlab-" + sanitize(o.name)).c_str(), MFD_CLOEXEC);
      if (fd < 0) return status::io_error("memfd_create for object '" + o.name + "': " + errno_text(errno));
    } else {
      auto f = unnamed_file(file_dir, o.name);
      if (!f.ok()) return f.error();
      fd = f.value();
    }
    fds_.push_back(fd);
    if (::ftruncate(fd, static_cast<off_t>(o.size)) != 0)
      return status::io_error("ftruncate object '" + o.name + "' to " + std::to_string(o.size) + " bytes: " + errno_text(errno));
  }
  return {};
}

status driver::send_cmd(worker_info& w, const command& c, const void* payload, size_t payload_bytes, int pass_fd) {
  iovec iov[2] = {{const_cast<command*>(&c), sizeof c}, {const_cast<void*>(payload), payload_bytes}};
  msghdr mh{};
  mh.msg_iov = iov;
  mh.msg_iovlen = payload_bytes ? 2 : 1;
  alignas(cmsghdr) unsigned char cbuf[CMSG_SPACE(sizeof(int))];
  if (pass_fd >= 0) {
    std::memset(cbuf, 0, sizeof cbuf);
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof cbuf;
    cmsghdr* cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cm), &pass_fd, sizeof pass_fd);
  }
  for (;;) {
    if (interrupted()) return interrupted_status();
    ssize_t n = ::sendmsg(w.ctl, &mh, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(sizeof c + payload_bytes)) return {};
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) return worker_died(w);
    return status::io_error("sending a command to process " + std::to_string(w.pid) + ": " +
                            (n < 0 ? errno_text(errno) : std::string("short write")));
  }
}

status driver::recv_reply(worker_info& w, reply& r) {
  for (;;) {
    pollfd p[2] = {{w.ctl, POLLIN, 0}, {sig_.fd(), POLLIN, 0}};
    int n = ::poll(p, 2, -1);
    if (interrupted() || (n > 0 && p[1].revents)) return interrupted_status();
    if (n < 0) {
      if (errno == EINTR) continue;
      return status::io_error("poll: " + errno_text(errno));
    }
    if (!p[0].revents) continue;
    ssize_t k = ::recv(w.ctl, &r, sizeof r, 0);
    if (k == static_cast<ssize_t>(sizeof r)) return {};
    if (k < 0 && errno == EINTR) continue;
    if (k == 0 || (k < 0 && errno == ECONNRESET)) return worker_died(w);
    return status::io_error("reading a reply from process " + std::to_string(w.pid) + ": " +
                            (k < 0 ? errno_text(errno) : std::string("short message")));
  }
}

void driver::reap(worker_info& w, int* wstatus) {
  if (w.ctl >= 0) ::close(w.ctl);
  w.ctl = -1;
  if (w.host <= 0) return;
  int st = 0;
  for (;;) {
    pid_t r = ::waitpid(w.host, &st, __WALL);
    if (r == w.host || (r < 0 && errno != EINTR)) break;  // ECHILD: someone reaped it (SIGCHLD ignored)
  }
  if (wstatus) *wstatus = st;
  w.host = -1;
}

status driver::worker_died(worker_info& w) {
  died_ = true;
  const uint32_t pid = w.pid;
  const pid_t host = w.host;
  ::kill(host, SIGKILL);  // a worker that closed its channel is of no further use
  int st = 0;
  const bool zygote = &w == &zygote_;
  reap(w, &st);
  if (zygote)
    return status::io_error("the zygote (host pid " + std::to_string(host) + ") died: " + wait_text(st));
  workers_.erase(pid);
  return status::io_error("the host process for pid " + std::to_string(pid) + " (host pid " + std::to_string(host) +
                          ") died: " + wait_text(st));
}

status driver::read_base(worker_info& w) {
  auto st = read_status(src_, w.host);
  if (!st.ok()) return st.error();
  w.base = st.value();
  auto mf = read_minflt(src_, w.host);
  if (!mf.ok()) return mf.error();
  w.minflt0 = mf.value();
  return {};
}

status driver::start_zygote() {
  if (zygote_.host > 0) return {};
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return status::io_error("socketpair for the zygote: " + errno_text(errno));
  // Every worker is a copy of the zygote's address space, heap included: what the heap
  // holds free goes back first (main keeps up to 256 MiB of it for the sim's next op), so
  // that no worker maps, and no fork copies page tables for, memory nothing uses.
  malloc_trim(0);
  const pid_t h = ::fork();
  if (h == 0) worker_main(sv[1], self_, fds_.data(), fds_.size());  // never returns
  const int fork_err = errno;
  ::close(sv[1]);
  if (h < 0) {
    ::close(sv[0]);
    return status::io_error("fork of the zygote: " + errno_text(fork_err));
  }
  zygote_.pid = 0;
  zygote_.host = h;
  zygote_.ctl = sv[0];
  reply r;
  if (status s = recv_reply(zygote_, r); !s.ok()) return s;
  if (r.kind != 1) return status::io_error("the zygote did not report ready");
  return {};
}

status driver::spawn(uint32_t pid, int* err) {
  *err = 0;
  if (status s = start_zygote(); !s.ok()) return s;
  worker_info* w = nullptr;
  if (status s = fork_worker(zygote_, pid, err, &w); !s.ok() || *err) return s;
  // Baseline: the worker's copy of the zygote's address space, before any workload op.
  if (status s = read_base(*w); !s.ok()) return s;
  // Calibration: what fork copies of this runtime. A probe child, forked the way a `fork`
  // op forks, reports its figures at ready and exits.
  worker_info* probe = nullptr;
  int perr = 0;
  const uint32_t probe_pid = next_probe_--;
  if (status s = fork_worker(workers_[pid], probe_pid, &perr, &probe); !s.ok()) return s;
  if (perr) {
    *err = perr;
    return {};
  }
  auto ps = read_status(src_, probe->host);
  if (!ps.ok()) return ps.error();
  workers_[pid].fork_base = ps.value();
  return exit(probe_pid);
}

status driver::fork_worker(worker_info& parent, uint32_t pid, int* err, worker_info** out) {
  *err = 0;
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    *err = errno;
    return {};
  }
  command c;
  c.kind = cmd_kind::fork;
  status s = send_cmd(parent, c, nullptr, 0, sv[1]);
  ::close(sv[1]);
  if (!s.ok()) {
    ::close(sv[0]);
    return s;
  }
  reply r;
  if (s = recv_reply(parent, r); !s.ok()) {
    ::close(sv[0]);
    return s;
  }
  if (r.err) {
    ::close(sv[0]);
    *err = r.err;
    return {};
  }
  worker_info& w = workers_[pid];
  w.pid = pid;
  w.host = static_cast<pid_t>(r.value);
  w.ctl = sv[0];
  if (s = recv_reply(w, r); !s.ok()) return s;
  if (r.kind != 1) return status::io_error("process " + std::to_string(pid) + " did not report ready");
  *out = &w;
  return {};
}

status driver::fork(uint32_t parent, uint32_t child, int* err) {
  auto it = workers_.find(parent);
  if (it == workers_.end()) return status::io_error("no host process for pid " + std::to_string(parent));
  worker_info* w = nullptr;
  if (status s = fork_worker(it->second, child, err, &w); !s.ok() || *err) return s;
  // The child's own runtime is what the parent's probe child had; the rest is workload.
  const worker_info& p = workers_[parent];
  w->base = p.fork_base;
  w->fork_base = p.fork_base;
  auto mf = read_minflt(src_, w->host);
  if (!mf.ok()) return mf.error();
  w->minflt0 = mf.value();
  return {};
}

status driver::exit(uint32_t pid) {
  auto it = workers_.find(pid);
  if (it == workers_.end()) return status::io_error("no host process for pid " + std::to_string(pid));
  worker_info& w = it->second;
  command c;
  c.kind = cmd_kind::exit;
  if (status s = send_cmd(w, c, nullptr, 0, -1); !s.ok()) return s;
  // EOF on the channel: the worker has run exit_mm() and exit_files(); then reap it.
  for (;;) {
    pollfd p[2] = {{w.ctl, POLLIN, 0}, {sig_.fd(), POLLIN, 0}};
    int n = ::poll(p, 2, -1);
    if (interrupted() || (n > 0 && p[1].revents)) return interrupted_status();
    if (n < 0 && errno != EINTR) return status::io_error("poll: " + errno_text(errno));
    if (n > 0 && p[0].revents) {
      char b[sizeof(reply)];
      ssize_t k = ::recv(w.ctl, b, sizeof b, 0);
      if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) break;
    }
  }
  int st = 0;
  reap(w, &st);
  workers_.erase(it);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    died_ = true;
    return status::io_error("the host process for pid " + std::to_string(pid) + " did not exit cleanly: " + wait_text(st));
  }
  return {};
}

status driver::call(uint32_t pid, const command& c, reply& r) {
  auto it = workers_.find(pid);
  if (it == workers_.end()) return status::io_error("no host process for pid " + std::to_string(pid));
  if (status s = send_cmd(it->second, c, nullptr, 0, -1); !s.ok()) return s;
  return recv_reply(it->second, r);
}

status driver::call(uint32_t pid, const command& c, const void* payload, size_t payload_bytes, reply& r) {
  auto it = workers_.find(pid);
  if (it == workers_.end()) return status::io_error("no host process for pid " + std::to_string(pid));
  r = reply{};
  if (status s = send_cmd(it->second, c, payload, payload_bytes, -1); !s.ok()) return s;
  return recv_reply(it->second, r);
}

status driver::touch_pages(uint32_t pid, uint64_t base, bytes page, const std::vector<uint64_t>& pages, bool write, reply& r) {
  auto it = workers_.find(pid);
  if (it == workers_.end()) return status::io_error("no host process for pid " + std::to_string(pid));
  r = reply{};
  for (size_t i = 0; i < pages.size(); i += kPagesPerMessage) {
    command c;
    c.kind = cmd_kind::touch_pages;
    c.addr = base;
    c.stride = page;
    c.write = write;
    c.count = static_cast<uint32_t>(std::min<size_t>(kPagesPerMessage, pages.size() - i));
    if (status s = send_cmd(it->second, c, pages.data() + i, c.count * sizeof(uint64_t), -1); !s.ok()) return s;
    if (status s = recv_reply(it->second, r); !s.ok()) return s;
    if (r.err) {
      if (r.err == kErrSigbus) r.value += int64_t(i);  // pages touched in earlier messages
      return {};
    }
  }
  return {};
}

void driver::shutdown() {
  for (auto& [pid, w] : workers_)
    if (w.host > 0) ::kill(w.host, SIGKILL);
  for (auto& [pid, w] : workers_) reap(w, nullptr);
  workers_.clear();
  if (zygote_.host > 0) ::kill(zygote_.host, SIGKILL);
  reap(zygote_, nullptr);
  for (int fd : fds_) ::close(fd);
  fds_.clear();
}

}  // namespace vmlab::live
