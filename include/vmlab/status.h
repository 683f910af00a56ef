// vmlab::status — the one error type, in the manner of LevelDB's Status.
//
// Why: every fallible call in vmlab (parsing a scenario, replaying a trace, an op the
// simulated kernel refuses, a live run the host cannot take) returns a status rather than
// throwing, so that no exception crosses a library boundary and every error reaches the
// CLI with the code that decides the exit status. OK carries no message.
//
// The codes keep apart what callers must treat differently: malformed input (the run
// never starts), the simulated kernel's refusal of one op (a finding: the run ends there
// and reports it), the host failing us (a fork, a /proc read), and a signal that stopped
// a live run. Exit statuses: 0 ok; 1 a check failed, the simulated kernel refused an
// op, or the host cannot hold the run; 2 bad input or usage; 3 the host failed; 128 + N interrupted by signal N (130 for
// SIGINT, 143 for SIGTERM, as shells report it).
//
// A status may carry a source location (file, line, column and the text of that line);
// to_string() then prints "file:line:col: message" followed by the line and a caret, as
// ninja does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace vmlab {

enum class status_code : uint8_t {
  ok = 0,
  invalid_argument,  // bad input or usage: exit 2
  not_supported,     // the request is valid but this engine/host cannot do it: exit 2
  refused,           // the simulated kernel said no (ENOMEM, EEXIST, SIGSEGV, ...): exit 1
  io_error,          // the host failed us (fork, mmap, /proc): exit 3
  interrupted,       // a signal stopped a live run (cleaned up): exit 128 + signal
  check_failed,      // a check the user asked for failed (validate tolerance): exit 1
  host_memory,       // the host cannot hold the run (std::bad_alloc, --max-host-memory): exit 1
};

struct source_location {
  std::string file;
  uint32_t line = 0;    // 1-based; 0 = unknown
  uint32_t column = 0;  // 1-based; 0 = unknown
  std::string text;     // the source line, for the caret; may be empty
};

class status {
 public:
  status() = default;
  status(const status& o) : rep_(o.rep_ ? new rep(*o.rep_) : nullptr) {}
  status& operator=(const status& o) {
    if (this != &o) {
      status copy(o);
      std::swap(rep_, copy.rep_);
    }
    return *this;
  }
  status(status&& o) noexcept : rep_(std::exchange(o.rep_, nullptr)) {}
  status& operator=(status&& o) noexcept {  // o is left OK, as a moved-from unique_ptr was
    if (this != &o) {
      if (rep_) free_rep();
      rep_ = std::exchange(o.rep_, nullptr);
    }
    return *this;
  }
  // Only the null test is inline: an OK status (one per simulated fault) costs a compare
  // where it dies. (With a unique_ptr, compilers outlined its destructor or this one, a
  // call per fault.)
  ~status() {
    if (rep_) [[unlikely]] free_rep();
  }

  static status invalid_argument(std::string msg) { return {status_code::invalid_argument, std::move(msg)}; }
  static status not_supported(std::string msg) { return {status_code::not_supported, std::move(msg)}; }
  // The simulated kernel's answer to an op, in its words: "ENOMEM: ...", "SIGSEGV: ...".
  static status refused(std::string msg) { return {status_code::refused, std::move(msg)}; }
  static status io_error(std::string msg) { return {status_code::io_error, std::move(msg)}; }
  static status interrupted(int signal, std::string msg) {
    status s{status_code::interrupted, std::move(msg)};
    s.rep_->signal = signal;
    return s;
  }
  static status check_failed(std::string msg) { return {status_code::check_failed, std::move(msg)}; }
  static status host_memory(std::string msg) { return {status_code::host_memory, std::move(msg)}; }

  [[nodiscard]] bool ok() const { return rep_ == nullptr; }
  [[nodiscard]] status_code code() const { return rep_ ? rep_->code : status_code::ok; }
  [[nodiscard]] const std::string& message() const;
  [[nodiscard]] const std::optional<source_location>& where() const;
  [[nodiscard]] int signal() const { return rep_ ? rep_->signal : 0; }  // interrupted: the signal number

  // Returns a copy that points at a place in a source file (OK stays OK).
  [[nodiscard]] status at(source_location loc) const {
    status s = *this;
    if (s.rep_) s.rep_->where = std::move(loc);
    return s;
  }
  // "file:line:col: message", then the source line and a caret when known.
  [[nodiscard]] std::string to_string() const;
  // The process exit status for this code (0, 1, 2, 3 or 128 + signal).
  [[nodiscard]] int exit_code() const;

 private:
  // OK is a null pointer, as in LevelDB: a call that succeeds returns and destroys one
  // word (the simulated kernel's fault path returns a status per fault).
  struct rep {
    status_code code;
    int signal = 0;
    std::string msg;
    std::optional<source_location> where;
  };
  status(status_code c, std::string m) : rep_(new rep{c, 0, std::move(m), std::nullopt}) {}
  void free_rep();  // deletes rep_
  rep* rep_ = nullptr;  // owned
};

// A value or the status explaining why there is none.
template <typename T>
class result {
 public:
  result(T v) : v_(std::move(v)) {}                // NOLINT: implicit by design
  result(status s) : v_(std::move(s)) {}           // NOLINT: implicit by design
  [[nodiscard]] bool ok() const { return std::holds_alternative<T>(v_); }
  [[nodiscard]] const status& error() const { return std::get<status>(v_); }
  [[nodiscard]] T& value() { return std::get<T>(v_); }
  [[nodiscard]] const T& value() const { return std::get<T>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, status> v_;
};

}  // namespace vmlab
