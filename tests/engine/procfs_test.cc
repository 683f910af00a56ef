// The procfs parsers on captured text (Linux 6.18 on this project's host, and older forms).
#include "engine/live/procfs.h"

#include <gtest/gtest.h>

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
  EXPECT_EQ(s->rss_anon, 36u);
  EXPECT_EQ(s->rss_file, 453u);
  EXPECT_EQ(s->rss_shmem, 2u);
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
