// check_invariants() must catch what it claims to: each test builds a consistent state,
// confirms the check passes, then damages one field the way a model bug would and
// expects the check to name it. Without these the property tests, which only ever see a
// passing check, could not tell a checker that looks from one that does not.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "model/kernel.h"
#include "tests/model/model_util.h"
#include "vmlab/sim_kernel.h"

namespace vmlab {

namespace {

using namespace vmlab::testing;

constexpr bytes kPage = 4096;

// Processes 1 and 2 map an 8-page shm object shared and read pages 0-3 of it, so pages 0-3
// are in the page cache with two PTEs each and pages 4-7 were never faulted.
std::unique_ptr<sim_kernel> two_sharers(const std::string& profile) {
  machine_decl m;
  m.profile = profile;
  auto r = sim_kernel::create(m, {{"shm0", object_kind::shm, 8 * kPage}});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
  if (!r.ok()) return nullptr;
  auto k = std::move(r.value());
  for (uint32_t pid = 1; pid <= 2; ++pid) {
    EXPECT_TRUE(k->spawn(pid).ok());
    EXPECT_TRUE(k->mmap(ops::mmap_object(pid, 0, 0, 8 * kPage).shared()).ok());
    EXPECT_TRUE(k->touch(pid, 0, 0, 4 * kPage, kPage, false).ok());
  }
  EXPECT_EQ(k->check_invariants(), "");
  return k;
}

TEST(CheckInvariants, CatchesAWrongObjectPageMapcount) {
  auto k = two_sharers("linux-2.5.26");
  ASSERT_TRUE(k);
  ++sim_kernel_internals::of(*k).objects[0].mapcount[1];
  EXPECT_NE(k->check_invariants().find("object 0 page 1 mapcount 3 != 2"), std::string::npos) << k->check_invariants();
}

TEST(CheckInvariants, CatchesAMapcountLeftOnAnUnmappedCachedPage) {
  auto k = two_sharers("linux-2.5.26");
  ASSERT_TRUE(k);
  // Page 2 leaves both page tables but stays in the page cache, where a leaked mapcount
  // would sit.
  for (uint32_t pid = 1; pid <= 2; ++pid) ASSERT_TRUE(k->madvise_dontneed(pid, 0, 2 * kPage, kPage).ok());
  ASSERT_EQ(k->check_invariants(), "");
  sim_kernel_internals::of(*k).objects[0].mapcount[2] = 1;
  EXPECT_NE(k->check_invariants().find("object 0 page 2 mapcount 1 != 0"), std::string::npos) << k->check_invariants();
}

TEST(CheckInvariants, CatchesAMappedPageMissingFromThePageCache) {
  for (const char* profile : {"linux-2.5.26", "linux-6.18"}) {  // with and without per-page rmap state
    auto k = two_sharers(profile);
    ASSERT_TRUE(k);
    sim_kernel_internals::of(*k).objects[0].resident.word_ref(0) &= ~uint64_t{1};  // page 0
    const std::string e = k->check_invariants();
    EXPECT_NE(e.find("object 0 page 0 mapped but not in the page cache"), std::string::npos) << profile << ": " << e;
  }
}

}  // namespace
}  // namespace vmlab
