// Huge pages: the hugetlb pools and mappings (mm/hugetlb.c, hugetlb.cc) and transparent
// huge pages, anonymous and shmem (mm/huge_memory.c, mm/shmem.c; huge_memory.cc).
//
// Page tables. A huge page is a leaf entry of a directory (pgtable.h): a PMD entry (2 MiB),
// a PUD entry (1 GiB hugetlb) or, on i386 without PAE, a PGD entry (4 MiB). No PTE page is
// ever allocated under a hugetlb page. An anonymous THP keeps a PTE page deposited under
// its PMD (pgtable_trans_huge_deposit: counted in VmPTE and PageTables, withdrawn to become
// the PTE table when the PMD is split); a shmem THP or a hugetlb page has none (x86:
// arch_needs_pgtable_deposit() is false).
//
// hugetlb. Pools per size (hstate): nr_hugepages at boot from whole pageblocks (phys.h),
// surplus pages up to nr_overcommit_hugepages (never of a gigantic size, 1 GiB), given
// back when a reservation cannot gather all it needs. A shared mapping reserves the
// file's pages it covers that are not yet reserved or allocated (region_chg); a private
// one reserves its whole range for itself (HPAGE_RESV_OWNER); MAP_NORESERVE reserves
// nothing, and a fault that then finds no free page is SIGBUS (counted in PGFAULT, not in
// the process's min_flt: mm_account_fault). Short pool at mmap: ENOMEM. The pages of a
// hugetlb file stay in it once allocated (no truncate is modelled).
//
// hugetlb PMD sharing (huge_pmd_share, 6.x rules): a fault in a VM_MAYSHARE hugetlb VMA of
// 2 MiB pages whose 1 GiB-aligned window lies inside the VMA, with no PMD table yet,
// points at the PMD table of another VMA of the same file that maps the same file offset
// at the same offset within its window, has flags equal apart from VM_LOCKED, and covers
// its own window; one PMD page serves all of them. PageTables counts it once (it is
// allocated once); each sharer's VmPTE counts it (mm_inc_nr_pmds). A sharer's entries are
// the table's: a process that attaches sees what others faulted, without faulting (and
// without HugetlbPages counting them: huge_pmd_share never calls hugetlb_count_add).
// Unsharing (huge_pmd_unshare) clears this mm's PUD entry and nothing else: on munmap,
// on mprotect (hugetlb_change_protection unshares every shared PMD it meets), on a VMA
// split inside the window (hugetlb_split) and at exit. vmlab finds partners through an
// index of shareable tables keyed by (file, file offset of the window, flags) rather than
// by walking i_mmap; a table leaves the index when it stops being shareable.
//
// THP. Anonymous: a fault in an aligned 2 MiB range inside an eligible VMA (enabled=always,
// or madvise with MADV_HUGEPAGE; never with MADV_NOHUGEPAGE) whose PMD is empty allocates
// a THP (write) or maps the huge zero page (read); no free pageblock: the 4 KiB path.
// Fork copies the PMD and deposits a table for the child (copy_huge_pmd). A write to a
// THP mapped more than once, a partial munmap, mprotect or MADV_DONTNEED splits the PMD
// into the deposited table; a zap of the whole 2 MiB frees the THP and its deposit. shmem:
// the page cache allocates a 2 MiB folio when shmem_enabled says so (always; within_size:
// the folio ends inside i_size; advise: MADV_HUGEPAGE; force; never, deny: no), and maps it
// with a PMD when the VMA covers the aligned range with vm_start congruent to the file
// offset modulo 2 MiB (do_set_pmd); otherwise with PTEs. A split of a shmem PMD just
// zaps it; later faults map PTEs. Mapping a shmem folio by PMD counts in ShmemPmdMapped.
//
// Simplifications (docs/decisions.md): khugepaged's collapse is not modelled; a THP that
// gets mapped by PTEs anywhere is at once accounted as 512 small pages, freed one by one as
// they lose their last mapping (the kernel keeps the folio until the deferred split runs
// under memory pressure); a private hugetlb page's copy-on-write that finds no free page is
// SIGBUS for the writer (the kernel unmaps the page from the other, non-owner processes);
// rmap walks (try_to_unmap) see a huge mapping as no page.
//
// Invariants (check_invariants):
//  1. hstate: free <= nr, resv <= free, surplus <= nr; the pool's pages in phys equal
//     the sum of nr over hstates; an allocated hugetlb page is in use (not free).
//  2. huge anon page: entire == the PMD/PUD leaves mapping it; a split THP's subpage ids
//     have mapcount >= entire.
//  3. NR_ANON_THPS == 512 x THPs with entire >= 1; ShmemPmdMapped == 512 x folios with
//     pmd_maps >= 1; ShmemHugePages == 512 x huge folios.
//  4. A private mapping's reservation count (vm_area_struct::resv, shared by the pieces
//     of a split) == the pages its live pieces cover whose reservation no fault consumed
//     (resv_consumed); a resv_map goes with its last piece.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "model/pgtable.h"
#include "vmlab/op.h"
#include "vmlab/status.h"
#include "vmlab/units.h"

