// Touch batches faulted table by table (sim_kernel::touch_pages, issue 11): where the
// faults commute across PTE tables (faults_commute_across_tables), a batch runs in the
// order of its tables, each table's pages in their given order; everywhere else in the
// given order. Either way the result must be the in-order result, figure for figure.
//
// Differential property test: two kernels of the same profile run the same random op
// sequence; kernel A may reorder (the default), kernel B never does
// (set_touch_in_table_order(false)). After every op both recount themselves from scratch
// (check_invariants) and must agree on everything a run reports: the whole sample (every
// meminfo line, every slab row, per level page-table pages, per process VmPTE, RSS and
// minor faults) and the maxima, as the JSON writer prints them, plus every present PTE.
// The ops are chosen to meet each condition and to break it: shared and private shm
// maps, an anonymous one, a file one; read and write touches; read-only parts (EACCES
// part-way through a batch), holes (munmap), MADV_DONTNEED, forks (COW), exits, aliases
// by remap_file_pages, and a machine small enough that reclaim and zone fallback happen.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "model_util.h"
#include "report/report.h"

namespace vmlab {
namespace {

using testing::make;

constexpr uint64_t kPage = 4096;
#ifdef VMLAB_SANITIZED
constexpr uint32_t kSeeds = 1;
constexpr int kSteps = 30;
#else
constexpr uint32_t kSeeds = 2;
constexpr int kSteps = 40;
#endif

struct config {
  std::string profile;
  bytes memory;
  std::vector<std::pair<std::string, std::string>> overrides;
  std::string name;
};
void PrintTo(const config& c, std::ostream* os) { *os << c.name; }

// The maps every process has: what, how big, whether shared.
struct map_decl {
  uint32_t id;
  int32_t object;  // -1: anonymous
  bytes len;
  bool shared;
  bytes align;
};
// Objects: 0 "sga" (shm, 96 MiB), 1 "data" (file, 16 MiB).
const std::vector<map_decl> kMaps = {
    {0, 0, 96 * MiB, true, 2 * MiB},  // the SGA, table-aligned
    {1, 0, 24 * MiB, true, 0},        // a second view of its first 24 MiB, any alignment
    {2, -1, 32 * MiB, false, 0},      // anonymous, private
    {3, 0, 8 * MiB, false, 0},        // shm MAP_PRIVATE: writes are COW
    {4, 1, 16 * MiB, true, 0},        // a file: never reordered
};

std::string all_figures(sim_kernel& k) {
  run_result r;
  r.engine = "sim";
  r.samples.push_back(k.snapshot("x"));
  r.peak = k.peak();
  std::ostringstream o;
  o << to_json(r).dump() << "\nfaults " << k.faults() << " cow " << k.cow_faults();
  const auto rc = k.reclaim_counts();
  o << " reclaimed " << rc.reclaimed << " scanned " << rc.scanned << " unmapped " << rc.unmapped;
  for (const pte_mapping& m : k.mappings())
    o << "\n" << m.pid << " " << m.addr << " " << int(m.kind) << " " << m.object_index << " " << m.pgoff << " " << m.anon_id
      << " " << m.writable << " " << m.size;
  return o.str();
}

// "" when equal, else the first line where they differ (the figures run to thousands of lines).
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream ia(a), ib(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ea = !std::getline(ia, la), eb = !std::getline(ib, lb);
    if (ea && eb) return "";
    if (ea || eb || la != lb)
      return "line " + std::to_string(line) + ":\n  reordered: " + (ea ? "(end)" : la.substr(0, 2000)) +
             "\n  in order:  " + (eb ? "(end)" : lb.substr(0, 2000));
  }
}

class TouchOrderDifferential : public ::testing::TestWithParam<config> {
 protected:
  void build() {
    const config& c = GetParam();
    const std::vector<object_decl> objs = {{"sga", object_kind::shm, 96 * MiB, 0}, {"data", object_kind::file, 16 * MiB, 0}};
    a_ = make(c.profile, c.overrides, c.memory, objs);
    b_ = make(c.profile, c.overrides, c.memory, objs);
    ASSERT_TRUE(a_ && b_);
    b_->set_touch_in_table_order(false);
  }

