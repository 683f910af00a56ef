#include "model/arch.h"

namespace vmlab {
namespace {

constexpr pt_level L(level l, uint8_t shift, uint16_t entries, uint8_t eb, bool leaf = false) {
  return pt_level{l, shift, entries, eb, leaf};
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

}  // namespace

int paging_format::index_of(level l) const {
  for (int i = 0; i < nr_levels; ++i)
    if (levels[i].lvl == l) return i;
  return -1;
}

const paging_format* find_paging_format(const std::string& name) {
  static const paging_format formats[] = {x86_64_4level(), x86_64_5level(), i386_2level(), i386_pae()};
  for (const auto& f : formats)
    if (f.name == name) return &f;
  return nullptr;
}

std::string paging_format_names() { return "x86-64-4level, x86-64-5level, i386-2level, i386-pae"; }

const char* level_name(level l) {
  static const char* names[] = {"pgd", "p4d", "pud", "pmd", "pte"};
  return names[static_cast<int>(l)];
}

}  // namespace vmlab
