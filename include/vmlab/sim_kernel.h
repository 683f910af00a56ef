// sim_kernel: the simulated kernel behind one small, syscall-shaped interface.
//
// Why this shape: the sim engine turns each op into one of these calls, and the live
// engine keeps a shadow sim_kernel to learn which address the model would give each
// mapping, so both engines place mappings identically. Nothing here does I/O or reads a
// clock; the same calls in the same order give the same state, bit for bit.
//
// Errors are the kernel's: an op the kernel would refuse returns its errno text
// ("EEXIST: ...", "ENOMEM: ..."), a touch of an unmapped or protected page returns
// "SIGSEGV: ...". After an ENOMEM from a fault the state is as the kernel left it (pages
// mapped up to the failing one).
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "vmlab/op.h"
#include "vmlab/run_result.h"
#include "vmlab/status.h"

namespace vmlab {

struct kernel;
struct kernel_profile;

// The rmap state of one mapped page.
struct page_info {
  bool present = false;
  bool anon = false;
  bool zero_page = false;    // the shared zero page: PageReserved, never in an rmap
  uint32_t mapcount = 0;     // PTEs mapping the page
  bool direct = false;       // pte_chain: PageDirect (or any scheme: mapped, no chain)
  uint64_t chain_objects = 0;  // pte_chain objects in its chain (counted by walking it)
  bytes huge = 0;            // mapped by a huge leaf of this size (0: a PTE)
};

// One present PTE and the page it maps (for comparing designs: every rmap scheme must
// produce the same set of these from the same ops).
struct pte_mapping {
  uint32_t pid = 0;
  vaddr addr = 0;
  enum kind_t : uint8_t { object, anon, zero_page } kind = object;
  int32_t object_index = -1;  // object pages: which object ...
  uint64_t pgoff = 0;         // ... and which page of it
  uint32_t anon_id = 0;       // anonymous pages shared since a fork (0: mapped only here)
  bool writable = false;
  bytes size = 0;             // a huge leaf of this size (0: a PTE); anon_id is then the huge page's id
  bool operator==(const pte_mapping&) const = default;
};

class sim_kernel {
 public:
  // A kernel with `profile` (overrides applied) on a machine of `memory` bytes.
  static result<std::unique_ptr<sim_kernel>> create(const machine_decl& m, const std::vector<object_decl>& objects);
  // What create() refuses of the machine alone (its profile and overrides, and memory too
  // small for mem_map and the kernel image), for readers that can point at the line.
  static status check_machine(const machine_decl& m);
  ~sim_kernel();

  status spawn(uint32_t pid);
  status fork(uint32_t parent, uint32_t child);
  status exit(uint32_t pid);
  // mmap as described by o (pid, map, object, flags, addr/align); returns the address.
  result<vaddr> mmap(const op& o);
  status munmap(uint32_t pid, uint32_t map, bytes off, bytes len);
  status mprotect(uint32_t pid, uint32_t map, bytes off, bytes len, uint8_t prot);
  status madvise(uint32_t pid, uint32_t map, bytes off, bytes len, advice adv);
  status madvise_dontneed(uint32_t pid, uint32_t map, bytes off, bytes len);
  // Touches [off, off+len) of a mapping every `stride` bytes (a page-at-a-time range op).
  status touch(uint32_t pid, uint32_t map, bytes off, bytes len, bytes stride, bool write);
  // Touches single pages (page indices relative to the mapping start), in order. Where
  // the faults under different PTE tables commute, they run table by table (each
  // table's in the order given): the same result, with walks in address order.
  status touch_pages(uint32_t pid, uint32_t map, const std::vector<uint64_t>& pages, bool write);
  // Off: touch_pages always faults in the order given (for tests and benchmarks).
  void set_touch_in_table_order(bool on);
  // The touch_pages batches that ran table by table so far.
  [[nodiscard]] uint64_t touch_batches_in_table_order() const;
  // The PTE tables those batches left as compact slot values so far (model/pgtable.h).
  [[nodiscard]] uint64_t tables_compacted() const;
  // The PTE tables those batches read by their fault-around windows alone, unsorted.
  [[nodiscard]] uint64_t tables_by_windows() const;
  // read/readv/write (op.h): the file's pages through the page cache (none with O_DIRECT),
  // and the user buffer faulted in as copy_to_user / get_user_pages would (written by a
  // read, read by a write).
  status file_io(const op& o);
  // fsync(2) of an object; msync(MS_SYNC) of [off, off+len) of a mapping: dirty pages
  // written back (at once: no clock).
  status fsync(uint32_t pid, int32_t object);
  status msync(uint32_t pid, uint32_t map, bytes off, bytes len);
  // mremap(2) of a whole mapping (op.h: len, maymove, fixed/addr); returns its address
  // after (the mapping's name follows it). remap_file_pages(2) of [off, off+len) of a
  // shared file mapping to the object's bytes from obj_off.
  result<vaddr> mremap(const op& o);
  status remap_file_pages(const op& o);

