// The procfs parsers on captured text (Linux 6.18 on this project's host, and older forms).
#include "engine/live/procfs.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace vmlab::live {
namespace {

constexpr const char* kMeminfo618 =
    "MemTotal:       24684020 kB\n"
    "MemFree:        24359516 kB\n"
    "MemAvailable:   24334296 kB\n"
    "Buffers:           10160 kB\n"
    "Cached:           221664 kB\n"
    "SwapCached:            0 kB\n"
    "Shmem:              8496 kB\n"
    "KernelStack:        3152 kB\n"
    "PageTables:         1644 kB\n"
    "SecPageTables:         0 kB\n"
    "NFS_Unstable:          0 kB\n"
    "HugePages_Total:       0\n"
    "Hugepagesize:       2048 kB\n";

constexpr const char* kStatus618 =
    "Name:\tcat\n"
    "Umask:\t0022\n"
    "State:\tR (running)\n"
    "VmPeak:\t    3776 kB\n"
    "VmRSS:\t    1956 kB\n"
    "RssAnon:\t     144 kB\n"
    "RssFile:\t    1812 kB\n"
    "RssShmem:\t       8 kB\n"
    "VmData:\t     292 kB\n"
    "VmPTE:\t      44 kB\n"
    "VmSwap:\t       0 kB\n"
    "HugetlbPages:\t       0 kB\n";

TEST(ProcfsTest, LineReaderGivesEachLineWithItsNumber) {
  for (std::string_view text : {"a\n\nccc\n", "a\n\nccc"}) {  // the last line with and without its '\n'
    line_reader lines(text);
    std::vector<std::string> got;
    for (std::string_view line; lines.next(line);) got.push_back(std::to_string(lines.number()) + ":" + std::string(line));
    EXPECT_EQ(got, (std::vector<std::string>{"1:a", "2:", "3:ccc"})) << text;
    EXPECT_EQ(lines.number(), 3u);
  }
  line_reader none("");
  std::string_view line;
  EXPECT_FALSE(none.next(line));
  EXPECT_EQ(none.number(), 0u);
}

TEST(ProcfsTest, MeminfoReadsPageTablesAndMemAvailableInBytes) {
  auto m = parse_meminfo(kMeminfo618);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->mem_total, 24684020ull * 1024);
  EXPECT_EQ(m->mem_available, 24334296ull * 1024);
  EXPECT_TRUE(m->has_mem_available);
  EXPECT_EQ(m->page_tables, 1644ull * 1024);  // not SecPageTables
  EXPECT_TRUE(m->has_page_tables);
}

TEST(ProcfsTest, MeminfoOfAnOldKernelHasNoMemAvailable) {
  auto m = parse_meminfo("MemTotal:      1035660 kB\nMemFree:         16224 kB\nPageTables:       512 kB\n");
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->has_mem_available);
  EXPECT_EQ(m->page_tables, 512ull * 1024);
}

TEST(ProcfsTest, MeminfoErrors) {
  EXPECT_FALSE(parse_meminfo("MemFree: 1 kB\n").ok());                 // no MemTotal
  EXPECT_FALSE(parse_meminfo("MemTotal: lots kB\n").ok());             // not a number
  EXPECT_FALSE(parse_meminfo("MemTotal: 5 MB\n").ok());                // unexpected unit
  EXPECT_FALSE(parse_meminfo("MemTotal: 99999999999999999999 kB\n").ok());  // overflow
  EXPECT_FALSE(parse_meminfo("").ok());
}

TEST(ProcfsTest, KeysMatchWholeNamesAtLineStart) {
  // "PageTables" must not match "SecPageTables", nor "VmPTE" a longer key.
  auto m = parse_meminfo("MemTotal: 4 kB\nSecPageTables: 100 kB\n");
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->has_page_tables);
  EXPECT_FALSE(parse_status("VmPTEx:\t4 kB\n").ok());
}

TEST(ProcfsTest, StatusGivesVmPteInBytesAndRssInPages) {
  auto s = parse_status(kStatus618);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->vmpte, 44ull * 1024);
  EXPECT_EQ(s->rss_anon, 144u * 1024);  // "RssAnon: 144 kB"
  EXPECT_EQ(s->rss_file, 1812u * 1024);
  EXPECT_EQ(s->rss_shmem, 8u * 1024);
}

TEST(ProcfsTest, StatusWithoutRssLinesOrVmPte) {
  auto s = parse_status("Name:\tx\nVmRSS:\t 100 kB\nVmPTE:\t  12 kB\n");  // 2.6-era: no Rss* split
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->vmpte, 12ull * 1024);
  EXPECT_EQ(s->rss_anon, 0u);
  auto k = parse_status("Name:\tkthreadd\nState:\tS (sleeping)\n");  // kernel thread
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().code(), status_code::io_error);
  EXPECT_NE(k.error().message().find("VmPTE"), std::string::npos);
}

