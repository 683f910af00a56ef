#include "engine/live/tiobench_runner.h"

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <mutex>
#include <thread>

#include "engine/live/driver.h"
#include "engine/live/host_state.h"

namespace vmlab::live {
namespace {

using clock_type = std::chrono::steady_clock;

// A SIGBUS in a thread's mapping jumps back to that thread's test loop.
thread_local sigjmp_buf* tl_sigbus = nullptr;

void on_sigbus(int sig) {
  if (tl_sigbus) siglongjmp(*tl_sigbus, 1);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

class sigbus_guard {
 public:
  sigbus_guard() {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigbus;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, &old_);
  }
  ~sigbus_guard() { ::sigaction(SIGBUS, &old_, nullptr); }
  sigbus_guard(const sigbus_guard&) = delete;
  sigbus_guard& operator=(const sigbus_guard&) = delete;

 private:
  struct sigaction old_;
};

// The threads' files (open, already unlinked) and the directory vmlab made; closed and
// removed on every path.
struct run_files {
  std::string dir;
  bool remove_dir = false;
  std::vector<int> fds;
  run_files() = default;
  run_files(const run_files&) = delete;
  run_files& operator=(const run_files&) = delete;
  ~run_files() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
    if (remove_dir) ::rmdir(dir.c_str());
  }
};

std::string errno_str(int e) { return std::string(::strerrorname_np(e) ? ::strerrorname_np(e) : "errno") + " (" + std::strerror(e) + ")"; }

double tv_seconds(const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; }

status prepare_dir(const tiobench_live_options& o, run_files& f) {
  if (o.dir.empty()) {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/var/tmp") + "/vmlab-tiobench.XXXXXX";
    if (!::mkdtemp(tmpl.data())) return status::io_error("cannot create a directory under " + tmpl.substr(0, tmpl.rfind('/')) + ": " + errno_str(errno));
    f.dir = tmpl;
    f.remove_dir = true;
    return {};
  }
  struct stat st;
  if (::stat(o.dir.c_str(), &st) != 0)
    return status::invalid_argument("--dir " + o.dir + ": " + errno_str(errno));
  if (!S_ISDIR(st.st_mode)) return status::invalid_argument("--dir " + o.dir + ": not a directory");
  if (::access(o.dir.c_str(), W_OK | X_OK) != 0)
    return status::invalid_argument("--dir " + o.dir + ": cannot create files there: " + errno_str(errno));
  f.dir = o.dir;
  return {};
}

status open_files(const tiobench_spec& s, run_files& f) {
  struct statvfs vfs;
  if (::statvfs(f.dir.c_str(), &vfs) == 0) {
    const uint64_t free_bytes = uint64_t(vfs.f_bavail) * vfs.f_frsize, need = s.file_bytes() * s.threads;
    if (need > free_bytes)
      return status::invalid_argument("--dir " + f.dir + " has " + std::to_string(free_bytes >> 20) +
                                      " MiB free; the run writes " + std::to_string(need >> 20) + " MiB");
  }
  for (uint32_t t = 0; t < s.threads; ++t) {
    const std::string path = f.dir + "/vmlab-tiobench." + std::to_string(::getpid()) + ".thr" + std::to_string(t);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      const int e = errno;
      return (e == EROFS || e == EACCES || e == EPERM)
                 ? status::invalid_argument("--dir " + f.dir + ": cannot create files there: " + errno_str(e))
                 : status::io_error("cannot create " + path + ": " + errno_str(e));
    }
    f.fds.push_back(fd);
    ::unlink(path.c_str());  // held open: gone from the disk whatever happens next
  }
  return {};
}

// tiotest -F, then a compaction: every cold test starts from the same free memory. On
// 6.x the page cache reads ahead into large folios where free memory has them, and after
// a drop it is fragmented by chance: a cold mapped sequential read here ran ~1,150 MiB/s
// from fragmented memory and ~2,650 from compacted memory (fio, three runs each,
// docs/decisions.md). Without CONFIG_COMPACTION there is no trigger and nothing to do.
status drop_caches() {
  ::sync();
  if (status s = write_file("/proc/sys/vm/drop_caches", "3"); !s.ok()) return s;
  if (::access("/proc/sys/vm/compact_memory", W_OK) != 0) return {};
  return write_file("/proc/sys/vm/compact_memory", "1");
}

// What the threads of one test share.
struct test_state {
  test_state(const tiobench_spec& spec, tiobench_test test, const signal_guard& g) : s(spec), t(test), sig(g) {}
  const tiobench_spec& s;
  tiobench_test t;
  const signal_guard& sig;
  std::atomic<bool> start{false}, stop{false};
  std::mutex mu;  // guards everything below
  double utime = 0, stime = 0, lat_sum = 0, lat_max = 0;
  uint64_t ops = 0, over2 = 0, over10 = 0;
  std::string error;
  void fail(const std::string& e) {
    {
      std::lock_guard<std::mutex> l(mu);
      if (error.empty()) error = e;
    }
    stop = true;
  }
};

