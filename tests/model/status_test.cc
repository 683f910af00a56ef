// The one error type: each class of error has its own exit status, as the README promises.
#include <csignal>

#include <gtest/gtest.h>

#include "vmlab/status.h"

namespace vmlab {
namespace {

TEST(Status, EachClassHasItsExitStatus) {
  EXPECT_EQ(status().exit_code(), 0);
  EXPECT_EQ(status::check_failed("validate: 1 figure outside tolerance").exit_code(), 1);
  EXPECT_EQ(status::refused("ENOMEM: out of memory allocating a pte_chain").exit_code(), 1);
  EXPECT_EQ(status::invalid_argument("unknown key").exit_code(), 2);
  EXPECT_EQ(status::not_supported("the live engine needs root").exit_code(), 2);
  EXPECT_EQ(status::io_error("fork: EAGAIN").exit_code(), 3);
  EXPECT_EQ(status::interrupted(SIGINT, "interrupted by SIGINT").exit_code(), 130);
  EXPECT_EQ(status::interrupted(SIGTERM, "interrupted by SIGTERM").exit_code(), 143);
  EXPECT_EQ(status::interrupted(SIGHUP, "interrupted by SIGHUP").exit_code(), 129);
}

TEST(Status, TheSimulatedKernelsRefusalIsNotTheHostsFailure) {
  const status refused = status::refused("EEXIST: fixed mapping overlaps an existing mapping");
  const status host = status::io_error("cannot open /proc/meminfo");
  EXPECT_EQ(refused.code(), status_code::refused);
  EXPECT_EQ(host.code(), status_code::io_error);
  EXPECT_NE(refused.exit_code(), host.exit_code());
  EXPECT_EQ(status::interrupted(SIGQUIT, "x").signal(), SIGQUIT);
}

TEST(Status, ALocatedErrorPointsAtTheColumn) {
  const status s = status::invalid_argument("unknown unit 'Gb' in '3Gb'").at({"a.toml", 4, 8, "size = 3Gb"});
  EXPECT_EQ(s.to_string(), "a.toml:4:8: unknown unit 'Gb' in '3Gb'\n  size = 3Gb\n         ^");
}

// status owns its error state by hand (status.h): copies are deep, a move leaves its
// source OK, and self-assignment keeps the error.
TEST(Status, CopiesAndMovesOwnTheirError) {
  status e = status::refused("ENOMEM: a page-table page");
  status copy = e;
  EXPECT_EQ(copy.message(), "ENOMEM: a page-table page");
  copy = status::io_error("fork: EAGAIN");  // the copy changes alone
  EXPECT_EQ(e.message(), "ENOMEM: a page-table page");
  EXPECT_EQ(copy.code(), status_code::io_error);
  const status& same = e;
  e = same;
  EXPECT_EQ(e.message(), "ENOMEM: a page-table page");
  status moved = std::move(e);
  EXPECT_EQ(moved.code(), status_code::refused);
  EXPECT_TRUE(e.ok());  // NOLINT(bugprone-use-after-move): the documented state
  moved = std::move(copy);
  EXPECT_EQ(moved.message(), "fork: EAGAIN");
  EXPECT_TRUE(copy.ok());  // NOLINT(bugprone-use-after-move)
  moved = status();
  EXPECT_TRUE(moved.ok());
}

}  // namespace
}  // namespace vmlab
