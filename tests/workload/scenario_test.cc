#include "workload/scenario.h"

#include <gtest/gtest.h>
#include "tests/known_profiles.h"

#include <cstdio>
#include <fmt/format.h>
#include <map>

#include "model/ptshare.h"
#include "workload/builtin.h"
#include "workload/op_rules.h"
#include "workload/trace.h"

namespace vmlab {
namespace {

op_stream gen(const std::string& text, const std::string& name = "t.toml") {
  result<op_stream> r = parse_scenario(text, name);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
  return r.ok() ? *r : op_stream{};
}

// The error for `text`, which must fail with invalid_argument and a location in t.toml.
status fail(const std::string& text) {
  result<op_stream> r = parse_scenario(text, "t.toml");
  EXPECT_FALSE(r.ok()) << "parsed:\n" << (r.ok() ? write_trace(*r) : "");
  if (r.ok()) return status::invalid_argument("(parsed)");
  EXPECT_EQ(r.error().code(), status_code::invalid_argument);
  EXPECT_EQ(r.error().exit_code(), 2);
  EXPECT_TRUE(r.error().where().has_value()) << r.error().message();
  if (r.error().where()) {
    EXPECT_EQ(r.error().where()->file, "t.toml");
  }
  return r.error();
}

// "line:col: message" for compact assertions.
std::string where(const std::string& text) {
  status s = fail(text);
  if (!s.where()) return s.message();
  return std::to_string(s.where()->line) + ":" + std::to_string(s.where()->column) + ": " + s.message();
}

uint64_t splitmix(uint64_t x) {
  uint64_t z = x + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

const char* kOltp = R"(# a small OLTP box
name = "oltp"
seed = 7
[machine]
memory = "24GiB"
cpus = 2
[kernel]
profile = "linux-6.18"
[kernel.overrides]
pti = false
fault_around_bytes = 0
[[object]]
name = "sga"
size = "1GiB"
[[group]]
name = "db"
count = 2
  [[group.map]]
  name = "buf"
  object = "sga"
  shared = true
  [[group.map]]
  name = "heap"
  object = "anon"
  size = "10000"
[[group]]
name = "log"
  [[group.map]]
  name = "heap"
  object = "anon"
  size = "1MiB"
[[phase]]
name = "load"
group = "db"
action = "touch"
map = "buf"
write = true
[[phase]]
name = "rand"
group = "db"
processes = 1
action = "touch"
map = "buf"
offset = "512MiB"
pattern = "uniform"
fraction = 0.001
)";

// A fraction counts the kernel's pages: 0.001 of 512 MiB is 131 pages of 4 KiB on
// linux-6.18, 8 pages of 64 KiB on linux-6.18-ppc64.
// A machine too small for what its kernel reserves at boot (mem_map, the image) is an
// error at the memory value, after the overrides (the same rule the kernel's creation
// applies; it failed there with no line and column). The trace reader does the same.
TEST(ScenarioErrors, MemoryTooSmallForTheKernelIsLocated) {
  const std::string tail = "[[group]]\nname = \"a\"\n";
  EXPECT_EQ(where("[machine]\nmemory = \"1B\"\n" + tail),
            "2:10: machine memory of 1 bytes is too small for linux-6.18's mem_map and kernel image");
  EXPECT_EQ(where("[machine]\nmemory = \"4MiB\"\n[kernel]\nprofile = \"linux-2.6.15\"\n" + tail),
            "2:10: machine memory of 4194304 bytes is too small for linux-2.6.15's mem_map and kernel image");
  EXPECT_TRUE(parse_scenario("[machine]\nmemory = \"64MiB\"\n" + tail, "m.toml").ok());
}

TEST(Scenario, FractionCountsTheKernelsPages) {
  std::string text = kOltp;
  const std::string x86 = "profile = \"linux-6.18\"\n[kernel.overrides]\npti = false\n";
  ASSERT_NE(text.find(x86), std::string::npos);
  text.replace(text.find(x86), x86.size(), "profile = \"linux-6.18-ppc64\"\n[kernel.overrides]\n");
  auto uniform_count = [](const op_stream& s) {
    for (const op& o : s.ops)
      if (o.kind == op_kind::touch && o.pattern == touch_pattern::uniform) return o.count;
    return uint64_t{0};
  };
  EXPECT_EQ(uniform_count(gen(text)), 8u);      // llround(0.001 * 8192)
  EXPECT_EQ(uniform_count(gen(kOltp)), 131u);  // llround(0.001 * 131072)
}

TEST(Scenario, GeneratesTheDocumentedOpStream) {
  op_stream s = gen(kOltp);
  EXPECT_EQ(s.source, "oltp");
  EXPECT_EQ(s.machine.profile, "linux-6.18");
  EXPECT_EQ(s.machine.memory, 24 * GiB);
  EXPECT_EQ(s.machine.cpus, 2u);
  EXPECT_EQ(s.machine.cache_line, 0u);  // not given: the profile's CPU
  ASSERT_EQ(s.machine.overrides.size(), 2u);
  EXPECT_EQ(s.machine.overrides[0], (std::pair<std::string, std::string>{"pti", "false"}));
  EXPECT_EQ(s.machine.overrides[1], (std::pair<std::string, std::string>{"fault_around_bytes", "0"}));
  ASSERT_EQ(s.objects.size(), 1u);
  EXPECT_EQ(s.objects[0].name, "sga");
  EXPECT_EQ(s.objects[0].kind, object_kind::shm);
  EXPECT_EQ(s.objects[0].size, GiB);
  EXPECT_EQ(s.map_names, (std::vector<std::string>{"buf", "heap"}));

  const std::string expected =
      "spawn 1\n"
      "mmap 1 buf obj=sga off=0 len=1073741824 prot=rw shared\n"
      "mmap 1 heap obj=anon len=12288 prot=rw private\n"
      "spawn 2\n"
      "mmap 2 buf obj=sga off=0 len=1073741824 prot=rw shared\n"
      "mmap 2 heap obj=anon len=12288 prot=rw private\n"
      "spawn 3\n"
      "mmap 3 heap obj=anon len=1048576 prot=rw private\n"
      "touch 1 buf off=0 len=1073741824 write\n"
      "touch 2 buf off=0 len=1073741824 write\n"
      "phase load\n"
      "touch 1 buf off=536870912 len=536870912 read uniform count=131 seed=" +
      std::to_string(splitmix(splitmix(7) ^ 11)) +
      "\n"
      "phase rand\n";
  std::string got;
  for (const op& o : s.ops) got += format_op(s, o) + "\n";
  EXPECT_EQ(got, expected);
  // Spot-check fields format_op does not show.
  EXPECT_EQ(s.ops[1].object, 0);
  EXPECT_EQ(s.ops[2].object, -1);
  EXPECT_EQ(s.ops[11].pattern, touch_pattern::uniform);
  EXPECT_EQ(s.ops[11].count, 131u);  // round(0.001 * 131072) = 131
}

TEST(Scenario, DefaultsAndFileStem) {
  op_stream s = gen("[[group]]\nname = \"g\"\n", "dir/x.toml");
  EXPECT_EQ(s.source, "x");
  EXPECT_EQ(s.machine.profile, "linux-6.18");
  EXPECT_EQ(s.machine.memory, 0u);
  EXPECT_EQ(s.machine.cpus, 0u);        // 0: the profile's machine
  EXPECT_EQ(s.machine.cache_line, 0u);
  ASSERT_EQ(s.ops.size(), 1u);
  EXPECT_EQ(s.ops[0].kind, op_kind::spawn);
  EXPECT_EQ(s.ops[0].pid, 1u);
}

TEST(Scenario, SameTextSameOpsAndSeedChangesRandomTouches) {
  const std::string a = write_trace(gen(kOltp));
  EXPECT_EQ(a, write_trace(gen(kOltp)));
  std::string other = kOltp;
  other.replace(other.find("seed = 7"), 8, "seed = 8");
  const std::string b = write_trace(gen(other));
  EXPECT_NE(a, b);
  EXPECT_NE(b.find("seed=" + std::to_string(splitmix(splitmix(8) ^ 11))), std::string::npos);
}

TEST(Scenario, ForkCowExitAndChildGroups) {
  op_stream s = gen(R"(
[[group]]
name = "parent"
  [[group.map]]
  name = "data"
  object = "anon"
  size = "8MiB"
  align = "2MiB"
  phase = "1MiB"
[[phase]]
name = "fill"
action = "touch"
map = "data"
write = true
[[phase]]
name = "fork"
group = "parent"
action = "fork"
children = 2
into = "kids"
[[phase]]
name = "cow"
group = "kids"
action = "touch"
map = "data"
length = "4MiB"
pattern = "stride"
stride = "8KiB"
write = true
[[phase]]
name = "bye"
group = "kids"
processes = 1
action = "exit"
[[phase]]
name = "zap"
action = "madvise"
map = "data"
offset = "1MiB"
length = "2MiB"
[[phase]]
name = "ro"
group = "kids"
action = "mprotect"
map = "data"
length = "4KiB"
prot = "r"
[[phase]]
name = "hole"
group = "parent"
action = "munmap"
map = "data"
offset = "4MiB"
length = "2MiB"
)");
  std::string got;
  for (const op& o : s.ops) got += format_op(s, o) + "\n";
  EXPECT_EQ(got,
            "spawn 1\n"
            "mmap 1 data obj=anon len=8388608 prot=rw private align=2097152 phase=1048576\n"
            "touch 1 data off=0 len=8388608 write\n"
            "phase fill\n"
            "fork 1 2\n"
            "fork 1 3\n"
            "phase fork\n"
            "touch 2 data off=0 len=4194304 write stride=8192\n"
            "touch 3 data off=0 len=4194304 write stride=8192\n"
            "phase cow\n"
            "exit 2\n"
            "phase bye\n"
            "madvise 1 data off=1048576 len=2097152 dontneed\n"
            "madvise 3 data off=1048576 len=2097152 dontneed\n"
            "phase zap\n"
            "mprotect 3 data off=0 len=4096 prot=r\n"
            "phase ro\n"
            "munmap 1 data off=4194304 len=2097152\n"
            "phase hole\n");
}

TEST(Scenario, ZipfTouchCarriesThetaCountAndSeed) {
  op_stream s = gen(R"(
seed = 3
[[group]]
name = "g"
  [[group.map]]
  name = "m"
  object = "anon"
  size = "64MiB"
[[phase]]
action = "touch"
map = "m"
pattern = "zipf"
fraction = 2.5
theta = 1.2
)");
  ASSERT_EQ(s.ops.size(), 4u);
  const op& t = s.ops[2];
  EXPECT_EQ(t.pattern, touch_pattern::zipf);
  EXPECT_EQ(t.count, 40960u);
  EXPECT_DOUBLE_EQ(t.theta, 1.2);
  EXPECT_EQ(t.seed, splitmix(splitmix(3) ^ 2));
  EXPECT_EQ(s.ops[3].name, "phase1");
}

TEST(Scenario, FixedAddressAndFileObject) {
  op_stream s = gen(R"(
[[object]]
name = "f"
kind = "file"
size = "10MiB"
[[group]]
name = "g"
  [[group.map]]
  name = "win"
  object = "f"
  offset = "2MiB"
  size = "4MiB"
  prot = "r"
  locked = true
  addr = "0x200000000000"
)");
  ASSERT_EQ(s.ops.size(), 2u);
  const op& m = s.ops[1];
  EXPECT_EQ(s.objects[0].kind, object_kind::file);
  EXPECT_TRUE(m.fixed);
  EXPECT_TRUE(m.locked);
  EXPECT_FALSE(m.shared);
  EXPECT_EQ(m.addr, 0x200000000000ull);
  EXPECT_EQ(m.obj_off, 2 * MiB);
  EXPECT_EQ(m.len, 4 * MiB);
  EXPECT_EQ(m.prot, prot_read);
}

// --- errors: whole message and position ----------------------------------------------

const char* kGroupWithMap = R"([[group]]
name = "g"
  [[group.map]]
  name = "m"
  object = "anon"
)";

TEST(ScenarioErrors, TomlSyntax) {
  status s = fail("seed = 1\nname = \n");
  EXPECT_EQ(s.message(), "TOML syntax error: Error while parsing key-value pair: expected value, saw '\\n'");
  EXPECT_EQ(s.where()->line, 2u);
  EXPECT_EQ(s.where()->column, 8u);
  EXPECT_EQ(s.where()->text, "name = ");
  EXPECT_EQ(s.to_string(),
            "t.toml:2:8: TOML syntax error: Error while parsing key-value pair: expected value, saw '\\n'\n"
            "  name = \n"
            "         ^");
}

TEST(ScenarioErrors, UnknownKeys) {
  EXPECT_EQ(where(std::string(kGroupWithMap) + "  sizee = \"1GiB\"\n"), "6:3: unknown key 'sizee' in [[group.map]]; did you mean 'size'?");
  EXPECT_EQ(where("seed = 1\nsed = 2\n"), "2:1: unknown key 'sed' at the top level; did you mean 'seed'?");
  EXPECT_EQ(where("[machine]\nmemroy = 1\n"), "2:1: unknown key 'memroy' in [machine]; did you mean 'memory'?");
  EXPECT_EQ(where("[kernel]\nprofil = \"x\"\n"), "2:1: unknown key 'profil' in [kernel]; did you mean 'profile'?");
  EXPECT_EQ(where("[[object]]\nname = \"o\"\nsize = 1\nkid = \"shm\"\n"), "4:1: unknown key 'kid' in [[object]]; did you mean 'kind'?");
  EXPECT_EQ(where("[[group]]\nname = \"g\"\ncont = 2\n"), "3:1: unknown key 'cont' in [[group]]; did you mean 'count'?");
  EXPECT_EQ(where("[[group]]\nname = \"g\"\n[[phase]]\naction = \"exit\"\ngrp = \"g\"\n"),
            "5:1: unknown key 'grp' in [[phase]]");
  EXPECT_EQ(where("[[group]]\nname = \"g\"\n[[phase]]\naction = \"exit\"\nmap = \"m\"\n"),
            "5:1: key 'map' does not apply to action 'exit'");
  EXPECT_EQ(where("[kernel.overrides]\nptii = true\n"),
            "2:8: unknown kernel override 'ptii' (known: paging, pti, pt_reclaim, fault_around_bytes, "
            "fork_skips_shared, page_tables_levels, vmpte_levels, pgtable_free, mmap_layout, rmap, "
            "pte_chain_slots, anon_vma_reuse, highpte, hugetlb_pmd_share, thp_enabled, shmem_enabled, "
            "ptshare_pte, ptshare_pmd, ptshare_pud, mremap_move_pmd, mremap_move_pud)");
}

TEST(ScenarioErrors, WrongTypes) {
  EXPECT_EQ(where("[[group]]\nname = \"g\"\ncount = \"4\"\n"), "3:9: 'count' in [[group]] must be an integer, not a string");
  EXPECT_EQ(where(std::string(kGroupWithMap) + "  size = true\n"),
            "6:10: 'size' in [[group.map]] must be a size (a string such as \"1GiB\" or an integer), not a boolean");
  EXPECT_EQ(where(std::string(kGroupWithMap) + "  size = 4096\n  shared = \"no\"\n"),
            "7:12: 'shared' in [[group.map]] must be a boolean, not a string");
  EXPECT_EQ(where("machine = 3\n"), "1:11: 'machine' at the top level must be a table ([machine]), not an integer");
  EXPECT_EQ(where("[group]\nname = \"g\"\n"),
            "1:1: 'group' at the top level must be an array of tables ([[group]]), not a table");
  EXPECT_EQ(where("[kernel.overrides]\npti = 1.5\n"),
            "2:7: kernel override 'pti' must be a string, boolean or integer, not a floating-point number");
}

TEST(ScenarioErrors, Sizes) {
  EXPECT_EQ(where(std::string(kGroupWithMap) + "  size = \"-1GiB\"\n"), "6:10: negative size '-1GiB'");
  EXPECT_EQ(where(std::string(kGroupWithMap) + "  size = -4096\n"), "6:10: negative size '-4096'");
  EXPECT_EQ(where(std::string(kGroupWithMap) + "  size = \"3Gb\"\n"), "6:10: unknown unit 'Gb' in '3Gb'");
  EXPECT_EQ(where(std::string(kGroupWithMap) + "  size = 0\n"), "6:10: mapping 'm' has size 0");
  EXPECT_EQ(where(std::string(kGroupWithMap)), "3:3: missing key 'size' in [[group.map]]");
}

TEST(ScenarioErrors, ZeroCounts) {
  EXPECT_EQ(where("[[group]]\nname = \"g\"\ncount = 0\n"), "3:9: 'count' in [[group]] must be between 1 and 4194304, not 0");
  EXPECT_EQ(where("[[group]]\nname = \"g\"\n[[phase]]\naction = \"fork\"\ninto = \"k\"\nchildren = 0\n"),
            "6:12: 'children' in [[phase]] must be between 1 and 65536, not 0");
  EXPECT_EQ(where("[[group]]\nname = \"g\"\n[[phase]]\naction = \"exit\"\nprocesses = 0\n"),
            "5:13: 'processes' in [[phase]] must be between 1 and 4194304, not 0");
  EXPECT_EQ(where("[[group]]\nname = \"g\"\ncount = 2\n[[phase]]\naction = \"exit\"\nprocesses = 3\n"),
            "6:13: 'processes' is 3 but only 2 processes are live");
}

// mshare regions: where the profile has them, what size, and how they are mapped. The
// unit is P4D_SIZE (mshare_align), derived from the profile's paging format: one PGD
// entry (512 GiB) on x86-64 4-level.
TEST(ScenarioErrors, MshareRegions) {
  const auto prof = find_profile("linux-6.18-mshare");
  ASSERT_TRUE(prof.ok());
  const bytes unit = mshare_align(prof.value().paging);
  const int pud = prof.value().paging.index_of(level::pud);
  ASSERT_GE(pud, 1);
  ASSERT_EQ(unit, prof.value().paging.at(pud - 1).span()) << "one entry of the level above the PUD tables";
  const std::string head = "[kernel]\nprofile = \"linux-6.18-mshare\"\n";
  const std::string obj = fmt::format("[[object]]\nname = \"sga\"\nsize = {}\nmshare = true\n", 2 * unit);
  EXPECT_EQ(where(obj), "4:10: object 'sga': linux-6.18 has no mshare (msharefs regions are in linux-6.18-mshare)");
  // msharefs_set_size: a size that is not a multiple of mshare_align is -EINVAL (no rounding).
  EXPECT_EQ(where(head + fmt::format("[[object]]\nname = \"sga\"\nsize = {}\nmshare = true\n", unit + unit / 2)),
            fmt::format("5:8: object 'sga': an mshare region's size must be a multiple of {} (mshare_align, P4D_SIZE: "
                        "msharefs_set_size), not {} bytes",
                        huge_size_text(unit), unit + unit / 2));
  // hugetlb inside a region (v3 20/22): the region's rules first, then hugetlb's.
  EXPECT_EQ(where(head + "[[object]]\nname = \"h\"\nkind = \"hugetlb\"\nsize = \"1GiB\"\nmshare = true\n"),
            fmt::format("6:8: object 'h': an mshare region's size must be a multiple of {} (mshare_align, P4D_SIZE: "
                        "msharefs_set_size), not {} bytes",
                        huge_size_text(unit), GiB));
  const std::string huge = fmt::format("[[object]]\nname = \"sga\"\nkind = \"hugetlb\"\nsize = {}\nmshare = true\n", unit);
  EXPECT_EQ(where(head + huge + "page_size = \"4MiB\"\n"),
            "8:13: hugetlb object 'sga': linux-6.18-mshare has no hugetlb pages of 4194304 bytes (it has 2 MiB, 1 GiB)");
  // Accepted, with 2 MiB and 1 GiB pages: mapped whole, shared, MAP_NORESERVE (the pool
  // need not hold the whole region).
  const std::string huge_grp = "[[group]]\nname = \"c\"\ncount = 2\n  [[group.map]]\n  name = \"m\"\n  object = \"sga\"\n"
                               "  shared = true\n  noreserve = true\n[[phase]]\naction = \"touch\"\nmap = \"m\"\n"
                               "length = \"4GiB\"\n";
  for (const char* ps : {"", "page_size = \"1GiB\"\n"}) {
    const op_stream ops = gen(head + "[machine]\nhugepages = { \"2MiB\" = 2048 }\n" + huge + ps + huge_grp);
    uint64_t maps = 0;
    for (const op& o : ops.ops) maps += o.kind == op_kind::mmap && o.object == 0 && o.noreserve && o.len == unit;
    EXPECT_EQ(maps, 2u) << ps;
  }
  const std::string grp = "[[group]]\nname = \"c\"\n  [[group.map]]\n  name = \"m\"\n  object = \"sga\"\n";
  EXPECT_EQ(where(head + obj + grp),
            "11:12: mshare region 'sga' is mapped MAP_SHARED only (\"mshare won't support mapping objects in it with "
            "MAP_PRIVATE\", Yznaga, 2026-02-23)");
  EXPECT_EQ(where(head + obj + grp + fmt::format("  shared = true\n  size = {}\n", unit)),
            fmt::format("13:10: mshare region 'sga' is mapped whole ({} bytes at offset 0), as its processes mmap the "
                        "msharefs file",
                        2 * unit));
  // msharefs_get_unmapped_area: MAP_FIXED at an address not IS_ALIGNED to mshare_align is
  // -EINVAL; here 1 GiB-aligned, the old rule's unit, and still refused.
  const vaddr addr = 32 * unit + prof.value().paging.at(pud).span();
  EXPECT_EQ(where(head + obj + grp + fmt::format("  shared = true\n  addr = \"{:#x}\"\n", addr)),
            fmt::format("13:10: mshare region 'sga' must be mapped on a {} (P4D_SIZE) boundary, not at {:#x}",
                        huge_size_text(unit), addr));
}

TEST(ScenarioErrors, UnknownNames) {
  EXPECT_EQ(where("[[object]]\nname = \"o\"\nsize = 4096\n[[group]]\nname = \"g\"\n  [[group.map]]\n  name = \"m\"\n  object = \"sgaa\"\n"),
            "8:12: unknown object 'sgaa' (objects: anon, o)");
  EXPECT_EQ(where(std::string(kGroupWithMap) + "  size = 4096\n[[phase]]\ngroup = \"gg\"\naction = \"exit\"\n"),
            "8:9: unknown group 'gg' (groups: g)");
  EXPECT_EQ(where(std::string(kGroupWithMap) + "  size = 4096\n[[phase]]\naction = \"touch\"\nmap = \"mm\"\n"),
            "9:7: unknown mapping 'mm': process 1 (group 'g') has no such mapping");
  EXPECT_EQ(where("[kernel]\nprofile = \"linux-9\"\n"),
            "2:11: unknown kernel profile 'linux-9' (known: " + known_profiles() + ")");
  EXPECT_EQ(where("[kernel.overrides]\nfault_around_bytes = 3\n"),
            "2:22: kernel override 'fault_around_bytes' must be 0 or a power of two >= 4096, not '3'");
  EXPECT_EQ(where("[[object]]\nname = \"anon\"\nsize = 1\n"),
            "2:8: 'anon' is reserved for private anonymous mappings; choose another object name");
  EXPECT_EQ(where("[[group]]\nname = \"g\"\n[[group]]\nname = \"g\"\n"), "4:8: duplicate group name 'g'");
  EXPECT_EQ(where("[[group]]\nname = \"a b\"\n"),
            "2:8: 'name' in [[group]] must be a name of letters, digits and _-.:/+, not 'a b'");
  EXPECT_EQ(where("[[group]]\nname = \"g\"\n[[phase]]\naction = \"jump\"\n"),
            "4:10: unknown action 'jump' (expected touch, fork, exit, munmap, mprotect, madvise, read, readv, write, fsync, "
            "msync, mremap, remap_file_pages or reclaim)");
}

TEST(ScenarioErrors, Mappings) {
  EXPECT_EQ(where(std::string(kGroupWithMap) + "  size = 4096\n  shared = true\n"),
            "7:12: shared anonymous mappings: declare a shm object");
  // Larger than the address space (x86-64 4-level: 128 TiB - 4 KiB).
  EXPECT_EQ(where(std::string(kGroupWithMap) + "  size = \"128TiB\"\n"),
            "6:10: mapping 'm' (140737488355328 bytes) is larger than the address space of linux-6.18 (task_size "
            "0x7ffffffff000)");
  // ... and of an overridden profile: i386 PAE has 3 GiB.
  EXPECT_EQ(where("[kernel.overrides]\npaging = \"i386-pae\"\n" + std::string(kGroupWithMap) + "  size = \"3GiB\"\n"),
            "8:10: mapping 'm' (3221225472 bytes) is larger than the address space of linux-6.18 (task_size 0xc0000000)");
  EXPECT_EQ(where(std::string(kGroupWithMap) + "  size = \"1MiB\"\n  addr = \"0x8000\"\n"),
            "7:10: fixed mapping 'm' [0x8000, 0x108000) is outside the user address space [0x10000, 0x7ffffffff000) of "
            "linux-6.18");
  EXPECT_EQ(where(std::string(kGroupWithMap) + "  size = \"1MiB\"\n  addr = \"0x7fffffff0000\"\n"),
            "7:10: fixed mapping 'm' [0x7fffffff0000, 0x8000000f0000) is outside the user address space [0x10000, "
            "0x7ffffffff000) of linux-6.18");
  EXPECT_EQ(where(std::string(kGroupWithMap) + "  size = \"4MiB\"\n  addr = \"0x200000000000\"\n" +
                  "  [[group.map]]\n  name = \"n\"\n  object = \"anon\"\n  size = \"2MiB\"\n  addr = \"0x200000200000\"\n"),
            "12:10: fixed mapping 'n' [0x200000200000, 0x200000400000) overlaps fixed mapping 'm' [0x200000000000, "
            "0x200000400000) in group 'g'");
  const std::string obj = "[[object]]\nname = \"o\"\nsize = \"4MiB\"\n[[group]]\nname = \"g\"\n  [[group.map]]\n  name = \"m\"\n  object = \"o\"\n";
  EXPECT_EQ(where(obj + "  offset = \"2MiB\"\n  size = \"3MiB\"\n"),
            "10:10: offset + size (2097152 + 3145728) is beyond the end of object 'o' (4194304 bytes)");
  EXPECT_EQ(where(obj + "  offset = \"4MiB\"\n"), "9:12: offset 4194304 is beyond the end of object 'o' (4194304 bytes)");
  EXPECT_EQ(where(obj + "  offset = 100\n"), "9:12: 'offset' in [[group.map]] must be a multiple of 4KiB, not 100");
  EXPECT_EQ(where(obj + "  align = \"3MiB\"\n"), "9:11: 'align' in [[group.map]] must be a power of two >= 4KiB, not 3145728");
  EXPECT_EQ(where(obj + "  align = \"2MiB\"\n  phase = \"2MiB\"\n"), "10:11: 'phase' (2097152) must be less than 'align' (2097152)");
  EXPECT_EQ(where(obj + "prot = \"wx\"\n"), "9:8: 'prot' in [[group.map]] must be \"r\", \"rw\" or \"none\", not 'wx'");
}

TEST(ScenarioErrors, Phases) {
  const std::string base = std::string(kGroupWithMap) + "  size = \"8MiB\"\n[[phase]]\naction = \"touch\"\nmap = \"m\"\n";
  EXPECT_EQ(where(base + "pattern = \"stride\"\nstride = \"3MiB\"\n"),
            "11:10: 'stride' in [[phase]] must be a power of two >= 4KiB, not 3145728");
  EXPECT_EQ(where(base + "pattern = \"stride\"\n"), "7:1: missing key 'stride' in [[phase]]");
  EXPECT_EQ(where(base + "pattern = \"uniform\"\nfraction = 1.5\n"),
            "11:12: 'fraction' for a uniform touch must be in (0, 1], not 1.5");
  EXPECT_EQ(where(base + "pattern = \"uniform\"\nfraction = 0\n"),
            "11:12: 'fraction' for a uniform touch must be in (0, 1], not 0");
  EXPECT_EQ(where(base + "pattern = \"zipf\"\nfraction = 101\n"),
            "11:12: 'fraction' for a zipf touch must be in (0, 100], not 101");
  EXPECT_EQ(where(base + "fraction = 0.5\n"), "10:12: 'fraction' applies only to pattern = \"uniform\" or \"zipf\"");
  EXPECT_EQ(where(base + "pattern = \"random\"\n"),
            "10:11: unknown pattern 'random' (expected sequential, stride, uniform or zipf)");
  EXPECT_EQ(where(base + "offset = \"8MiB\"\n"), "10:10: offset 8388608 is beyond the end of mapping 'm' (8388608 bytes)");
  EXPECT_EQ(where(base + "offset = \"4MiB\"\nlength = \"6MiB\"\n"),
            "11:10: offset + length (4194304 + 6291456) is beyond the end of mapping 'm' (8388608 bytes)");
  EXPECT_EQ(where(base + "children = 2\n"), "10:1: key 'children' does not apply to action 'touch'");
}

// `ranges` (what inspect --scenario writes): one touch op per range per process, in order.
TEST(Scenario, TouchRangesBecomeOneTouchEach) {
  op_stream s = gen("[[group]]\nname = \"g\"\ncount = 2\n  [[group.map]]\n  name = \"m\"\n  object = \"anon\"\n  size = \"8MiB\"\n[[phase]]\naction = \"touch\"\nmap = \"m\"\n"
                    "write = true\nranges = [[0, 4096], [\"2MiB\", \"1MiB\"], [0x700000, 0x100000]]\n");
  std::vector<std::tuple<uint32_t, bytes, bytes>> touches;
  for (const op& o : s.ops)
    if (o.kind == op_kind::touch) {
      EXPECT_TRUE(o.write);
      EXPECT_EQ(o.pattern, touch_pattern::all);
      touches.emplace_back(o.pid, o.off, o.len);
    }
  const std::vector<std::tuple<uint32_t, bytes, bytes>> want = {
      {1, 0, 4096}, {1, 2 << 20, 1 << 20}, {1, 7 << 20, 1 << 20}, {2, 0, 4096}, {2, 2 << 20, 1 << 20}, {2, 7 << 20, 1 << 20}};
  EXPECT_EQ(touches, want);
}

// sample = false: the phase's ops run, no sample point follows them.
TEST(Scenario, PhaseWithoutSamplePoint) {
  const std::string base = std::string(kGroupWithMap) + "  size = \"8MiB\"\n[[phase]]\naction = \"touch\"\nmap = \"m\"\n";
  auto phases = [](const op_stream& s) {
    std::vector<std::string> names;
    for (const op& o : s.ops)
      if (o.kind == op_kind::phase) names.push_back(o.name);
    return names;
  };
  EXPECT_EQ(phases(gen(base + "sample = false\n[[phase]]\nname = \"last\"\naction = \"touch\"\nmap = \"m\"\n")),
            std::vector<std::string>{"last"});
  EXPECT_EQ(phases(gen(base)), std::vector<std::string>{"phase1"});
  EXPECT_EQ(where(base + "sample = 0\n"), "10:10: 'sample' in [[phase]] must be a boolean, not an integer");
}

TEST(ScenarioErrors, TouchRanges) {
  const std::string base = std::string(kGroupWithMap) + "  size = \"8MiB\"\n[[phase]]\naction = \"touch\"\nmap = \"m\"\n";
  EXPECT_EQ(where(base + "offset = 0\nranges = [[0, 4096]]\n"),
            "10:10: 'offset' does not go with 'ranges' (each range is [offset, length], touched in full)");
  EXPECT_EQ(where(base + "ranges = [[0, 4096, 1]]\n"), "10:11: each of 'ranges' in [[phase]] must be an [offset, length] pair");
  EXPECT_EQ(where(base + "ranges = []\n"), "10:10: 'ranges' in [[phase]] must be a non-empty array of [offset, length] pairs, not an array");
  EXPECT_EQ(where(base + "ranges = [[0, 100]]\n"),
            "10:11: a range of 'ranges' in [[phase]] must be a multiple of 4KiB and not empty, not [0, 100]");
  EXPECT_EQ(where(base + "ranges = [[0, 4096], [\"6MiB\", \"4MiB\"]]\n"),
            "10:10: offset + length (6291456 + 4194304) is beyond the end of mapping 'm' (8388608 bytes)");
}

TEST(ScenarioErrors, GroupsThatDoNotExistYetOrAreEmpty) {
  const std::string base = "[[group]]\nname = \"g\"\n";
  EXPECT_EQ(where(base + "[[phase]]\ngroup = \"kids\"\naction = \"exit\"\n[[phase]]\nname = \"spawn\"\ngroup = \"g\"\naction = \"fork\"\ninto = \"kids\"\n"),
            "4:9: group 'kids' does not exist yet: phase 'spawn' forks it later");
  EXPECT_EQ(where(base + "[[phase]]\naction = \"exit\"\n[[phase]]\nname = \"again\"\ngroup = \"g\"\naction = \"exit\"\n"),
            "7:9: group 'g' has no live processes");
  EXPECT_EQ(where(base + "[[phase]]\naction = \"exit\"\n[[phase]]\nname = \"again\"\naction = \"exit\"\n"),
            "5:1: phase 'again': no live processes");
  EXPECT_EQ(where(base + "[[phase]]\naction = \"fork\"\ninto = \"g\"\n"), "5:8: group 'g' already exists");
  EXPECT_EQ(where(base + "[[phase]]\nname = \"p\"\naction = \"exit\"\n[[phase]]\nname = \"p\"\naction = \"exit\"\n"),
            "7:8: duplicate phase name 'p'");
}

// --- loading ------------------------------------------------------------------------

TEST(LoadScenario, UnknownNameListsBuiltins) {
  result<op_stream> r = load_scenario("no/such-scenario");
  ASSERT_FALSE(r.ok());
  std::string known;
  for (const auto& b : builtin_scenarios()) known += (known.empty() ? "" : ", ") + std::string(b.name);
  EXPECT_EQ(r.error().message(),
            "no scenario file or built-in scenario named 'no/such-scenario' (built-in: " + known + ")");
  EXPECT_EQ(r.error().exit_code(), 2);
}

TEST(LoadScenario, BuiltinByNameWithOrWithoutExtension) {
  ASSERT_NE(find_builtin("validate/anon-64m"), nullptr);
  result<op_stream> a = load_scenario("validate/anon-64m");
  result<op_stream> b = load_scenario("validate/anon-64m.toml");
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->source, "validate/anon-64m");
  EXPECT_EQ(write_trace(*a), write_trace(*b));
}

