// libFuzzer target: parse_trace (src/workload/trace.h) on arbitrary bytes.
//
// Oracles: no crash, no sanitizer report, no exception; and the documented round trip:
// a trace that parses is written back by write_trace, that text parses too, and writing
// it again gives the same text (parse_trace(write_trace(s)) reproduces s).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "workload/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string name = "fuzz.trace";
  auto r = vmlab::parse_trace(text, name);
  if (!r.ok()) {
    (void)r.error().to_string();  // the caret rendering reads the source line
    return 0;
  }
  const std::string once = vmlab::write_trace(r.value());
  auto r2 = vmlab::parse_trace(once, name);
  if (r2.ok()) r2.value().source = r.value().source;  // the re-read takes `name` as its source
  if (!r2.ok()) {
    std::fprintf(stderr, "write_trace output does not parse:\n%s\n--- written ---\n%s\n",
                 r2.error().to_string().c_str(), once.c_str());
    std::abort();
  }
  const std::string twice = vmlab::write_trace(r2.value());
  if (twice != once) {
    std::fprintf(stderr, "trace round trip differs:\n--- first ---\n%s\n--- second ---\n%s\n", once.c_str(), twice.c_str());
    std::abort();
  }
  return 0;
}
