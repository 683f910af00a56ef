// The page cache of a file or shm object: which pages it holds, the index that finds
// them, and their dirty and writeback state: the model's mm/filemap.c.
//
// Kernel: mm/filemap.c (__filemap_add_folio / add_to_page_cache, filemap_read /
// generic_file_read, generic_perform_write, filemap_write_and_wait_range), mm/readahead.c
// (page_cache_sync_ra / ondemand readahead), lib/radix-tree.c (2.5.8 - 4.19) and
// lib/xarray.c (4.20+) for the index, mm/page-writeback.c for NR_FILE_DIRTY / NR_WRITEBACK.
//
// The index, by kernel (page_cache_policy::index in profile.h):
//  * 2.4: one global hash table, page_hash_table, allocated once at boot by
//    page_cache_init(mempages): one `struct page *` per physical page, rounded up to a
//    power-of-two number of pages (order = the smallest with PAGE_SIZE << order >=
//    mempages * sizeof(void *); 4 MiB of pointers on a 4 GiB i386 box). Nothing per file:
//    page_hash_table_bytes() gives its size for a 2.4 profile's boot reservation.
//  * 2.5.8+: a radix tree per address_space, then (4.20) the xarray: nodes of 64 slots
//    (RADIX_TREE_MAP_SHIFT / XA_CHUNK_SHIFT 6) from the "radix_tree_node" slab cache.
//    A tree holding page indices up to `max` has height h = the number of 6-bit digits of
//    max (0 for max = 0: the single entry at index 0 lives in the root, no node:
//    radix_tree_insert with height 0, xa_head); a level-l node (l = 1 at the bottom) covers
//    64^l pages, and exists when one of its pages is cached. So the nodes are, for l = 1..h,
//    the number of distinct (index >> 6l) over the cached indices: radix_tree_extend adds one
//    node per new level above the old root, insertion builds the missing path, deletion
//    frees empty nodes upward and shrinks the root while it only uses slot 0 (6.x
//    xas_shrink; 2.6.17+ radix_tree_shrink).
//  * A shmem THP folio (order 9) is one multi-index entry in 8 slots of a level-2 node
//    (xas_set_order): no level-1 nodes under it.
//
// Simplifications (each named in docs/decisions.md, "Issue 9"):
//  * Whole pages: reads and writes are page multiples at page offsets.
//  * No clock: writeback that fsync/msync start completes before the op returns
//    (filemap_write_and_wait_range waits), so Writeback is 0 between ops; the bitmap is
//    kept for the storage model that will give writeback a duration.
//  * Readahead as a window of ra_max bytes past a sequential read (ondemand readahead at its
//    full window), none for a non-sequential read; the state is per object, as the live
//    engine's workers share one open file description per object (struct file's f_ra).
//  * hugetlbfs files index their huge pages too; those nodes are not counted.
//  * shm pages are in Cached (NR_FILE_PAGES counts shmem) but never Dirty: shmem's
//    mapping does not account dirty pages (mapping_can_writeback is false).
//
// Invariants (check_invariants recounts them):
//  1. per object, nodes at level l = distinct (index >> 6l) of its cached pages, l = 1..h
//     with h as above (level 1 without the words a huge folio fills);
//  2. the radix_tree_node cache's active objects = the nodes of every object;
//  3. nr_cached = the cached pages of every shm and file object; nr_dirty, nr_writeback
//     likewise from the dirty and writeback bitmaps; dirty and writeback pages are cached.
//
// Reclaim (vmscan.h) ends here: remove_from_page_cache() drops a clean, unmapped page and
// the nodes it leaves empty (the end of shrink_folio_list's __remove_mapping). Pages of
// file objects go onto reclaim's list as they enter (lru_cache_add).
#pragma once

#include <cstdint>
#include <vector>

#include "model/sparse.h"