TEST(LoadScenario, FileOnDisk) {
  const std::string path = testing::TempDir() + "/vmlab_scenario_test.toml";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("[[group]]\nname = \"g\"\ncount = 3\n", f);
    std::fclose(f);
  }
  result<op_stream> r = load_scenario(path);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->source, "vmlab_scenario_test");
  EXPECT_EQ(r->ops.size(), 3u);
  std::remove(path.c_str());
}

// Every built-in scenario parses; the validation matrix stays inside its budget
// (each run live on a 24 GiB host: < 8 GiB of memory the workload can touch).
TEST(BuiltinScenarios, AllParseAndValidateOnesFitTheHost) {
  size_t validate = 0;
  for (const auto& b : builtin_scenarios()) {
    result<op_stream> r = load_scenario(std::string(b.name));
    ASSERT_TRUE(r.ok()) << b.name << ": " << r.error().to_string();
    if (std::string_view(b.name).substr(0, 9) != "validate/") continue;
    EXPECT_EQ(r->machine.profile, "linux-6.18") << b.name;  // the host's kernel
    ++validate;
    // Upper bound on touched memory: shared objects once, private mappings per process
    // (a child's COW copies count again).
    bytes bound = 0;
    for (const auto& o : r->objects) bound += o.size;
    std::map<uint32_t, bytes> priv;
    for (const op& o : r->ops) {
      if (o.kind == op_kind::mmap && !o.shared) priv[o.pid] += o.len;
      if (o.kind == op_kind::fork) priv[o.child] = priv[o.pid];
    }
    for (const auto& [pid, b2] : priv) bound += b2;
    EXPECT_LT(bound, 8 * GiB) << b.name;
  }
  EXPECT_GE(validate, 18u);
}

}  // namespace
}  // namespace vmlab

