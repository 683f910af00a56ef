// Kernel profiles: a named Linux design as a bundle of policies and sizes.
//
// Why: vmlab compares kernel designs side by side, so a design is a value, never a
// scattering of `if (version < ...)`. Code asks the profile a question
// (counts_in_page_tables(l), vma_needs_copy policy, pt_reclaim) and the preset answers it.
// Presets are built as parent + deltas, as gem5 builds its policy variants; a scenario
// may override single keys (see apply_override for the list).
//
// Later issues add rmap, huge-page and sharing policies to this same struct.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/arch.h"
#include "model/slab.h"
#include "vmlab/status.h"

namespace vmlab {

// How munmap/exit decide which page-table pages to free.
enum class pgtable_free_policy : uint8_t {
  // 2.6.12+ free_pgtables(): every table whose whole span lies in the gap [floor, ceiling)
  // between the neighbouring VMAs is freed, at every level (mm/memory.c, Hugh Dickins).
  floor_ceiling,
  // 2.4 - 2.6.11 free_pgtables() in mm/mmap.c: only PTE pages under PGD entries whose
  // whole span lies in the gap are freed; upper levels are freed at exit only.
  pgd_gap,
};

// Which address the kernel picks for an mmap without a fixed address.
enum class mmap_layout : uint8_t {
  topdown,  // arch_get_unmapped_area_topdown (x86-64; i386 since 2.6.9)
  legacy,   // bottom-up from TASK_UNMAPPED_BASE = TASK_SIZE / 3 (i386 before 2.6.9)
};

// How the kernel finds the PTEs that map a page (mm/rmap.c), in the order Linux had them.
enum class rmap_scheme : uint8_t {
  // 2.4: no per-mapping structures; reclaim finds mappings by scanning every mm's page
  // tables (swap_out), and `Mapped`/`ReverseMaps` do not exist.
  none,
  // 2.5.28 - 2.6.6: a chain of pte pointers per page (pte_chain), PageDirect when mapped
  // once. Generation chosen by pte_chain_slots (1: 2.5.28-2.5.34 {next, ptep} objects;
  // NRPTE: 2.5.35+ cache-line chains).
  pte_chain,
  // 2.6.7 - 2.6.33: object-based. File pages through the mapping's i_mmap; anonymous
  // pages through one anon_vma per fork family (each VMA on its list; no per-page cost).
  anon_vma,
  // 2.6.34+: an anon_vma per process and VMA lineage, linked to VMAs by anon_vma_chain
  // objects (one per VMA-anon_vma pair, cloned at fork).
  anon_vma_chain,
};
const char* rmap_scheme_name(rmap_scheme s);

struct rmap_policy {
  rmap_scheme scheme = rmap_scheme::none;
  // pte_chain: pte slots per chain object, NRPTE = (L1_CACHE_BYTES - sizeof(long)) /
  // sizeof(pte_addr_t); 1 for the 2.5.28-2.5.34 two-pointer objects.
  uint32_t pte_chain_slots = 0;  // 0: NRPTE from the machine's cache line
  // sizeof(pte_addr_t); 0: as the final paging and HIGHPTE make it (a pte_t pointer, or
  // u64 under HIGHPTE with PAE), worked out when the kernel is built.
  uint32_t pte_addr_bytes = 0;
  // 2.5.28-2.5.34 page_remove_rmap() turned a chain left with one pte back into
  // PageDirect; from 2.5.35 only page_referenced() does.
  bool collapse_on_remove = false;
  // 2.5.55+: pte_chain_alloc()/__pte_chain_free() keep one object per CPU.
  bool percpu_one_deep = false;
  // 3.19+ (7a3ef208e662, split into num_children/num_active_vmas later): fork reuses an
  // anon_vma with no active VMA and fewer than two children instead of a new one.
  bool anon_vma_reuse = false;
};

// /sys/kernel/mm/transparent_hugepage/enabled: whether anonymous VMAs get THPs.
enum class thp_mode : uint8_t { never, madvise, always };
// .../transparent_hugepage/shmem_enabled: whether shmem (SysV, memfd, MAP_SHARED|
// MAP_ANONYMOUS) allocates huge folios. deny and force act on every shmem mount.
enum class shmem_thp_mode : uint8_t { never, always, within_size, advise, deny, force };
const char* thp_mode_name(thp_mode m);
const char* shmem_thp_mode_name(shmem_thp_mode m);

// Huge pages: what the kernel has and how it maps them (mm/hugetlb.c, mm/huge_memory.c,
// mm/shmem.c). The sizes come from the paging format's leaf levels.
struct huge_policy {
  // hugetlb pages (hugetlbfs, SHM_HUGETLB, MAP_HUGETLB). 2.5.36 had them behind
  // sys_alloc_hugepages; hugetlbfs came later in 2.5.
  bool hugetlb = false;
  // 1 GiB hugetlb pages at the PUD level (x86-64, X86_FEATURE_GBPAGES).
  bool gigantic = false;
  // 2.6.15 ppc64 (arch/powerpc/mm/hugetlbpage.c, include/asm-powerpc/page_64.h): huge
  // pages live only in huge-page-only areas, the 256 MiB segments (SID_SHIFT 28) below
  // 4 GiB and the 1 TiB areas (HTLB_AREA_SHIFT 40) above, the first of these starting at
  // 4 GiB. A hugetlb mmap opens its areas, which must hold no mapping yet (EBUSY); no
  // other mapping may enter an open area (is_hugepage_only_range). So no PUD or PMD table
  // there serves small pages. mmap.cc: hugetlb_area_check(), htlb_unmapped_area().
  bool htlb_areas = false;
  // huge_pmd_share(): processes mapping the same hugetlb file at the same offset within a
  // 1 GiB window share the PMD table (CONFIG_ARCH_WANT_HUGE_PMD_SHARE, x86; Ken Chen, 2.6.20).
  bool pmd_share = false;
  // fork copies no page tables of a shared hugetlb VMA without anon_vma (6.0,
  // "hugetlb: lazy page table copies in fork()", bcd51a3c679d); before, it always did.
  bool fork_lazy = false;
  // hugetlb pages counted in the process's RSS (2.5/2.6 set_huge_pte: mm->rss += HPAGE_SIZE
  // / PAGE_SIZE); 6.x counts them only in HugetlbPages.
  bool hugetlb_in_rss = false;
  // Anonymous THP (2.6.38) and shmem THP (4.8), and their run-time policies (the host's
  // defaults for the profile of this host's kernel).
  bool thp = false;
  bool shmem_thp = false;
  thp_mode enabled = thp_mode::never;
  shmem_thp_mode shmem_enabled = shmem_thp_mode::never;
  // A read fault in an empty aligned range maps the huge zero page (use_zero_page, 3.8+),
  // with a deposited PTE table as for a THP.
  bool huge_zero_page = false;
  // A write to the huge zero PMD allocates a THP in place (6.13, do_huge_zero_wp_pmd);
  // before, the PMD was split into 512 zero-page PTEs and one 4 KiB page was faulted.
  bool zero_wp_allocates = false;
};

// Shared page tables, the two designs (neither merged; linux-vm-internals.md section 5;
// rules and accounting in src/model/ptshare.h):
//  * Dave McCracken's PTSHARE (2.6.13 - 2.6.17-rc1 postings): processes that map the same
//    file range at the same address with the same permissions share the page-table pages
//    under it: a PTE page when the VMA covers its whole PMD-aligned span, a PMD page when
//    it covers a whole PUD span.
//  * Oracle's mshare (v3, 2025): the processes that map an msharefs region share the PUD
//    table of a host mm that owns it (linked from each process's P4D entry, the PGD entry
//    on 4-level), at whatever P4D_SIZE-aligned address each maps it.
struct ptshare_policy {
  bool pte = false;  // CONFIG_PTSHARE_PTE (default y)
  bool pmd = false;  // CONFIG_PTSHARE_PMD (default y on x86_64)
  bool pud = false;  // CONFIG_PTSHARE_PUD (default n)
  bool mshare = false;  // CONFIG_MSHARE: msharefs regions ([[object]] mshare = true)
  [[nodiscard]] bool ptshare() const { return pte || pmd || pud; }
  [[nodiscard]] bool any() const { return ptshare() || mshare; }
  // Whether pages of kernel level l (the level of the shared page) are shared.
  [[nodiscard]] bool shares(level l) const {
    return (l == level::pte && pte) || (l == level::pmd && pmd) || (l == level::pud && pud);
  }
};

// A kmem_cache the profile's kernel creates: sizeof the object and its create() flags.
// object_size 0: that kernel has no such cache.
struct cache_decl {
  uint32_t object_size = 0;
  slab_flags flags{};
};

// Kernel objects and boot-time memory whose size depends on the version and the arch.
// Sizes marked "estimate" in profile.cc come from the struct layouts, not a measurement.
struct kernel_objects {
  cache_decl vm_area_struct, mm_struct, anon_vma, anon_vma_chain, pte_chain;
  // The page cache's index nodes (filemap.h): "radix_tree_node", which 6.x's xarray
  // still allocates from (struct xa_node). 0: the profile's kernel indexes its page cache
  // another way (2.4's page hash table, page_cache_policy::index).
  cache_decl radix_tree_node;
  uint32_t struct_page = 0;   // sizeof(struct page): mem_map costs this per page frame
  bytes kernel_image = 0;     // text, data and bss reserved at boot
  slab_policy slab;           // allocator and its machine knobs
  slabinfo_format slabinfo = slabinfo_format::v2_1;
};

// Physical memory zones. i386 with CONFIG_HIGHMEM: ZONE_DMA (16 MiB), ZONE_NORMAL up to
// the direct-mapped limit (896 MiB), ZONE_HIGHMEM above; kernel allocations (slab, page
// tables) come from DMA/Normal only. x86-64: DMA, DMA32 (4 GiB), Normal; all direct-mapped.
struct zone_policy {
  bool highmem = false;
  bytes lowmem_limit = 0;  // highmem: where ZONE_HIGHMEM begins
  bytes dma32_limit = 0;   // x86-64: where ZONE_NORMAL begins
  // CONFIG_HIGHPTE (2.5.35+): PTE pages (only those) may come from highmem.
  bool highpte = false;
};

// Which /proc/meminfo lines the kernel prints and what they count.
struct meminfo_policy {
  bool reverse_maps = false;       // ReverseMaps: 2.5.30 - 2.5.67
  bool mapped = true;              // Mapped: 2.5.36+
  bool mapped_counts_anon = false; // nr_mapped counted anonymous pages until 2.6.18
  bool hugetlb_total = false;      // Hugetlb: (all hstates, kB) next to HugePages_*, 4.16+
};

// How the page cache finds a file's page and how far it reads ahead (mm/filemap.c,
// mm/readahead.c; filemap.h has the structures).
enum class page_cache_index : uint8_t {
  // 2.4: one global hash of (mapping, index) -> page, page_hash_table, sized at boot
  // (page_cache_init) from the machine's memory; no per-file nodes.
  hash_table,
  // 2.5.8+: a radix tree per address_space (lib/radix-tree.c), from 4.20 the xarray;
  // nodes of 1 << map_shift slots from the "radix_tree_node" slab cache.
  radix_tree,
};

enum class mmap_readahead : uint8_t { none, ondemand_6x };

struct page_cache_policy {
  page_cache_index index = page_cache_index::radix_tree;
  // RADIX_TREE_MAP_SHIFT (2.5 - 4.19) / XA_CHUNK_SHIFT (4.20+): 6 unless CONFIG_BASE_SMALL.
  uint8_t map_shift = 6;
  // The largest readahead window of a read() in bytes: 2.5/2.6 VM_MAX_READAHEAD 128 KiB
  // (include/linux/mm.h, the backing_dev_info's ra_pages default), 6.x VM_READAHEAD_PAGES
  // (SZ_128K / PAGE_SIZE); 2.4's vm_max_readahead was 31 pages (mm/filemap.c).
  bytes ra_max = 128 * 1024;
  // 2.4's mapped-fault read-around (mm/filemap.c filemap_nopage, 2.4.0): a fault on an
  // uncached page reads the aligned cluster of 1 << page_cluster pages holding it
  // (read_cluster_nonblocking), one page under MADV_RANDOM, and under MADV_SEQUENTIAL
  // also a window of ra_max rounded up to whole clusters ahead of the fault
  // (nopage_sequential_readahead). page_cluster comes from the memory size
  // (page_cluster_24 in readaround_24.h); the sim's tiobench only. false: the profile's
  // kernel reads around a mapped fault otherwise (6.x: mmap_ra below; 2.5 and 2.6.15:
  // not modelled).
  bool mmap_read_around_24 = false;
  // Readahead of mapped faults on files (readahead.h): none (the faulting page alone: 2.5,
  // and 2.6.15's read-around, not modelled), or 6.x's: fault-around skips PG_readahead
  // pages, a miss reads around the fault (do_sync_mmap_readahead), a marked page reads the
  // next window (do_async_mmap_readahead, page_cache_async_ra), order-0 folios.
  mmap_readahead mmap_ra = mmap_readahead::none;
  // 2.4's kupdate (fs/buffer.c, 2.4.0): every bdf_prm interval (5 s) sync_old_buffers
  // calls sync_inodes(0), which writes and waits for every page of every inode with
  // dirty pages (sync_one: filemap_fdatasync, then filemap_fdatawait), inode by inode.
  // Pages dirtied through a PTE count once the dirty bit reached the page (flush-behind,
  // swap_out, munmap). 0: not modelled (the sim's tiobench runs 2.4 only).
  uint32_t kupdate_interval_ms = 0;
};

// The block layer's request queue as the profile's kernel sets it up, for the sim's I/O
// timing (src/engine/tiobench_sim.h; src/block/elevator.h models the elevators). The
// defaults are 2.6's (deadline, BLK_DEF_MAX_SECTORS 1024, BLKDEV_MAX_RQ 128); only the
// tiobench sim reads these, and it runs the linux-2.4 profile only.
enum class io_elevator : uint8_t { noop, linus, deadline };
struct block_queue_policy {
  io_elevator elevator = io_elevator::deadline;
  int32_t read_passovers = 8192, write_passovers = 16384;  // linus only
  uint32_t max_sectors = 1024;  // 512-byte sectors per request after merging
  uint32_t nr_requests = 128;   // free requests per direction (get_request_wait past it)
};

// Page reclaim (vmscan.h): the watermarks that wake it, summed over the zones.
enum class wmark_rule : uint8_t {
  // 2.4 (mm/page_alloc.c free_area_init_core): per zone pages_min = realsize /
  // zone_balance_ratio[zone], clamped to [balance_min, balance_max]; pages_low = 2 x min,
  // pages_high = 3 x min.
  zone_balance_ratio,
  // 2.6+ (mm/page_alloc.c init_per_zone_wmark_min, setup_per_zone_wmarks): min_free_kbytes
  // = int_sqrt(lowmem_kbytes x 16), clamped to [128, min_free_max_kb], shared by the low
  // zones; a highmem zone's min is present / 1024 clamped to [SWAP_CLUSTER_MAX, 128];
  // low = min + step, high = low + step, step = max(min / 4, managed x scale_factor /
  // 10000) (2.6: min / 4 alone, scale_factor 0).
  min_free_kbytes,
};
struct reclaim_policy {
  wmark_rule rule = wmark_rule::min_free_kbytes;
  // zone_balance_ratio: by zone DMA, Normal (and DMA32), HighMem.
  std::array<uint32_t, 3> balance_ratio{128, 128, 128};
  uint32_t balance_min = 20, balance_max = 255;
  // min_free_kbytes: its upper clamp, watermark_scale_factor, and whether THP raises
  // min_free_kbytes to khugepaged's recommendation (mm/khugepaged.c
  // set_recommended_min_free_kbytes: pageblock_nr_pages x zones x (2 + MIGRATE_PCPTYPES^2),
  // at most 5% of the low memory; only while THP is enabled, always or madvise).
  uint32_t min_free_max_kb = 65536;
  uint32_t scale_factor = 0;
  bool thp_min_free = false;
};

// remap_file_pages(2) (mm/fremap.c, then mm/mmap.c): absent (before 2.5.46: ENOSYS), a
// VM_NONLINEAR VMA whose PTEs map file pages out of order (2.5.46 to 3.x), or the 4.0+
// emulation, an mmap(MAP_FIXED | MAP_POPULATE) of the range at the new offset.
enum class rfp_impl : uint8_t { none, nonlinear, emulated };

// mremap(2) (mm/mremap.c move_page_tables) and remap_file_pages.
struct mremap_policy {
  // A move hands over a whole PTE page (one PMD entry) when the old and the new range
  // both cover its aligned span and the new entry is empty (move_normal_pmd,
  // CONFIG_HAVE_MOVE_PMD: "mm: speed up mremap by 20x on large regions", 5.0, selected by
  // x86); a whole PMD page likewise (move_normal_pud, CONFIG_HAVE_MOVE_PUD, 5.11). Else
  // PTEs move one at a time (move_ptes) into tables allocated at the new address, and the
  // old tables go with the old range's munmap.
  bool move_pmd = false;
  bool move_pud = false;
  // Where the destination's PTE pages come from: 2.4 and 2.5 allocate one as the first
  // present entry of its span moves (move_one_page -> alloc_one_pte); 2.6.14+ moves a PMD
  // extent at a time and allocates the destination's PTE page for every extent whose
  // source PTE page exists, entries or not (move_page_tables -> alloc_new_pmd ->
  // __pte_alloc; 6.x pte_alloc).
  bool dest_table_per_extent = false;
  rfp_impl remap_file_pages = rfp_impl::none;
};

// vm.mmap_min_addr (its default, 64 KiB): no mapping starts below it, on every profile.
inline constexpr vaddr kMmapMinAddr = 64 * 1024;

using level_mask = uint8_t;  // bit (1 << level) set = the level is counted
constexpr level_mask mask_of(level l) { return static_cast<level_mask>(1u << static_cast<int>(l)); }

struct kernel_profile {
  std::string name;
  std::string description;
  paging_format paging;

