// The driver: the live engine's side of the worker protocol. It owns the host resources
// of one run (workers, memfds, unnamed files, signal handlers) and releases every one of
// them on every path: normal end, error, SIGINT/SIGTERM/SIGHUP/SIGQUIT. Nothing it
// creates outlives a SIGKILL either: objects are memfds and O_TMPFILE files (no name on
// any filesystem; the kernel frees them with the last process holding them), and every
// worker has PR_SET_PDEATHSIG.
//
// Why a class with a destructor: cleanup must happen whatever way run_live leaves, and
// "kill every worker, reap it, close and unlink every object" is easiest to get right
// once, in ~driver, than at each return.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/live/procfs.h"
#include "engine/live/worker.h"
#include "vmlab/op.h"
#include "vmlab/status.h"

namespace vmlab::live {

// SIGINT, SIGTERM, SIGHUP (a closed terminal, a dropped SSH session) and SIGQUIT for the
// duration of a run: a handler that records the signal and makes a self-pipe readable, so
// that every wait in the driver (poll) wakes up whichever thread the kernel delivered the
// signal to; the run then cleans up and ends with status::interrupted. Only one run per
// process may hold it.
class signal_guard {
 public:
  signal_guard() = default;
  signal_guard(const signal_guard&) = delete;
  signal_guard& operator=(const signal_guard&) = delete;
  ~signal_guard();
  status install();
  [[nodiscard]] int fd() const { return pipe_[0]; }
  [[nodiscard]] int signal() const;  // 0 = none yet

 private:
  bool installed_ = false;
  int pipe_[2] = {-1, -1};
  struct saved;
  saved* old_ = nullptr;
};

struct worker_info {
  uint32_t pid = 0;        // the workload's pid
  pid_t host = -1;         // the host's pid
  int ctl = -1;            // driver end of the control socket
  proc_status base;        // figures that are not the workload's (see live_engine.cc)
  proc_status fork_base;   // what a child forked from this worker starts with
  uint64_t minflt0 = 0;
};

class driver {
 public:
  driver(proc_source& src, const signal_guard& sig);
  driver(const driver&) = delete;
  driver& operator=(const driver&) = delete;
  ~driver();  // shutdown()

  // Creates the objects: shm as memfds, hugetlb ones as MFD_HUGETLB memfds of the page
  // size `huge_sizes[i]`, files as unnamed O_TMPFILE files in `file_dir` (on a filesystem
  // without O_TMPFILE: created and unlinked at once).
  status create_objects(const std::vector<object_decl>& objects, const std::vector<bytes>& huge_sizes,
                        const std::string& file_dir);
  [[nodiscard]] int object_fd(int32_t index) const { return fds_[static_cast<size_t>(index)]; }

  // Starts the zygote: an idle worker forked from the driver once, after the objects
  // exist, that every spawned worker is then forked from. Why: a fork of the driver copies
  // the driver's address space as it is at that moment (its heap and malloc mappings grow
  // with the run), a fork of the zygote always copies the same image, so every spawned
  // worker costs the kernel the same VMAs, anon_vmas and anon_vma_chains, and an image-only
  // replay measures exactly what the workload's processes add for their images.
  status start_zygote();
  [[nodiscard]] pid_t zygote_host() const { return zygote_.host; }

  // Process ops. A host failure of the op itself comes back as errno in *err (the caller
  // records it as an op failure); a worker that died sets died() and returns io_error;
  // a signal sets interrupted() and returns status::interrupted.
  status spawn(uint32_t pid, int* err);
  status fork(uint32_t parent, uint32_t child, int* err);
  status exit(uint32_t pid);
  // One command, one reply.
  status call(uint32_t pid, const command& c, reply& r);
  status touch_pages(uint32_t pid, uint64_t base, bytes page, const std::vector<uint64_t>& pages, bool write, reply& r);
  // One command with a payload (at most kMaxMessage - sizeof(command) bytes), one reply.
  status call(uint32_t pid, const command& c, const void* payload, size_t payload_bytes, reply& r);

  [[nodiscard]] const std::map<uint32_t, worker_info>& workers() const { return workers_; }
  [[nodiscard]] bool interrupted() const { return sig_.signal() != 0; }
  [[nodiscard]] bool died() const { return died_; }
  // Sleeps, waking early (status::interrupted) on a signal.
  status sleep_ms(int ms);

  // Kills and reaps every worker and the zygote, closes and removes every object. Idempotent.
  void shutdown();

 private:
  status send_cmd(worker_info& w, const command& c, const void* payload, size_t payload_bytes, int pass_fd);
  status recv_reply(worker_info& w, reply& r);
  status worker_died(worker_info& w);
  status interrupted_status() const;
  // Forks `parent` into a new worker (registered under `pid`); *err on a host refusal.
  status fork_worker(worker_info& parent, uint32_t pid, int* err, worker_info** out);
  status read_base(worker_info& w);
  void reap(worker_info& w, int* wstatus);

  proc_source& src_;
  const signal_guard& sig_;
  pid_t self_;
  std::map<uint32_t, worker_info> workers_;
  worker_info zygote_;             // not in workers_: it runs no workload op
  std::vector<int> fds_;          // object fds, by object index
  bool died_ = false;
  uint32_t next_probe_ = 0xffffffffu;  // internal pids for calibration probes
};

// "ENOMEM: Cannot allocate memory".
std::string errno_text(int err);

}  // namespace vmlab::live
