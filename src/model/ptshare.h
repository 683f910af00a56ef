// Shared page tables: Dave McCracken's PTSHARE (2005-2006) and Oracle's mshare (v3, 2025),
// neither merged. Both are one mechanism here (a shared subtree, below) with two ways of
// finding a partner; the mshare rules are at the end.
//
// PTSHARE. Kernel: the patch's mm/ptshare.c (pt_shareable_vma, pt_share_pte, pt_share_pmd,
// pt_unshare_range), as posted against 2.6.13, 2.6.15 and 2.6.17-rc1; the rules are in
// linux-vm-internals.md section 5.2. Processes that map the same file range at the same
// address with the same permissions point at one page-table page instead of one each.
//
// Sharing rules (pt_shareable_vma and the partner search):
//  * The VMA maps a file (shm included), is shared or read-only, is at least PMD_SIZE
//    long, is not hugetlb (PTSHARE_HUGEPAGE is left to huge_pmd_share, profile.cc) and
//    cannot get a huge PMD (no shmem THP policy that would give it one).
//  * A PTE page is shared when the VMA covers its whole PMD-aligned span; a PMD page when
//    it covers a whole PUD span (PTSHARE_PMD); a PUD page likewise (PTSHARE_PUD, off by
//    default). The largest level the profile shares and the VMA covers is tried first.
//  * The partner is a page registered under the same key: the file, vm_start, vm_end,
//    vm_pgoff and the VMFLAG_COMPARE bits (read, write, exec, shared) of the VMA, and the
//    level and address of the page. The patch searched the file's i_mmap for such a VMA
//    and took its page; a map keyed by the same fields finds the same page.
//  * The share point is the fault (pt_share_pte in __handle_mm_fault): an mm whose slot
//    is empty takes the partner's page, with every entry already in it, and faults only
//    for entries nobody has filled. Fork shares too (the 2005 posting's pt_copy_pte), but
//    2.6.15's fork copies no tables of a shared VMA without anon_vma, so at fork it only
//    matters with fork_skips_shared off.
//
// Unsharing (pt_unshare_range) does not copy: this mm's entry is cleared, with the
// flush_tlb_all() of pmd_clear_flush (counted in ptshare_state), and later faults refill
// a page of its own. vmlab unshares on every change to the VMA that would change its key
// or its entries: mprotect, a split (munmap or mprotect of part), a zap of any part
// (munmap, MADV_DONTNEED, exit), and on the patch's other triggers: mremap unshares the
// range it moves, remap_file_pages the range it remaps (mremap.cc). Simplification: a page only this mm holds is dropped the
// same way (its entries zapped, the page freed) rather than kept and edited, so that a
// shared subtree is never modified except by faults; the page-table figures after the
// refaults are the same, the fault count is higher.
//
// Accounting (Hugh Dickins asked "So /proc/<pid>/status VmPTE will always be '0 kB'?"):
//  * PageTables and the per-level totals count each shared page once.
//  * VmPTE: each mm counts the shared page its own entry points at (as huge_pmd_share
//    does, mm_inc_nr_pmds), not the pages below a shared PMD page, which no mm owns. So
//    with PTE sharing VmPTE is unchanged, and with PMD sharing it shows one PMD page per
//    GiB: the saving shows in PageTables, not in the sum of VmPTE.
//  * RSS: the entries of a shared subtree are in no mm's RSS counters (the patch's
//    file_rss, which only the faulting mm bumped, was another point of that review);
//    a process's reported RSS adds the entries of every shared page it maps, as a walk
//    of its page tables (smaps) would count them (ptshare_rss).
//  * mapcount, Mapped and the rmap count PTEs, so a shared PTE counts once.
//
// mshare (Anthony Yznaga's v3, "[PATCH v3 00/22] Add support for shared PTEs across
// processes", 2025-08-20; linux-vm-internals.md 5.4). An msharefs region ([[object]]
// mshare = true: shared anonymous memory, a file, or anonymous hugetlb, below) has its
// page tables in a host mm: every process
// that maps it points its P4D entry (the PGD entry on 4-level x86-64, where the P4D is
// folded) at the host's PUD table ("share page tables at PUD level": mm/mshare.c
// find_shared_vma links it with `set_p4d(guest_p4d, *p4d)` and takes a reference with
// ptdesc_pud_pts_inc), at whatever P4D_SIZE-aligned address it maps the region. The
// partner key is the region and the offset, not the address. The host's tables (PUD,
// PMD and PTE pages) are charged to no process: PageTables counts each once, VmPTE of a
// process shows its own tables only, none of them the region's. (v3's region ownership
// charges them to the memcg of the region's owner, the process that created it; vmlab
// models no memcg, so that is said here and in docs/decisions.md, not counted.) The region is a whole
// multiple of P4D_SIZE (mshare_align), mapped whole and MAP_SHARED on a P4D_SIZE boundary
// (op_rules.cc checks this at load); a whole-region mprotect is the region's protection
// changed in the host mm, seen by every process; a partial one, and a munmap/madvise
// that would split its VMA, is EINVAL, as the patches'
// may_split op makes it; MADV_DONTNEED of it unlinks this process's shared pages whose
// entries the range touches and frees nothing (their unmap_page_range op), later
// faults link them again;
// its tables go with its last unmap (vmlab has no unlink).
// hugetlb inside a region (v3 20/22, msharefs_create_mapping with MAP_HUGETLB: an
// anonymous hugetlb file the host mm maps): its leaves are huge PMD entries in the host's
// PMD pages (PUD entries of the shared PUD table itself for 1 GiB pages), the only leaves
// a shared subtree holds. A process's fault links the PUD table first, then faults in the
// host's tables (hugetlb.cc); the leaf, like the host's tables, is charged to no process
// (HugetlbPages, RSS); huge_pmd_share does not apply (want_pmd_share); unmap, exit and
// MADV_DONTNEED unlink as for any region; mprotect sets the host's leaves for everyone.
//
// Representation: the nodes of a shared subtree carry shared_pt (pgtable.h invariant 6).
// The top node of the subtree an mm points at holds a reference per mm (pt_get/pt_put);
// the nodes below it are allocated and freed by whichever mm faults or drops last, and
// charged to none (pt_alloc with a shared parent, pt_put_shared).
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>

