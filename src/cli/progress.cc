#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "cli/commands.h"

namespace vmlab::cli {

bool progress_wanted(bool quiet) { return !quiet && ::isatty(STDERR_FILENO); }

std::string progress_seconds(double t) {
  if (t < 120) return fmt::format("{:.0f} s", t);
  if (t < 7200) return fmt::format("{:.0f} min", t / 60);
  return fmt::format("{:.1f} h", t / 3600);
}

progress_line::progress_line(bool on, std::chrono::milliseconds delay)
    : on_(on), delay_(delay), t0_(std::chrono::steady_clock::now()) {}

progress_line::~progress_line() { erase(); }

double progress_line::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void progress_line::draw(const std::function<std::string(double)>& text) {
  if (!on_ || std::chrono::steady_clock::now() - t0_ < delay_) return;
  std::fprintf(stderr, "\r\033[Kvmlab: %s", text(elapsed()).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void progress_line::erase() {
  if (!drawn_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

ticking_progress::ticking_progress(bool on, std::chrono::milliseconds delay) : line_(on, delay) {
  if (!on) return;
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      redraw();
      cv_.wait_for(l, std::chrono::milliseconds(200));
    }
  });
}

ticking_progress::~ticking_progress() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  line_.erase();
}

void ticking_progress::redraw() {
  if (text_) line_.draw(text_);
}

void ticking_progress::set(std::function<std::string(double)> text) {
  std::lock_guard<std::mutex> l(mu_);
  text_ = std::move(text);
  redraw();
}

void ticking_progress::say(const std::string& message) {
  std::lock_guard<std::mutex> l(mu_);
  line_.erase();
  say_to_stderr(message);
  redraw();
}

void ticking_progress::print(const std::string& text) {
  std::lock_guard<std::mutex> l(mu_);
  line_.erase();
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  redraw();
}

}  // namespace vmlab::cli