TEST(ProcfsTest, StatMinfltIsFieldTen) {
  auto f = parse_stat_minflt(
      "7740 (cat) R 7729 7729 6683 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 106943 3133440 407\n");
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f.value(), 100u);
}

TEST(ProcfsTest, StatCommWithSpacesAndParentheses) {
  auto f = parse_stat_minflt("42 (a b) (c)) S 1 42 42 0 -1 4194560 12345 0 3 0 1 2 0 0 20 0 1 0 5 0 0\n");
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f.value(), 12345u);
}

// Any field by its proc(5) number: the state and the parent's pid after a comm with a
// space and a ')' in it.
TEST(ProcfsTest, StatFieldByNumber) {
  const char* stat = "42 (a b) (c)) S 17 42 42 0 -1 4194560 12345\n";
  auto state = parse_stat_field(stat, 3), ppid = parse_stat_field(stat, 4);
  ASSERT_TRUE(state.ok() && ppid.ok());
  EXPECT_EQ(state.value(), "S");
  EXPECT_EQ(ppid.value(), "17");
  auto past = parse_stat_field(stat, 11);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.error().message(), "malformed /proc/PID/stat: fewer than 11 fields");
}

TEST(ProcfsTest, StatErrors) {
  EXPECT_FALSE(parse_stat_minflt("42 no-parens S 1").ok());
  EXPECT_FALSE(parse_stat_minflt("42 (x) S 1 2 3\n").ok());
  EXPECT_FALSE(parse_stat_minflt("42 (x) S 1 2 3 0 -1 4 zz 0\n").ok());
}

TEST(ProcfsTest, ReadersGoThroughTheSource) {
  text_proc_source src;
  src.set("/proc/meminfo", kMeminfo618);
  src.set("/proc/77/status", kStatus618);
  src.set("/proc/77/stat", "77 (w) S 1 1 1 0 -1 0 9 0 0 0\n");
  auto m = read_meminfo(src);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->page_tables, 1644ull * 1024);
  auto s = read_status(src, 77);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->vmpte, 44ull * 1024);
  auto f = read_minflt(src, 77);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f.value(), 9u);
  auto gone = read_status(src, 78);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message().find("/proc/78/status"), std::string::npos);
  src.set("/proc/79/stat", "79 (w) S 1\n");
  auto bad = read_minflt(src, 79);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("/proc/79/stat"), std::string::npos);
}

// /proc/slabinfo of this project's 6.18 host (SLUB), abridged.
constexpr const char* kSlabinfo618 =
    "slabinfo - version: 2.1\n"
    "# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> "
    "<batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\n"
    "btrfs_ordered_extent      0      0    416   19    2 : tunables    0    0    0 : slabdata      0      0      0\n"
    "vm_area_struct      1112   1218    192   21    1 : tunables    0    0    0 : slabdata     58     58      0\n"
    "anon_vma_chain       707    832     64   64    1 : tunables    0    0    0 : slabdata     13     13      0\n"
    "anon_vma             475    507    104   39    1 : tunables    0    0    0 : slabdata     13     13      0\n"
    "mm_struct             40     40   1600   20    8 : tunables    0    0    0 : slabdata      2      2      0\n";

TEST(ProcfsTest, SlabinfoRowsParsedExactly) {
  auto r = parse_slabinfo(kSlabinfo618);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 5u);
  const slab_row& v = r->at(1);
  EXPECT_EQ(v.name, "vm_area_struct");
  EXPECT_EQ(v.active_objs, 1112u);
  EXPECT_EQ(v.num_objs, 1218u);
  EXPECT_EQ(v.objsize, 192u);
  EXPECT_EQ(v.objperslab, 21u);
  EXPECT_EQ(v.pagesperslab, 1u);
  EXPECT_EQ(v.active_slabs, 58u);
  EXPECT_EQ(v.num_slabs, 58u);
  EXPECT_EQ(v.limit, 0u);
  const slab_row& mm = r->at(4);
  EXPECT_EQ(mm.name, "mm_struct");
  EXPECT_EQ(mm.objsize, 1600u);
  EXPECT_EQ(mm.pagesperslab, 8u);
  EXPECT_EQ(r->at(0).name, "btrfs_ordered_extent");
  EXPECT_EQ(r->at(0).num_objs, 0u);
}

