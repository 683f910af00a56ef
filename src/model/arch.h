// Paging formats: the shape of the page-table tree, as data.
//
// Kernel: arch/x86/include/asm/pgtable-{2level,3level}_types.h, pgtable_64_types.h,
// include/asm-generic/pgtable-nop{4d,ud,md}.h. Linux folds a missing level into a
// one-entry table so that one walker serves 2- to 5-level formats; vmlab does the same by
// listing only the levels a format really has (a folded level has no table and costs 0
// bytes), and every walker loops over that list.
//
// Invariants:
//  1. levels[0] is the PGD and levels[n-1] the PTE level; shifts strictly decrease.
//  2. levels[n-1].shift == page_shift.
//  3. entries(i) * entry_bytes(i) == table_bytes(i), except the PAE PGD (32 bytes) and the
//     PTI PGD (order-1, 8 KiB), which are described by pgd_bytes.
//  4. A level whose tables are smaller than a base page (powerpc) says how they are
//     allocated (table_alloc); its alloc_bytes divide the page size, and tables_per_page()
//     of them share one backing page. table_bytes() stays what VmPTE counts.
//  5. A leaf level's leaf_size() is a power of two from span() up to table_span(): a leaf
//     larger than its entry (leaf_stride() > 1) sits in the entry of its leaf_size-aligned
//     address, and the other entries of its span stay empty (no table, no leaf).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "vmlab/run_result.h"
#include "vmlab/units.h"

namespace vmlab {

// How the tables of a level get their memory. Kernel: arch/powerpc/mm/pgtable-frag.c
// (pte_fragment_alloc, pte_frag_destroy), arch/powerpc/mm/book3s64/pgtable.c
// (pmd_fragment_alloc), arch/powerpc/include/asm/book3s/64/pgalloc.h (PGT_CACHE).
enum class table_alloc : uint8_t {
  // Whole pages (table_bytes / page size of them): x86, i386, ppc64 4K PTE pages.
  page,
  // Fragments of a page handed out by a per-mm cache (mm->context.pte_frag / pmd_frag):
  // a page serves one mm only and is freed when its last fragment is (pt_frag_refcount);
  // the page constructor runs once per page, so PageTables counts whole backing pages.
  mm_fragment,
  // Objects of a kmem_cache shared by every mm (PGT_CACHE(...), 2.6.15's pgtable_cache):
  // no page constructor, so never in PageTables.
  slab,
};

struct pt_level {
  level lvl = level::pte;
  uint8_t shift = 12;       // address bits below this level's index
  uint16_t entries = 512;   // PTRS_PER_xxx
  uint8_t entry_bytes = 8;  // sizeof(pte_t) etc.
  // An entry of this level can map a huge page itself (a leaf: _PAGE_PSE): the PMD on
  // x86-64 and PAE (2 MiB), the PUD on x86-64 (1 GiB, X86_FEATURE_GBPAGES), the PGD on
  // i386 without PAE (4 MiB).
  bool leaf = false;
  table_alloc alloc = table_alloc::page;
  // Bytes one table occupies as allocated when that differs from table_bytes(): the
  // hash-64K PTE fragment is 4 KiB (2 KiB of PTEs + 2 KiB of hash-slot "hidx"), and
  // PMD/PUD tables are doubled when hugetlb or THP is configured. 0: table_bytes().
  uint32_t alloc_bytes = 0;
  // The huge page a leaf of this level maps, as a shift, when it is larger than one
  // entry's span; 0: the span. ppc64-4k's 16 MiB pages sit in the PMD level of 2 MiB
  // entries: one entry per page, the one of its 16 MiB-aligned address (2.6.15's
  // huge_pte_alloc does `addr &= HPAGE_MASK` and returns the PMD entry), the other
  // leaf_stride() - 1 entries of its span left empty.
  uint8_t leaf_shift = 0;
  [[nodiscard]] uint64_t span() const { return uint64_t{1} << shift; }      // one entry maps
  [[nodiscard]] uint64_t leaf_size() const { return uint64_t{1} << (leaf_shift ? leaf_shift : shift); }
  [[nodiscard]] uint32_t leaf_stride() const { return static_cast<uint32_t>(leaf_size() >> shift); }
  [[nodiscard]] uint64_t table_span() const { return span() * entries; }   // one table maps
  [[nodiscard]] uint64_t table_bytes() const { return uint64_t{entries} * entry_bytes; }
  [[nodiscard]] uint64_t alloc_size() const { return alloc_bytes ? alloc_bytes : table_bytes(); }
};

struct paging_format {
  std::string name;                 // "x86-64-4level", "i386-pae", ...
  uint8_t nr_levels = 4;            // levels that really exist (not folded)
  std::array<pt_level, kLevels> levels{};
  uint8_t page_shift = 12;
  vaddr task_size = 0;              // TASK_SIZE: first address user space cannot map
  uint8_t preallocated_pmds = 0;    // PAE: PMD pages allocated with the PGD (pgd_alloc)
  bool pgd_from_slab = false;       // PAE: the 32-byte PGD comes from a kmem_cache

  [[nodiscard]] const pt_level& at(int i) const { return levels[i]; }
  [[nodiscard]] const pt_level& pte() const { return levels[nr_levels - 1]; }
  [[nodiscard]] bytes page_size() const { return bytes{1} << page_shift; }
  // The level index (0..nr_levels-1) of kernel level l, or -1 when l is folded.
  [[nodiscard]] int index_of(level l) const;
  // The level index whose entries map huge pages of `size`, or -1 (no such huge page).
  [[nodiscard]] int leaf_index(bytes size) const {
    for (int i = 0; i + 1 < nr_levels; ++i)
      if (levels[i].leaf && levels[i].leaf_size() == size) return i;
    return -1;
  }
  // The huge page of the level just above the PTE level (HPAGE_PMD_SIZE; the default
  // hstate: 16 MiB on ppc64-4k, whose PMD entries span 2 MiB), or 0 when that level
  // cannot hold a leaf.
  [[nodiscard]] bytes pmd_huge_size() const {
    return nr_levels >= 2 && levels[nr_levels - 2].leaf ? levels[nr_levels - 2].leaf_size() : 0;
  }
  // Tables of level i that share one backing page: page size / alloc_size() for fragment
  // and slab levels (H_PTE_FRAG_NR = 16 on hash-64K), 1 for whole-page tables.
  [[nodiscard]] uint64_t tables_per_page(int i) const {
    return levels[i].alloc == table_alloc::page ? 1 : page_size() / levels[i].alloc_size();
  }
  // Index of `addr` in the table at level i.
  [[nodiscard]] uint32_t index(int i, vaddr addr) const {
    return static_cast<uint32_t>((addr >> levels[i].shift) & (levels[i].entries - 1u));
  }
};

// The formats vmlab knows, by name; nullptr for an unknown name.
const paging_format* find_paging_format(const std::string& name);
// "x86-64-4level, x86-64-5level, i386-2level, i386-pae, ppc64-4k, ppc64-hash-64k" for
// error messages.
std::string paging_format_names();

}  // namespace vmlab
