// The CPU-cost table: every entry has a positive cost, a unit and a source.
#include <gtest/gtest.h>

#include <set>

#include "block/cpu_cost.h"

namespace vmlab::block {
namespace {

TEST(CpuCost, EveryEntryNamesItsSource) {
  std::set<std::string> ops;
  for (const cpu_cost& c : cpu_costs()) {
    SCOPED_TRACE(c.op);
    EXPECT_GT(c.ns, 0);
    EXPECT_FALSE(c.unit.empty());
    EXPECT_GT(c.source.size(), 20u);
    ops.insert(c.op);
  }
  for (const char* op : {"copy", "anon_fault", "file_fault", "readahead_page", "rmap_walk_pte"})
    EXPECT_TRUE(ops.count(op)) << op;
  EXPECT_NE(find_cpu_cost("copy", "host"), nullptr);
  EXPECT_EQ(find_cpu_cost("copy", "pentium-iii-2001"), nullptr);  // not sourced yet
}

}  // namespace
}  // namespace vmlab::block
