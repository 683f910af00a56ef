#include "workload/size.h"

#include <gtest/gtest.h>

namespace vmlab {
namespace {

bytes ok(std::string_view s) {
  result<bytes> r = parse_size(s);
  EXPECT_TRUE(r.ok()) << s << ": " << (r.ok() ? "" : r.error().message());
  return r.ok() ? *r : ~bytes{0};
}

std::string fail(std::string_view s) {
  result<bytes> r = parse_size(s);
  EXPECT_FALSE(r.ok()) << s << " parsed as " << (r.ok() ? *r : 0);
  if (r.ok()) return "";
  EXPECT_EQ(r.error().code(), status_code::invalid_argument);
  return r.error().message();
}

TEST(ParseSize, PlainBytes) {
  EXPECT_EQ(ok("0"), 0u);
  EXPECT_EQ(ok("4096"), 4096u);
  EXPECT_EQ(ok("18446744073709551615"), ~bytes{0});
  EXPECT_EQ(ok(" 12 "), 12u);
  EXPECT_EQ(ok("12B"), 12u);
}

TEST(ParseSize, BinaryUnitsInAllSpellings) {
  for (const char* u : {"K", "KB", "KiB"}) EXPECT_EQ(ok(std::string("4") + u), 4 * KiB) << u;
  for (const char* u : {"M", "MB", "MiB"}) EXPECT_EQ(ok(std::string("3") + u), 3 * MiB) << u;
  for (const char* u : {"G", "GB", "GiB"}) EXPECT_EQ(ok(std::string("2") + u), 2 * GiB) << u;
  for (const char* u : {"T", "TB", "TiB"}) EXPECT_EQ(ok(std::string("1") + u), TiB) << u;
  EXPECT_EQ(ok("4 KiB"), 4 * KiB);
}

TEST(ParseSize, FractionsRoundDownExactly) {
  // 2.66 * 2^30 = 2856153251.84 -> 2856153251, computed exactly (no double).
  EXPECT_EQ(ok("2.66GiB"), 2856153251u);
  EXPECT_EQ(ok("1.5KiB"), 1536u);
  EXPECT_EQ(ok("0.5"), 0u);
  EXPECT_EQ(ok(".5MiB"), 512 * KiB);
  EXPECT_EQ(ok("1.MiB"), MiB);
  EXPECT_EQ(ok("0.1TiB"), 109951162777u);  // 109951162777.6
}

TEST(ParseSize, Products) {
  EXPECT_EQ(ok("680*4MiB"), 680 * 4 * MiB);
  EXPECT_EQ(ok("680 * 4MiB"), 680 * 4 * MiB);
  EXPECT_EQ(ok("2*3*4KiB"), 24 * KiB);
  EXPECT_EQ(ok("1.5*2MiB"), 3 * MiB);
  EXPECT_EQ(ok("60*2.6GiB"), 167503724544u);  // 60 * 2.6 * 2^30 exactly
}

TEST(ParseSize, Hex) {
  EXPECT_EQ(ok("0x40000000"), GiB);
  EXPECT_EQ(ok("0x200000000000"), 32 * TiB);
  EXPECT_EQ(ok("0XfF"), 255u);
  EXPECT_EQ(ok("0x2MiB"), 2 * MiB);
}

TEST(ParseSize, Errors) {
  EXPECT_EQ(fail("-1GiB"), "negative size '-1GiB'");
  EXPECT_EQ(fail(" -5"), "negative size ' -5'");
  EXPECT_EQ(fail("2*-1"), "negative size '2*-1'");
  EXPECT_EQ(fail("3Gb"), "unknown unit 'Gb' in '3Gb'");
  EXPECT_EQ(fail("3gib"), "unknown unit 'gib' in '3gib'");
  EXPECT_EQ(fail("3 PiB"), "unknown unit 'PiB' in '3 PiB'");
  EXPECT_EQ(fail("abc"), "size 'abc' is not a number");
  EXPECT_EQ(fail(""), "size '' is not a number");
  EXPECT_EQ(fail("GiB"), "size 'GiB' is not a number");
  EXPECT_EQ(fail("1.2.3"), "size '1.2.3' is not a number");
  EXPECT_EQ(fail("4*"), "size '4*' is not a number");
  EXPECT_EQ(fail("0x"), "size '0x' is not a number");
  EXPECT_EQ(fail("12e3"), "size '12e3' is not a number");
}

TEST(ParseSize, Overflow) {
  EXPECT_EQ(fail("18446744073709551616"), "size '18446744073709551616' is too large (more than 2^64-1 bytes)");
  EXPECT_EQ(fail("16777216TiB"), "size '16777216TiB' is too large (more than 2^64-1 bytes)");
  EXPECT_EQ(fail("65536*65536*65536*65536"), "size '65536*65536*65536*65536' is too large (more than 2^64-1 bytes)");
  EXPECT_EQ(ok("16777215TiB"), 16777215 * TiB);
}

}  // namespace
}  // namespace vmlab
