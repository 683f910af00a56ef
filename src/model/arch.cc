#include "model/arch.h"

namespace vmlab {
namespace {

constexpr pt_level L(level l, uint8_t shift, uint16_t entries, uint8_t eb, bool leaf = false,
                     table_alloc alloc = table_alloc::page, uint32_t alloc_bytes = 0, uint8_t leaf_shift = 0) {
  return pt_level{l, shift, entries, eb, leaf, alloc, alloc_bytes, leaf_shift};
}

// x86-64, 4-level: PGDIR_SHIFT 39, PUD_SHIFT 30, PMD_SHIFT 21, 512 x 8 B everywhere; P4D is
// folded (pgtable_64_types.h). TASK_SIZE_MAX = 2^47 - 4096. Huge pages: 2 MiB PMD leaves,
// 1 GiB PUD leaves (HPAGE_SHIFT = PMD_SHIFT; PUD_SIZE with X86_FEATURE_GBPAGES).
paging_format x86_64_4level() {
  paging_format f;
  f.name = "x86-64-4level";
  f.nr_levels = 4;
  f.levels = {L(level::pgd, 39, 512, 8), L(level::pud, 30, 512, 8, true), L(level::pmd, 21, 512, 8, true),
              L(level::pte, 12, 512, 8), {}};
  f.task_size = (vaddr{1} << 47) - 4096;
  return f;
}

// x86-64, 5-level (LA57): PGDIR_SHIFT 48, P4D_SHIFT 39; TASK_SIZE_MAX = 2^56 - 4096.
paging_format x86_64_5level() {
  paging_format f;
  f.name = "x86-64-5level";
  f.nr_levels = 5;
  f.levels = {L(level::pgd, 48, 512, 8), L(level::p4d, 39, 512, 8), L(level::pud, 30, 512, 8, true),
              L(level::pmd, 21, 512, 8, true), L(level::pte, 12, 512, 8)};
  f.task_size = (vaddr{1} << 56) - 4096;
  return f;
}

// i386 without PAE: PGDIR_SHIFT 22, 1024 x 4 B; PMD folded into the PGD
// (pgtable-2level_types.h), so a PTE page maps 4 MiB. 3G/1G split: TASK_SIZE 0xC0000000.
// A huge page is a PSE PGD entry of 4 MiB (HPAGE_SHIFT 22; huge_pte_alloc returns the
// folded PMD, i.e. the PGD entry).
paging_format i386_2level() {
  paging_format f;
  f.name = "i386-2level";
  f.nr_levels = 2;
  f.levels = {L(level::pgd, 22, 1024, 4, true), L(level::pte, 12, 1024, 4), {}, {}, {}};
  f.task_size = 0xC0000000ull;
  return f;
}

// i386 PAE: PGD of 4 x 8 B = 32 B (PGDIR_SHIFT 30), PMD 512 x 8 B (PMD_SHIFT 21), PTE
// 512 x 8 B, so a PTE page maps 2 MiB. pgd_alloc() preallocates the user PMDs
// (KERNEL_PGD_BOUNDARY = 3 with a 3G/1G split) and takes the PGD from a 32-byte kmem_cache.
paging_format i386_pae() {
  paging_format f;
  f.name = "i386-pae";
  f.nr_levels = 3;
  f.levels = {L(level::pgd, 30, 4, 8), L(level::pmd, 21, 512, 8, true), L(level::pte, 12, 512, 8), {}, {}};
  f.task_size = 0xC0000000ull;
  f.preallocated_pmds = 3;
  f.pgd_from_slab = true;
  return f;
}

// ppc64 of the 2.6.15 era, 4 KiB base pages (hash MMU): PTE_INDEX_SIZE 9, PMD_INDEX_SIZE 7,
// PUD_INDEX_SIZE 7 (PTRS_PER_PUD is 1 << PMD_INDEX_SIZE), PGD_INDEX_SIZE 9, 8-byte entries
// (include/asm-ppc64/pgtable-4k.h, stored copy of torvalds/linux at c6135234550e, the
// file BenH's 64K-page work added for 2.6.15; include/asm-powerpc/pgtable-4k.h has the same
// sizes). So PMD_SHIFT 21, PUD_SHIFT 28 (one PUD entry = one 256 MiB SLB segment),
// PGDIR_SHIFT 35; TASK_SIZE_USER64 0x0000100000000000 (16 TiB, "64-bit user address space
// is 44-bits"). Allocation (include/asm-ppc64/pgalloc.h): PTE and PGD tables are 4 KiB
// objects of pgtable_cache[0] ("pgd_pte_cache"), i.e. one page each; PUD and PMD tables are
// 1 KiB objects of pgtable_cache[1] ("pud_pmd_cache"), four to a page.
// Huge pages are 16 MiB (HPAGE_SHIFT 24 with CPU_FTR_16M_PAGE, include/asm-powerpc/
// page_64.h). 2.6.15's arch/powerpc/mm/hugetlbpage.c (huge_pte_alloc/huge_pte_offset,
// !CONFIG_PPC_64K_PAGES: "On 4k pages, we put huge PTEs in the PMD page") aligns the
// address down to HPAGE_MASK and returns its PMD entry: one PMD entry per 16 MiB page, at
// its aligned address, the other seven entries of its span empty, and no PTE page. So the
// PMD level is a leaf level whose leaves are 16 MiB (leaf_shift 24), eight entries apart
// (arch.h invariant 5); a 128-entry PMD table (one 256 MiB segment) holds 16 of them.
paging_format ppc64_4k() {
  paging_format f;
  f.name = "ppc64-4k";
  f.nr_levels = 4;
  f.levels = {L(level::pgd, 35, 512, 8), L(level::pud, 28, 128, 8, false, table_alloc::slab),
              L(level::pmd, 21, 128, 8, true, table_alloc::slab, 0, 24), L(level::pte, 12, 512, 8), {}};
  f.task_size = vaddr{1} << 44;
  return f;
}

// ppc64 book3s64 hash MMU with 64 KiB base pages, as today's kernels have it
// (arch/powerpc/include/asm/book3s/64/hash-64k.h, linux-vm-internals.md section 3.1):
// H_PTE_INDEX_SIZE 8, H_PMD_INDEX_SIZE 10, H_PUD_INDEX_SIZE 7, H_PGD_INDEX_SIZE 8, 8-byte
// entries; so a PMD entry maps 16 MiB and a PUD entry 16 GiB. A PTE table is a 4 KiB
// fragment (H_PTE_FRAG_SIZE_SHIFT = H_PTE_INDEX_SIZE + 3 + 1: 2 KiB of PTEs and 2 KiB of
// hash-slot hidx), H_PTE_FRAG_NR = 16 to a 64 KiB page, from the per-mm pte_frag cache
// (pgtable-frag.c). PMD tables are fragments too (pmd_fragment_alloc), doubled to 16 KiB
// with hugetlb/THP configured (H_PMD_FRAG_SIZE_SHIFT = H_PMD_INDEX_SIZE + 3 + 1), four to
// a page. The PUD table (doubled to 2 KiB, H_PUD_CACHE_INDEX) and the 2 KiB PGD are
// PGT_CACHE kmem_cache objects. Huge pages: 16 MiB = one PMD entry (hugetlb and THP);
// the 16 GiB pages of pseries firmware are not modelled. Task size: the default 128 TiB
// map window (DEFAULT_MAP_WINDOW_USER64); addresses above it need an mmap hint.
paging_format ppc64_hash_64k() {
  paging_format f;
  f.name = "ppc64-hash-64k";
  f.nr_levels = 4;
  f.page_shift = 16;
  f.levels = {L(level::pgd, 41, 256, 8), L(level::pud, 34, 128, 8, false, table_alloc::slab, 2048),
              L(level::pmd, 24, 1024, 8, true, table_alloc::mm_fragment, 16384),
              L(level::pte, 16, 256, 8, false, table_alloc::mm_fragment, 4096), {}};
  f.task_size = vaddr{1} << 47;
  f.pgd_from_slab = true;
  return f;
}

}  // namespace

int paging_format::index_of(level l) const {
  for (int i = 0; i < nr_levels; ++i)
    if (levels[i].lvl == l) return i;
  return -1;
}

const paging_format* find_paging_format(const std::string& name) {
  static const paging_format formats[] = {x86_64_4level(), x86_64_5level(), i386_2level(), i386_pae(),
                                          ppc64_4k(),      ppc64_hash_64k()};
  for (const auto& f : formats)
    if (f.name == name) return &f;
  return nullptr;
}

std::string paging_format_names() {
  return "x86-64-4level, x86-64-5level, i386-2level, i386-pae, ppc64-4k, ppc64-hash-64k";
}

const char* level_name(level l) {
  static const char* names[] = {"pgd", "p4d", "pud", "pmd", "pte"};
  return names[static_cast<int>(l)];
}

}  // namespace vmlab