  // x86 PTI: the PGD is an order-1 allocation (PGD_ALLOCATION_ORDER 1), 8 KiB.
  bool pti = false;
  // Levels /proc/meminfo PageTables (NR_PAGETABLE) counts: PTE always (2.5.28+), PMD since
  // 5.10, PUD since 6.7, P4D and PGD since 6.14 (only page-sized ones, not slab PGDs).
  level_mask page_tables_levels = mask_of(level::pte);
  // Levels VmPTE counts: PTE (2.6.x nr_ptes); PTE+PMD+PUD since 4.15 (pgtables_bytes).
  level_mask vmpte_levels = mask_of(level::pte);
  bool reports_vmpte = true;  // /proc/PID/status has a VmPTE line (2.6.10+)
  pgtable_free_policy pgtable_free = pgtable_free_policy::floor_ceiling;
  // CONFIG_PT_RECLAIM (6.14+, x86-64): MADV_DONTNEED frees PTE pages it empties.
  bool pt_reclaim = false;
  // fork: copy_page_range() skips VMAs for which vma_needs_copy() is false (shared, no
  // anon_vma). Before 2.6.14 fork copied every VMA's page tables.
  bool fork_skips_shared = true;
  // do_fault_around() (3.15+): read faults on file/shmem VMAs map up to this many bytes of
  // already-cached pages around the fault. 0 = no fault-around.
  bytes fault_around_bytes = 0;
  mmap_layout layout = mmap_layout::topdown;
  // Where vmlab's top-down allocator starts (see docs/decisions.md: the workload window is
  // placed where the live engine's C runtime has no mappings).
  vaddr mmap_base = 0;
  bytes default_memory = 0;  // machine memory when the scenario gives none
  rmap_policy rmap;
  huge_policy huge;
  ptshare_policy ptshare;
  mremap_policy mremap;
  // Why a kernel that had hugetlb pages has none in vmlab (said with the error a hugetlb
  // object gets); empty when it simply had none.
  std::string hugetlb_missing;
  kernel_objects objs;
  zone_policy zones;
  meminfo_policy meminfo;
  page_cache_policy page_cache;
  block_queue_policy block_queue;
  reclaim_policy reclaim;

