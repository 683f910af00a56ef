// The worker: one host process per workload process, and the protocol the driver speaks
// with it over a unix SOCK_SEQPACKET socketpair (one message per command, one per reply).
//
// Why this shape: what the live engine measures is the worker's page tables, so the
// worker must do nothing but the workload's memory operations. After it reports ready it
// never allocates (no malloc, no new mappings of its own, no stack growth: buffers and
// stack are faulted in before `ready`), so its VmPTE at ready is a baseline that the
// workload's ops only add to. The worker code runs in a child of a possibly
// multi-threaded driver, so it uses only async-signal-safe calls (raw syscalls).
//
// Processes: the driver forks one idle worker, the zygote, and a spawned worker is the
// zygote cloning itself the way a `fork` op asks a worker to: with CLONE_PARENT, so every
// worker is a direct child of the driver (the driver
// reaps all of them, and PR_SET_PDEATHSIG ties all of them to the driver thread); the
// child's control socket arrives with the command (SCM_RIGHTS).
#pragma once

#include <cstddef>
#include <csignal>
#include <cstdint>

#include <sys/types.h>

namespace vmlab::live {

enum class cmd_kind : uint32_t {
  mmap = 1,       // addr, len, prot (flags), map_flags, fd, off
  munmap,         // addr, len
  mprotect,       // addr, len, prot
  dontneed,       // addr, len: madvise(MADV_DONTNEED)
  advise,         // addr, len, advice: madvise(MADV_HUGEPAGE / MADV_NOHUGEPAGE)
  touch_range,    // addr, len, stride, write: one byte every stride bytes (stride > 0)
  touch_pages,    // addr, stride (the page size), write, count page indices following the command
  fork,           // the child's control socket rides along as SCM_RIGHTS
  exit,           // _exit(0) without a reply
  ping,           // reply only
  // fd, off (file offset), len, write (0 read, 1 write), prot bit 0 = O_DIRECT; addr: the
  // buffer (0: the worker's own, in pieces), or count iovecs in the payload (preadv).
  file_io,
  fsync,          // fd
  msync,          // addr, len: msync(MS_SYNC)
  mremap,         // addr, len (old), off (new length), stride (new address: 0 = in place), prot (1: MREMAP_FIXED asked)
  remap_file_pages,  // addr, len, off (file page)
};
// file_io's prot bit: the call is made with O_DIRECT set on the file (fcntl F_SETFL).
inline constexpr uint32_t kFileIoDirect = 1;

// mmap: madvise() the new mapping gets right away (0: none).
enum class cmd_advice : uint32_t { none = 0, hugepage, nohugepage };

struct command {
  cmd_kind kind = cmd_kind::ping;
  uint32_t prot = 0;
  cmd_advice advice = cmd_advice::none;
  int32_t map_flags = 0;
  int32_t fd = -1;
  uint32_t write = 0;
  uint32_t count = 0;  // touch_pages: page indices in this message
  uint64_t addr = 0;
  uint64_t len = 0;
  uint64_t stride = 0;
  uint64_t off = 0;
};

// reply.err of a touch the host ended with SIGBUS (a hugetlb fault that found no free
// huge page, a page beyond the end of a file): reply.value is how many pages it had
// touched before. Negative, so no errno is mistaken for it.
inline constexpr int32_t kErrSigbus = -SIGBUS;

struct reply {
  int32_t err = 0;     // 0, the errno of the failing call, or kErrSigbus
  int32_t kind = 0;    // 0 = ordinary reply, 1 = ready (a new worker's first message)
  int64_t value = 0;   // fork: the child's host pid; ready: the worker's own host pid
};

// Page indices a touch_pages message carries at most (the worker's buffer is sized so).
inline constexpr uint32_t kPagesPerMessage = 4096;
inline constexpr size_t kMaxMessage = sizeof(command) + kPagesPerMessage * sizeof(uint64_t);

// Runs a worker on control socket `ctl`; never returns. Closes every descriptor except
// 0-2, `ctl` and `keep[0..nkeep)`. Exits when the driver asks, when the control socket
// reaches EOF (driver gone) and, through PR_SET_PDEATHSIG, when the driver thread dies.
[[noreturn]] void worker_main(int ctl, pid_t driver_pid, const int* keep, size_t nkeep);

}  // namespace vmlab::live
