// Address spaces, VMAs and the objects they map: the model's mm_types.h.
//
// Kernel: include/linux/mm_types.h (struct mm_struct, struct vm_area_struct),
// mm/shmem.c and the page cache for shared objects. Each field says what it means, its
// unit, and which operation maintains it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "model/filemap.h"
#include "model/pgtable.h"
#include "model/sparse.h"
#include "model/slab.h"
#include "vmlab/op.h"
#include "vmlab/run_result.h"

namespace vmlab {

// A per-page field of an object, where the kernel keeps it in struct page. struct page
// exists only for pages in memory, while an object may be declared far larger than what
// is ever faulted (a 512 GiB segment with a few pages touched, or 2^60 bytes that are
// never mapped). The field is sparse (sparse.h): chunks of it exist once a page in them
// was written, so the model's memory follows what is touched rather than what is declared.
class page_field {
 public:
  // The scheme keeps this field: every page starts at 0.
  void assign_zero(uint64_t /*n*/) {
    v_.clear();
    used_ = true;
  }
  [[nodiscard]] bool empty() const { return !used_; }  // never assigned: the scheme keeps no such field
  uint32_t& operator[](uint64_t i) { return v_.at(i); }
  uint32_t operator[](uint64_t i) const { return v_.get(i); }
  [[nodiscard]] size_t host_bytes() const { return v_.host_bytes(); }
  void account_to(size_t* acct) { v_.account_to(acct); }
  void expect_entries(uint64_t n) { v_.expect_entries(n); }