// --- I/O phases (issue 9) ----------------------------------------------------------------

namespace vmlab {
namespace {

const char* kIo = R"([[object]]
name = "d"
kind = "file"
size = "1MiB"
[[group]]
name = "g"
  [[group.map]]
  name = "m"
  object = "anon"
  size = "512KiB"
)";  // 10 lines: a phase starts on line 11

TEST(ScenarioIo, ReadvPhaseBecomesCallsThatWrapTheBuffer) {
  result<op_stream> r = parse_scenario(std::string(kIo) + "[[phase]]\naction = \"readv\"\nobject = \"d\"\nrequest = \"256KiB\"\n"
                                                          "iovecs = 16\nmap = \"m\"\ndirect = true\n",
                                       "t.toml");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  std::vector<op> io;
  for (const op& o : r->ops)
    if (o.kind == op_kind::readv) io.push_back(o);
  ASSERT_EQ(io.size(), 4u);  // 1 MiB in 256 KiB calls
  for (size_t i = 0; i < io.size(); ++i) {
    EXPECT_EQ(io[i].obj_off, i * 256 * KiB);
    EXPECT_EQ(io[i].len, 256 * KiB);
    EXPECT_EQ(io[i].off, (i % 2) * 256 * KiB);  // a 512 KiB buffer holds two calls
    EXPECT_EQ(io[i].count, 16u);
    EXPECT_TRUE(io[i].buffer);
    EXPECT_TRUE(io[i].direct);
  }
}

TEST(ScenarioIo, ReadWriteFsyncMsync) {
  result<op_stream> r = parse_scenario(std::string(kIo) +
                                           "[[phase]]\naction = \"write\"\nobject = \"d\"\nfile_offset = \"64KiB\"\nlength = \"64KiB\"\n"
                                           "[[phase]]\naction = \"fsync\"\nobject = \"d\"\n"
                                           "[[phase]]\naction = \"read\"\nobject = \"d\"\n"
                                           "[[phase]]\naction = \"msync\"\nmap = \"m\"\n",
                                       "t.toml");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  std::vector<op_kind> kinds;
  for (const op& o : r->ops)
    if (o.kind != op_kind::phase && o.kind != op_kind::spawn && o.kind != op_kind::mmap) kinds.push_back(o.kind);
  EXPECT_EQ(kinds, (std::vector<op_kind>{op_kind::write, op_kind::fsync, op_kind::read, op_kind::msync}));
  for (const op& o : r->ops)
    if (o.kind == op_kind::write) {
      EXPECT_EQ(o.obj_off, 64 * KiB);
      EXPECT_EQ(o.len, 64 * KiB);
      EXPECT_FALSE(o.buffer);
    } else if (o.kind == op_kind::read) {
      EXPECT_EQ(o.len, 1 * MiB);  // to the end of the object, one call
    }
}

// A reclaim phase (issue 9) is one kernel-wide op, its size optional.
TEST(ScenarioIo, ReclaimPhase) {
  result<op_stream> r = parse_scenario(std::string(kIo) + "[[phase]]\naction = \"reclaim\"\nsize = \"64KiB\"\n"
                                                          "[[phase]]\naction = \"reclaim\"\n",
                                       "t.toml");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  std::vector<op> rec;
  for (const op& o : r->ops)
    if (o.kind == op_kind::reclaim) rec.push_back(o);
  ASSERT_EQ(rec.size(), 2u);
  EXPECT_EQ(rec[0].len, 64 * KiB);
  EXPECT_EQ(rec[1].len, 0u);
}

TEST(ScenarioIo, ReclaimPhaseErrors) {
  const std::string h = std::string(kIo) + "[[phase]]\naction = \"reclaim\"\n";  // keys from line 13
  EXPECT_EQ(where(h + "size = \"0\"\n"), "13:8: 'size' in [[phase]] must not be 0");
  EXPECT_EQ(where(h + "group = \"g\"\n"), "13:1: key 'group' does not apply to action 'reclaim'");
  EXPECT_EQ(where(h + "processes = 1\n"), "13:1: key 'processes' does not apply to action 'reclaim'");
  EXPECT_EQ(where(h + "size = \"1000\"\n").rfind("13:8: ", 0), 0u) << where(h + "size = \"1000\"\n");
}

TEST(ScenarioIo, ErrorsNameTheKey) {
  const std::string h = std::string(kIo) + "[[phase]]\n";  // keys from line 12
  EXPECT_EQ(where(h + "action = \"read\"\n"), "11:1: missing key 'object' in [[phase]]");
  EXPECT_EQ(where(h + "action = \"read\"\nobject = \"x\"\n"), "13:10: unknown object 'x'");
  EXPECT_EQ(where(h + "action = \"readv\"\nobject = \"d\"\nmap = \"m\"\n"), "11:1: missing key 'iovecs' in [[phase]]");
  EXPECT_EQ(where(h + "action = \"readv\"\nobject = \"d\"\nmap = \"m\"\niovecs = 2000\n"),
            "15:10: 'iovecs' in [[phase]] must be between 1 and 1024, not 2000");
  EXPECT_EQ(where(h + "action = \"read\"\nobject = \"d\"\nrequest = \"384KiB\"\n"),
            "14:11: length 1048576 is not a whole number of requests of 393216 bytes");
  EXPECT_EQ(where(h + "action = \"read\"\nobject = \"d\"\nwrite = true\n"), "14:1: key 'write' does not apply to action 'read'");
  EXPECT_EQ(where(h + "action = \"read\"\nobject = \"d\"\nfile_offset = \"512KiB\"\nlength = \"1MiB\"\n"),
            "15:10: read: [524288, +1048576) is beyond the end of object 'd' (1048576 bytes)");
  EXPECT_EQ(where(h + "action = \"readv\"\nobject = \"d\"\niovecs = 4\n"), "11:1: missing key 'map' in [[phase]]");
  EXPECT_EQ(where(h + "action = \"read\"\nobject = \"d\"\noffset = \"4KiB\"\n"),
            "14:10: 'offset' is the buffer's offset in 'map': give 'map' too");
}

// A file mapped shared by a group of two; a phase starts on line 13.
const char* kRemap = R"([[object]]
name = "d"
kind = "file"
size = "8MiB"
[[group]]
name = "g"
count = 2
  [[group.map]]
  name = "m"
  object = "d"
  shared = true
  size = "4MiB"
)";

