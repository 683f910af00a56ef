#include "vmlab/status.h"

#include <algorithm>

namespace vmlab {

void status::free_rep() {
  delete rep_;
  rep_ = nullptr;
}

const std::string& status::message() const {
  static const std::string empty;
  return rep_ ? rep_->msg : empty;
}

const std::optional<source_location>& status::where() const {
  static const std::optional<source_location> nowhere;
  return rep_ ? rep_->where : nowhere;
}

std::string status::to_string() const {
  std::string out;
  const std::optional<source_location>& loc = where();
  if (loc) {
    out += loc->file;
    // Appended piecewise: GCC 12's -Wrestrict misfires on `":" + std::to_string(n)` at -O3.
    if (loc->line) { out += ':'; out += std::to_string(loc->line); }
    if (loc->column) { out += ':'; out += std::to_string(loc->column); }
    out += ": ";
  }
  out += message();
  if (loc && !loc->text.empty()) {
    // Show the line (cut at 100 columns) and a caret under the column, like ninja.
    std::string line = loc->text.substr(0, 100);
    out += "\n  " + line + "\n  ";
    uint32_t col = std::max<uint32_t>(loc->column, 1);
    for (uint32_t i = 1; i < col && i <= line.size(); ++i) out += line[i - 1] == '\t' ? '\t' : ' ';
    out += "^";
  }
  return out;
}

int status::exit_code() const {
  switch (code()) {
    case status_code::ok: return 0;
    case status_code::check_failed:
    case status_code::host_memory:
    case status_code::refused: return 1;
    case status_code::invalid_argument:
    case status_code::not_supported: return 2;
    case status_code::io_error: return 3;
    case status_code::interrupted: return 128 + signal();
  }
  return 2;
}

}  // namespace vmlab