 private:
  sparse_array<uint32_t, 1024> v_;
  bool used_ = false;
};

// A shm segment or a file, with its page cache, or a hugetlb file with its huge pages.
// Pages enter the cache through filemap.h (faults, read, write) and stay until reclaim
// (vmscan.h) removes them with remove_from_page_cache.
struct mem_object {
  object_kind kind = object_kind::shm;
  bool mshare = false;  // an msharefs region (ptshare.h)
  uint64_t nr_pages = 0;
  sparse_bitmap resident;  // page-cache presence bitmap, one bit per page (sparse: sparse.h)
  uint64_t nr_resident = 0;
  // The page cache's index (filemap.h) and per-page PG_dirty / PG_writeback, kept by
  // filemap.cc; and the readahead state (file_ra_state): the page after the last read.
  page_cache_tree tree;
  sparse_bitmap dirty, writeback;
  uint64_t nr_dirty = 0, nr_writeback = 0;
  // PG_referenced (vmscan.h): set when a PTE comes to map the page or read()/write() finds
  // it cached; cleared by reclaim's scan. File objects only (the pages on the LRU).
  sparse_bitmap referenced;
  uint64_t ra_next = 0;
  // Mapped faults' readahead (readahead.h): PG_readahead per page, and the file_ra_state
  // window and mmap_miss they use (file objects, profiles with mmap_readahead).
  sparse_bitmap ra_mark;
  struct {
    uint64_t start = 0, size = 0, async = 0;
    uint32_t mmap_miss = 0;
  } mra;
  // shm: the page cache holds 2 MiB folios here (shmem THP), by PMD-size chunk of the
  // object; and how many PMD entries map each such folio (ShmemPmdMapped counts folios
  // mapped by at least one).
  sparse_bitmap huge_folio;
  std::vector<uint32_t> pmd_maps;
  // hugetlb: the huge page size (as a shift), and per huge page whether it is allocated
  // (in the hugetlbfs page cache) and whether a shared mapping reserved it (the file's
  // resv_map: reserved and not yet allocated).
  uint8_t huge_shift = 0;
  sparse_bitmap hpage;
  sparse_bitmap hpage_resv;
  [[nodiscard]] static bool test_bit(const sparse_bitmap& v, uint64_t i) { return v.test(i); }
  [[nodiscard]] static uint64_t word_of(const sparse_bitmap& v, uint64_t w) { return v.word(w); }
  static void put_bit(sparse_bitmap& v, uint64_t i, bool on) { v.put(i, on); }
  [[nodiscard]] static bool test_bit(const std::vector<uint64_t>& v, uint64_t i) {
    return i / 64 < v.size() && (v[i / 64] >> (i & 63)) & 1;
  }
  static void put_bit(std::vector<uint64_t>& v, uint64_t i, bool on) {
    if (i / 64 >= v.size()) v.resize(i / 64 + 1, 0);
    if (on) v[i / 64] |= uint64_t{1} << (i & 63);
    else v[i / 64] &= ~(uint64_t{1} << (i & 63));
  }
  // Per page, where struct page keeps them (rmap.h): PTEs mapping it, and the pte_chain
  // head + 1 (allocated only under the pte_chain scheme).
  page_field mapcount;
  page_field chain;
  [[nodiscard]] bool is_resident(uint64_t pg) const { return resident.test(pg); }
  // Counts the per-page arrays' chunks into *acct (kernel::object_host_bytes).
  void account_to(size_t* acct) {
    for (sparse_bitmap* b : {&resident, &huge_folio, &hpage, &hpage_resv, &dirty, &writeback, &referenced, &ra_mark})
      b->account_to(acct);
    tree.acct = acct;
    for (auto& a : tree.node) a.account_to(acct);
    for (auto& a : tree.used) a.account_to(acct);
    mapcount.account_to(acct);
    chain.account_to(acct);
    // Random faults find their chunk through a directory when the object is small.
    resident.expect_bits(nr_pages + 64);
    mapcount.expect_entries(nr_pages);
    chain.expect_entries(nr_pages);
  }
  // Host bytes of the per-page arrays above.
  [[nodiscard]] size_t host_bytes() const {
    size_t t = dirty.host_bytes() + writeback.host_bytes() + referenced.host_bytes();
    for (const auto& a : tree.node) t += a.host_bytes();
    for (const auto& a : tree.used) t += a.host_bytes();
    return t + resident.host_bytes() + huge_folio.host_bytes() + hpage.host_bytes() + hpage_resv.host_bytes() +
           pmd_maps.capacity() * sizeof(uint32_t) + mapcount.host_bytes() + chain.host_bytes();
  }
};

struct vm_area_struct {
  vaddr vm_start = 0;  // first byte (page aligned)
  vaddr vm_end = 0;    // first byte past the end
  uint8_t prot = 0;    // prot_bits; changed by mprotect
  bool shared = false; // VM_SHARED
  bool locked = false; // VM_LOCKED
  int32_t object = -1; // index into sim objects; -1 = anonymous
  uint64_t pgoff = 0;  // object page of vm_start; for anonymous VMAs vm_start >> PAGE_SHIFT
  // VM_HUGETLB: the huge page shift of a hugetlb VMA (its object is a hugetlb file), else 0.
  uint8_t huge_shift = 0;
  bool noreserve = false;   // VM_NORESERVE (MAP_NORESERVE)
  bool hugepage = false;    // VM_HUGEPAGE (MADV_HUGEPAGE)
  bool nohugepage = false;  // VM_NOHUGEPAGE (MADV_NOHUGEPAGE)
  bool seq_read = false;    // VM_SEQ_READ (MADV_SEQUENTIAL)
  bool rand_read = false;   // VM_RAND_READ (MADV_RANDOM)
  // VM_NONLINEAR: 2.6's remap_file_pages gave part of a shared file VMA another file
  // offset. vmlab splits that part off as a VMA of its own whose vm_pgoff is the new
  // offset, so its pages still follow from (VMA, address); the flag keeps it from merging
  // back and from sharing page tables (mremap.cc).
  bool nonlinear = false;
  // A private hugetlb VMA's reservations (HPAGE_RESV_OWNER): huge pages reserved at mmap
  // and not yet faulted, shared by the pieces a split leaves (the resv_map's kref).
  std::shared_ptr<uint64_t> resv;
  // Set by the first fault that allocates an anonymous page in a private VMA
  // (anon_vma_prepare), inherited at fork. vma_needs_copy() asks for it. Kept under
  // every rmap scheme: 2.5 had no anon_vma but the same "took an anonymous page" fact.
  bool has_anon_vma = false;
  // The object schemes' anon_vma (index into kernel::anon_vmas; 0 = none). VMAs merge
  // only with the same one or none.
  uint32_t anon_vma = 0;
  // anon_vma_chain: one link per anon_vma this VMA is on, with its AVC slab object.
  struct avc_link {
    uint32_t av = 0;
    slab_object obj{};
  };
  std::vector<avc_link> avcs;
  slab_object obj{};  // this VMA's vm_area_struct

