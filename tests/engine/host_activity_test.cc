// The rest of the host as the live engine reads it (captured /proc text, no live host):
// which processes count, what their changes add up to in PageTables, and when they make
// the slab caches unmeasurable.
#include <gtest/gtest.h>

#include "engine/live/host_activity.h"

namespace vmlab::live {
namespace {

std::string status_text(uint64_t vmpte_kb) {
  return "Name:\tx\nVmRSS:\t  1000 kB\nVmPTE:\t" + std::to_string(vmpte_kb) + " kB\nRssAnon:\t 1 kB\n";
}

std::string maps_text(int vmas) {
  std::string out;
  for (int i = 0; i < vmas; ++i) out += "7f0000" + std::to_string(100 + i) + "000-7f0000" + std::to_string(100 + i) + "fff rw-p 00000000 00:00 0\n";
  return out;
}

void add_proc(text_proc_source& src, int pid, uint64_t vmpte_kb, int vmas) {
  src.set("/proc/" + std::to_string(pid) + "/status", status_text(vmpte_kb));
  src.set("/proc/" + std::to_string(pid) + "/maps", maps_text(vmas));
}

TEST(HostActivity, OthersAreEveryProcessWithAnMmButTheExcluded) {
  text_proc_source src;
  add_proc(src, 1, 96, 40);
  add_proc(src, 77, 48, 20);   // a worker: excluded
  add_proc(src, 123, 200, 90);
  src.set("/proc/2/status", "Name:\tkthreadd\nState:\tS (sleeping)\n");  // a kernel thread: no mm
  src.set("/proc/meminfo", "MemTotal: 1 kB\n");                          // not a process
  auto o = read_others(src, {77}, true);
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  ASSERT_EQ(o->procs.size(), 2u);
  EXPECT_EQ(o->procs.at(1).vmpte, 96 * KiB);
  EXPECT_EQ(o->procs.at(1).vmas, 40u);
  EXPECT_EQ(o->procs.at(123).vmpte, 200 * KiB);
  EXPECT_EQ(o->procs.at(123).vmas, 90u);
}

TEST(HostActivity, ChangesAddUpAsPageTablesCountsThem) {
  text_proc_source src;
  add_proc(src, 1, 96, 40);
  add_proc(src, 10, 200, 90);
  add_proc(src, 11, 12, 30);
  auto before = read_others(src, {}, true);
  ASSERT_TRUE(before.ok());
  // pid 10 grows by 2052 kB (a 1 GiB touch), 11 exits, 12 starts with 16 kB of VmPTE.
  add_proc(src, 10, 2252, 91);
  src.erase("/proc/11/status");
  src.erase("/proc/11/maps");
  add_proc(src, 12, 16, 25);
  auto after = read_others(src, {}, true);
  ASSERT_TRUE(after.ok());
  const bytes pgd = 4096;  // 6.14+ without PTI: PageTables counts each PGD
  const others_change c = compare_others(before.value(), after.value(), pgd);
  EXPECT_EQ(c.started, 1u);
  EXPECT_EQ(c.gone, 1u);
  EXPECT_EQ(c.changed, 1u);
  EXPECT_EQ(c.vmas_changed, 1u);
  EXPECT_EQ(c.vmpte, int64_t((2052 + 16 - 12) * KiB));
  // PageTables moves by the VmPTE changes plus one PGD per process started, less one per gone.
  EXPECT_EQ(c.page_tables, int64_t((2052 + 16 - 12) * KiB));
  EXPECT_EQ(c.vmas, 1 + 25 - 30);
  EXPECT_TRUE(c.slab_activity());
  EXPECT_EQ(c.describe(), "1 other process started, 1 exited, 1 changed (VmPTE +2056 kB, VMAs -4)");

  // Page tables alone (a process faulting in memory) touch no slab cache.
  add_proc(src, 10, 4304, 91);
  auto later = read_others(src, {}, true);
  const others_change d = compare_others(after.value(), later.value(), pgd);
  EXPECT_TRUE(d.any());
  EXPECT_FALSE(d.slab_activity());
  EXPECT_EQ(d.page_tables, int64_t(2052 * KiB));
  EXPECT_EQ(compare_others(later.value(), later.value(), pgd).describe(), "no other process changed");
}

TEST(HostActivity, PgdBytesFollowTheHostKernel) {
  text_proc_source src;
  src.set("/sys/devices/system/cpu/vulnerabilities/meltdown", "Not affected\n");
  src.set("/proc/sys/kernel/osrelease", "6.13.7-arch1\n");
  EXPECT_EQ(host_pgd_page_table_bytes(src), 0u);  // PGDs entered PageTables in 6.14
  src.set("/proc/sys/kernel/osrelease", "6.14.0\n");
  EXPECT_EQ(host_pgd_page_table_bytes(src), 4096u);
  src.set("/proc/sys/kernel/osrelease", "6.18.44-fc-v1147\n");
  src.set("/sys/devices/system/cpu/vulnerabilities/meltdown", "Mitigation: PTI\n");
  EXPECT_EQ(host_pgd_page_table_bytes(src), 8192u);  // PGD_ALLOCATION_ORDER 1
  src.set("/proc/sys/kernel/osrelease", "5.10.0-28-amd64\n");
  EXPECT_EQ(host_pgd_page_table_bytes(src), 0u);
}

}  // namespace
}  // namespace vmlab::live
