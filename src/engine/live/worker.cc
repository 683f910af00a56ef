// The worker process. Everything here runs in a child of the driver and must stay
// async-signal-safe and allocation-free: raw syscalls, stack variables, one buffer mapped
// before the worker reports ready.
#include "engine/live/worker.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <initializer_list>

#include <setjmp.h>

#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <fcntl.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

namespace vmlab::live {
namespace {

constexpr size_t kBufBytes = (kMaxMessage + 4095) & ~size_t{4095};

struct worker_state {
  int ctl = -1;
  pid_t driver = 0;
  unsigned char* buf = nullptr;  // kBufBytes, private anonymous, faulted in
};

[[noreturn]] void quit(int code) { ::_exit(code); }

bool send_reply(int ctl, int32_t err, int32_t kind, int64_t value) {
  reply r;
  r.err = err;
  r.kind = kind;
  r.value = value;
  for (;;) {
    ssize_t n = ::send(ctl, &r, sizeof r, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(sizeof r)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

// Closes every descriptor >= 3 except ctl and those in keep (any order, duplicates allowed).
void close_others(int ctl, const int* keep, size_t nkeep) {
  int lo = 3;
  for (;;) {
    // The smallest kept fd >= lo (nkeep is small: the objects).
    long next = ctl >= lo ? ctl : -1;
    for (size_t i = 0; i < nkeep; ++i)
      if (keep[i] >= lo && (next < 0 || keep[i] < next)) next = keep[i];
    const unsigned hi = next < 0 ? ~0u : static_cast<unsigned>(next - 1);
    if (next < 0 || next > lo) {
      if (::syscall(SYS_close_range, static_cast<unsigned>(lo), hi, 0u) != 0) {
        // Kernels before 5.9: close one at a time up to a generous bound.
        const long last = next < 0 ? 65535 : next - 1;
        for (long fd = lo; fd <= last; ++fd) ::close(static_cast<int>(fd));
      }
    }
    if (next < 0) return;
    lo = static_cast<int>(next) + 1;
  }
}

// Faults in the stack the command loop will use, so that it never grows afterwards.
__attribute__((noinline)) void prefault_stack() {
  volatile unsigned char pad[64 * 1024];
  for (size_t i = 0; i < sizeof pad; i += 1024) pad[i] = 0;
}

void prefault_buffer(unsigned char* buf) {
  const auto page = size_t(::sysconf(_SC_PAGESIZE));
  for (size_t i = 0; i < kBufBytes; i += page) reinterpret_cast<volatile unsigned char*>(buf)[i] = 0;
}

// A touch the kernel answers with SIGBUS (hugetlb_no_page with no free huge page) jumps
// back to run_touch, which reports it with the pages touched before: the host's own
// answer, compared with the model's. A SIGBUS anywhere else kills the worker as before.
sigjmp_buf g_touch_jmp;
volatile sig_atomic_t g_in_touch = 0;
volatile uint64_t g_touched = 0;

void on_sigbus(int sig) {
  if (g_in_touch) siglongjmp(g_touch_jmp, 1);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// The touches must not be instrumented: under ASan every access would also read the shadow
// of the workload range and give the worker page tables the workload did not cause.
__attribute__((noinline, no_sanitize_address)) uint64_t touch_range(uint64_t addr, uint64_t len, uint64_t stride, bool write) {
  uint64_t n = 0;
  for (uint64_t a = addr; a < addr + len; a += stride, ++n) {
    g_touched = n;
    volatile uint8_t* p = reinterpret_cast<volatile uint8_t*>(a);
    if (write) {
      *p = 1;
    } else {
      const uint8_t v = *p;
      (void)v;
    }
  }
  return n;
}

__attribute__((noinline, no_sanitize_address)) uint64_t touch_pages(uint64_t base, uint64_t page, const unsigned char* idx, uint32_t count, bool write) {
  for (uint32_t i = 0; i < count; ++i) {
    g_touched = i;
    uint64_t pg;
    std::memcpy(&pg, idx + size_t{i} * sizeof pg, sizeof pg);
    volatile uint8_t* p = reinterpret_cast<volatile uint8_t*>(base + pg * page);
    if (write) {
      *p = 1;
    } else {
      const uint8_t v = *p;
      (void)v;
    }
  }
  return count;
}

// Carries out one command (not fork/exit); returns (errno, value).
struct outcome {
  int32_t err = 0;
  int64_t value = 0;
};

outcome run_touch(const command& c, const unsigned char* payload) {
  outcome o;
  g_touched = 0;
  if (sigsetjmp(g_touch_jmp, 1)) {  // the SIGBUS handler jumped back (mask restored)
    g_in_touch = 0;
    o.err = kErrSigbus;
    o.value = static_cast<int64_t>(g_touched);
    return o;
  }
  g_in_touch = 1;
  if (c.kind == cmd_kind::touch_range)
    o.value = static_cast<int64_t>(touch_range(c.addr, c.len, c.stride, c.write != 0));
  else
    o.value = static_cast<int64_t>(touch_pages(c.addr, c.stride, payload, c.count, c.write != 0));
  g_in_touch = 0;
  return o;
}

// pread/pwrite (or preadv/pwritev of the payload's iovecs) for file_io, whole: a short
// transfer is retried from where it stopped (single buffer), EIO for a vector. The buffer
// 0 means the worker's own scratch (`scratch`, `scratch_bytes`), reused piece by piece.
outcome run_file_io(const command& c, unsigned char* payload, size_t payload_bytes, size_t scratch_bytes) {
  outcome o;
  const int fd = c.fd;
  int flags = 0;
  if (c.prot & kFileIoDirect) {
    flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_DIRECT) != 0) { o.err = errno; return o; }
  }
  const bool wr = c.write != 0;
  if (c.count) {
    if (payload_bytes < size_t{c.count} * sizeof(iovec)) {
      o.err = EINVAL;
    } else {
      const iovec* iov = reinterpret_cast<const iovec*>(payload);
      const ssize_t n = wr ? ::pwritev(fd, iov, static_cast<int>(c.count), static_cast<off_t>(c.off))
                           : ::preadv(fd, iov, static_cast<int>(c.count), static_cast<off_t>(c.off));
      if (n < 0) o.err = errno;
      else if (static_cast<uint64_t>(n) != c.len) o.err = EIO;
      else o.value = n;
    }
  } else {
    uint64_t done = 0;
    while (done < c.len) {
      unsigned char* p = c.addr ? reinterpret_cast<unsigned char*>(c.addr) + done : payload;
      const size_t want = c.addr ? c.len - done : (c.len - done < scratch_bytes ? c.len - done : scratch_bytes);
      const ssize_t n = wr ? ::pwrite(fd, p, want, static_cast<off_t>(c.off + done)) : ::pread(fd, p, want, static_cast<off_t>(c.off + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) { o.err = errno; break; }
      if (n == 0) { o.err = EIO; break; }  // end of file: the model's object is larger
      done += static_cast<uint64_t>(n);
    }
    o.value = static_cast<int64_t>(done);
  }
  if (c.prot & kFileIoDirect) ::fcntl(fd, F_SETFL, flags);
  return o;
}

__attribute__((noinline)) outcome handle(const command& c, const unsigned char* payload, size_t payload_bytes) {
  outcome o;
  void* addr = reinterpret_cast<void*>(c.addr);
  switch (c.kind) {
    case cmd_kind::mmap: {
      void* p = ::mmap(addr, c.len, static_cast<int>(c.prot), c.map_flags | MAP_FIXED_NOREPLACE, c.fd, static_cast<off_t>(c.off));
      if (p == MAP_FAILED) { o.err = errno; break; }
      if (p != addr) {  // a kernel before 4.17 treats the flag as a hint
        ::munmap(p, c.len);
        o.err = EEXIST;
        break;
      }
      // The op's advice (MADV_HUGEPAGE / MADV_NOHUGEPAGE); whether THP applies otherwise
      // is the host's policy, which the live engine has set to the profile's.
      if (c.advice == cmd_advice::hugepage && ::madvise(p, c.len, MADV_HUGEPAGE) != 0) o.err = errno;
      if (c.advice == cmd_advice::nohugepage && ::madvise(p, c.len, MADV_NOHUGEPAGE) != 0) o.err = errno;
      break;
    }
    case cmd_kind::munmap:
      if (::munmap(addr, c.len) != 0) o.err = errno;
      break;
    case cmd_kind::mprotect:
      if (::mprotect(addr, c.len, static_cast<int>(c.prot)) != 0) o.err = errno;
      break;
    case cmd_kind::dontneed:
      if (::madvise(addr, c.len, MADV_DONTNEED) != 0) o.err = errno;
      break;
    case cmd_kind::advise:
      if (::madvise(addr, c.len, c.advice == cmd_advice::hugepage ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0) o.err = errno;
      break;
    case cmd_kind::touch_range:
      if (c.stride == 0) { o.err = EINVAL; break; }
      o = run_touch(c, payload);
      break;
    case cmd_kind::touch_pages:
      if (payload_bytes < size_t{c.count} * sizeof(uint64_t) || c.count > kPagesPerMessage || c.stride == 0) { o.err = EINVAL; break; }
      o = run_touch(c, payload);
      break;
    case cmd_kind::file_io:
      // The payload area is the worker's buffer past the command: writable scratch.
      o = run_file_io(c, const_cast<unsigned char*>(payload), payload_bytes, kBufBytes - sizeof(command) - 4096);
      break;
    case cmd_kind::fsync:
      if (::fsync(c.fd) != 0) o.err = errno;
      break;
    case cmd_kind::msync:
      if (::msync(addr, c.len, MS_SYNC) != 0) o.err = errno;
      break;
    case cmd_kind::mremap: {
      // The model's answer decides where the mapping goes: in place, or exactly where the
      // model moved it (MREMAP_FIXED), so that both engines keep the same addresses. A
      // place the model chose itself (MREMAP_MAYMOVE alone) is first reserved with
      // MAP_FIXED_NOREPLACE, as do_mmap maps: MREMAP_FIXED would silently replace whatever
      // of the worker's own (libc, heap, stack) lay there; EEXIST says so instead. A
      // fixed target (prot 1: the op's own MREMAP_FIXED) replaces what is there, as asked.
      void* to = reinterpret_cast<void*>(c.stride);
      if (c.stride && c.prot == 0) {
        void* p = ::mmap(to, c.off, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p != to) {
          if (p != MAP_FAILED) ::munmap(p, c.off);  // a kernel without NOREPLACE put it elsewhere
          o.err = EEXIST;
          break;
        }
      }
      void* r = c.stride ? ::mremap(addr, c.len, c.off, MREMAP_MAYMOVE | MREMAP_FIXED, to) : ::mremap(addr, c.len, c.off, 0);
      if (r == MAP_FAILED) {
        o.err = errno;
        if (c.stride && c.prot == 0) ::munmap(to, c.off);  // the reservation
      } else if (r != (c.stride ? to : addr)) {
        o.err = EFAULT;  // cannot happen: the kernel honours both
      }
      break;
    }
    case cmd_kind::remap_file_pages:
      if (::syscall(SYS_remap_file_pages, addr, c.len, 0ul, c.off, 0ul) != 0) o.err = errno;
      break;
    case cmd_kind::ping:
      break;
    default:
      o.err = EINVAL;
  }
  return o;
}

// Runs every code path of the command loop once with no effect, so that the text pages
// (and the page tables mapping them) the loop needs are present before the baseline.
void warm_up(worker_state& w) {
  command c;
  c.kind = cmd_kind::mmap;  // len 0: EINVAL
  c.prot = PROT_READ;
  c.map_flags = MAP_PRIVATE | MAP_ANONYMOUS;
  handle(c, nullptr, 0);
  c.kind = cmd_kind::munmap;
  handle(c, nullptr, 0);
  c.kind = cmd_kind::mprotect;
  handle(c, nullptr, 0);
  c.kind = cmd_kind::dontneed;
  handle(c, nullptr, 0);
  c.kind = cmd_kind::advise;
  handle(c, nullptr, 0);
  c.kind = cmd_kind::touch_range;
  handle(c, nullptr, 0);
  c.kind = cmd_kind::touch_pages;
  handle(c, w.buf, 0);
  // file_io with fd -1 (EBADF) down each of its calls, so that every libc function it
  // uses is bound (lazy PLT binding runs ld.so and faults its pages) before the baseline:
  // pread, pwrite, preadv, pwritev (one iovec in the payload), fcntl (O_DIRECT).
  c.kind = cmd_kind::file_io;
  c.fd = -1;
  c.len = 1;
  c.prot = 0;
  for (uint32_t wr = 0; wr < 2; ++wr) {
    c.write = wr;
    c.count = 0;
    handle(c, w.buf + sizeof(command), 0);
    c.count = 1;
    handle(c, w.buf + sizeof(command), sizeof(iovec));
  }
  c.count = 0;
  c.write = 0;
  c.prot = kFileIoDirect;
  handle(c, w.buf + sizeof(command), 0);
  c.prot = 0;
  c.len = 0;
  c.kind = cmd_kind::fsync;
  handle(c, nullptr, 0);
  c.kind = cmd_kind::msync;
  handle(c, nullptr, 0);
  // The SIGBUS path once (signal frame, handler, siglongjmp): its code may sit in text
  // whose page tables nothing else has needed yet.
  if (!sigsetjmp(g_touch_jmp, 1)) {
    g_in_touch = 1;
    ::raise(SIGBUS);
  }
  g_in_touch = 0;
  char b;
  (void)::recv(w.ctl, &b, 0, MSG_DONTWAIT | MSG_PEEK);
  (void)::syscall(SYS_getpid);
  prefault_stack();
}

// Per-process set-up that fork does not inherit, and the checks against a vanished driver.
// The name lets `ps` (and `vmlab cleanup`) tell workers from the driver.
void attach(worker_state& w, const char* name) {
  ::prctl(PR_SET_NAME, name, 0, 0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (::getppid() != w.driver) quit(3);  // the driver thread died before the prctl
}

[[noreturn]] void loop(worker_state& w) {
  for (;;) {
    iovec iov{w.buf, kMaxMessage};
    alignas(cmsghdr) unsigned char cbuf[CMSG_SPACE(sizeof(int))];
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof cbuf;
    const ssize_t n = ::recvmsg(w.ctl, &mh, MSG_CMSG_CLOEXEC);
    if (n == 0) quit(0);  // the driver closed our channel: it is gone
    if (n < 0) {
      if (errno == EINTR) continue;
      quit(4);
    }
    int passed = -1;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
      if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len >= CMSG_LEN(sizeof(int)))
        std::memcpy(&passed, CMSG_DATA(cm), sizeof passed);
    if (static_cast<size_t>(n) < sizeof(command)) quit(5);
    command c;
    std::memcpy(&c, w.buf, sizeof c);

    if (c.kind == cmd_kind::exit) quit(0);
    if (c.kind == cmd_kind::fork) {
      if (passed < 0) {
        if (!send_reply(w.ctl, EBADF, 0, 0)) quit(6);
        continue;
      }
      // A fork whose child is the driver's child (CLONE_PARENT): same mm copy as fork(2).
      const long r = ::syscall(SYS_clone, static_cast<unsigned long>(CLONE_PARENT | SIGCHLD), 0ul, nullptr, nullptr, 0ul);
      if (r == 0) {
        ::close(w.ctl);
        w.ctl = passed;
        attach(w, "vmlab-worker");
        prefault_buffer(w.buf);  // break COW on our own buffer and stack now
        warm_up(w);
        if (!send_reply(w.ctl, 0, 1, ::syscall(SYS_getpid))) quit(7);
        continue;
      }
      const int32_t err = r < 0 ? errno : 0;
      ::close(passed);
      if (!send_reply(w.ctl, err, 0, r < 0 ? 0 : r)) quit(6);
      continue;
    }
    if (passed >= 0) ::close(passed);
    const outcome o = handle(c, w.buf + sizeof(command), static_cast<size_t>(n) - sizeof(command));
    if (!send_reply(w.ctl, o.err, 0, o.value)) quit(6);
  }
}

}  // namespace

void worker_main(int ctl, pid_t driver_pid, const int* keep, size_t nkeep) {
  worker_state w;
  w.ctl = ctl;
  w.driver = driver_pid;
  attach(w, "vmlab-zygote");
  // The driver's handlers (and masks) make no sense here: default dispositions.
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD, SIGSEGV, SIGBUS, SIGALRM, SIGUSR1, SIGUSR2})
    ::sigaction(sig, &sa, nullptr);
  sa.sa_handler = on_sigbus;
  ::sigaction(SIGBUS, &sa, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  close_others(ctl, keep, nkeep);

  void* b = ::mmap(nullptr, kBufBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (b == MAP_FAILED) quit(8);
  ::madvise(b, kBufBytes, MADV_NOHUGEPAGE);
  w.buf = static_cast<unsigned char*>(b);
  prefault_buffer(w.buf);
  warm_up(w);
  if (!send_reply(w.ctl, 0, 1, ::syscall(SYS_getpid))) quit(7);
  loop(w);
}

}  // namespace vmlab::live