// mremap phases carry the new length, MREMAP_MAYMOVE and MREMAP_FIXED; later phases see
// the new size (a touch to the end covers it; one beyond it is an error), and a forked
// child inherits it.
TEST(ScenarioMremap, PhasesBecomeMremapOpsAndLaterPhasesSeeTheNewSize) {
  const op_stream s = gen(std::string(kRemap) +
                          "[[phase]]\naction = \"mremap\"\nmap = \"m\"\nsize = \"6MiB\"\nmaymove = true\n"
                          "[[phase]]\naction = \"touch\"\nmap = \"m\"\n"
                          "[[phase]]\naction = \"mremap\"\nprocesses = 1\nmap = \"m\"\nsize = \"2MiB\"\n"
                          "address = \"0x40000000\"\n"
                          "[[phase]]\naction = \"fork\"\ngroup = \"g\"\nprocesses = 1\ninto = \"kids\"\n"
                          "[[phase]]\naction = \"touch\"\ngroup = \"kids\"\nmap = \"m\"\n");
  std::vector<op> remaps, touches;
  for (const op& o : s.ops) {
    if (o.kind == op_kind::mremap) remaps.push_back(o);
    if (o.kind == op_kind::touch) touches.push_back(o);
  }
  ASSERT_EQ(remaps.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(remaps[i].pid, uint32_t(i + 1));
    EXPECT_EQ(remaps[i].len, 6 * MiB);
    EXPECT_TRUE(remaps[i].maymove);
    EXPECT_FALSE(remaps[i].fixed);
  }
  EXPECT_EQ(remaps[2].pid, 1u);
  EXPECT_EQ(remaps[2].len, 2 * MiB);
  EXPECT_TRUE(remaps[2].fixed && remaps[2].maymove);  // an address implies MREMAP_MAYMOVE
  EXPECT_EQ(remaps[2].addr, vaddr{1} << 30);
  ASSERT_EQ(touches.size(), 3u);
  EXPECT_EQ(touches[0].len, 6 * MiB);
  EXPECT_EQ(touches[1].len, 6 * MiB);
  EXPECT_EQ(touches[2].pid, 3u);      // the child of pid 1
  EXPECT_EQ(touches[2].len, 2 * MiB);  // its parent's mapping as the last mremap left it
  // The trace form of the stream reads back to the same ops.
  result<op_stream> back = parse_trace(write_trace(s), "t.trace");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  back->source = s.source;
  EXPECT_EQ(write_trace(*back), write_trace(s));
}

