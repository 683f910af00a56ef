// What a live run holds on the host beyond its own processes: the right to measure (one
// live run at a time), the host settings it changes, and the record that lets a later run
// undo a run that was killed before it could clean up.
//
// Why: users run the live engine on machines that matter. A run killed with SIGKILL (or by
// the OOM killer, or a dropped SSH session) runs no destructor, so whatever it changed on
// the host must be written down *before* it is changed, somewhere the next run looks.
// Objects need no record: they are memfds and unnamed O_TMPFILE files, freed by the
// kernel when the last process holding them dies, and workers die with the driver
// (PR_SET_PDEATHSIG). Settings (nr_hugepages, the THP policies) are journalled here.
//
// Files, under run_dir() (/run/vmlab, a tmpfs that a reboot empties, as a reboot also
// resets every setting):
//   lock                the advisory lock (flock) of the run that is measuring; its text
//                       is the holder's pid and command, for the message a waiter prints
//   run-<pid>.journal   one line per setting a run changed: "set\t<path>\t<old>\t<new>",
//                       appended and fsynced before the setting is written
//
// Invariants:
//  1. A journal exists only while its run holds the lock, or after its run died.
//  2. So a journal found by a process that holds the lock belongs to a dead run:
//     recover() puts its settings back, newest first, and removes it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "vmlab/status.h"

namespace vmlab::live {

// $VMLAB_RUN_DIR, else /run/vmlab.
std::string run_dir();

// The lock of one live run at a time. Re-entrant within a process: `vmlab validate` takes
// it for its whole matrix and each live run inside takes it again for free.
class live_lock {
 public:
  enum class mode { wait, no_wait };
  // Takes the lock. When another process holds it: with mode::wait, calls on_wait once
  // with a description of the holder and blocks (a signal while blocked ends the wait
  // with `interrupted`); with mode::no_wait, returns io_error naming the holder.
  static result<live_lock> acquire(mode m, const std::function<void(const std::string&)>& on_wait);
  live_lock(live_lock&& o) noexcept : held_(o.held_) { o.held_ = false; }
  live_lock& operator=(live_lock&&) = delete;
  live_lock(const live_lock&) = delete;
  ~live_lock();

 private:
  live_lock() = default;
  bool held_ = false;
};

// The host settings a live run changes. REQUIRES: the caller holds live_lock.
class host_settings {
 public:
  host_settings();  // journal: run_dir()/run-<getpid()>.journal
  host_settings(const host_settings&) = delete;
  host_settings& operator=(const host_settings&) = delete;
  ~host_settings();  // restore()

  // Writes `value` to the file `path` (a /proc/sys or /sys knob), after recording its old
  // value in the journal. A value equal to the old one is not written or recorded.
  status set(const std::string& path, const std::string& value);
  // The current value of `path`: its first line, or for a sysfs choice such as
  // "always [madvise] never" the chosen word (what writing it back takes).
  static result<std::string> get(const std::string& path);
  // Writes every changed setting back, newest first, and removes the journal. Idempotent.
  status restore();

 private:
  struct change {
    std::string path, old_value, new_value;
  };
  std::string journal_;
  std::vector<change> changes_;
};

// What recover() found and did, one line each, for the user.
struct recovery {
  std::vector<std::string> done;    // "restored /proc/sys/vm/nr_hugepages to 0 (...)"
  std::vector<std::string> failed;  // what could not be undone, and why
};

// Undoes what live runs that died left on the host: the settings in their journals, any
// worker that outlived its driver, the /var/tmp/vmlab-live-* directories older vmlab
// versions created. REQUIRES: the caller holds live_lock (so no journal is a live run's).
recovery recover();

// Writes `text` to a procfs or sysfs file (a setting, or a trigger such as
// /proc/sys/vm/drop_caches); an io_error names the file and the errno.
status write_file(const std::string& path, const std::string& text);

}  // namespace vmlab::live
