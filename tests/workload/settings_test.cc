// Scenario settings (--set PATH=VALUE, `vmlab compare --variant`): changes to the TOML
// document before the reader sees it, so the reader's rules and messages apply to them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "workload/scenario.h"

namespace vmlab {
namespace {

const char* kBase = R"(name = "s"
[machine]
memory = "8GiB"
[[object]]
name = "pool"
kind = "shm"
size = "64MiB"
[[group]]
name = "db"
count = 2
map = [ { name = "pool", object = "pool", shared = true },
        { name = "heap", object = "anon", size = "4MiB" } ]
[[phase]]
name = "read"
action = "touch"
map = "pool"
)";

result<op_stream> with(const std::vector<std::string>& settings) { return parse_scenario(kBase, "s.toml", settings); }

size_t count_ops(const op_stream& s, op_kind k) {
  size_t n = 0;
  for (const auto& o : s.ops) n += o.kind == k;
  return n;
}

TEST(ScenarioSettings, ChangeObjectsGroupsMapsKernelAndMachine) {
  auto r = with({"object.pool.kind=hugetlb", "machine.hugepages={\"2MiB\"=32}", "group.db.count=5",
                 "group.db.map.heap.size=8MiB", "kernel.profile=linux-6.18", "kernel.overrides.thp_enabled=always"});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->objects[0].kind, object_kind::hugetlb);
  ASSERT_EQ(r->machine.hugepages.size(), 1u);
  EXPECT_EQ(r->machine.hugepages[0], (std::pair<bytes, uint64_t>{2 * MiB, 32}));
  EXPECT_EQ(count_ops(*r, op_kind::spawn), 5u);
  // The [kernel.overrides] table did not exist: the setting made it.
  EXPECT_EQ(r->machine.overrides, (std::vector<std::pair<std::string, std::string>>{{"thp_enabled", "always"}}));
  for (const auto& o : r->ops) {
    if (o.kind == op_kind::mmap && r->map_names[o.map] == "heap") {
      EXPECT_EQ(o.len, 8 * MiB);
    }
  }
  // No settings: the file as written.
  auto base = with({});
  ASSERT_TRUE(base.ok());
  EXPECT_EQ(count_ops(*base, op_kind::spawn), 2u);
  EXPECT_EQ(base->objects[0].kind, object_kind::shm);
}

TEST(ScenarioSettings, LaterSettingsWinAndValuesParseAsToml) {
  auto r = with({"group.db.count=3", "group.db.count=4", "machine.memory=16GiB"});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(count_ops(*r, op_kind::spawn), 4u);
  EXPECT_EQ(r->machine.memory, 16 * GiB);  // "16GiB" is not TOML: read as the string "16GiB"
}

// "--set SETTING:1:col: message", as the user sees it.
std::string error_of(const std::string& setting) {
  auto r = with({setting});
  EXPECT_FALSE(r.ok()) << setting;
  if (r.ok()) return "(parsed)";
  EXPECT_EQ(r.error().exit_code(), 2);
  const auto& w = r.error().where();
  if (!w) return r.error().message();
  EXPECT_EQ(w->text, setting);
  return w->file + ":" + std::to_string(w->line) + ":" + std::to_string(w->column) + ": " + r.error().message();
}

TEST(ScenarioSettings, ErrorsNameTheSettingAndTheColumn) {
  EXPECT_EQ(error_of("object.nopool.kind=shm"),
            "--set object.nopool.kind=shm:1:1: 'object' has no element named 'nopool' (it has: pool)");
  // The reader's own checks, pointing at the value inside the setting.
  EXPECT_EQ(error_of("group.db.count=-3"),
            "--set group.db.count=-3:1:16: 'count' in [[group]] must be between 1 and 4194304, not -3");
  EXPECT_EQ(error_of("object.pool.kind=shmx"),
            "--set object.pool.kind=shmx:1:18: 'kind' in [[object]] must be \"shm\", \"file\" or \"hugetlb\", not 'shmx'");
  EXPECT_EQ(error_of("bogus=1"), "--set bogus=1:1:1: unknown key 'bogus' at the top level");
  EXPECT_EQ(error_of("name.x=1"), "--set name.x=1:1:1: 'name' is a value, not a table: it has no key 'x'");
  EXPECT_EQ(error_of("object.pool=1"), "--set object.pool=1:1:1: 'object.pool' is a whole element: set one of its keys");
  EXPECT_EQ(error_of("=1"),
            "--set =1:1:1: a setting is PATH=VALUE (e.g. object.pool.kind=hugetlb, group.db.count=200), not '=1'");
  EXPECT_EQ(error_of("count"),
            "--set count:1:1: a setting is PATH=VALUE (e.g. object.pool.kind=hugetlb, group.db.count=200), not 'count'");
  EXPECT_EQ(error_of("group..count=1"), "--set group..count=1:1:1: empty key in the path 'group..count'");
}

}  // namespace
}  // namespace vmlab
