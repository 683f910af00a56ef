// inspect's parsing and attribution on captured text and fake scans: each rule of the
// attribution (a table per span an entry needs, shared between the VMAs that need it; an
// anonymous THP's deposited PTE table; hugetlb leaves at their level; shareable hugetlb
// PMD tables counted once against PageTables) on its own.
#include <gtest/gtest.h>

#include <map>

#include "engine/live/inspect.h"
#include "model/profile.h"

namespace vmlab::live {
namespace {

constexpr bytes kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;

class fake_pagemap final : public pagemap_source {
 public:
  std::map<int, std::vector<page_run>> runs;
  result<std::vector<page_run>> scan(int pid, vaddr, vaddr, bool&) override { return runs[pid]; }
};

std::string smaps_entry(vaddr s, vaddr e, const char* perms, uint64_t inode, const char* path, bytes kps = 4 * kKiB) {
  char head[256];
  std::snprintf(head, sizeof head, "%lx-%lx %s 00000000 00:01 %lu %s\n", (unsigned long)s, (unsigned long)e, perms,
                (unsigned long)inode, path);
  return std::string(head) + "Size: " + std::to_string((e - s) / kKiB) + " kB\nKernelPageSize: " +
         std::to_string(kps / kKiB) + " kB\nRss: 0 kB\nPss: 0 kB\nVmFlags: rd wr mr mw me\n";
}

kernel_profile host() { return find_profile("linux-6.18").value(); }

TEST(InspectParse, SmapsHeadersFieldsAndErrors) {
  auto v = parse_smaps(smaps_entry(0x400000, 0x600000, "r-xp", 12, "/usr/bin/x") +
                       smaps_entry(0x7f0000000000, 0x7f0000200000, "rw-s", 99, "/memfd:buf (deleted)", 2 * kMiB));
  ASSERT_TRUE(v.ok()) << v.error().to_string();
  ASSERT_EQ(v->size(), 2u);
  EXPECT_EQ(v->at(0).start, 0x400000u);
  EXPECT_EQ(v->at(0).path, "/usr/bin/x");
  EXPECT_FALSE(v->at(0).shared());
  EXPECT_EQ(v->at(1).path, "/memfd:buf (deleted)");
  EXPECT_TRUE(v->at(1).shared());
  EXPECT_EQ(v->at(1).kernel_page_size, 2 * kMiB);
  auto bad = parse_smaps("Rss: 4 kB\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "malformed /proc/PID/smaps line 1: a field before any VMA");
  auto order = parse_smaps(smaps_entry(0x600000, 0x700000, "r--p", 0, "") + smaps_entry(0x400000, 0x500000, "r--p", 0, ""));
  ASSERT_FALSE(order.ok());
  EXPECT_EQ(order.error().message(), "malformed /proc/PID/smaps line 7: VMAs out of order");
}

// Two VMAs in one 2 MiB window share its PTE table half and half; a third far away has its own
// PTE, PMD and PUD tables.
TEST(InspectAttribution, TablesAreSharedBetweenTheVmasThatNeedThem) {
  const kernel_profile p = host();
  process_inspection pi;
  auto add = [&pi](vaddr s, vaddr e, const char* perms, std::vector<page_run> runs) {
    vma_tables vt;
    vt.vma.start = s;
    vt.vma.end = e;
    vt.vma.perms = perms;
    vt.runs = std::move(runs);
    pi.vmas.push_back(vt);
  };
  add(0x200000, 0x300000, "r--p", {{0x200000, 0x201000}});
  add(0x300000, 0x400000, "rw-p", {{0x300000, 0x302000}});
  add(0x7f0000000000, 0x7f0000600000, "rw-p", {{0x7f0000000000, 0x7f0000600000}});  // 3 windows
  pi.status.vmpte = 4 * 4 * kKiB + 2 * 4 * kKiB + 2 * 4 * kKiB + 4 * kKiB;  // + one table MADV_DONTNEED left
  attribute_tables(p.paging, p.vmpte_levels, pi);
  EXPECT_EQ(pi.tables[size_t(level::pte)], 4u);
  EXPECT_EQ(pi.tables[size_t(level::pmd)], 2u);
  EXPECT_EQ(pi.tables[size_t(level::pud)], 2u);
  EXPECT_DOUBLE_EQ(pi.vmas[0].tables[size_t(level::pte)], 0.5);
  EXPECT_DOUBLE_EQ(pi.vmas[1].tables[size_t(level::pte)], 0.5);
  EXPECT_DOUBLE_EQ(pi.vmas[2].tables[size_t(level::pte)], 3.0);
  EXPECT_EQ(pi.vmas[2].present_pages, 6 * kMiB / (4 * kKiB));
  EXPECT_EQ(pi.attributed, 8 * 4 * kKiB);
  EXPECT_EQ(pi.residual, int64_t(4 * kKiB));
}

// An anonymous THP needs no PTE table in its PMD but has one deposited (counted in
// nr_ptes); a shmem THP has none; a 1 GiB hugetlb page is a PUD leaf.
TEST(InspectAttribution, HugeEntriesAtTheirLevelAndTheAnonymousDeposit) {
  const kernel_profile p = host();
  process_inspection pi;
  vma_tables anon;
  anon.vma.start = 0x40000000;
  anon.vma.end = 0x40400000;
  anon.vma.perms = "rw-p";
  anon.runs = {{0x40000000, 0x40400000, true, false}};
  vma_tables shmem;
  shmem.vma = {0x80000000, 0x80400000, "rw-s", 0, 0, 1, 7, "/memfd:x (deleted)", 4 * kKiB, 0, 0};
  shmem.runs = {{0x80000000, 0x80400000, true, true}};
  vma_tables giga;
  giga.vma = {0x8000000000, 0x8040000000, "rw-s", 0, 0, 1, 8, "/mnt/huge/x", kGiB, 0, 0};
  giga.runs = {{0x8000000000, 0x8040000000, true, true}};
  pi.vmas = {anon, shmem, giga};
  attribute_tables(p.paging, p.vmpte_levels, pi);
  EXPECT_DOUBLE_EQ(pi.vmas[0].tables[size_t(level::pte)], 2.0);  // two deposits
  EXPECT_EQ(pi.vmas[0].huge_entries, 2u);
  EXPECT_DOUBLE_EQ(pi.vmas[1].tables[size_t(level::pte)], 0.0);
  EXPECT_EQ(pi.vmas[1].huge_entries, 2u);
  EXPECT_DOUBLE_EQ(pi.vmas[2].tables[size_t(level::pmd)], 0.0);
  EXPECT_EQ(pi.vmas[2].huge_entries, 1u);
  // PMD tables: one for the 1 GiB window of anon, one for shmem's; PUD: 0..512 GiB and the
  // 512 GiB span of the 1 GiB page.
  EXPECT_EQ(pi.tables[size_t(level::pmd)], 2u);
  EXPECT_EQ(pi.tables[size_t(level::pud)], 2u);
}

// Two processes map the same 2 MiB hugetlb file over a whole 1 GiB window: each VmPTE
// counts the PMD table, PageTables once.
TEST(Inspect, SharedHugetlbPmdTablesCountOnceAgainstPageTables) {
  const kernel_profile p = host();
  text_proc_source src;
  fake_pagemap pm;
  const vaddr base = 0x7f0000000000;
  for (int pid : {100, 101}) {
    const std::string d = "/proc/" + std::to_string(pid);
    src.set(d + "/status", "Name:\tdb\nVmRSS:\t0 kB\nVmPTE:\t12 kB\n");
    src.set(d + "/comm", "db\n");
    src.set(d + "/stat", "1 (db) S 1\n");
    src.set(d + "/smaps", smaps_entry(base, base + kGiB, "rw-s", 4242, "/dev/hugepages/sga", 2 * kMiB));
    pm.runs[pid] = {{base, base + kGiB, true, true}};
  }
  src.set("/proc/meminfo", "MemTotal: 1000 kB\nPageTables: 100 kB\n");
  inspect_options o;
  o.pids = {100, 101};
  auto in = inspect(o, p, src, pm);
  ASSERT_TRUE(in.ok()) << in.error().to_string();
  ASSERT_EQ(in->processes.size(), 2u);
  for (const auto& pr : in->processes) {
    EXPECT_EQ(pr.attributed, 2 * 4 * kKiB);  // a PMD table and a PUD table
    EXPECT_EQ(pr.shared_pmd_bytes, 4 * kKiB);
    EXPECT_EQ(pr.residual, int64_t(4 * kKiB));
  }
  ASSERT_EQ(in->segments.size(), 1u);
  EXPECT_EQ(in->segments[0].pids, (std::vector<int>{100, 101}));
  EXPECT_EQ(in->segments[0].size, kGiB);
  // 2 x 12 KiB VmPTE + 2 PGDs - the second count of the shared PMD table.
  EXPECT_EQ(in->processes_page_tables, 2 * 12 * kKiB + 2 * p.pgd_bytes() - 4 * kKiB);
  EXPECT_EQ(in->page_tables_residual, int64_t(100 * kKiB) - int64_t(in->processes_page_tables));
}

// The image's resident sizes: the lowest file is the executable (text read-only, data
// writable, with its bss after it); [heap], *.so* libraries, [stack]; the rest is workload.
TEST(Inspect, ImageResidentSizesByMapping) {
  text_proc_source src;
  fake_pagemap pm;
  std::string smaps = smaps_entry(0x400000, 0x500000, "r-xp", 5, "/usr/bin/db") +
                      smaps_entry(0x500000, 0x504000, "rw-p", 5, "/usr/bin/db") + smaps_entry(0x504000, 0x508000, "rw-p", 0, "") +
                      smaps_entry(0x600000, 0x700000, "rw-p", 0, "[heap]") +
                      smaps_entry(0x7f0000000000, 0x7f0000200000, "rw-s", 9, "/memfd:pool (deleted)") +
                      smaps_entry(0x7f0000400000, 0x7f0000500000, "r-xp", 7, "/usr/lib/libc.so.6") +
                      smaps_entry(0x7f0000500000, 0x7f0000600000, "rw-p", 0, "") +
                      smaps_entry(0x7ffd00000000, 0x7ffd00021000, "rw-p", 0, "[stack]");
  src.set("/proc/7/status", "VmRSS:\t0 kB\nVmPTE:\t0 kB\n");
  src.set("/proc/7/stat", "7 (db) S 1\n");
  src.set("/proc/7/smaps", smaps);
  pm.runs[7] = {{0x400000, 0x480000}, {0x500000, 0x508000}, {0x600000, 0x610000}, {0x7f0000000000, 0x7f0000200000},
                {0x7f0000400000, 0x7f0000410000}, {0x7f0000500000, 0x7f0000501000}, {0x7ffd00020000, 0x7ffd00021000}};
  inspect_options o;
  o.pids = {7};
  auto in = inspect(o, host(), src, pm);
  ASSERT_TRUE(in.ok()) << in.error().to_string();
  const image_resident& img = in->processes.at(0).image;
  EXPECT_EQ(img.text, 512 * kKiB);
  EXPECT_EQ(img.data, 32 * kKiB);  // 16 KiB of data and 16 KiB of bss
  EXPECT_EQ(img.heap, 64 * kKiB);
  EXPECT_EQ(img.libraries, 64 * kKiB);
  EXPECT_EQ(img.stack, 4 * kKiB);
}

TEST(Inspect, CgroupThatCannotBeReadIsAnError) {
  text_proc_source src;
  fake_pagemap pm;
  inspect_options o;
  o.cgroup = "no/such";
  auto in = inspect(o, host(), src, pm);
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.error().code(), status_code::invalid_argument);
  EXPECT_EQ(in.error().message(), "--cgroup no/such: no cgroup.procs (tried /sys/fs/cgroup/no/such/cgroup.procs, "
                                  "/sys/fs/cgroup/unified/no/such/cgroup.procs)");
  src.set("/sys/fs/cgroup/unified/db/cgroup.procs", "12\n");
  src.set("/proc/12/status", "VmRSS:\t0 kB\nVmPTE:\t0 kB\n");
  src.set("/proc/12/smaps", "");
  o.cgroup = "db";
  auto db = inspect(o, host(), src, pm);
  ASSERT_TRUE(db.ok()) << db.error().to_string();
  ASSERT_EQ(db->processes.size(), 1u);
  EXPECT_EQ(db->processes[0].pid, 12);
}

}  // namespace
}  // namespace vmlab::live
