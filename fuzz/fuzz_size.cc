// libFuzzer target: parse_size (src/workload/size.h) on arbitrary bytes.
//
// Oracles: no crash, no sanitizer report, no exception; and a size that parses prints
// back (as plain decimal bytes and as hex) to text that parses to the same value.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "workload/size.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = vmlab::parse_size(text);
  if (!r.ok()) return 0;
  const vmlab::bytes v = r.value();
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(v));
  for (const std::string& again : {std::to_string(v), std::string(hex)}) {
    auto r2 = vmlab::parse_size(again);
    if (!r2.ok() || r2.value() != v) {
      std::fprintf(stderr, "parse_size('%.*s') = %llu, but parse_size('%s') %s\n", int(size), text.data(),
                   static_cast<unsigned long long>(v), again.c_str(),
                   r2.ok() ? std::to_string(r2.value()).c_str() : r2.error().message().c_str());
      std::abort();
    }
  }
  return 0;
}