  [[nodiscard]] const kernel_profile& profile() const;
  [[nodiscard]] sample snapshot(const std::string& name) const;
  [[nodiscard]] peaks peak() const;  // maxima since creation (meminfo and slab included)
  [[nodiscard]] meminfo meminfo_now() const;
  // /proc/slabinfo rows of every cache the profile's kernel has, now or at their maxima;
  // and the format version that kernel prints ("1.1", "2.0", "2.1").
  [[nodiscard]] std::vector<slab_row> slabinfo(bool maxima) const;
  [[nodiscard]] const char* slabinfo_version() const;

  // Reverse-map walks on the page mapped at offset `off` of a mapping (mm/rmap.c).
  // try_to_unmap clears every PTE that maps it and returns the work the profile's scheme
  // did to find them; page_referenced only walks (and, for pte_chain, turns a one-entry
  // chain back into PageDirect), returning the PTEs found.
  result<rmap_work> try_to_unmap(uint32_t pid, uint32_t map, bytes off);
  result<uint64_t> page_referenced(uint32_t pid, uint32_t map, bytes off);
  [[nodiscard]] const rmap_work& rmap_work_total() const;  // summed over every walk
  // Every present PTE of every process, by pid then address.
  [[nodiscard]] std::vector<pte_mapping> mappings() const;
  // What struct page says about the page mapped at `off` (for tests and tools).
  [[nodiscard]] result<page_info> page_at(uint32_t pid, uint32_t map, bytes off) const;
  [[nodiscard]] uint64_t faults() const;
  [[nodiscard]] uint64_t cow_faults() const;
  // The page cache's work over the run: pages written back, pages read ahead.
  [[nodiscard]] std::array<uint64_t, 2> page_cache_counts() const;
  // Proactive reclaim of up to len bytes of page cache through the LRU (memory.reclaim's
  // work; len 0: everything evictable). It reclaims what it can and never fails: what it
  // did is in reclaim_counts().
  status reclaim(bytes len);
  [[nodiscard]] const reclaim_stats& reclaim_counts() const;
  // The zone watermarks, summed over the zones, in pages: min, low, high (vmscan.h).
  [[nodiscard]] std::array<uint64_t, 3> watermarks() const;
  // Shared page tables (ptshare.h): attaches, unshares, flush_tlb_all() calls.
  [[nodiscard]] std::array<uint64_t, 3> ptshare_counts() const;
  [[nodiscard]] bool has_process(uint32_t pid) const;
  // The start address a mapping was created at (for the live engine); 0 if unknown.
  [[nodiscard]] vaddr map_addr(uint32_t pid, uint32_t map) const;
  // Its length (as created, or as mremap left it); 0 if unknown.
  [[nodiscard]] bytes map_len(uint32_t pid, uint32_t map) const;
  // Recounts everything from scratch and compares with the incremental counters;
  // returns "" when consistent, else what differs (validate_mm for the model).
  [[nodiscard]] std::string check_invariants() const;
  // Host bytes the page-table representation uses (for the memory benchmark).
  [[nodiscard]] size_t host_bytes() const;
  // Of those, the bytes of nodes in use: what a change of the tables cost, whatever the
  // store's chunks (pgtable.h pt_store::live_bytes).
  [[nodiscard]] size_t live_host_bytes() const;
  // Host bytes of the model's large structures (page tables, the objects' per-page
  // state, the address spaces), counted in O(1): what --max-host-memory compares.
  [[nodiscard]] size_t model_host_bytes() const;

 private:
  // Tests of check_invariants() damage the state on purpose (tests/model/check_test.cc).
  friend struct sim_kernel_internals;
  explicit sim_kernel(std::unique_ptr<kernel> k);
  std::unique_ptr<kernel> k_;
};

}  // namespace vmlab
