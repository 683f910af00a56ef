// The progress line of a long command on a terminal: "vmlab: TEXT", redrawn in place on
// stderr (carriage return, erase to the end of the line) and erased at the end, shared by
// `vmlab sweep` and `vmlab validate`. Only on a terminal, and not with --quiet: a pipe or a
// log file would collect hundreds of carriage-return-separated lines nobody asked for.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace vmlab::cli {

// Whether to show progress: not --quiet, and stderr is a terminal (isatty).
bool progress_wanted(bool quiet);

// "3 s", "4 min", "1.5 h".
std::string progress_seconds(double t);

class progress_line {
 public:
  // Off (nothing is ever written) unless `on`. Nothing is drawn before `delay` has passed,
  // so a short command stays quiet.
  explicit progress_line(bool on, std::chrono::milliseconds delay = std::chrono::milliseconds(500));
  ~progress_line();
  progress_line(const progress_line&) = delete;
  progress_line& operator=(const progress_line&) = delete;

  // Draws "vmlab: " + text(seconds since construction), in place, when on and due.
  void draw(const std::function<std::string(double)>& text);
  // Erases the line, so that other output on stderr starts at the left margin; the next
  // draw puts it back.
  void erase();
  [[nodiscard]] double elapsed() const;

 private:
  bool on_, drawn_ = false;
  std::chrono::milliseconds delay_;
  std::chrono::steady_clock::time_point t0_;
};

// A progress_line that a thread of its own redraws 5 times a second, for steps that run
// long without calling back (a live run): set() changes what it says, say() writes a line
// of its own to stderr without the two garbling each other.
class ticking_progress {
 public:
  explicit ticking_progress(bool on, std::chrono::milliseconds delay = std::chrono::milliseconds(0));
  ~ticking_progress();  // stops the thread and erases the line
  ticking_progress(const ticking_progress&) = delete;
  ticking_progress& operator=(const ticking_progress&) = delete;

  // What the line says, given the seconds elapsed since construction.
  void set(std::function<std::string(double)> text);
  // "vmlab: MESSAGE" on its own line (say_to_stderr), the progress line erased first.
  void say(const std::string& message);
  // A line of output on stderr as it is (ending with "\n"), the progress line erased first.
  void print(const std::string& text);

 private:
  void redraw();  // mu_ held
  progress_line line_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<std::string(double)> text_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace vmlab::cli