struct thread_stats {
  double lat_sum = 0, lat_max = 0;
  uint64_t ops = 0, over2 = 0, over10 = 0;
  void add(clock_type::duration d) {
    const double ms = std::chrono::duration<double, std::milli>(d).count();
    lat_sum += ms;
    lat_max = std::max(lat_max, ms);
    ++ops;
    over2 += ms > 2000;
    over10 += ms > 10000;
  }
};

// One thread's ops with pread/pwrite. False with st.error set on an I/O error.
bool run_rw(test_state& st, int fd, uint32_t thread, char* buf, thread_stats& ts) {
  const tiobench_spec& s = st.s;
  const uint64_t n = s.ops_per_thread(st.t);
  for (uint64_t i = 0; i < n; ++i) {
    if ((i & 255) == 0 && (st.stop || st.sig.signal())) return true;
    const auto off = off_t(tiobench_offset(s, st.t, thread, i));
    const auto t0 = clock_type::now();
    const ssize_t r = is_write(st.t) ? ::pwrite(fd, buf, s.block_bytes, off) : ::pread(fd, buf, s.block_bytes, off);
    ts.add(clock_type::now() - t0);
    if (r != ssize_t(s.block_bytes)) {
      st.fail(std::string(is_write(st.t) ? "pwrite" : "pread") + " of " + std::to_string(s.block_bytes) +
              " bytes at offset " + std::to_string(off) + " in thread " + std::to_string(thread) + "'s file: " +
              (r < 0 ? errno_str(errno) : "short transfer (" + std::to_string(r) + " bytes)"));
      return false;
    }
  }
  return true;
}

// One thread's ops through a MAP_SHARED mapping of its file.
bool run_mmap(test_state& st, int fd, uint32_t thread, char* buf, thread_stats& ts) {
  const tiobench_spec& s = st.s;
  const size_t len = s.file_bytes();
  // The read tests map PROT_READ, as tiotest's do_read_test does (and fio's mmap engine
  // for a read job); the write tests PROT_READ | PROT_WRITE.
  void* m = ::mmap(nullptr, len, is_write(st.t) ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    st.fail("mmap of thread " + std::to_string(thread) + "'s file: " + errno_str(errno));
    return false;
  }
  char* p = static_cast<char*>(m);
  ::madvise(p, len, is_random(st.t) ? MADV_RANDOM : MADV_SEQUENTIAL);
  const uint64_t n = s.ops_per_thread(st.t);
  sigjmp_buf jb;
  volatile uint64_t at_op = 0;  // for the SIGBUS message; survives the siglongjmp
  if (sigsetjmp(jb, 1) == 0) {
    tl_sigbus = &jb;
    for (uint64_t i = 0; i < n; ++i) {
      at_op = i;
      if ((i & 255) == 0 && (st.stop || st.sig.signal())) break;
      char* at = p + tiobench_offset(s, st.t, thread, i);
      const auto t0 = clock_type::now();
      if (is_write(st.t))
        std::memcpy(at, buf, s.block_bytes);
      else
        std::memcpy(buf, at, s.block_bytes);
      ts.add(clock_type::now() - t0);
    }
    tl_sigbus = nullptr;
  } else {
    tl_sigbus = nullptr;
    ::munmap(m, len);
    st.fail("SIGBUS in thread " + std::to_string(thread) + "'s mapping at op " + std::to_string(uint64_t(at_op)) +
            ": its file is shorter than the mapping (truncated under the run?) or the filesystem could not give the page "
            "a block (full?)");
    return false;
  }
  ::munmap(m, len);
  return true;
}

void test_thread(test_state& st, int fd, uint32_t thread, std::latch& ready) {
  const tiobench_spec& s = st.s;
  void* mem = nullptr;
  if (::posix_memalign(&mem, size_t(::sysconf(_SC_PAGESIZE)), s.block_bytes) != 0) mem = nullptr;
  char* buf = static_cast<char*>(mem);
  if (buf) std::memset(buf, 0xa5, s.block_bytes);
  ready.count_down();
  st.start.wait(false);
  rusage r0, r1;
  ::getrusage(RUSAGE_SELF, &r0);
  thread_stats ts;
  bool ok = buf != nullptr;
  if (!ok) st.fail("cannot allocate the I/O buffer");
  if (ok && st.t == tiobench_test::write && ::ftruncate(fd, off_t(s.file_bytes())) != 0) {
    st.fail("ftruncate of thread " + std::to_string(thread) + "'s file: " + errno_str(errno));
    ok = false;
  }
  if (ok) ok = s.mmap ? run_mmap(st, fd, thread, buf, ts) : run_rw(st, fd, thread, buf, ts);
  if (ok && ::fsync(fd) != 0) st.fail("fsync of thread " + std::to_string(thread) + "'s file: " + errno_str(errno));
  ::getrusage(RUSAGE_SELF, &r1);
  std::free(mem);
  std::lock_guard<std::mutex> l(st.mu);
  st.utime += tv_seconds(r1.ru_utime) - tv_seconds(r0.ru_utime);
  st.stime += tv_seconds(r1.ru_stime) - tv_seconds(r0.ru_stime);
  st.lat_sum += ts.lat_sum;
  st.lat_max = std::max(st.lat_max, ts.lat_max);
  st.ops += ts.ops;
  st.over2 += ts.over2;
  st.over10 += ts.over10;
}