#include "model/arch.h"
#include "model/mm_types.h"

namespace vmlab {

struct kernel;

// P4D_SIZE: what one entry of the level above the PUD tables maps (the P4D entry; the PGD
// entry where the P4D is folded: 512 GiB on x86-64 4- and 5-level), or 0 when the format
// has no PUD level. mshare's alignment and size unit (mm/mshare.c: `mshare_align =
// P4D_SIZE`, checked by msharefs_set_size and mshare_get_unmapped_area).
inline uint64_t mshare_align(const paging_format& f) {
  const int pud = f.index_of(level::pud);
  return pud < 0 ? 0 : f.at(pud).table_span();
}

struct ptshare_key {
  int32_t object = -1;
  vaddr vm_start = 0, vm_end = 0;
  uint64_t pgoff = 0;
  uint8_t flags = 0;  // VMFLAG_COMPARE: prot bits and VM_SHARED
  uint8_t idx = 0;    // level index of the shared page
  vaddr base = 0;     // first address the page maps
  bool host = false;  // mshare: the page belongs to the region's host mm, not to a process
  bool operator<(const ptshare_key& o) const {
    return std::tie(host, object, vm_start, vm_end, pgoff, flags, idx, base) <
           std::tie(o.host, o.object, o.vm_start, o.vm_end, o.pgoff, o.flags, o.idx, o.base);
  }
};

struct ptshare_state {
  std::map<ptshare_key, void*> shareable;         // pages a partner may take
  std::unordered_map<const void*, ptshare_key> key_of;
  uint64_t attaches = 0;   // faults and forks that took a partner's page
  uint64_t unshares = 0;   // references dropped by pt_unshare_range
  uint64_t tlb_flush_all = 0;  // flush_tlb_all() calls those cost (pmd_clear_flush)
};

// pt_shareable_vma(): whether the profile shares page tables under `vma` at all.
bool pt_shareable_vma(const kernel& k, const vm_area_struct& vma);
// Whether vma maps an msharefs region (mshare).
bool is_mshare_vma(const kernel& k, const vm_area_struct& vma);

// mm takes one more reference to the shared page `node` at level index idx (fork): its
// own under PTSHARE (VmPTE counts it), the host mm's under mshare (nothing is charged).
void ptshare_hold(kernel& k, mm_struct& mm, int idx, void* node);

// The share point of a fault at addr in vma: where a shared level's slot is empty, take
// the partner's page (or allocate one others may take), so that the walk that follows
// finds it. false only on ENOMEM.
bool ptshare_prepare(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr addr);

// This mm lets go of every shared page it points at under [start, end) (pt_unshare_range):
// the slots are cleared; a page nobody else holds is freed with its entries. With
// `keep_mshare`, an mshare region's pages stay (mprotect changes the region for all).
void ptshare_unshare_range(kernel& k, mm_struct& mm, vaddr start, vaddr end, bool keep_mshare = false);

// mprotect changed an mshare region's write permission: every entry of the region's
// tables follows, whichever processes reach them (its host mm's change_protection). A PTE
// only loses it (a write fault sets it again); a hugetlb leaf takes it either way.
void mshare_change_protection(kernel& k, int32_t object, bool writable);

// A shared page at level index idx is freed (its last reference went): it leaves the
// partner map.
void ptshare_forget(kernel& k, const void* node);

// The pages the entries of the shared subtrees mm points at map, by the kind of object
// (file, shm) they belong to: the part of its RSS no counter holds.
struct ptshare_rss_part {
  uint64_t file = 0, shmem = 0;
};
// `memo`, kept across the mms of one snapshot, holds each shared subtree's count.
ptshare_rss_part ptshare_rss(const kernel& k, const mm_struct& mm, std::unordered_map<const void*, uint64_t>* memo);

// Whether the shared PMD-level subtree that maps [base, base + span) for this mm has
// every entry present (and, for `write` on a write-notify mapping, writable): a touch of
// that span has nothing to fault. false when no such subtree is there.
bool ptshare_span_complete(const kernel& k, const mm_struct& mm, const vm_area_struct& vma, vaddr base,
                           vaddr end, bool write, vaddr* next);

}  // namespace vmlab