TEST(ProcfsTest, SlabinfoOfTheSlabAllocatorWithTunablesAndVersion20) {
  // 2.6.9 (SLAB, version 2.0): the tunables are SLAB's per-CPU array sizes; no trailing newline.
  auto r = parse_slabinfo(
      "slabinfo - version: 2.0\n"
      "# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <batchcount> "
      "<limit> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\n"
      "anon_vma\t1234 1582 12 290 1 : tunables 120 60 8 : slabdata 6 6 0");
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(r->at(0).name, "anon_vma");
  EXPECT_EQ(r->at(0).active_objs, 1234u);
  EXPECT_EQ(r->at(0).objperslab, 290u);
  EXPECT_EQ(r->at(0).limit, 120u);
  EXPECT_EQ(r->at(0).batchcount, 60u);
  EXPECT_EQ(r->at(0).sharedfactor, 8u);
  EXPECT_EQ(r->at(0).active_slabs, 6u);
}

TEST(ProcfsTest, SlabinfoStatisticsColumnsOnlyWithTheStatisticsHeader) {
  const std::string row =
      "vm_area_struct 10 20 192 21 1 : tunables 0 0 0 : slabdata 1 1 0 : globalstat 1 2 3 : cpustat 4 5 6 7\n";
  EXPECT_TRUE(parse_slabinfo("slabinfo - version: 2.1 (statistics)\n" + row).ok());
  auto r = parse_slabinfo("slabinfo - version: 2.1\n" + row);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("line 2"), std::string::npos) << r.error().message();
}

TEST(ProcfsTest, SlabinfoMalformedLinesNameTheLine) {
  const std::string head = "slabinfo - version: 2.1\n# name ...\n";
  struct bad_case { std::string text; std::string says; };
  const bad_case cases[] = {
      {"", "empty"},
      {"slabinfo - version: 1.1 (SMP)\nx 1 2 3 4 5 : 6 7\n", "unsupported /proc/slabinfo version '1.1'"},
      {"slabinfo - version: 3.0\n", "unsupported /proc/slabinfo version '3.0'"},
      {"name 1 2 3 4 5 : tunables 0 0 0 : slabdata 1 1 0\n", "line 1"},  // no version line
      {"slabinfo - version: 2.1 extra\n", "after the version"},
      {head + "vm_area_struct 1112 1218 192 21 1 : tunables 0 0 0 : slabdata 58 58\n", "line 3: expected 16 columns"},
      {head + "vm_area_struct 1112 1218 192 21 1 : tunables 0 0 0 : slabdata 58 58 0 9\n", "found 17"},
      {head + "vm_area_struct 1112 1218 192 21 1 ; tunables 0 0 0 : slabdata 58 58 0\n", "separators"},
      {head + "vm_area_struct 1112 1218 192 21 1 : tunable 0 0 0 : slabdata 58 58 0\n", "separators"},
      {head + "vm_area_struct -1 1218 192 21 1 : tunables 0 0 0 : slabdata 58 58 0\n", "column 2 of row 'vm_area_struct'"},
      {head + "vm_area_struct 1112 12x8 192 21 1 : tunables 0 0 0 : slabdata 58 58 0\n", "'12x8'"},
      {head + "vm_area_struct 1 2 4294967296 21 1 : tunables 0 0 0 : slabdata 58 58 0\n", "column 4"},  // > u32
      {head + "vm_area_struct 1 99999999999999999999 192 21 1 : tunables 0 0 0 : slabdata 58 58 0\n", "column 3"},
      {head + "vm_area_struct 5 4 192 21 1 : tunables 0 0 0 : slabdata 1 1 0\n", "more active objects"},
      {head + "ok 1 2 3 4 5 : tunables 0 0 0 : slabdata 1 1 0\nbroken\n", "line 4"},
  };
  for (const auto& c : cases) {
    auto r = parse_slabinfo(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().code(), status_code::io_error);
    EXPECT_NE(r.error().message().find(c.says), std::string::npos) << r.error().message() << "\n  for: " << c.text;
  }
  // Blank lines and CRLF endings are not errors.
  auto ok = parse_slabinfo(head + "\nvm_area_struct 1 2 192 21 1 : tunables 0 0 0 : slabdata 1 1 0\r\n\n");
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->size(), 1u);
}

