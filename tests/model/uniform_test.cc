// Uniform nodes (pgtable.h, issue 11): the range operations that install, copy, zap and
// free whole uniform subtrees must leave every figure exactly where the page-at-a-time
// path leaves it.
//
// Differential property test: two kernels of the same profile run the same random op
// sequence over a 1 GiB + 4 MiB shared segment mapped 1 GiB-aligned by several processes. Kernel
// A touches ranges (touch(): whole PMD and PTE spans become uniform nodes once the
// segment is cached); kernel B touches the same pages one at a time (touch_pages():
// fault_page, which never makes a uniform node, so its tables are all private). After
// every op A recounts itself from scratch (check_invariants) and both must agree on every
// observable: page-table pages per level, PageTables, Mapped, ReverseMaps, faults, and
// per process VmPTE, RSS and minor faults. Munmap, mprotect and MADV_DONTNEED hit parts
// of one sharer's range (a uniform subtree made private and cut), fork copies or skips
// (fork_skips_shared both ways), exit frees whole subtrees.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "model_util.h"

namespace vmlab {
namespace {

using testing::levels;
using testing::make;

constexpr bytes kSeg = 1 * GiB + 4 * MiB;  // one whole PMD span (1 GiB-aligned) and a tail
constexpr uint64_t kPage = 4096;
constexpr uint32_t kMap = 0;
// check_invariants() after every op recounts every PTE of every sharer: a few seeds of a
// few dozen ops keep this at seconds (fewer under the sanitizers).
#ifdef VMLAB_SANITIZED
constexpr uint32_t kSeeds = 1;
constexpr int kSteps = 10;
#else
constexpr uint32_t kSeeds = 2;
constexpr int kSteps = 24;
#endif

struct config {
  std::string profile;
  bool fork_skips_shared;
  bool pt_reclaim;
};

std::string name_of(const ::testing::TestParamInfo<config>& i) {
  std::string n = i.param.profile + (i.param.fork_skips_shared ? "_skip" : "_copy") + (i.param.pt_reclaim ? "_reclaim" : "");
  for (char& c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

class UniformDifferential : public ::testing::TestWithParam<config> {
 protected:
  void SetUp() override {
    const config& c = GetParam();
    const std::vector<std::pair<std::string, std::string>> ov = {
        {"fork_skips_shared", c.fork_skips_shared ? "true" : "false"}, {"pt_reclaim", c.pt_reclaim ? "true" : "false"}};
    const std::vector<object_decl> objs = {{"sga", object_kind::shm, kSeg, 0}};
    a_ = make(c.profile, ov, 16 * GiB, objs);
    b_ = make(c.profile, ov, 16 * GiB, objs);
    ASSERT_TRUE(a_ && b_);
  }

  // Both kernels, one op; the same outcome.
  template <class F>
  void both(const std::string& what, F&& f) {
    const status sa = f(*a_, true), sb = f(*b_, false);
    if (getenv("VMLAB_UNIFORM_TRACE")) fprintf(stderr, "%s -> %s\n", what.c_str(), sa.ok() ? "ok" : sa.message().c_str());
    ASSERT_EQ(sa.ok(), sb.ok()) << what << ": " << sa.message() << " / " << sb.message();
    if (!sa.ok()) {
      ASSERT_EQ(sa.message(), sb.message()) << what;
    }
    const std::string bad = a_->check_invariants();
    ASSERT_EQ(bad, "") << what;
    compare(what);
  }

  void compare(const std::string& what) {
    const sample sa = a_->snapshot("x"), sb = b_->snapshot("x");
    ASSERT_EQ(levels(sa), levels(sb)) << what;
    ASSERT_EQ(sa.page_tables, sb.page_tables) << what;
    ASSERT_EQ(sa.mi.mapped, sb.mi.mapped) << what;
    ASSERT_EQ(sa.mi.reverse_maps, sb.mi.reverse_maps) << what;
    ASSERT_EQ(sa.mi.mem_free, sb.mi.mem_free) << what;
    ASSERT_EQ(a_->faults(), b_->faults()) << what;
    ASSERT_EQ(sa.procs.size(), sb.procs.size()) << what;
    for (size_t i = 0; i < sa.procs.size(); ++i) {
      const proc_sample &p = sa.procs[i], &q = sb.procs[i];
      ASSERT_EQ(p.pid, q.pid) << what;
      ASSERT_EQ(p.vmpte, q.vmpte) << what << " pid " << p.pid;
      ASSERT_EQ(p.rss_shmem, q.rss_shmem) << what << " pid " << p.pid;
      ASSERT_EQ(p.rss_anon, q.rss_anon) << what << " pid " << p.pid;
      ASSERT_EQ(p.min_flt, q.min_flt) << what << " pid " << p.pid;
    }
  }

  std::unique_ptr<sim_kernel> a_, b_;
};

TEST_P(UniformDifferential, RangeOpsMatchPageAtATime) {
  for (uint32_t seed = 1; seed <= kSeeds; ++seed) {
    SetUp();
    std::mt19937_64 rng(seed);
    auto rnd = [&](uint64_t n) { return n ? rng() % n : 0; };
    std::vector<uint32_t> live;
    uint32_t next_pid = 1;
    auto spawn = [&] {
      const uint32_t pid = next_pid++;
      both("spawn " + std::to_string(pid), [&](sim_kernel& k, bool) { return k.spawn(pid); });
      both("mmap " + std::to_string(pid), [&](sim_kernel& k, bool) -> status {
        auto r = k.mmap(ops::mmap_object(pid, kMap, 0, kSeg).shared().align(1 * GiB));
        return r.ok() ? status{} : r.error();
      });
      live.push_back(pid);
    };
    // A random range: the whole segment, a 1 GiB half, whole 2 MiB spans, or any pages.
    auto range = [&](bytes& off, bytes& len) {
      switch (rnd(4)) {
        case 0: off = 0; len = kSeg; break;
        case 1: off = rnd(2) * GiB; len = 1 * GiB; break;
        case 2: off = rnd(kSeg / (2 * MiB)) * 2 * MiB; len = (1 + rnd(8)) * 2 * MiB; break;
        default: off = rnd(kSeg / kPage) * kPage; len = (1 + rnd(2048)) * kPage; break;
      }
      if (off + len > kSeg) len = kSeg - off;
    };
    for (int i = 0; i < 3; ++i) spawn();
    for (int step = 0; step < kSteps && !HasFatalFailure(); ++step) {
      if (live.empty()) spawn();
      const uint32_t pid = live[rnd(live.size())];
      bytes off = 0, len = 0;
      range(off, len);
      std::ostringstream d;
      d << "seed " << seed << " step " << step << " pid " << pid << " off " << off << " len " << len << ": ";
      const uint64_t r = rnd(100);
      if (r < 50) {
        const bool write = rnd(2);
        d << "touch " << (write ? "write" : "read");
        // touch() checks access to the whole range before faulting anything, touch_pages()
        // page by page: where the range has a hole or a read-only part, B is not asked.
        status first;
        both(d.str(), [&](sim_kernel& k, bool ranges) {
          if (ranges) return first = k.touch(pid, kMap, off, len, kPage, write);
          if (!first.ok()) return first;
          std::vector<uint64_t> pages;
          for (uint64_t p = off / kPage; p < (off + len) / kPage; ++p) pages.push_back(p);
          return k.touch_pages(pid, kMap, pages, write);
        });
      } else if (r < 60) {
        d << "munmap";
        both(d.str(), [&](sim_kernel& k, bool) { return k.munmap(pid, kMap, off, len); });
      } else if (r < 70) {
        d << "mprotect read-only";
        both(d.str(), [&](sim_kernel& k, bool) { return k.mprotect(pid, kMap, off, len, prot_read); });
      } else if (r < 80) {
        d << "madvise_dontneed";
        both(d.str(), [&](sim_kernel& k, bool) { return k.madvise_dontneed(pid, kMap, off, len); });
      } else if (r < 90 && live.size() < 6) {
        const uint32_t child = next_pid++;
        d << "fork " << child;
        both(d.str(), [&](sim_kernel& k, bool) { return k.fork(pid, child); });
        live.push_back(child);
      } else if (r < 95) {
        d << "exit";
        both(d.str(), [&](sim_kernel& k, bool) { return k.exit(pid); });
        live.erase(std::find(live.begin(), live.end(), pid));
      } else {
        spawn();
      }
    }
    for (uint32_t pid : live) both("final exit " + std::to_string(pid), [&](sim_kernel& k, bool) { return k.exit(pid); });
    EXPECT_EQ(levels(a_->snapshot("end")), "0,0,0,0,0");
  }
}

std::vector<config> configs() {
  std::vector<config> v;
  for (const char* p : {"linux-2.6.15", "linux-2.6.15-x86_64"})  // PAE's preallocated PMDs; 4 levels
    for (bool skip : {true, false}) v.push_back({p, skip, false});
  for (bool skip : {true, false})
    for (bool reclaim : {false, true}) v.push_back({"linux-6.18", skip, reclaim});
  v.push_back({"linux-2.5.43-mm2", true, false});  // pte_chain: never uniform, same answers
  return v;
}

INSTANTIATE_TEST_SUITE_P(Profiles, UniformDifferential, ::testing::ValuesIn(configs()), name_of);

// The host cost follows what is distinct: eight processes that each map and read a 2 GiB
// segment in full share the uniform nodes; the page-at-a-time kernel holds 8 x 1,024 PTE
// pages of its own. The simulated figures are the closed form either way.
TEST(Uniform, SharersCostTheHostAlmostNothing) {
  constexpr bytes kSeg2 = 2 * GiB;
  const std::vector<object_decl> objs = {{"sga", object_kind::shm, kSeg2, 0}};
  auto a = make("linux-6.18", {}, 16 * GiB, objs);
  ASSERT_TRUE(a);
  for (uint32_t pid = 1; pid <= 8; ++pid) {
    ASSERT_TRUE(a->spawn(pid).ok());
    ASSERT_TRUE(a->mmap(ops::mmap_object(pid, kMap, 0, kSeg2).shared().align(1 * GiB)).ok());
    ASSERT_TRUE(a->touch(pid, kMap, 0, kSeg2, kPage, false).ok());
  }
  const size_t after_first_and_seven = a->live_host_bytes();
  const sample s = a->snapshot("x");
  // Per process: 2 GiB / 2 MiB = 1,024 PTE pages, 2 PMD pages, 1 PUD page (and its PGD).
  for (const proc_sample& p : s.procs) EXPECT_EQ(p.vmpte, (1024 + 2 + 1) * kPage) << p.pid;
  EXPECT_EQ(levels(s), "8,0,8,16,8192");
  EXPECT_EQ(a->check_invariants(), "");
  // Seven more sharers add no PTE-page nodes: only their PGD, PUD and nothing below.
  for (uint32_t pid = 9; pid <= 15; ++pid) {
    ASSERT_TRUE(a->spawn(pid).ok());
    ASSERT_TRUE(a->mmap(ops::mmap_object(pid, kMap, 0, kSeg2).shared().align(1 * GiB)).ok());
    ASSERT_TRUE(a->touch(pid, kMap, 0, kSeg2, kPage, false).ok());
  }
  EXPECT_LT(a->live_host_bytes() - after_first_and_seven, 7 * 4 * kPage);
  EXPECT_EQ(levels(a->snapshot("y")), "15,0,15,30,15360");
}

}  // namespace
}  // namespace vmlab
