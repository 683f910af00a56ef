// Whether this host can run the live engine, for tests that need it: they skip, saying
// why, everywhere else.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

namespace vmlab::testing {

inline bool live_host() {
#if defined(__linux__) && defined(__x86_64__)
  return ::geteuid() == 0;
#else
  return false;
#endif
}

}  // namespace vmlab::testing

#define SKIP_UNLESS_LIVE_HOST()                                                               \
  if (!::vmlab::testing::live_host())                                                         \
  GTEST_SKIP() << "the live engine needs root on Linux x86-64 (it runs real processes and " \
                  "writes /proc/sys/vm/stat_refresh)"