namespace vmlab {

struct kernel;
struct mm_struct;
struct vm_area_struct;
struct mem_object;

// One hugetlb page size and its pool (include/linux/hugetlb.h struct hstate).
struct hstate {
  uint8_t shift = 0;        // huge_page_shift
  int level = -1;           // the level index of its leaf entries
  uint64_t nr = 0;          // nr_huge_pages (HugePages_Total)
  uint64_t free = 0;        // free_huge_pages
  uint64_t resv = 0;        // resv_huge_pages: reserved, not yet allocated
  uint64_t surplus = 0;     // surplus_huge_pages
  uint64_t max_surplus = 0; // nr_overcommit_huge_pages
  uint64_t requested = 0;   // nr_hugepages asked for at boot (nr may be less)
  [[nodiscard]] bytes size() const { return bytes{1} << shift; }
};

// A huge anonymous page: a THP, or a private hugetlb page.
struct huge_anon {
  uint32_t entire = 0;    // PMD/PUD leaves that map it (the entire mapcount)
  uint32_t subpages = 0;  // THP mapped by PTEs somewhere: the first of its 512 subpage ids
  int8_t hstate = -1;     // private hugetlb page: its hstate; -1: a THP
  bool live = false;
};

// Where a hugetlb PMD table can be shared from: the file, the file offset its window
// maps, and the flags a sharer must have.
struct share_key {
  int32_t object = -1;
  uint64_t window_off = 0;
  uint8_t prot = 0;
  bool noreserve = false;
  bool operator<(const share_key& o) const {
    return std::tie(object, window_off, prot, noreserve) < std::tie(o.object, o.window_off, o.prot, o.noreserve);
  }
};

struct huge_state {
  std::vector<hstate> hstates;  // by size, smallest (the default) first
  std::vector<huge_anon> anons = std::vector<huge_anon>(1);  // by id; 0: none
  std::vector<uint32_t> free_anons;
  uint64_t anon_thps = 0;        // NR_ANON_THPS, in base pages (AnonHugePages)
  uint64_t shmem_thps = 0;       // NR_SHMEM_THPS (ShmemHugePages)
  uint64_t shmem_pmdmapped = 0;  // NR_SHMEM_PMDMAPPED (ShmemPmdMapped)
  uint64_t thp_fallbacks = 0;    // THP faults that found no free pageblock (thp_fault_fallback)
  // Private mappings' resv_maps, by their count (vm_area_struct::resv): the file's huge
  // pages (by index) whose reservation a fault consumed (the map's regions).
  std::unordered_map<const uint64_t*, std::vector<uint64_t>> resv_consumed;
  std::map<share_key, pt_dir*> shareable;
  std::unordered_map<const pt_dir*, share_key> share_key_of;
};

// ---- hugetlb.cc ----------------------------------------------------------------------

// The hstates of the profile, and the boot pools (nr_hugepages, nr_overcommit_hugepages)
// the machine asks for, allocated as the kernel does: as many whole pageblocks as there
// are. invalid_argument for a size the profile has no hugetlb pages of.
status hugetlb_init(kernel& k, const machine_decl& m);
// The hstate of `size` (0: the default), or nullptr.
hstate* find_hstate(kernel& k, bytes size);
// The page size of hugetlb pages `size` resolves to, as an error message would name it.
std::string hstate_sizes(const kernel& k);
// mmap of a hugetlb VMA: reserve its pages (hugetlb_reserve_pages). ENOMEM (refused) when
// the pool is short; nothing reserved then.
status hugetlb_reserve(kernel& k, vm_area_struct& vma);
// The VMA goes: a private mapping's unused reservations of its range go back
// (hugetlb_vm_op_close); vma.resv is dropped.
void hugetlb_unreserve(kernel& k, vm_area_struct& vma);
// Faults on [start, end) of a hugetlb VMA, one per huge page, every `stride` bytes.
status hugetlb_fault_range(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr start, vaddr end, bytes stride,
                           bool write);
// __unmap_hugepage_range: unshares shared PMDs, clears the leaves of [start, end).
void hugetlb_zap(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr start, vaddr end);
// hugetlb_change_protection for mprotect.
void hugetlb_change_protection(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr start, vaddr end,
                               bool writable);
// A hugetlb VMA is split at `addr` (hugetlb_split): the PMD of the window around it is
// unshared, and stops being shareable.
void hugetlb_split(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr addr);
// copy_hugetlb_page_range at fork.
status copy_hugetlb_range(kernel& k, mm_struct& dst, mm_struct& src, const vm_area_struct& vma);
// A page-table node goes: it leaves the sharing index (pt_put calls this).
void hugetlb_forget_table(kernel& k, const void* node);

// ---- huge_memory.cc: THP ---------------------------------------------------------------

// Whether the PMD-size range at `base` (aligned) of `vma` can hold a huge mapping now
// (the VMA covers it, THP or shmem THP allowed there, no PTE table yet).
bool thp_suitable(const kernel& k, const vm_area_struct& vma, vaddr base);
// A fault at PMD level for the range at `base`: maps or finds a huge leaf. *handled is
// false when the fault must go the 4 KiB way (no huge page allowed, none free, or the
// PMD was split); the status is the fault's when handled.
status huge_pmd_fault(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr base, bool write, bool* handled);
// Whether a fault in the shm mapping `vma` may map a PMD-size shmem folio: its object holds
// one (a fault maps it whatever the VMA's advice: shmem_huge_folio), or shmem_huge_allowed
// holds at some index (index 0 is the most permissive one). false for other VMAs.
bool shmem_huge_possible(const kernel& k, const vm_area_struct& vma);
// Whether a fault in `vma` may find or make a huge PMD: its policy allows a THP or a shmem
// folio of PMD size there, its object already has one, or a leaf lies under it (made
// before an madvise changed the policy, or moved there by mremap). Hugetlb VMAs: true.
bool huge_pmd_possible(kernel& k, mm_struct& mm, const vm_area_struct& vma);
// __split_huge_pmd for the leaf at `base` in mm (anonymous THP or huge zero page: into its
// deposited table; shmem: the PMD is just zapped). No-op without a leaf there.
void split_huge_pmd(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr base);
// Splits the leaves [start, end) cuts through (a VMA boundary, a partial zap or mprotect).
void split_huge_range_edges(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr start, vaddr end);
// zap_huge_pmd for every leaf wholly inside [start, end) of a non-hugetlb VMA.
void zap_huge_pmds(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr start, vaddr end);
// copy_huge_pmd at fork for the leaf at slot i of the PMD table sd (an anonymous VMA).
status copy_huge_pmd(kernel& k, mm_struct& dst, const vm_area_struct& vma, pt_dir* sd, pt_dir* dd, uint32_t i);
// Write-protects the huge leaves of [start, end) (mprotect without PROT_WRITE).
void wrprotect_huge_range(kernel& k, mm_struct& mm, vaddr start, vaddr end);

// ---- leaves, for every walker -----------------------------------------------------------

// The huge leaf mapping addr in mm: its directory, slot and level index; d == nullptr if
// the address is not huge-mapped.
struct leaf_ref {
  pt_dir* d = nullptr;
  uint32_t i = 0;
  int idx = -1;
  vaddr base = 0;  // the address the leaf's page starts at
  bytes size = 0;
};
leaf_ref find_leaf(kernel& k, mm_struct& mm, vaddr addr);
// Calls f(const leaf_ref&) for every huge leaf of mm inside [start, end); with
// `into_shared`, also those in shared page-table subtrees (an mshare region's hugetlb
// pages, the only leaves such a subtree holds: pgtable.h invariant 6).
template <class F>
void for_each_leaf(kernel& k, mm_struct& mm, vaddr start, vaddr end, F&& f, bool into_shared = false);

// Huge anonymous pages.
uint32_t huge_anon_new(kernel& k, int8_t hstate);
void huge_anon_release(kernel& k, uint32_t id);

}  // namespace vmlab
