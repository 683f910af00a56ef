// Paging formats as data, and kernel profiles as bundles of policies: per-level shifts,
// entries and spans derived from first principles; folded levels; the PGD sizes; what
// each preset counts; override errors naming the key.
#include <gtest/gtest.h>
#include "tests/known_profiles.h"

#include "model/arch.h"
#include "model/profile.h"

namespace vmlab {
namespace {

TEST(Arch, LevelsSpanTheAddressSpaceExactly) {
  for (const char* name : {"x86-64-4level", "x86-64-5level", "i386-2level", "i386-pae"}) {
    SCOPED_TRACE(name);
    const paging_format* f = find_paging_format(name);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->at(0).lvl, level::pgd);
    EXPECT_EQ(f->pte().lvl, level::pte);
    EXPECT_EQ(f->pte().shift, f->page_shift);
    for (int i = 0; i + 1 < f->nr_levels; ++i) {
      // Each level's entry maps exactly one table of the level below.
      EXPECT_EQ(f->at(i).span(), f->at(i + 1).table_span()) << "level " << i;
      EXPECT_GT(f->at(i).shift, f->at(i + 1).shift);
    }
    // The top level covers at least the user address space.
    EXPECT_GE(f->at(0).table_span(), f->task_size);
  }
}

TEST(Arch, IndicesComeFromTheRightBits) {
  const paging_format* f = find_paging_format("x86-64-4level");
  const vaddr a = (vaddr{3} << 39) | (vaddr{5} << 30) | (vaddr{7} << 21) | (vaddr{11} << 12) | 0x123;
  EXPECT_EQ(f->index(0, a), 3u);
  EXPECT_EQ(f->index(1, a), 5u);
  EXPECT_EQ(f->index(2, a), 7u);
  EXPECT_EQ(f->index(3, a), 11u);
  const paging_format* two = find_paging_format("i386-2level");
  EXPECT_EQ(two->index(0, 0xC0000000ull - 1), 767u);  // last user PGD entry of a 3G/1G split
  EXPECT_EQ(two->index(1, 0x00403000ull), 3u);
}

TEST(Arch, FoldedLevelsHaveNoTable) {
  const paging_format* f = find_paging_format("x86-64-4level");
  EXPECT_EQ(f->index_of(level::p4d), -1);
  EXPECT_EQ(find_paging_format("x86-64-5level")->index_of(level::p4d), 1);
  const paging_format* two = find_paging_format("i386-2level");
  EXPECT_EQ(two->index_of(level::pmd), -1);
  EXPECT_EQ(two->index_of(level::pud), -1);
  EXPECT_EQ(two->pte().table_span(), 4 * MiB);  // 1024 x 4 B entries
  const paging_format* pae = find_paging_format("i386-pae");
  EXPECT_EQ(pae->pte().table_span(), 2 * MiB);
  EXPECT_EQ(pae->at(0).table_bytes(), 32u);  // four 8-byte entries
  EXPECT_EQ(pae->preallocated_pmds, 3);
  EXPECT_EQ(find_paging_format("sparc"), nullptr);
}

TEST(Profile, PgdBytesFollowPtiAndPae) {
  kernel_profile p = find_profile("linux-6.18").value();
  EXPECT_EQ(p.pgd_bytes(), 8192u);  // PGD_ALLOCATION_ORDER 1 under PTI
  ASSERT_TRUE(apply_override(p, "pti", "false").ok());
  EXPECT_EQ(p.pgd_bytes(), 4096u);
  EXPECT_EQ(find_profile("linux-2.6.15").value().pgd_bytes(), 32u);
}

TEST(Profile, PresetsCountWhatTheirKernelCounted) {
  const kernel_profile now = find_profile("linux-6.18").value();
  for (level l : {level::pgd, level::p4d, level::pud, level::pmd, level::pte}) EXPECT_TRUE(now.counts_in_page_tables(l));
  EXPECT_FALSE(now.counts_in_vmpte(level::pgd));
  EXPECT_TRUE(now.counts_in_vmpte(level::pud));
  EXPECT_TRUE(now.pt_reclaim);
  for (const char* old : {"linux-2.5.26", "linux-2.6.15"}) {
    const kernel_profile p = find_profile(old).value();
    EXPECT_TRUE(p.counts_in_page_tables(level::pte)) << old;
    EXPECT_FALSE(p.counts_in_page_tables(level::pmd)) << old;
    EXPECT_FALSE(p.pt_reclaim) << old;
  }
  EXPECT_FALSE(find_profile("linux-2.5.26").value().fork_skips_shared);  // before 2.6.14
  EXPECT_TRUE(find_profile("linux-2.6.15").value().fork_skips_shared);
  EXPECT_EQ(find_profile("linux-2.5.26").value().layout, mmap_layout::legacy);
}

TEST(Profile, UnknownNamesAndBadOverridesSayWhatIsKnown) {
  auto r = find_profile("linux-9.99");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(),
            "unknown kernel profile 'linux-9.99' (known: " + known_profiles() + ")");
  kernel_profile p = find_profile("linux-6.18").value();
  EXPECT_EQ(apply_override(p, "pti", "yes").message(), "kernel override 'pti' must be true or false, not 'yes'");
  EXPECT_EQ(apply_override(p, "page_tables_levels", "pte,pmx").message(),
            "kernel override 'page_tables_levels': unknown level 'pmx' (expected a comma-separated list of pgd,p4d,pud,pmd,pte)");
  EXPECT_EQ(apply_override(p, "fault_around_bytes", "1000").message(),
            "kernel override 'fault_around_bytes' must be 0 or a power of two >= 4096, not '1000'");
  // The kernel's limit (fault_around_bytes_set): one PTE page's span, 2 MiB on x86-64.
  EXPECT_TRUE(apply_override(p, "fault_around_bytes", "2097152").ok());
  EXPECT_EQ(apply_override(p, "fault_around_bytes", "4194304").message(),
            "kernel override 'fault_around_bytes' must be at most one PTE page's span (2097152 bytes on " + p.paging.name +
                "), not '4194304'");
  EXPECT_EQ(apply_override(p, "paging", "sparc").message(),
            "unknown paging format 'sparc' (known: x86-64-4level, x86-64-5level, i386-2level, i386-pae, ppc64-4k, ppc64-hash-64k)");
  EXPECT_FALSE(apply_override(p, "colour", "blue").ok());
  ASSERT_TRUE(apply_override(p, "page_tables_levels", "pte,pmd").ok());
  EXPECT_EQ(p.page_tables_levels, mask_of(level::pte) | mask_of(level::pmd));
}

}  // namespace
}  // namespace vmlab