// Each test opens every thread's file anew, as tiotest's do_*_test functions do: a fresh
// struct file, so a fresh read-ahead state (file_ra_state: window, and on 6.x the folio
// order it grew to) and no FMODE_RANDOM left from an earlier test. The files are already
// unlinked, so they are reopened through /proc/self/fd. Reads open O_RDONLY, writes O_RDWR.
class test_files {
 public:
  ~test_files() {
    for (int fd : fds_) ::close(fd);
  }
  status open(const tiobench_spec& s, tiobench_test t, const run_files& f) {
    const int flags = (is_write(t) ? O_RDWR : O_RDONLY) | O_CLOEXEC | (s.direct ? O_DIRECT : 0);
    for (int held : f.fds) {
      const std::string path = "/proc/self/fd/" + std::to_string(held);
      const int fd = ::open(path.c_str(), flags);
      if (fd < 0) {
        const int e = errno;
        if (s.direct && e == EINVAL)
          return status::invalid_argument("--direct: the filesystem of " + f.dir + " refuses O_DIRECT: " + errno_str(e));
        return status::io_error("cannot reopen a thread's file for " + std::string(tiobench_test_title(t)) + " (" + path +
                                "): " + errno_str(e));
      }
      fds_.push_back(fd);
    }
    return {};
  }
  int fd(uint32_t thread) const { return fds_[thread]; }

 private:
  std::vector<int> fds_;
};

result<tiobench_test_result> run_test(const tiobench_spec& s, tiobench_test t, const run_files& f,
                                      const signal_guard& sig) {
  test_files files;
  if (status o = files.open(s, t, f); !o.ok()) return o;
  if (s.drop_caches)
    if (status d = drop_caches(); !d.ok()) return d;
  test_state st{s, t, sig};
  std::latch ready(s.threads);
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < s.threads; ++i)
    threads.emplace_back(test_thread, std::ref(st), files.fd(i), i, std::ref(ready));
  ready.wait();
  const auto t0 = clock_type::now();
  st.start = true;
  st.start.notify_all();
  for (auto& th : threads) th.join();
  const double wall = std::chrono::duration<double>(clock_type::now() - t0).count();
  if (!st.error.empty()) return status::io_error(std::string(tiobench_test_title(t)) + ": " + st.error);
  tiobench_test_result r;
  r.test = t;
  r.blocks = s.ops_per_thread(t) * s.threads;
  r.seconds = wall;
  r.utime = st.utime / s.threads;
  r.stime = st.stime / s.threads;
  r.ops = st.ops;
  r.lat_avg_ms = st.ops ? st.lat_sum / double(st.ops) : 0;
  r.lat_max_ms = st.lat_max;
  r.lat_over_2s = st.over2;
  r.lat_over_10s = st.over10;
  return r;
}

}  // namespace

result<tiobench_run> run_tiobench_live(const tiobench_spec& s, const tiobench_live_options& o) {
  if (status v = validate_tiobench(s); !v.ok()) return v;
  signal_guard sig;
  if (status g = sig.install(); !g.ok()) return g;
  sigbus_guard bus;
  run_files f;
  if (status d = prepare_dir(o, f); !d.ok()) return d;
  if (status d = open_files(s, f); !d.ok()) return d;
  tiobench_run run;
  run.spec = s;
  run.dir = f.dir;
  run.temp_dir = f.remove_dir;
  utsname u;
  run.identifier = ::uname(&u) == 0 ? u.release : "live";
  for (tiobench_test t : kTiobenchOrder) {
    auto r = run_test(s, t, f, sig);
    if (sig.signal())
      return status::interrupted(sig.signal(), std::string("interrupted during ") + tiobench_test_title(t) +
                                                   ": the threads were stopped and the files and directory removed");
    if (!r.ok()) return r.error();
    run.tests.push_back(r.value());
  }
  return run;
}

}  // namespace vmlab::live
