#include "model/profile.h"

#include "vmlab/suggest.h"

#include <charconv>
#include <functional>

namespace vmlab {
namespace {

constexpr level_mask kAllLevels = 0x1f;
constexpr level_mask kPtePmdPud = (1u << 2) | (1u << 3) | (1u << 4);

// Linux 2.5.26 on i386 without PAE (HIGHMEM4G), the kernel of seed 000: two-level tables,
// fork copies every VMA (copy_page_range had no shared-mapping shortcut), page tables are
// freed only under wholly unmapped PGD entries (2.4/2.5 free_pgtables in mm/mmap.c), the
// legacy bottom-up mmap layout from TASK_UNMAPPED_BASE, and no VmPTE line (2.6.10+).
// PageTables (nr_page_table_pages) counted PTE pages only; the line itself is 2.5.28+.
kernel_profile linux_2_5_26() {
  kernel_profile p;
  p.name = "linux-2.5.26";
  p.description = "Linux 2.5.26 + rmap rollup, i386 2-level (HIGHMEM4G), Pentium III: seed 000's kernel";
  p.paging = *find_paging_format("i386-2level");
  p.page_tables_levels = mask_of(level::pte);
  p.vmpte_levels = mask_of(level::pte);
  p.reports_vmpte = false;
  p.pgtable_free = pgtable_free_policy::pgd_gap;
  p.fork_skips_shared = false;
  p.layout = mmap_layout::legacy;
  p.mmap_base = p.paging.task_size / 3;  // TASK_UNMAPPED_BASE
  p.default_memory = 4 * GiB;
  // Dave McCracken's 2.5.26 rmap rollup (seed 000): pte_chains of one 32-byte cache line
  // (7 slots, seed 000's "32 bytes each"), PageDirect, the ReverseMaps counter; no
  // per-CPU pte_chain cache (2.5.55) and no Mapped line (2.5.36).
  p.rmap.scheme = rmap_scheme::pte_chain;
  p.rmap.pte_chain_slots = 0;  // from the cache line: (32 - 4) / 4 = 7
  p.meminfo = {.reverse_maps = true, .mapped = false, .mapped_counts_anon = true};
  // Sizes on i386 (estimates from the 2.5 struct layouts): vm_area_struct 64 B
  // (SLAB_HWCACHE_ALIGN, as 2.4/2.5 create it), mm_struct 384 B, struct page 40 B (with
  // the rmap union; the 2.6.0 layout of linux-vm-internals.md section 1.2).
  p.objs.vm_area_struct = {64, {.hwcache_align = true}};
  p.objs.mm_struct = {384, {.hwcache_align = true}};
  p.objs.pte_chain = {0, {.hwcache_align = true}};  // size: the cache line
  // The radix-tree page cache (2.5.8, lib/radix-tree.c): struct radix_tree_node is
  // {unsigned int count; void *slots[64]}, 4 + 64 x 4 = 260 B on i386 (no tags yet;
  // dirty pages were on address_space lists), created with a ctor and no alignment flag.
  p.objs.radix_tree_node = {260, {.ctor = true}};
  p.page_cache = {.index = page_cache_index::radix_tree, .map_shift = 6, .ra_max = 128 * KiB};  // VM_MAX_READAHEAD
  p.objs.struct_page = 40;
  p.objs.kernel_image = 4 * MiB;
  p.objs.slab = slab_policy_i386_2_5(32);
  p.objs.slab.nr_cpus = 8;
  p.objs.slab.cpucache_2_4 = true;
  p.objs.slabinfo = slabinfo_format::v1_1;
  p.zones = {.highmem = true, .lowmem_limit = 896 * MiB, .dma32_limit = 0, .highpte = false};
  // Watermarks as 2.4.10+ set them (Andrea Arcangeli's VM, which 2.5.0 forked from
  // 2.4.15 with): zone_balance_ratio 128 for every zone, min 20, max 255 pages.
  p.reclaim = {.rule = wmark_rule::zone_balance_ratio, .balance_ratio = {128, 128, 128}, .balance_min = 20, .balance_max = 255};
  return p;
}

// Linux 2.4.1 (January 2001) on i386, the kernel of seed 003, as 2.5.26 minus what 2.5
// added. Sources are 2.4.0's text (liexusong/linux-2.4.0; 2.4.1pre3 changed none of these).
// Modelled: no reverse map (mapped pages are unmapped by swap_out scanning page tables,
// mm/vmscan.c), 64-byte struct page, filemap_nopage's read-around and MADV_SEQUENTIAL
// read-ahead (readaround_24.h), read()'s MAX_READAHEAD of 31 pages, kupdate's 5-second
// write-back of inodes' dirty pages, the linus elevator with 2.4.0's passovers and IDE's
// request limits, swap_out's round-robin page-table scan (vmscan.h). Not modelled: page
// aging and the active/inactive_dirty/inactive_clean lists (one list with a second chance,
// vmscan.h), page_launder (the tiobench sim evicts in insertion order, tiobench_sim.h), the global
// page_hash_table (the page cache keeps 2.5's radix-tree accounting), the buffer cache.
kernel_profile linux_2_4() {
  kernel_profile p = linux_2_5_26();
  p.name = "linux-2.4";
  p.description =
      "Linux 2.4.1, i386 2-level, no rmap (swap_out scans page tables), 2.4 read-around and linus elevator: seed "
      "003's kernel (page aging and page_launder not modelled)";
  p.rmap = {};                                   // no reverse map until 2.5.27
  p.objs.pte_chain = {};
  p.meminfo = {.reverse_maps = false, .mapped = false, .mapped_counts_anon = false};
  // include/linux/mm.h (2.4.0): list, mapping, index, next_hash, count, flags, lru, age,
  // wait, pprev_hash, buffers, virtual, zone: 64 bytes on i386 UP.
  p.objs.struct_page = 64;
  // include/linux/blkdev.h MAX_READAHEAD 31 (pages), ide-probe.c max_readahead.
  p.page_cache.ra_max = 31 * 4 * KiB;
  p.page_cache.mmap_read_around_24 = true;
  p.page_cache.kupdate_interval_ms = 5000;  // fs/buffer.c bdf_prm interval 5*HZ
  // mm/page_alloc.c (2.4.0, the inactive_dirty VM): zone_balance_ratio {32, 128, 128},
  // zone_balance_min 10, zone_balance_max 255.
  p.reclaim.balance_ratio = {32, 128, 128};
  p.reclaim.balance_min = 10;
  // include/linux/elevator.h ELEVATOR_LINUS: read passovers 1000000, write 2000000;
  // include/linux/blkdev.h MAX_SECTORS 254 (ide-probe.c max_sectors); QUEUE_NR_REQUESTS
  // 256, half on each direction's free list (ll_rw_blk.c blk_init_free_list).
  p.block_queue = {.elevator = io_elevator::linus, .read_passovers = 1000000, .write_passovers = 2000000,
                   .max_sectors = 254, .nr_requests = 128};
  // Seed 003 gives no memory size; 512 MiB is inferred from its 1024 MB file set, which
  // is tiobench.pl's default --size of twice the memory (docs/seeds.md, seed 003).
  p.default_memory = 512 * MiB;
  return p;
}

// Linux 2.5.43 with Andrew Morton's mm2 patch set and Bill Irwin's hugetlb support, the
// kernel of seed 001 (same machine as seed 000: i386 2-level, HIGHMEM4G, Pentium III).
// From 2.5.26 + rollup: the 2.5.35 cache-line pte_chains (the rollup already had them),
// Mapped (2.5.36), hugetlb pages of 4 MiB as PSE PGD entries with no pte_chain and no PTE
// page (arch/i386/mm/hugetlbpage.c: huge_pte_alloc returns the folded PMD; set_huge_pte
// adds the page to mm->rss and never calls page_add_rmap). No HIGHPTE: seed 001's "we
// save ~322 MB in the low memory area" is pte_chains plus PageTables, so PTE pages were
// in low memory.
kernel_profile linux_2_5_43_mm2() {
  kernel_profile p = linux_2_5_26();
  p.name = "linux-2.5.43-mm2";
  p.description = "Linux 2.5.43-mm2 + hugetlb, i386 2-level (HIGHMEM4G), Pentium III: seed 001's kernel";
  p.meminfo.mapped = true;  // 2.5.36 "add /proc/meminfo:Mapped"
  p.huge.hugetlb = true;
  p.huge.hugetlb_in_rss = true;
  return p;
}

// Linux 2.6.15 on i386 with PAE (HIGHMEM64G): 3-level tables with preallocated PMDs,
// free_pgtables() floor/ceiling (2.6.12), fork skipping shared VMAs without anon_vma
// (2.6.14), top-down layout (2.6.9), VmPTE = nr_ptes pages (PTE level only).
kernel_profile linux_2_6_15() {
  kernel_profile p = linux_2_5_26();
  p.name = "linux-2.6.15";
  p.description = "Linux 2.6.15, i386 PAE (HIGHMEM64G)";
  p.paging = *find_paging_format("i386-pae");
  p.reports_vmpte = true;
  p.pgtable_free = pgtable_free_policy::floor_ceiling;
  p.fork_skips_shared = true;
  p.layout = mmap_layout::topdown;
  p.mmap_base = p.paging.task_size - 128 * MiB;  // TASK_SIZE minus the minimum stack gap
  p.default_memory = 16 * GiB;
  p.mremap.remap_file_pages = rfp_impl::nonlinear;  // Ingo Molnar's mm/fremap.c, 2.5.46
  p.mremap.dest_table_per_extent = true;  // move_page_tables by extents, 2.6.14
  // Object-based rmap (2.6.7): anon_vma per fork family, i_mmap prio_tree for files.
  p.rmap = {.scheme = rmap_scheme::anon_vma};
  p.meminfo = {.reverse_maps = false, .mapped = true, .mapped_counts_anon = true};
  // min_free_kbytes (2.6.0; clamped to [128, 65536] since 2.6.12), low = min + min/4,
  // high = min + min/2 (setup_per_zone_pages_min).
  p.reclaim = {.rule = wmark_rule::min_free_kbytes, .min_free_max_kb = 65536, .scale_factor = 0};
  // i386 sizes (estimates from the 2.6.15 layouts): vm_area_struct 88 B (SLAB_PANIC only),
  // anon_vma 12 B (spinlock + list_head; SLAB_DESTROY_BY_RCU, ctor), mm_struct 448 B,
  // struct page 32 B ("32 bytes even with PAE", rmap 9), the PAE PGD from a 32-byte slab.
  p.objs.vm_area_struct = {88, {}};
  p.objs.mm_struct = {448, {.hwcache_align = true}};
  p.objs.anon_vma = {12, {.ctor = true, .typesafe_by_rcu = true}};
  p.objs.pte_chain = {};
  // radix_tree_node in 2.6.15 (lib/radix-tree.c) has the dirty/writeback tags:
  // {count; slots[64]; unsigned long tags[2][64 / BITS_PER_LONG]} = 4 + 256 + 16 = 276 B.
  p.objs.radix_tree_node = {276, {.ctor = true}};
  p.objs.struct_page = 32;
  p.objs.kernel_image = 4 * MiB;
  p.objs.slab = slab_policy_i386_2_5(64);
  p.objs.slab.bufctl_size = 4;
  p.objs.slab.nr_cpus = 8;
  p.objs.slabinfo = slabinfo_format::v2_1;
  // HIGHMEM64G distribution kernels of the time set CONFIG_HIGHPTE.
  p.zones = {.highmem = true, .lowmem_limit = 896 * MiB, .dma32_limit = 0, .highpte = true};
  // hugetlbfs (2 MiB PMD leaves with PAE), counted in mm->rss (set_huge_pte); no PMD
  // sharing yet (2.6.20), no THP (2.6.38).
  p.huge = {};
  p.huge.hugetlb = true;
  p.huge.hugetlb_in_rss = true;
  return p;
}

// The same kernel on x86-64 (4-level since 2.6.11), the base of seed 004's shared page tables.
kernel_profile linux_2_6_15_x86_64() {
  kernel_profile p = linux_2_6_15();
  p.name = "linux-2.6.15-x86_64";
  p.description = "Linux 2.6.15, x86-64 4-level";
  p.paging = *find_paging_format("x86-64-4level");
  p.mmap_base = 0x400000000000ull;
  p.default_memory = 64 * GiB;
  // x86-64 sizes (estimates from the 2.6.15 layouts): vm_area_struct 176 B, anon_vma 24 B,
  // mm_struct 768 B, struct page 56 B. All memory is direct-mapped: DMA, DMA32, Normal.
  p.objs.vm_area_struct = {176, {}};
  p.objs.mm_struct = {768, {.hwcache_align = true}};
  p.objs.anon_vma = {24, {.ctor = true, .typesafe_by_rcu = true}};
  // radix_tree_node, 64-bit: count (4, padded to 8) + 64 x 8 + 2 x 8 = 536 B.
  p.objs.radix_tree_node = {536, {.ctor = true}};
  p.objs.struct_page = 56;
  p.objs.kernel_image = 8 * MiB;
  p.objs.slab = slab_policy_i386_2_5(64);
  p.objs.slab.word_size = 8;
  p.objs.slab.nr_cpus = 8;
  p.zones = {.highmem = false, .lowmem_limit = 0, .dma32_limit = 4 * GiB, .highpte = false};
  // 1 GiB hugetlb pages at boot (hugepagesz=1G, 2.6.27) are later; 2.6.15 has 2 MiB only.
  return p;
}

// Linux 6.18 on x86-64, as on this project's hosts: 4-level, PTI (8 KiB PGD), every level
// in PageTables (6.14 "Account page tables at all levels"), VmPTE = PTE+PMD+PUD (4.15
// pgtables_bytes), PT_RECLAIM (6.14), fault-around of 64 KiB (fault_around_bytes default).
// Linux 2.6.15 x86-64 with Dave McCracken's shared page tables, as Brian Twichell's OLTP
// runs used them (seed 004; "[PATCH/RFC] Shared page tables", 2006-01-05, against
// 2.6.15). Kconfig defaults of that patch: PTSHARE_PTE y, PTSHARE_PMD y on x86_64,
// PTSHARE_PUD n. PTSHARE_HUGEPAGE shared the PMD pages of hugetlb mappings; vmlab gives
// that job to huge_pmd_share (Ken Chen's 2.6.20 rule: same file offset within the 1 GiB
// window rather than the same vm_start/vm_end/vm_pgoff, which the seed's single SGA
// mapping per process satisfies either way).
kernel_profile linux_2_6_15_ptshare() {
  kernel_profile p = linux_2_6_15_x86_64();
  p.name = "linux-2.6.15-ptshare";
  p.description = "Linux 2.6.15, x86-64 4-level, with McCracken's shared page tables (PTSHARE): seed 004's kernel";
  p.ptshare = {.pte = true, .pmd = true, .pud = false};
  p.huge.pmd_share = true;
  return p;
}

kernel_profile linux_6_18() {
  kernel_profile p = linux_2_6_15_x86_64();
  p.name = "linux-6.18";
  p.description = "Linux 6.18, x86-64 4-level, PTI, PT_RECLAIM";
  p.pti = true;
  p.page_tables_levels = kAllLevels;
  p.vmpte_levels = kPtePmdPud;
  p.pt_reclaim = true;
  p.fault_around_bytes = 64 * KiB;
  p.page_cache.mmap_ra = mmap_readahead::ondemand_6x;  // 6.18 mm/filemap.c, mm/readahead.c
  p.default_memory = 24 * GiB;
  p.mremap.move_pmd = true;                             // 5.0
  p.mremap.move_pud = true;                             // 5.11
  p.mremap.remap_file_pages = rfp_impl::emulated;       // 4.0
  // anon_vma_chain (2.6.34) with the anon_vma reuse heuristic (3.19); Mapped counts file
  // pages only (NR_FILE_MAPPED, 2.6.18+). Sizes measured on this project's 6.18 hosts
  // (/sys/kernel/slab, linux-vm-internals.md section 2.2); struct page is 64 B.
  p.rmap = {.scheme = rmap_scheme::anon_vma_chain, .anon_vma_reuse = true};
  p.meminfo = {.reverse_maps = false, .mapped = true, .mapped_counts_anon = false};
  p.objs.vm_area_struct = {192, {.hwcache_align = true, .typesafe_by_rcu = true, .rcu_freeptr_offset = true}};
  p.objs.mm_struct = {1568, {.hwcache_align = true}};
  p.objs.anon_vma = {96, {.ctor = true, .typesafe_by_rcu = true}};
  p.objs.anon_vma_chain = {64, {}};
  // The xarray (4.20+, lib/xarray.c) allocates struct xa_node from radix_tree_node_cachep
  // (lib/radix-tree.c radix_tree_init: SLAB_PANIC | SLAB_RECLAIM_ACCOUNT | SLAB_ACCOUNT,
  // radix_tree_node_ctor): shift, offset, count, nr_values, parent, array, list/rcu,
  // slots[64], marks[3][1] = 576 B; SLUB keeps the free pointer past it (a ctor): 584 B,
  // 14 per order-1 slab, as this host's /proc/slabinfo prints it.
  p.objs.radix_tree_node = {576, {.ctor = true}};
  p.objs.struct_page = 64;
  p.objs.kernel_image = 32 * MiB;
  p.objs.slab = slub_policy_x86_64(2);
  p.objs.slabinfo = slabinfo_format::v2_1;
  // Huge pages as this host's 6.18 has them (CONFIG_HUGETLB_PMD_PAGE_TABLE_SHARING=y,
  // THP enabled=madvise, shmem_enabled=never: read off the host; linux-vm-internals.md 8).
  // hugetlb pages are not in RSS (6.x: hugetlb_count_add only); fork copies no tables of
  // a shared hugetlb VMA (6.0); a write to the huge zero PMD allocates a THP (6.13).
  p.huge = {.hugetlb = true, .gigantic = true, .pmd_share = true, .fork_lazy = true, .hugetlb_in_rss = false,
            .thp = true, .shmem_thp = true, .enabled = thp_mode::madvise, .shmem_enabled = shmem_thp_mode::never,
            .huge_zero_page = true, .zero_wp_allocates = true};
  p.meminfo.hugetlb_total = true;
  // min_free_kbytes clamped to 262144 (5.7), watermark_scale_factor 10 (4.6), and THP's
  // recommended min_free_kbytes (2.6.38+). On this project's 6.18 host (3 zones managing
  // 2,808,306 pages) that gives
  // min_free_kbytes 67584 and, summed over DMA/DMA32/Normal, min 16,896 / low 21,120 /
  // high 25,344 pages, against /proc/zoneinfo's 16,895 / 21,117 / 25,339.
  p.reclaim.min_free_max_kb = 262144;
  p.reclaim.scale_factor = 10;
  p.reclaim.thp_min_free = true;
  return p;
}

// Linux 6.18 with Anthony Yznaga's mshare v3 ("[PATCH v3 00/22] Add support for shared
// PTEs across processes", 2025-08-20, against 6.17-rc; still under review in 2026): an
// msharefs region's page tables belong to a host mm and are shared at the PUD level, so
// every process that maps the region points its P4D entry (the PGD entry on 4-level) at
// the host's PUD table (mm/mshare.c find_shared_vma).
kernel_profile linux_6_18_mshare() {
  kernel_profile p = linux_6_18();
  p.name = "linux-6.18-mshare";
  p.description = "Linux 6.18, x86-64, with Oracle's mshare v3 (msharefs regions share their page tables)";
  p.ptshare.mshare = true;
  return p;
}

// The same kernel on ppc64 with 4 KiB base pages, seed 004's ppc64 (IBM's Oracle runs on a
// 4-way, 64 GB POWER box): the 2.6.15 ppc64 tables (arch.h ppc64-4k: 512-entry PTE pages
// under 128-entry PMD and PUD tables from the 1 KiB "pud_pmd_cache"), top-down mmap below
// TASK_SIZE_USER64 minus the minimum stack gap (arch/powerpc/mm/mmap.c), and L1_CACHE_SHIFT
// 7: 128-byte lines for SLAB_HWCACHE_ALIGN. Counting as on x86-64: PageTables and VmPTE
// are PTE pages only (2.6.15 __pte_alloc).
kernel_profile linux_2_6_15_ppc64() {
  kernel_profile p = linux_2_6_15_x86_64();
  p.name = "linux-2.6.15-ppc64";
  p.description = "Linux 2.6.15, ppc64 4 KiB pages (hash MMU), 128-byte cache lines, 16 MiB hugetlb pages";
  p.paging = *find_paging_format("ppc64-4k");
  p.mmap_base = p.paging.task_size - 128 * MiB;
  p.default_memory = 64 * GiB;
  // ppc64 sizes (estimates from the 2.6.15 layouts, all 64-bit like x86-64):
  // vm_area_struct 176 B (no arch fields), anon_vma 24 B, struct page 56 B (flags,
  // _count, _mapcount, private, mapping, index, lru; no WANT_PAGE_VIRTUAL), mm_struct
  // 768 B (its ppc64 mm_context_t, 16 B, is smaller than x86-64's; the 128-byte
  // alignment rounds to the same), the kernel image 8 MiB.
  p.objs.vm_area_struct = {176, {}};
  p.objs.mm_struct = {768, {.hwcache_align = true}};
  p.objs.anon_vma = {24, {.ctor = true, .typesafe_by_rcu = true}};
  p.objs.struct_page = 56;
  p.objs.kernel_image = 8 * MiB;
  p.objs.slab = slab_policy_i386_2_5(128);  // L1_CACHE_BYTES 128 (linux-vm-internals.md 1.3)
  p.objs.slab.word_size = 8;
  p.objs.slab.nr_cpus = 8;  // estimate: 4 POWER5 cores with 2 SMT threads
  // ppc64 has no highmem and no ZONE_DMA32 (all of memory is in ZONE_DMA there; vmlab's
  // DMA + Normal split restricts no allocation either).
  p.zones = {.highmem = false, .lowmem_limit = 0, .dma32_limit = 0, .highpte = false};
  // hugetlb: 16 MiB pages (arch.h ppc64-4k: one PMD entry per page, eight entries apart),
  // counted in file_rss as 2.6.15's generic hugetlb_no_page does; no PMD sharing (powerpc
  // never had ARCH_WANT_HUGE_PMD_SHARE), no 16 GiB pages; huge-page-only areas.
  p.huge = {};
  p.huge.hugetlb = true;
  p.huge.hugetlb_in_rss = true;
  p.huge.htlb_areas = true;
  return p;
}

// Linux 2.6.15 ppc64 with shared page tables, as Brian Twichell's ppc64 runs used them
// (seed 004: "an earlier patch plus segment sharing", Oracle): on ppc64-4k a PMD table
// maps 128 x 2 MiB = one 256 MiB SLB segment, so PTSHARE_PMD shares per segment, and
// PTE pages where a VMA covers a 2 MiB span but no whole segment. (The ppc64 patches were
// not posted, linux-vm-internals.md 5.2; vmlab applies the x86_64 rules to this format.)
kernel_profile linux_2_6_15_ppc64_ptshare() {
  kernel_profile p = linux_2_6_15_ppc64();
  p.name = "linux-2.6.15-ppc64-ptshare";
  p.description = "Linux 2.6.15 ppc64 with shared page tables and segment (256 MiB PMD table) sharing: seed 004's ppc64 kernel";
  p.ptshare = {.pte = true, .pmd = true, .pud = false};
  return p;
}

// Linux 6.18 on ppc64 (book3s64 hash MMU, 64 KiB pages), as POWER distributions ship it:
// arch.h ppc64-hash-64k (PTE tables are 4 KiB fragments, 16 to a page; PMD tables 16 KiB
// fragments; PUD and PGD from PGT_CACHE slabs). No PTI (x86 only) and no PT_RECLAIM
// (ARCH_SUPPORTS_PT_RECLAIM was x86-64 only when it came in 6.14). PageTables counts the
// fragment pages of PTE and PMD tables (pagetable_pte_ctor/pagetable_pmd_ctor run once per
// backing page); the slab PUDs and PGD are not counted (6.14 "Account page tables at all
// levels": "only P*D that consist of one or more regular pages are handled").
kernel_profile linux_6_18_ppc64() {
  kernel_profile p = linux_6_18();
  p.name = "linux-6.18-ppc64";
  p.description = "Linux 6.18, ppc64 hash MMU, 64 KiB pages (PTE fragments), 16 MiB huge pages";
  p.paging = *find_paging_format("ppc64-hash-64k");
  p.pti = false;
  p.pt_reclaim = false;
  // Sizes (estimates): struct page 64 B, vm_area_struct, anon_vma, anon_vma_chain as on
  // x86-64 6.18 (generic 64-bit layouts) but SLAB_HWCACHE_ALIGN to 128-byte lines (POWER's
  // cache_line_size()), mm_struct 1568 B as on x86-64 (mm_context_t differs; estimate);
  // SLUB slabs of 64 KiB pages; the kernel image 32 MiB.
  p.objs.slab.page_size = 64 * KiB;
  p.objs.slab.cache_line = 128;
  p.objs.slab.nr_cpus = 8;
  p.zones = {.highmem = false, .lowmem_limit = 0, .dma32_limit = 0, .highpte = false};
  // 16 MiB hugetlb pages and THPs as PMD leaves (H_PMD_SHIFT 24). No hugetlb PMD sharing
  // (powerpc does not select ARCH_WANT_HUGE_PMD_SHARE, and its PMD tables are per-mm
  // fragments) and no 16 GiB pages (pseries firmware-reserved, not modelled).
  p.huge.gigantic = false;
  p.huge.pmd_share = false;
  p.default_memory = 64 * GiB;  // seed 004's machine size
  return p;
}

const std::vector<std::function<kernel_profile()>>& presets() {
  static const std::vector<std::function<kernel_profile()>> v = {
      linux_2_4, linux_2_5_26, linux_2_5_43_mm2, linux_2_6_15, linux_2_6_15_x86_64, linux_2_6_15_ptshare,
      linux_2_6_15_ppc64, linux_2_6_15_ppc64_ptshare, linux_6_18, linux_6_18_mshare, linux_6_18_ppc64};
  return v;
}

status parse_bool(const std::string& key, const std::string& v, bool& out) {
  if (v == "true") { out = true; return {}; }
  if (v == "false") { out = false; return {}; }
  return status::invalid_argument("kernel override '" + key + "' must be true or false, not '" + v + "'");
}

status parse_levels(const std::string& key, const std::string& v, level_mask& out) {
  level_mask m = 0;
  size_t pos = 0;
  while (pos <= v.size()) {
    size_t comma = v.find(',', pos);
    std::string tok = v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    bool found = false;
    for (int l = 0; l < kLevels; ++l)
      if (tok == level_name(static_cast<level>(l))) { m |= static_cast<level_mask>(1u << l); found = true; }
    if (!found)
      return status::invalid_argument("kernel override '" + key + "': unknown level '" + tok +
                                      "' (expected a comma-separated list of pgd,p4d,pud,pmd,pte)");
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  out = m;
  return {};
}

}  // namespace

const char* thp_mode_name(thp_mode m) {
  switch (m) {
    case thp_mode::never: return "never";
    case thp_mode::madvise: return "madvise";
    case thp_mode::always: return "always";
  }
  return "?";
}

const char* shmem_thp_mode_name(shmem_thp_mode m) {
  switch (m) {
    case shmem_thp_mode::never: return "never";
    case shmem_thp_mode::always: return "always";
    case shmem_thp_mode::within_size: return "within_size";
    case shmem_thp_mode::advise: return "advise";
    case shmem_thp_mode::deny: return "deny";
    case shmem_thp_mode::force: return "force";
  }
  return "?";
}

const char* rmap_scheme_name(rmap_scheme s) {
  switch (s) {
    case rmap_scheme::none: return "none";
    case rmap_scheme::pte_chain: return "pte_chain";
    case rmap_scheme::anon_vma: return "anon_vma";
    case rmap_scheme::anon_vma_chain: return "anon_vma_chain";
  }
  return "?";
}

std::vector<bytes> hugetlb_page_sizes(const kernel_profile& p) {
  std::vector<bytes> out;
  if (!p.huge.hugetlb) return out;
  const paging_format& f = p.paging;
  for (int i = f.nr_levels - 2; i >= 0; --i) {
    if (!f.at(i).leaf) continue;
    if (f.at(i).leaf_size() > f.pmd_huge_size() && !p.huge.gigantic) continue;
    out.push_back(f.at(i).leaf_size());
  }
  return out;
}

bytes kernel_profile::pgd_bytes() const {
  if (paging.pgd_from_slab) return paging.at(0).table_bytes();
  return paging.at(0).table_bytes() * (pti ? 2 : 1);
}

result<kernel_profile> find_profile(const std::string& name) {
  for (const auto& make : presets()) {
    kernel_profile p = make();
    if (p.name == name) return p;
  }
  std::string known;
  for (const auto& n : profile_names()) known += (known.empty() ? "" : ", ") + n;
  return status::invalid_argument("unknown kernel profile '" + name + "'" + did_you_mean(name, profile_names()) +
                                  " (known: " + known + ")");
}

std::vector<std::string> profile_names() {
  std::vector<std::string> v;
  for (const auto& make : presets()) v.push_back(make().name);
  return v;
}

namespace {
// powerpc's formats: PMD tables that are per-mm fragments (hash-64K), or huge pages larger
// than one PMD entry's span (ppc64-4k); powerpc never selected ARCH_WANT_HUGE_PMD_SHARE.
bool pmd_share_impossible(const paging_format& f) {
  const int pmd = f.index_of(level::pmd);
  return pmd >= 0 && (f.at(pmd).alloc == table_alloc::mm_fragment || f.at(pmd).leaf_stride() > 1);
}
}  // namespace

status apply_override(kernel_profile& p, const std::string& key, const std::string& value) {
  if (key == "paging") {
    const paging_format* f = find_paging_format(value);
    if (!f) return status::invalid_argument("unknown paging format '" + value + "' (known: " + paging_format_names() + ")");
    p.paging = *f;
    if (p.mmap_base >= p.paging.task_size)
      p.mmap_base = p.layout == mmap_layout::legacy ? p.paging.task_size / 3 : p.paging.task_size - 128 * MiB;
    p.objs.slab.page_size = static_cast<uint32_t>(p.paging.page_size());  // slabs are made of base pages
    // powerpc has no hugetlb PMD sharing (no ARCH_WANT_HUGE_PMD_SHARE): not on per-mm
    // fragment PMD tables, nor where a huge page is a PMD entry of a smaller span.
    if (pmd_share_impossible(p.paging)) p.huge.pmd_share = false;
    return {};
  }
  if (key == "pti") return parse_bool(key, value, p.pti);
  if (key == "pt_reclaim") return parse_bool(key, value, p.pt_reclaim);
  if (key == "fork_skips_shared") return parse_bool(key, value, p.fork_skips_shared);
  if (key == "page_tables_levels") return parse_levels(key, value, p.page_tables_levels);
  if (key == "vmpte_levels") return parse_levels(key, value, p.vmpte_levels);
  if (key == "fault_around_bytes") {
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || ptr != value.data() + value.size() || (v && (!is_pow2(v) || v < 4096)))
      return status::invalid_argument("kernel override 'fault_around_bytes' must be 0 or a power of two >= 4096, not '" + value + "'");
    // mm/memory.c fault_around_bytes_set (6.x): EINVAL above PTRS_PER_PTE pages.
    if (const uint64_t most = p.paging.pte().table_span(); v > most)
      return status::invalid_argument("kernel override 'fault_around_bytes' must be at most one PTE page's span (" +
                                      std::to_string(most) + " bytes on " + p.paging.name + "), not '" + value + "'");
    p.fault_around_bytes = v;
    return {};
  }
  if (key == "pgtable_free") {
    if (value == "floor_ceiling") p.pgtable_free = pgtable_free_policy::floor_ceiling;
    else if (value == "pgd_gap") p.pgtable_free = pgtable_free_policy::pgd_gap;
    else return status::invalid_argument("kernel override 'pgtable_free' must be floor_ceiling or pgd_gap, not '" + value + "'");
    return {};
  }
  if (key == "mmap_layout") {
    if (value == "topdown") p.layout = mmap_layout::topdown;
    else if (value == "legacy") p.layout = mmap_layout::legacy;
    else return status::invalid_argument("kernel override 'mmap_layout' must be topdown or legacy, not '" + value + "'");
    return {};
  }
  if (key == "rmap") {
    for (rmap_scheme r : {rmap_scheme::none, rmap_scheme::pte_chain, rmap_scheme::anon_vma, rmap_scheme::anon_vma_chain})
      if (value == rmap_scheme_name(r)) {
        p.rmap.scheme = r;
        // Each scheme's objects: pte_chains only for pte_chain, anon_vma for the object
        // schemes, anon_vma_chain for the last (sizes as the profile's arch has them).
        const bool wide = p.paging.task_size > (uint64_t{1} << 32);  // 64-bit pointers
        p.objs.pte_chain = r == rmap_scheme::pte_chain ? cache_decl{0, {.hwcache_align = true}} : cache_decl{};
        if (r == rmap_scheme::anon_vma || r == rmap_scheme::anon_vma_chain) {
          if (!p.objs.anon_vma.object_size) p.objs.anon_vma = {wide ? 24u : 12u, {.ctor = true, .typesafe_by_rcu = true}};
        } else {
          p.objs.anon_vma = {};
        }
        if (r == rmap_scheme::anon_vma_chain) {
          if (!p.objs.anon_vma_chain.object_size) p.objs.anon_vma_chain = {wide ? 64u : 32u, {}};
        } else {
          p.objs.anon_vma_chain = {};
        }
        return {};
      }
    return status::invalid_argument("kernel override 'rmap' must be none, pte_chain, anon_vma or anon_vma_chain, not '" + value + "'");
  }
  if (key == "pte_chain_slots") {
    uint32_t v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || ptr != value.data() + value.size() || v > 255)
      return status::invalid_argument("kernel override 'pte_chain_slots' must be 0 (from the cache line), 1 "
                                      "(2.5.28-2.5.34 two-pointer objects) or NRPTE up to 255, not '" + value + "'");
    p.rmap.pte_chain_slots = v;
    p.rmap.collapse_on_remove = v == 1;  // the two-pointer generation collapsed on removal
    return {};
  }
  if (key == "anon_vma_reuse") return parse_bool(key, value, p.rmap.anon_vma_reuse);
  if (key == "mremap_move_pmd") return parse_bool(key, value, p.mremap.move_pmd);
  if (key == "mremap_move_pud") return parse_bool(key, value, p.mremap.move_pud);
  if (key == "highpte") return parse_bool(key, value, p.zones.highpte);
  if (key == "hugetlb_pmd_share") {
    if (status s = parse_bool(key, value, p.huge.pmd_share); !s.ok()) return s;
    if (p.huge.pmd_share && !p.huge.hugetlb)
      return status::invalid_argument("kernel override 'hugetlb_pmd_share': " + p.name + " has no hugetlb pages");
    if (p.huge.pmd_share && pmd_share_impossible(p.paging))
      return status::invalid_argument("kernel override 'hugetlb_pmd_share': the " + p.paging.name +
                                      " format is powerpc's, which has no hugetlb PMD sharing (its PMD tables are "
                                      "per-mm fragments, or its huge pages are PMD entries of a smaller span)");
    return {};
  }
  if (key == "ptshare_pte" || key == "ptshare_pmd" || key == "ptshare_pud") {
    bool& b = key == "ptshare_pte" ? p.ptshare.pte : key == "ptshare_pmd" ? p.ptshare.pmd : p.ptshare.pud;
    if (status s = parse_bool(key, value, b); !s.ok()) return s;
    for (int i = 1; b && i < p.paging.nr_levels; ++i)
      if (p.paging.at(i).alloc == table_alloc::mm_fragment)
        return status::invalid_argument("kernel override '" + key + "': the " + p.paging.name +
                                        " format's tables are per-mm fragments, which are never shared");
    return {};
  }
  if (key == "thp_enabled") {
    if (!p.huge.thp) return status::invalid_argument("kernel override 'thp_enabled': " + p.name + " has no transparent huge pages (2.6.38+)");
    for (thp_mode m : {thp_mode::always, thp_mode::madvise, thp_mode::never})
      if (value == thp_mode_name(m)) { p.huge.enabled = m; return {}; }
    return status::invalid_argument("kernel override 'thp_enabled' must be always, madvise or never, not '" + value + "'");
  }
  if (key == "shmem_enabled") {
    if (!p.huge.shmem_thp) return status::invalid_argument("kernel override 'shmem_enabled': " + p.name + " has no shmem huge pages (4.8+)");
    for (shmem_thp_mode m : {shmem_thp_mode::always, shmem_thp_mode::within_size, shmem_thp_mode::advise,
                             shmem_thp_mode::never, shmem_thp_mode::deny, shmem_thp_mode::force})
      if (value == shmem_thp_mode_name(m)) { p.huge.shmem_enabled = m; return {}; }
    return status::invalid_argument("kernel override 'shmem_enabled' must be always, within_size, advise, never, deny or force, not '" + value + "'");
  }
  return status::invalid_argument("unknown kernel override '" + key +
                                  "' (known: paging, pti, pt_reclaim, fault_around_bytes, fork_skips_shared, "
                                  "page_tables_levels, vmpte_levels, pgtable_free, mmap_layout, rmap, "
                                  "pte_chain_slots, anon_vma_reuse, highpte, hugetlb_pmd_share, thp_enabled, shmem_enabled, "
                                  "ptshare_pte, ptshare_pmd, ptshare_pud, mremap_move_pmd, mremap_move_pud)");
}

}  // namespace vmlab