TEST(ProcfsTest, SysSlabFilesAsSlabinfoWouldPrintThem) {
  auto r = parse_sys_slab("anon_vma_chain", {"702 N0=702\n", "832 N0=832\n", "13 N0=13\n", "64\n", "0\n", "64\n"});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->name, "anon_vma_chain");
  EXPECT_EQ(r->active_objs, 702u);
  EXPECT_EQ(r->num_objs, 832u);
  EXPECT_EQ(r->num_slabs, 13u);
  EXPECT_EQ(r->active_slabs, 13u);
  EXPECT_EQ(r->objperslab, 64u);
  EXPECT_EQ(r->pagesperslab, 1u);
  EXPECT_EQ(r->objsize, 64u);
  auto mm = parse_sys_slab("mm_struct", {"40 N0=30 N1=10\n", "40\n", "2\n", "20\n", "3\n", "1600\n"});
  ASSERT_TRUE(mm.ok()) << mm.error().message();
  EXPECT_EQ(mm->pagesperslab, 8u);
  // Malformed: a word, a bad per-node figure, an absurd order, an empty file.
  auto bad1 = parse_sys_slab("x", {"lots\n", "1\n", "1\n", "1\n", "0\n", "8\n"});
  ASSERT_FALSE(bad1.ok());
  EXPECT_NE(bad1.error().message().find("/sys/kernel/slab/x/objects"), std::string::npos) << bad1.error().message();
  EXPECT_FALSE(parse_sys_slab("x", {"1 junk\n", "1\n", "1\n", "1\n", "0\n", "8\n"}).ok());
  EXPECT_FALSE(parse_sys_slab("x", {"1\n", "1\n", "1\n", "1\n", "64\n", "8\n"}).ok());
  EXPECT_FALSE(parse_sys_slab("x", {"1\n", "1\n", "1\n", "", "0\n", "8\n"}).ok());
  EXPECT_FALSE(parse_sys_slab("x", {"9\n", "1\n", "1\n", "1\n", "0\n", "8\n"}).ok());  // more in use than total
}

TEST(ProcfsTest, MapsCountsVmasButNotTheVsyscallPage) {
  auto n = parse_maps_vma_count(
      "55d0c0a00000-55d0c0a02000 r--p 00000000 00:1f 123 /usr/bin/cat\n"
      "7ffd1c9e0000-7ffd1ca01000 rw-p 00000000 00:00 0                          [stack]\n"
      "7ffd1cbe7000-7ffd1cbeb000 r--p 00000000 00:00 0                          [vvar]\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n");
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(n.value(), 3u);
  EXPECT_EQ(parse_maps_vma_count("").value(), 0u);
  EXPECT_FALSE(parse_maps_vma_count("garbage\n").ok());
}

TEST(ProcfsTest, SlabCachesFromSlabinfoThenSysfs) {
  text_proc_source src;
  src.set("/proc/slabinfo", kSlabinfo618);
  auto r = read_slab_caches(src, {"mm_struct", "vm_area_struct"});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ(r->at(0).name, "mm_struct");
  EXPECT_EQ(r->at(1).active_objs, 1112u);
  // A cache without a row (merged into another) comes from its sysfs directory.
  auto missing = read_slab_caches(src, {"fs_cache"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("no slab cache 'fs_cache'"), std::string::npos) << missing.error().message();
  const char* files[] = {"objects", "total_objects", "slabs", "objs_per_slab", "order", "slab_size"};
  const char* values[] = {"702 N0=702\n", "832 N0=832\n", "13 N0=13\n", "64\n", "0\n", "64\n"};
  for (int i = 0; i < 6; ++i) src.set(std::string("/sys/kernel/slab/fs_cache/") + files[i], values[i]);
  auto merged = read_slab_caches(src, {"vm_area_struct", "fs_cache"});
  ASSERT_TRUE(merged.ok()) << merged.error().message();
  EXPECT_EQ(merged->at(1).name, "fs_cache");
  EXPECT_EQ(merged->at(1).num_objs, 832u);
  // No /proc/slabinfo at all: sysfs only.
  text_proc_source sys;
  for (int i = 0; i < 6; ++i) sys.set(std::string("/sys/kernel/slab/anon_vma_chain/") + files[i], values[i]);
  auto only = read_slab_caches(sys, {"anon_vma_chain"});
  ASSERT_TRUE(only.ok()) << only.error().message();
  EXPECT_EQ(only->at(0).active_objs, 702u);
  // A /proc/slabinfo that cannot be parsed is an error, not a reason to guess.
  src.set("/proc/slabinfo", "slabinfo - version: 2.1\nvm_area_struct 1 2\n");
  EXPECT_FALSE(read_slab_caches(src, {"vm_area_struct"}).ok());
}

TEST(ProcfsTest, HostSourceReadsRealFiles) {
  host_proc_source src;
  auto t = src.read("/proc/self/stat");
#if defined(__linux__)
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_TRUE(parse_stat_minflt(t.value()).ok());
#endif
  EXPECT_FALSE(src.read("/nonexistent/vmlab").ok());
}

}  // namespace
}  // namespace vmlab::live