  [[nodiscard]] bool writable() const { return prot & prot_write; }
  [[nodiscard]] bool is_anon() const { return object < 0; }
  [[nodiscard]] bool is_hugetlb() const { return huge_shift != 0; }
  // is_cow_mapping(): private and may become writable. We treat every private VMA as
  // such (mprotect may add PROT_WRITE later; VM_MAYWRITE is always set for ours).
  [[nodiscard]] bool is_cow() const { return !shared; }
  [[nodiscard]] uint64_t pages(uint8_t page_shift) const { return (vm_end - vm_start) >> page_shift; }
  // The object page (or, anonymous, the linear page index) mapped at addr.
  [[nodiscard]] uint64_t pgoff_at(vaddr addr, uint8_t page_shift) const {
    return pgoff + ((addr - vm_start) >> page_shift);
  }
  // The same for an address that may lie below vm_start (a bitmap word that begins before
  // the VMA): negative there. Both are page aligned, so the shift is exact.
  [[nodiscard]] int64_t pgoff_at_signed(vaddr addr, uint8_t page_shift) const {
    return int64_t(pgoff) + ((int64_t(addr) - int64_t(vm_start)) >> page_shift);
  }
  [[nodiscard]] vaddr addr_of(uint64_t pg, uint8_t page_shift) const { return vm_start + ((pg - pgoff) << page_shift); }
};

// Per-mm RSS counters (MM_ANONPAGES, MM_FILEPAGES, MM_SHMEMPAGES), in pages.
struct mm_rss {
  uint64_t anon = 0, file = 0, shmem = 0;
};

struct mm_struct {
  uint32_t pid = 0;
  pt_dir* pgd = nullptr;
  slab_object obj{};      // the mm_struct itself
  slab_object pgd_obj{};  // PAE: the 32-byte PGD from the "pgd" cache
  std::map<vaddr, vm_area_struct> vmas;  // by vm_start; sorted, non-overlapping
  // find_vma's last answer, as 2.4-2.6 kept mm->mmap_cache (3.15-6.0: a per-thread
  // vmacache): host-side, nothing simulated reads it. Whatever erases a VMA from `vmas`
  // clears it; find_vma tests the bounds the VMA has now, so one that grows or shrinks
  // in place needs nothing (check_invariants: one of these VMAs).
  vm_area_struct* mmap_cache = nullptr;
  // What the last top-down search for free room learnt (mmap.cc area_topdown): no gap in
  // [below, high) holds len bytes or more at align/phase. Mappings only shrink gaps, so it
  // holds until do_munmap makes one larger and forgets it. The kernel finds the gap in
  // O(log n) from the largest gap kept below each node of its VMA tree; this memo makes
  // a run of mmaps that fill the space downwards as cheap, and no other search cheaper.
  struct topdown_memo {
    vaddr high = 0, below = 0;
    bytes len = 0, align = 0, phase = 0;
  };
  mutable topdown_memo topdown;
  bytes pgtables_bytes = 0;              // mm->pgtables_bytes: what VmPTE reports
  level_counts nr_tables{};              // tables this mm points to, per level
  mm_rss rss;
  bytes hugetlb_usage = 0;  // mm->hugetlb_usage: /proc/PID/status HugetlbPages
  // 2.6.15 ppc64 mm->context.low_htlb_areas / high_htlb_areas: the 256 MiB segments below
  // 4 GiB and the 1 TiB areas above that hold huge pages only (huge_policy::htlb_areas).
  // Opened by a hugetlb mmap, never closed; inherited at fork (dup_mm copies the context).
  uint16_t low_htlb_areas = 0, high_htlb_areas = 0;
  uint64_t min_flt = 0;
  // Mapping names -> the range they were created with (ops address [base+off, +len)).
  std::map<uint32_t, std::pair<vaddr, bytes>> maps;
};

}  // namespace vmlab