namespace vmlab {

struct kernel;
struct mem_object;

// One address_space's radix tree (or xarray), as the model keeps it: the nodes that
// exist, per level, with their slab objects.
struct page_cache_tree {
  uint8_t height = 0;  // 0: no node (empty, or only index 0)
  // [l - 1]: the level-l node of group g (covering pages [g << 6l, (g + 1) << 6l)): its
  // slab object packed as (slab << 32 | index) + 1, 0 when the node does not exist.
  std::vector<sparse_array<uint64_t, 1024>> node;
  // [l - 1], l >= 2: how many of the node's 64 slots are used (node->count).
  std::vector<sparse_array<uint8_t, 4096>> used;
  std::vector<uint64_t> nr;  // [l - 1]: nodes at level l
  size_t* acct = nullptr;    // the kernel's host-byte total (sparse.h account_to)
  [[nodiscard]] uint64_t nr_nodes() const {
    uint64_t n = 0;
    for (uint64_t x : nr) n += x;
    return n;
  }
};

// The kernel-wide page-cache counters (/proc/meminfo Cached, Dirty, Writeback; vmstat).
struct filemap_stat {
  uint64_t nr_cached = 0;     // pages of shm and file objects in the page cache
  uint64_t nr_dirty = 0;      // NR_FILE_DIRTY
  uint64_t nr_writeback = 0;  // NR_WRITEBACK
  uint64_t written = 0;       // pages written back over the run (pgpgout's share, in pages)
  uint64_t ra_pages = 0;      // pages read ahead of a read (not asked for)
  uint64_t max_cached = 0, max_dirty = 0;
};

// The height a tree needs for a largest index `max` (RADIX_TREE_MAP_SHIFT 6).
[[nodiscard]] uint8_t page_cache_height(uint64_t max);
// 2.4's page_hash_table: bytes page_cache_init() allocates for `mempages` pages of
// `page_size` bytes with pointers of `ptr_bytes`.
[[nodiscard]] uint64_t page_hash_table_bytes(uint64_t mempages, uint64_t page_size, uint64_t ptr_bytes);

// Adds the pages `bits` of word w (pages 64w .. 64w+63, none of them cached) to object
// obj's page cache: their frames and the index nodes (preloaded first, as
// radix_tree_preload does). false, and nothing changed, when memory ran out.
bool add_to_page_cache_word(kernel& k, int32_t obj, uint64_t w, uint64_t bits);
// The same for pages [pg, pg + n), none of them cached.
bool add_to_page_cache_range(kernel& k, int32_t obj, uint64_t pg, uint64_t n);
// A shmem THP folio of the `n` pages at `first` (n / 64 whole words, none cached; the
// frames are already allocated): one multi-index entry, no level-1 node.
bool add_huge_folio(kernel& k, int32_t obj, uint64_t first, uint64_t n);
// Drops cached page pg. REQUIRES: cached, clean, no writeback, mapped by no PTE, and off
// reclaim's list (vmscan.h).
void remove_from_page_cache(kernel& k, int32_t obj, uint64_t pg);
// Takes back page pg, the last one an add above put into the cache: off reclaim's list,
// then out of the cache (an allocation after it failed).
void undo_add_to_page_cache(kernel& k, int32_t obj, uint64_t pg);

// Marks pages [pg, pg + n) dirty (set_page_dirty; a file object only: shmem's are not
// accounted). REQUIRES: cached.
void filemap_dirty_range(kernel& k, int32_t obj, uint64_t pg, uint64_t n);
// Writes back the dirty pages of [pg, pg + n) and waits (filemap_write_and_wait_range):
// dirty -> writeback -> clean. Returns the pages written.
uint64_t filemap_write_and_wait(kernel& k, int32_t obj, uint64_t pg, uint64_t n);

// read()/pread() of pages [pg, pg + n) through the page cache (filemap_read): the missing
// ones are read, with the readahead window past a sequential read. false (nothing
// cached by the failing step) when memory ran out.
bool filemap_read(kernel& k, int32_t obj, uint64_t pg, uint64_t n);
// write()/pwrite() of whole pages [pg, pg + n) (generic_perform_write: write_begin finds
// or adds each page; a full-page write reads nothing), then dirties them. false on ENOMEM.
bool filemap_write(kernel& k, int32_t obj, uint64_t pg, uint64_t n);

}  // namespace vmlab