TEST(ScenarioMremap, RemapFilePagesPhase) {
  const op_stream s = gen(std::string(kRemap) + "[[phase]]\naction = \"remap_file_pages\"\nmap = \"m\"\n"
                                                "offset = \"1MiB\"\nlength = \"1MiB\"\nfile_offset = \"6MiB\"\n");
  std::vector<op> r;
  for (const op& o : s.ops)
    if (o.kind == op_kind::remap_file_pages) r.push_back(o);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].off, 1 * MiB);
  EXPECT_EQ(r[0].len, 1 * MiB);
  EXPECT_EQ(r[0].obj_off, 6 * MiB);
}

TEST(ScenarioMremap, ErrorsNameTheKey) {
  const std::string h = std::string(kRemap) + "[[phase]]\n";  // keys from line 14
  EXPECT_EQ(where(h + "action = \"mremap\"\nmap = \"m\"\n"), "13:1: missing key 'size' in [[phase]]");
  EXPECT_EQ(where(h + "action = \"mremap\"\nsize = \"1MiB\"\n"), "13:1: missing key 'map' in [[phase]]");
  EXPECT_EQ(where(h + "action = \"mremap\"\nmap = \"m\"\nsize = \"0\"\n"), "16:8: 'size' in [[phase]] must not be 0");
  EXPECT_EQ(where(h + "action = \"mremap\"\nmap = \"x\"\nsize = \"1MiB\"\n"),
            "15:7: unknown mapping 'x': process 1 (group 'g') has no such mapping");
  EXPECT_EQ(where(h + "action = \"mremap\"\nmap = \"m\"\nsize = \"1MiB\"\noffset = 0\n"),
            "17:1: key 'offset' does not apply to action 'mremap'");
  EXPECT_EQ(where(h + "action = \"mremap\"\nmap = \"m\"\nsize = \"1MiB\"\naddress = \"0x1000\"\n"),
            "17:11: mremap: the target [0x1000, 0x101000) must start on a page boundary inside the user address space "
            "[0x10000, 0x7ffffffff000)");
  EXPECT_EQ(where(h + "action = \"mremap\"\nmap = \"m\"\nsize = \"200TiB\"\n"),
            "16:8: mremap: 219902325555200 bytes is larger than the address space");
  EXPECT_EQ(where(h + "action = \"mremap\"\nmap = \"m\"\nsize = \"12MiB\"\nmaymove = true\n"),
            "16:8: mremap of 'm' to 12582912 bytes would map past the end of object 'd' (8388608 bytes from offset 0; "
            "vmlab models no page beyond an object's end)");
  // remap_file_pages: a shared mapping of an object, inside the object.
  EXPECT_EQ(where(h + "action = \"remap_file_pages\"\nmap = \"m\"\n"), "13:1: missing key 'file_offset' in [[phase]]");
  EXPECT_EQ(where(h + "action = \"remap_file_pages\"\nmap = \"m\"\nfile_offset = \"6MiB\"\n"),
            "16:15: file_offset + length (6291456 + 4194304) is beyond the end of object 'd' (8388608 bytes)");
  EXPECT_EQ(where(std::string(kIo) + "[[phase]]\naction = \"remap_file_pages\"\nmap = \"m\"\nfile_offset = 0\n"),
            "13:7: remap_file_pages needs a shared mapping of an object; 'm' is anonymous");
}

}  // namespace
}  // namespace vmlab
