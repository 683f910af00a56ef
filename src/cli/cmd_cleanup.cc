// vmlab cleanup: undo what a live run that was killed (SIGKILL, the OOM killer, a power
// cut of the SSH session) left on this host. A live run does the same when it starts.
#include <iostream>

#include "cli/commands.h"
#include "engine/live/host_state.h"

namespace vmlab::cli {

action add_cleanup(CLI::App& app) {
  auto no_wait = std::make_shared<bool>(false);
  app.add_flag("--no-wait", *no_wait, "Refuse, rather than wait, when a live run is measuring");
  return [no_wait]() -> int {
    // Under the lock: no journal found then belongs to a run that is still going.
    auto lock = live::live_lock::acquire(*no_wait ? live::live_lock::mode::no_wait : live::live_lock::mode::wait,
                                         say_to_stderr);
    if (!lock.ok()) return report_error(lock.error());
    const live::recovery r = live::recover();
    for (const auto& line : r.done) std::cout << line << "\n";
    for (const auto& line : r.failed) std::cerr << "vmlab: error: " << line << "\n";
    if (r.done.empty() && r.failed.empty()) std::cout << "nothing to clean up: no live run left anything behind\n";
    return r.failed.empty() ? 0 : status::io_error("").exit_code();
  };
}

}  // namespace vmlab::cli