  [[nodiscard]] bool counts_in_page_tables(level l) const { return page_tables_levels & mask_of(l); }
  [[nodiscard]] bool counts_in_vmpte(level l) const { return vmpte_levels & mask_of(l); }
  // Bytes of the top-level table as allocated (32 B PAE, 8 KiB PTI, else one table).
  [[nodiscard]] bytes pgd_bytes() const;
};

// The hugetlb page sizes the profile's kernel has, the default (the PMD-level one) first;
// empty without hugetlb.
std::vector<bytes> hugetlb_page_sizes(const kernel_profile& p);

// What one page-table node of the profile's kernel costs (pgalloc.cc, where the sim
// charges them; the estimate's closed form uses the same): the bytes of a node at level
// index idx (the PGD as pgd_bytes()), the whole pages one takes (0 for a slab PGD), and
// the base pages behind `count` tables of level idx: whole-page tables count each, PTE
// fragments and slab objects pack tables_per_page() to a page (per mm for fragments,
// where `count` is one mm's tables; kernel-wide for slab objects).
bytes pt_node_bytes(const kernel_profile& p, int idx);
uint64_t pt_node_pages(const kernel_profile& p, int idx);
uint64_t pt_backing_pages(const kernel_profile& p, int idx, uint64_t count);

// 2.6.15 ppc64's huge-page-only areas (huge_policy::htlb_areas; mmap.cc, where the sim
// places mappings; the estimate's closed form uses the same): the top-down loop of
// hugetlb_get_unmapped_area over the 1 TiB areas (area 0 from 4 GiB), for a 64-bit
// process: the highest area not in `taken` (a mask of areas 0-15: open already, or
// holding a mapping) that holds len bytes at align/phase, at its lowest such address.
// nullopt when none does. Simplified as mmap.cc says: a mapping lies in one area.
struct htlb_area_place {
  vaddr addr, lo, hi;  // the mapping's address; the area [lo, hi) it opens
};
std::optional<htlb_area_place> htlb_open_area(const kernel_profile& p, bytes len, bytes align, bytes phase,
                                              uint16_t taken);

// The preset profile called `name`, or invalid_argument listing the known ones.
result<kernel_profile> find_profile(const std::string& name);
std::vector<std::string> profile_names();

// Applies one scenario override ("pti" = "false", "paging" = "i386-pae", ...). Keys:
// paging, pti, pt_reclaim, fault_around_bytes, fork_skips_shared, page_tables_levels,
// vmpte_levels, pgtable_free, mmap_layout, rmap (none, pte_chain, anon_vma,
// anon_vma_chain), pte_chain_slots, anon_vma_reuse, highpte, hugetlb_pmd_share,
// thp_enabled (always, madvise, never), shmem_enabled (always, within_size, advise,
// never, deny, force), ptshare_pte, ptshare_pmd, ptshare_pud. Errors name the key.
status apply_override(kernel_profile& p, const std::string& key, const std::string& value);

}  // namespace vmlab
