// libFuzzer target: parse_scenario (src/workload/scenario.h) on arbitrary bytes.
//
// Oracles: no crash, no sanitizer report, no exception; and the generator's promise
// (include/vmlab/op.h, docs/scenario-format.md): the op stream of a scenario that parses
// obeys the trace format's validity rules, so write_trace -> parse_trace accepts it and
// reproduces it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "workload/scenario.h"
#include "workload/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string name = "fuzz.toml";
  auto r = vmlab::parse_scenario(text, name);
  if (!r.ok()) {
    (void)r.error().to_string();
    return 0;
  }
  // Keep huge generated streams (count = 100000) from dominating the run.
  if (r.value().ops.size() > 20000) return 0;
  const std::string once = vmlab::write_trace(r.value());
  auto r2 = vmlab::parse_trace(once, name);
  if (r2.ok()) r2.value().source = r.value().source;  // the re-read takes `name` as its source
  if (!r2.ok()) {
    std::fprintf(stderr, "a scenario's op stream breaks the trace rules:\n%s\n--- scenario ---\n%.*s\n--- trace ---\n%s\n",
                 r2.error().to_string().c_str(), int(size), text.data(), once.c_str());
    std::abort();
  }
  if (vmlab::write_trace(r2.value()) != once) {
    std::fprintf(stderr, "scenario -> trace round trip differs\n--- trace ---\n%s\n", once.c_str());
    std::abort();
  }
  return 0;
}
