#include "vmlab/status.h"

#include <algorithm>

namespace vmlab {

std::string status::to_string() const {
  std::string out;
  if (where_) {
    out += where_->file;
    // Appended piecewise: GCC 12's -Wrestrict misfires on `":" + std::to_string(n)` at -O3.
    if (where_->line) { out += ':'; out += std::to_string(where_->line); }
    if (where_->column) { out += ':'; out += std::to_string(where_->column); }
    out += ": ";
  }
  out += msg_;
  if (where_ && !where_->text.empty()) {
    // Show the line (cut at 100 columns) and a caret under the column, like ninja.
    std::string line = where_->text.substr(0, 100);
    out += "\n  " + line + "\n  ";
    uint32_t col = std::max<uint32_t>(where_->column, 1);
    for (uint32_t i = 1; i < col && i <= line.size(); ++i) out += line[i - 1] == '\t' ? '\t' : ' ';
    out += "^";
  }
  return out;
}

int status::exit_code() const {
  switch (code_) {
    case status_code::ok: return 0;
    case status_code::check_failed:
    case status_code::host_memory:
    case status_code::refused: return 1;
    case status_code::invalid_argument:
    case status_code::not_supported: return 2;
    case status_code::io_error: return 3;
    case status_code::interrupted: return 128 + signal_;
  }
  return 2;
}

}  // namespace vmlab
