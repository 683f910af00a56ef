// The trace format: the op stream as text, one op a line (docs/trace-format.md).
// `vmlab trace` writes it, `vmlab run --trace` reads it; hand-written traces may use
// size syntax ("len=1GiB") and comments ('#').
#pragma once

#include <string>
#include <string_view>

#include "vmlab/op.h"
#include "vmlab/status.h"

namespace vmlab {

result<op_stream> parse_trace(std::string_view text, const std::string& name);
result<op_stream> load_trace(const std::string& path);
// The whole stream, header included. parse_trace(write_trace(s)) reproduces s.
std::string write_trace(const op_stream& s);
// One op in trace syntax (for messages and failure reports).
std::string format_op(const op_stream& s, const op& o);

}  // namespace vmlab