  template <class F>
  void both(const std::string& what, F&& f) {
    const status sa = f(*a_), sb = f(*b_);
    out_of_memory_ |= sa.message().find("ENOMEM") != std::string::npos;
    ASSERT_EQ(sa.ok(), sb.ok()) << what << ": " << sa.message() << " / " << sb.message();
    if (!sa.ok()) {
      ASSERT_EQ(sa.message(), sb.message()) << what;
    }
    ASSERT_EQ(a_->check_invariants(), "") << what;
    ASSERT_EQ(b_->check_invariants(), "") << what;
    ASSERT_EQ(first_difference(all_figures(*a_), all_figures(*b_)), "") << what;
  }

  std::unique_ptr<sim_kernel> a_, b_;
  bool out_of_memory_ = false;  // an op ran out of simulated memory
};

TEST_P(TouchOrderDifferential, ReorderedBatchesMatchTheGivenOrder) {
  uint64_t reordered = 0, batches = 0, reclaimed = 0, compacted = 0;
  for (uint32_t seed = 1; seed <= kSeeds && !HasFatalFailure(); ++seed) {
    if (a_) reclaimed += a_->reclaim_counts().scanned;
    if (a_) compacted += a_->tables_compacted();
    build();
    std::mt19937_64 rng(seed * 7919);
    auto rnd = [&](uint64_t n) { return n ? rng() % n : 0; };
    std::vector<uint32_t> live;
    uint32_t next_pid = 1;
    auto spawn = [&] {
      const uint32_t pid = next_pid++;
      both("spawn", [&](sim_kernel& k) { return k.spawn(pid); });
      for (const map_decl& m : kMaps)
        both("mmap", [&](sim_kernel& k) -> status {
          auto r = k.mmap(ops::mmap_object(pid, m.id, m.object, m.len).shared(m.shared).align(m.align));
          return r.ok() ? status{} : r.error();
        });
      live.push_back(pid);
    };
    for (int i = 0; i < 2; ++i) spawn();
    // The first eighth of the SGA warm in the page cache: batches there map whole
    // fault-around blocks, which leave compact PTE tables (pgtable.h); the rest of it
    // starts cold. (Not on the small machine, where the few batches that fit need all
    // of its free memory.)
    if (GetParam().memory >= GiB) both("warm", [&](sim_kernel& k) { return k.touch(live[0], 0, 0, kMaps[0].len / 8, kPage, false); });
    for (int step = 0; step < kSteps && !HasFatalFailure(); ++step) {
      if (live.empty()) spawn();
      const uint32_t pid = live[rnd(live.size())];
      const map_decl& m = kMaps[rnd(kMaps.size())];
      const uint64_t pages = m.len / kPage;
      std::ostringstream d;
      d << "seed " << seed << " step " << step << " pid " << pid << " map " << m.id << ": ";
      const uint64_t r = rnd(100);
      if (r < 55) {
        // A random batch: distinct pages (as a uniform touch gives them) or with repeats
        // (a zipf touch's first touches are distinct too, but a trace may repeat).
        const bool write = rnd(3) == 0;
        const uint64_t n = 1 + rnd(r < 45 ? 3000 : 100);
        std::vector<uint64_t> batch;
        for (uint64_t i = 0; i < n; ++i) batch.push_back(rnd(pages));
        if (rnd(2)) {
          std::sort(batch.begin(), batch.end());
          batch.erase(std::unique(batch.begin(), batch.end()), batch.end());
          std::shuffle(batch.begin(), batch.end(), rng);
        }
        d << "touch_pages " << batch.size() << (write ? " write" : " read");
        const uint64_t before = a_->touch_batches_in_table_order();
        both(d.str(), [&](sim_kernel& k) { return k.touch_pages(pid, m.id, batch, write); });
        reordered += a_->touch_batches_in_table_order() - before;
        ++batches;
      } else if (r < 62) {
        const bytes off = rnd(pages) * kPage, len = (1 + rnd(pages / 4)) * kPage;
        d << "mprotect read-only " << off << "+" << len;
        both(d.str(), [&](sim_kernel& k) { return k.mprotect(pid, m.id, off, std::min(len, m.len - off), prot_read); });
      } else if (r < 67) {
        const bytes off = rnd(pages) * kPage, len = (1 + rnd(64)) * kPage;
        d << "munmap " << off << "+" << len;
        both(d.str(), [&](sim_kernel& k) { return k.munmap(pid, m.id, off, std::min(len, m.len - off)); });
      } else if (r < 74) {
        const bytes off = rnd(pages) * kPage, len = (1 + rnd(pages / 2)) * kPage;
        d << "madvise_dontneed " << off << "+" << len;
        both(d.str(), [&](sim_kernel& k) { return k.madvise_dontneed(pid, m.id, off, std::min(len, m.len - off)); });
      } else if (r < 80 && m.id == 0) {
        // An alias: 1 MiB of the SGA's view made to map other object pages (the 4.0+
        // emulation maps them again at a second address; 2.6 nonlinear the same pages).
        op o;
        o.kind = op_kind::remap_file_pages;
        o.pid = pid;
        o.map = m.id;
        o.off = rnd(pages / 256) * 256 * kPage;
        o.len = MiB;
        o.obj_off = rnd(96 - 1) * MiB;
        d << "remap_file_pages " << o.off << " -> " << o.obj_off;
        both(d.str(), [&](sim_kernel& k) { return k.remap_file_pages(o); });
      } else if (r < 88 && live.size() < 5) {
        const uint32_t child = next_pid++;
        d << "fork " << child;
        both(d.str(), [&](sim_kernel& k) { return k.fork(pid, child); });
        live.push_back(child);
      } else if (r < 93) {
        d << "exit";
        both(d.str(), [&](sim_kernel& k) { return k.exit(pid); });
        live.erase(std::find(live.begin(), live.end(), pid));
      } else {
        spawn();
      }
    }
  }
  // The test means something only if both paths ran, and on the small machine only if
  // memory ran short.
  const config& c = GetParam();
  reclaimed += a_ ? a_->reclaim_counts().scanned : 0;
  compacted += a_ ? a_->tables_compacted() : 0;
  EXPECT_EQ(b_->tables_compacted(), 0u) << "only reordered batches make compact tables";
  if (c.name.find("never") != std::string::npos) {
    EXPECT_EQ(reordered, 0u) << "this kernel's faults do not commute: no batch may be reordered";
    EXPECT_EQ(compacted, 0u);
  } else if (c.memory < GiB) {
    // Most batches do not fit here: some must, and memory must run short.
    EXPECT_GT(reordered, 0u) << "no batch took the reordered path";
    EXPECT_TRUE(out_of_memory_ || reclaimed > 0) << "the small machine never ran short";
  } else {
    EXPECT_GT(reordered, batches / 10) << "too few batches took the reordered path for the comparison to mean much";
    // Compact PTE tables (pgtable.h) then meet the ops after them: mprotect, munmap,
    // MADV_DONTNEED, remap_file_pages, fork and exit expand or free them. Without
    // fault-around (before 3.15, or turned off) a fault maps one entry, and a block is
    // seldom whole.
    if (c.profile == "linux-6.18" && c.name.find("no_fault_around") == std::string::npos) {
      EXPECT_GT(compacted, 0u) << "no reordered batch left a compact table";
    }
  }
  EXPECT_LT(reordered, batches) << "no batch went the in-order way";
}

// Two focused cases the random sequences above rarely meet (the pages in question are
// soon cached, after which the order cannot show), each with its control. Kernel A
// reorders where it may, kernel B never does; both must end alike.
struct pair_of_kernels {
  std::unique_ptr<sim_kernel> a, b;
  pair_of_kernels(const std::string& profile, bytes memory, bytes shm) {
    const std::vector<object_decl> objs = {{"sga", object_kind::shm, shm, 0}};
    a = make(profile, {}, memory, objs);
    b = make(profile, {}, memory, objs);
    b->set_touch_in_table_order(false);
  }
  template <class F>
  void both(F&& f) {
    const status sa = f(*a), sb = f(*b);
    EXPECT_EQ(sa.to_string(), sb.to_string());
  }
};

// A remap_file_pages alias: object pages 0-511 are mapped at the start of the map and
// again at 32 MiB, under another PTE table. Were one of them not cached, a fault under one
// table could cache it before or after the other table's fault-around window looks for
// it, depending on the order; so a batch over aliased VMAs keeps its order. (Here the
// alias's populate has cached all 512 pages, so the figures agree either way; the test
// holds the guard, which does not rest on that.) The control: no alias, reordered.
TEST(TouchOrder, AnAliasedObjectPageKeepsTheBatchInOrder) {
  for (bool alias : {true, false}) {
    pair_of_kernels k("linux-6.18", 1 * GiB, 64 * MiB);
    ASSERT_TRUE(k.a && k.b);
    k.both([](sim_kernel& s) { return s.spawn(1); });
    k.both([](sim_kernel& s) -> status {
      auto r = s.mmap(ops::mmap_object(1, 0, 0, 64 * MiB).shared().align(2 * MiB));
      return r.ok() ? status{} : r.error();
    });
    if (alias)
      k.both([](sim_kernel& s) {
        op o;
        o.kind = op_kind::remap_file_pages;
        o.pid = 1;
        o.map = 0;
        o.off = 32 * MiB;
        o.len = 2 * MiB;
        o.obj_off = 0;
        return s.remap_file_pages(o);
      });
    std::vector<uint64_t> batch = {32 * MiB / kPage + 5, 4};
    for (uint64_t i = 0; i < 62; ++i) batch.push_back(40 * MiB / kPage + i * 97);  // elsewhere, not aliased
    k.both([&](sim_kernel& s) { return s.touch_pages(1, 0, batch, false); });
    EXPECT_EQ(k.a->touch_batches_in_table_order(), alias ? 0u : 1u) << "alias " << alias;
    EXPECT_EQ(first_difference(all_figures(*k.a), all_figures(*k.b)), "") << "alias " << alias;
    EXPECT_EQ(k.a->check_invariants(), "");
    // The alias's populate mapped its 512 pages (the touch there faults nothing) and
    // cached them, so page 4's fault-around window maps 16; 62 elsewhere. Without the
    // alias: 64 faults of one page each.
    EXPECT_EQ(testing::proc(k.a->snapshot("x"), 1).rss_shmem, alias ? 512u + 62 + 16 : 64u);
  }
}

// A batch that runs out of memory part-way fails at the page the given order reaches it
// with the pages before it mapped, as the kernel would: it is not reordered. The control:
// the same batch on a machine that holds it is.
TEST(TouchOrder, ABatchThatMayRunOutOfMemoryKeepsItsOrder) {
  for (bytes memory : {48 * MiB, 1 * GiB}) {
    pair_of_kernels k("linux-6.18", memory, 256 * MiB);
    ASSERT_TRUE(k.a && k.b);
    k.both([](sim_kernel& s) { return s.spawn(1); });
    k.both([](sim_kernel& s) -> status {
      auto r = s.mmap(ops::mmap_object(1, 0, 0, 256 * MiB).shared().align(2 * MiB));
      return r.ok() ? status{} : r.error();
    });
    std::mt19937_64 rng(3);
    std::vector<uint64_t> batch;
    for (int i = 0; i < 20000; ++i) batch.push_back(rng() % (256 * MiB / kPage));
    status sa;
    k.both([&](sim_kernel& s) { return sa = s.touch_pages(1, 0, batch, false); });
    EXPECT_EQ(sa.ok(), memory > 64 * MiB) << sa.to_string();
    EXPECT_EQ(k.a->touch_batches_in_table_order(), memory > 64 * MiB ? 1u : 0u);
    EXPECT_EQ(first_difference(all_figures(*k.a), all_figures(*k.b)), "") << memory;
  }
}

// A segment cached but for a few pages, read at random by a process that already has one
// of its tables: the window pass (read_fault_by_windows) takes the new tables whose pages
// are all cached, and leaves the others (an uncached page in it, or the table already
// there) to read_fault_run. The control: a batch while most of the segment is cold, which
// the pass leaves alone. Kernel B never reorders; both must end alike.
TEST(TouchOrder, ANearlyCachedSegmentIsReadByWindowsWhereItCanBe) {
  constexpr uint64_t kTable = 512, kTables = 32;  // 64 MiB of 4 KiB pages, 512 to a PTE table
  pair_of_kernels k("linux-6.18", 1 * GiB, kTables * kTable * kPage);
  ASSERT_TRUE(k.a && k.b);
  for (uint32_t pid : {1u, 2u}) {
    k.both([&](sim_kernel& s) { return s.spawn(pid); });
    k.both([&](sim_kernel& s) -> status {
      auto r = s.mmap(ops::mmap_object(pid, 0, 0, kTables * kTable * kPage).shared().align(2 * MiB));
      return r.ok() ? status{} : r.error();
    });
  }
  // Process 1 reads every page but one in each of tables 5, 9 and 20: three pages stay out
  // of the page cache, fewer than one per two tables. Most of the segment is cold while
  // it does, so its batch goes the usual way.
  const std::vector<uint64_t> cold = {5 * kTable + 7, 9 * kTable + 300, 20 * kTable + 511};
  std::vector<uint64_t> all;
  for (uint64_t p = 0; p < kTables * kTable; ++p)
    if (std::find(cold.begin(), cold.end(), p) == cold.end()) all.push_back(p);
  k.both([&](sim_kernel& s) { return s.touch_pages(1, 0, all, false); });
  EXPECT_EQ(k.a->touch_batches_in_table_order(), 1u);
  EXPECT_EQ(k.a->tables_by_windows(), 0u);
  // Process 2 has table 3 already, then reads 3,000 random pages and the three cold ones.
  k.both([&](sim_kernel& s) { return s.touch_pages(2, 0, {3 * kTable + 1}, false); });
  std::mt19937_64 rng(5);
  std::vector<uint64_t> batch;
  for (int i = 0; i < 3000; ++i) batch.push_back(rng() % (kTables * kTable));
  batch.insert(batch.begin() + 1000, cold.begin(), cold.end());
  k.both([&](sim_kernel& s) { return s.touch_pages(2, 0, batch, false); });
  EXPECT_EQ(k.a->touch_batches_in_table_order(), 2u);
  EXPECT_EQ(k.a->tables_by_windows(), kTables - 4) << "every table the batch reaches but 3, 5, 9 and 20";
  EXPECT_EQ(k.b->tables_by_windows(), 0u);
  EXPECT_EQ(first_difference(all_figures(*k.a), all_figures(*k.b)), "");
  EXPECT_EQ(k.a->check_invariants(), "");
  EXPECT_EQ(k.b->check_invariants(), "");
}

std::vector<config> configs() {
  const bytes big = 4 * GiB, small = 72 * MiB;  // small: about 39 MiB free, less than half the SGA
  return {
      {"linux-6.18", big, {}, "linux_6_18"},
      {"linux-6.18", small, {}, "linux_6_18_small_machine"},  // reclaim and zone limits
      {"linux-2.6.15", big, {}, "linux_2_6_15"},
      {"linux-2.4", big, {}, "linux_2_4"},
      {"linux-6.18", big, {{"thp_enabled", "always"}}, "linux_6_18_thp_always"},
      // fault_run's windows: none (one entry), and the whole table (the most the kernel allows).
      {"linux-6.18", big, {{"fault_around_bytes", "0"}}, "linux_6_18_no_fault_around"},
      {"linux-6.18", big, {{"fault_around_bytes", "2097152"}}, "linux_6_18_fault_around_whole_table"},
      // pte_chain (per-page rmap allocation) and PTSHARE: never reordered.
      {"linux-2.5.43-mm2", big, {}, "linux_2_5_pte_chain_never"},
      {"linux-2.6.15-ptshare", big, {}, "linux_2_6_15_ptshare_never"},
  };
}

INSTANTIATE_TEST_SUITE_P(Profiles, TouchOrderDifferential, ::testing::ValuesIn(configs()),
                         [](const ::testing::TestParamInfo<config>& i) { return i.param.name; });

}  // namespace
}  // namespace vmlab
