// The page cache (src/model/filemap.h): index nodes per level derived from the cached
// indices, Cached / Dirty / Writeback, the readahead window of each profile, O_DIRECT,
// and I/O into a user buffer that is a mapping (faulted with write access).
#include <gtest/gtest.h>

#include "model/filemap.h"
#include "model/kernel.h"
#include "model_util.h"
#include "vmlab/op_builder.h"

namespace vmlab {

namespace {

using namespace vmlab::testing;

constexpr bytes kPage = 4096;
constexpr int32_t kFile = 0, kShm = 1;

std::unique_ptr<sim_kernel> boot(const std::string& profile, bytes file = 2 * GiB) {
  return make(profile, {}, 4 * GiB, {{"data", object_kind::file, file}, {"pool", object_kind::shm, 64 * MiB}});
}

const slab_row* row(const std::vector<slab_row>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}

uint64_t nodes(const sim_kernel& k) {
  const auto rows = k.slabinfo(false);
  const slab_row* r = row(rows, "radix_tree_node");
  return r ? r->active_objs : 0;
}

// Nodes of a radix tree / xarray holding `indices` (sorted), from the definition: a
// level-l node covers 64^l indices and exists when one of them is present; the tree has
// as many levels as the largest index has base-64 digits (none for index 0 alone).
uint64_t expected_nodes(const std::vector<uint64_t>& indices) {
  if (indices.empty()) return 0;
  uint64_t levels = 0;
  for (uint64_t m = indices.back(); m; m >>= 6) ++levels;
  uint64_t n = 0;
  for (uint64_t l = 1; l <= levels; ++l) {
    uint64_t prev = ~uint64_t{0};
    for (uint64_t i : indices)
      if ((i >> (6 * l)) != prev) {
        prev = i >> (6 * l);
        ++n;
      }
  }
  return n;
}

// Reads single pages at these indices. None is at index 0 or right after the previous
// read, so none is sequential: pread of one page at `i` caches exactly page i.
void read_pages(sim_kernel& k, const std::vector<uint64_t>& indices) {
  for (uint64_t i : indices) ASSERT_TRUE(k.file_io(ops::read(1, kFile, i * kPage, kPage)).ok());
}

TEST(Filemap, HeightIsTheBase64DigitsOfTheLargestIndex) {
  EXPECT_EQ(page_cache_height(0), 0);
  EXPECT_EQ(page_cache_height(1), 1);
  EXPECT_EQ(page_cache_height(63), 1);
  EXPECT_EQ(page_cache_height(64), 2);
  EXPECT_EQ(page_cache_height(4095), 2);
  EXPECT_EQ(page_cache_height(4096), 3);
  EXPECT_EQ(page_cache_height((uint64_t{1} << 36) - 1), 6);
  EXPECT_EQ(page_cache_height(~uint64_t{0}), 11);  // 64 bits: ten whole levels and one of 4 bits
}

// 2.4's page_hash_table: one pointer per page frame, rounded up to a power-of-two number
// of pages: 4 GiB of i386 pages = 1,048,576 x 4 B = 4 MiB (order 10).
TEST(Filemap, PageHashTableOfA24Box) {
  EXPECT_EQ(page_hash_table_bytes(1048576, 4096, 4), 4 * MiB);
  EXPECT_EQ(page_hash_table_bytes(1048575, 4096, 4), 4 * MiB);
  EXPECT_EQ(page_hash_table_bytes(1048577, 4096, 4), 8 * MiB);
  EXPECT_EQ(page_hash_table_bytes(1, 4096, 4), 4096u);
}

TEST(Filemap, NodesForCachedPagesAtGivenOffsets) {
  for (const char* profile : {"linux-6.18", "linux-2.6.15", "linux-2.5.26"}) {
    SCOPED_TRACE(profile);
    auto k = boot(profile);
    ASSERT_TRUE(k);
    ASSERT_TRUE(k->spawn(1).ok());
    std::vector<uint64_t> idx;
    // One page at index 5 (not the root's direct slot): one bottom node.
    read_pages(*k, {5});
    idx = {5};
    EXPECT_EQ(nodes(*k), expected_nodes(idx));
    EXPECT_EQ(nodes(*k), 1u);
    // Index 64 needs a second level: the old node moves under a new root (radix_tree_extend).
    read_pages(*k, {64});
    idx = {5, 64};
    EXPECT_EQ(nodes(*k), 3u);
    EXPECT_EQ(nodes(*k), expected_nodes(idx));
    // Index 262,144 (64^3) needs four levels: two new roots above the old one, and a new
    // path of three below the top.
    read_pages(*k, {262144});
    idx = {5, 64, 262144};
    EXPECT_EQ(nodes(*k), 3u + 2u + 3u);
    EXPECT_EQ(nodes(*k), expected_nodes(idx));
    // Pages sharing existing nodes add none; a new bottom group adds one.
    read_pages(*k, {6, 65, 262145});
    EXPECT_EQ(nodes(*k), 8u);
    read_pages(*k, {200});
    idx = {5, 6, 64, 65, 200, 262144, 262145};
    EXPECT_EQ(nodes(*k), 9u);
    EXPECT_EQ(nodes(*k), expected_nodes(idx));
    EXPECT_EQ(k->meminfo_now().cached, idx.size() * kPage);
    EXPECT_EQ(k->check_invariants(), "");
  }
}

// Index 0 alone lives in the root: no node; a second page makes the first node.
TEST(Filemap, IndexZeroAloneNeedsNoNode) {
  auto k = boot("linux-6.18");
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, kFile, 64 * kPage).shared()).ok());
  // MADV_RANDOM: the fault reads its page alone (no read-around); fault-around maps only
  // cached pages.
  ASSERT_TRUE(k->madvise(1, 0, 0, 64 * kPage, advice::random).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, kPage, kPage, false).ok());
  EXPECT_EQ(k->meminfo_now().cached, kPage);
  EXPECT_EQ(nodes(*k), 0u);
  ASSERT_TRUE(k->touch(1, 0, kPage, kPage, kPage, false).ok());
  EXPECT_EQ(nodes(*k), 1u);
  EXPECT_EQ(k->check_invariants(), "");
}

// A whole 128 MiB file read on 6.18: 32,768 pages, 512 bottom nodes, 8 above, one root;
// xa_node slab objects of 584 bytes, 14 per order-1 slab.
TEST(Filemap, WholeFileReadOn618) {
  auto k = boot("linux-6.18", 128 * MiB);
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->file_io(ops::read(1, kFile, 0, 128 * MiB)).ok());
  EXPECT_EQ(k->meminfo_now().cached, 128 * MiB);
  const auto rows = k->slabinfo(false);
  const slab_row* r = row(rows, "radix_tree_node");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->active_objs, 512u + 8u + 1u);
  EXPECT_EQ(r->objsize, 584u);
  EXPECT_EQ(r->objperslab, 14u);
  EXPECT_EQ(r->pagesperslab, 2u);
  EXPECT_EQ(r->num_slabs, (521u + 13u) / 14u);
  EXPECT_EQ(k->check_invariants(), "");
}

// The object sizes per kernel: 2.5.26 260 B (count + 64 slots, i386), 2.6.15 276 B (with
// the two tags), 2.6.15 x86-64 536 B, 6.18 584 B (576 + SLUB's free pointer).
TEST(Filemap, NodeSizePerProfile) {
  const std::pair<const char*, uint32_t> want[] = {
      {"linux-2.5.26", 260}, {"linux-2.6.15", 276}, {"linux-2.6.15-x86_64", 536}, {"linux-6.18", 584}};
  for (const auto& [profile, size] : want) {
    auto k = boot(profile);
    ASSERT_TRUE(k);
    const auto rows = k->slabinfo(false);
    const slab_row* r = row(rows, "radix_tree_node");
    ASSERT_TRUE(r) << profile;
    EXPECT_EQ(r->objsize, size) << profile;
  }
}

// Readahead: a read at the start of the file (or right after the previous one) caches
// ra_max = 128 KiB (32 pages) past it, capped at EOF; a read elsewhere caches what it asks.
TEST(Filemap, ReadaheadWindowPerProfile) {
  for (const char* profile : {"linux-6.18", "linux-2.6.15", "linux-2.5.26"}) {
    SCOPED_TRACE(profile);
    auto k = boot(profile);
    ASSERT_TRUE(k);
    ASSERT_TRUE(k->spawn(1).ok());
    const uint64_t ra = k->profile().page_cache.ra_max / kPage;
    EXPECT_EQ(ra, 32u);
    ASSERT_TRUE(k->file_io(ops::read(1, kFile, 0, kPage)).ok());
    EXPECT_EQ(k->meminfo_now().cached, (1 + ra) * kPage);
    ASSERT_TRUE(k->file_io(ops::read(1, kFile, kPage, 4 * kPage)).ok());  // sequential: 4 + 32 past page 5
    EXPECT_EQ(k->meminfo_now().cached, (5 + ra) * kPage);
    ASSERT_TRUE(k->file_io(ops::read(1, kFile, 1000 * kPage, 2 * kPage)).ok());  // random: as asked
    EXPECT_EQ(k->meminfo_now().cached, (7 + ra) * kPage);
    // Read ahead: 32 by the first read; the second's window [5, 37) adds only 33..36.
    EXPECT_EQ(k->page_cache_counts()[1], ra + 4);
  }
  // Capped at the end of the object.
  auto k = boot("linux-6.18", 8 * kPage);
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->file_io(ops::read(1, kFile, 0, kPage)).ok());
  EXPECT_EQ(k->meminfo_now().cached, 8 * kPage);
}

TEST(Filemap, WriteDirtiesFsyncCleans) {
  auto k = boot("linux-6.18");
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->file_io(ops::write(1, kFile, 100 * kPage, 16 * kPage)).ok());
  EXPECT_EQ(k->meminfo_now().cached, 16 * kPage);
  EXPECT_EQ(k->meminfo_now().dirty, 16 * kPage);
  ASSERT_TRUE(k->file_io(ops::write(1, kFile, 108 * kPage, 16 * kPage)).ok());  // 8 again, 8 new
  EXPECT_EQ(k->meminfo_now().dirty, 24 * kPage);
  ASSERT_TRUE(k->fsync(1, kFile).ok());
  EXPECT_EQ(k->meminfo_now().dirty, 0u);
  EXPECT_EQ(k->meminfo_now().writeback, 0u);  // no clock: written and waited for
  EXPECT_EQ(k->page_cache_counts()[0], 24u);
  EXPECT_EQ(k->peak().mi.dirty, 24 * kPage);
  // shmem does not account dirty pages.
  ASSERT_TRUE(k->file_io(ops::write(1, kShm, 0, 4 * kPage)).ok());
  EXPECT_EQ(k->meminfo_now().dirty, 0u);
  EXPECT_EQ(k->meminfo_now().cached, 28 * kPage);
  EXPECT_EQ(k->check_invariants(), "");
}

// fsync walks the dirty pages, not the file: a 1 EiB file (2^48 pages; a walk word by
// word would not end) with three dirty pages, at the start, in the middle and at the end,
// each in its own chunk of the dirty bitmap.
TEST(Filemap, FsyncOfAHugeSparseFileWalksItsDirtyPages) {
  constexpr bytes kEiB = bytes{1} << 60;
  auto k = boot("linux-6.18", kEiB);
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  for (bytes off : {bytes{0}, kEiB / 2 + 3 * kPage, kEiB - kPage})
    ASSERT_TRUE(k->file_io(ops::write(1, kFile, off, kPage)).ok());
  EXPECT_EQ(k->meminfo_now().dirty, 3 * kPage);
  ASSERT_TRUE(k->fsync(1, kFile).ok());
  EXPECT_EQ(k->meminfo_now().dirty, 0u);
  EXPECT_EQ(k->meminfo_now().writeback, 0u);
  EXPECT_EQ(k->meminfo_now().cached, 3 * kPage);
  EXPECT_EQ(k->check_invariants(), "");
}

// Writes through a shared file mapping dirty the pages; msync writes them back.
TEST(Filemap, MappedWritesDirtyMsyncCleans) {
  auto k = boot("linux-6.18");
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, kFile, 64 * kPage).shared()).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 64 * kPage, kPage, false).ok());
  EXPECT_EQ(k->meminfo_now().dirty, 0u);
  ASSERT_TRUE(k->touch(1, 0, 0, 10 * kPage, kPage, true).ok());  // write-notify: wp faults dirty them
  ASSERT_TRUE(k->touch(1, 0, 32 * kPage, 2 * kPage, kPage, true).ok());
  EXPECT_EQ(k->meminfo_now().dirty, 12 * kPage);
  ASSERT_TRUE(k->msync(1, 0, 0, 16 * kPage).ok());
  EXPECT_EQ(k->meminfo_now().dirty, 2 * kPage);
  ASSERT_TRUE(k->msync(1, 0, 0, 64 * kPage).ok());
  EXPECT_EQ(k->meminfo_now().dirty, 0u);
  EXPECT_EQ(k->page_cache_counts()[0], 12u);
  EXPECT_EQ(k->check_invariants(), "");
}

// O_DIRECT moves no data through the page cache; the buffer is still faulted (GUP).
TEST(Filemap, DirectReadCachesNothingButFaultsTheBuffer) {
  auto k = boot("linux-6.18");
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_anon(1, 0, 256 * kPage)).ok());
  ASSERT_TRUE(k->file_io(ops::read(1, kFile, 0, 256 * kPage).into(0, 0).direct()).ok());
  EXPECT_EQ(k->meminfo_now().cached, 0u);
  EXPECT_EQ(nodes(*k), 0u);
  const sample s = k->snapshot("");
  EXPECT_EQ(proc(s, 1).rss_anon, 256u);  // the buffer, written by the read
  EXPECT_EQ(k->faults(), 256u);
  EXPECT_EQ(k->check_invariants(), "");
}

// Seed 000's mechanism: an I/O process readv()s into pages of a shared pool that DB
// agents map. Each pool page it writes is then mapped by one more PTE: on 2.5.26 a page
// mapped by 2 needs a pte_chain (PageDirect no longer), by 8 a second one.
TEST(Filemap, ReadvIntoASharedPoolMapsItsPages) {
  auto k = boot("linux-2.5.26");
  ASSERT_TRUE(k);
  constexpr uint64_t kPool = 1024;  // pages
  for (uint32_t pid = 1; pid <= 7; ++pid) {
    ASSERT_TRUE(k->spawn(pid).ok());
    ASSERT_TRUE(k->mmap(ops::mmap_object(pid, 0, kShm, kPool * kPage).shared()).ok());
    ASSERT_TRUE(k->touch(pid, 0, 0, kPool * kPage, kPage, false).ok());
  }
  auto chains = [&] { return row(k->slabinfo(false), "pte_chain")->active_objs; };
  EXPECT_EQ(chains(), kPool);  // 7 PTEs per page: one chain each
  ASSERT_TRUE(k->spawn(8).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_object(8, 0, kShm, kPool * kPage).shared()).ok());
  // 1,024 pages in 4 readv calls of 256 one-page iovecs each, O_DIRECT.
  for (uint64_t c = 0; c < 4; ++c)
    ASSERT_TRUE(k->file_io(ops::readv(8, kFile, c * 256 * kPage, 256 * kPage, 256).into(0, c * 256 * kPage).direct()).ok());
  EXPECT_EQ(chains(), 2 * kPool);  // the 8th PTE of every page needs a second chain
  EXPECT_EQ(k->meminfo_now().reverse_maps, 8 * kPool);
  EXPECT_EQ(proc(k->snapshot(""), 8).rss_shmem, kPool);
  EXPECT_EQ(k->check_invariants(), "");
}

// The buffer must be writable for a read: EFAULT before anything moves.
TEST(Filemap, ReadIntoAReadOnlyBufferIsEfault) {
  auto k = boot("linux-6.18");
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  op m = ops::mmap_anon(1, 0, 16 * kPage);
  m.prot = prot_read;
  ASSERT_TRUE(k->mmap(m).ok());
  status s = k->file_io(ops::read(1, kFile, 0, 16 * kPage).into(0, 0));
  EXPECT_EQ(s.code(), status_code::refused);
  EXPECT_EQ(s.message().rfind("EFAULT", 0), 0u) << s.message();
  EXPECT_EQ(k->meminfo_now().cached, 0u);
}

// Reclaim (remove_from_page_cache, one page at a time from the LRU's head, the oldest
// read first) frees the nodes it empties and shrinks the tree back, so that the recount
// agrees at every step.
TEST(Filemap, DroppingPagesFreesNodesAndShrinks) {
  auto k = boot("linux-6.18");
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  read_pages(*k, {262144, 64, 5});
  EXPECT_EQ(nodes(*k), 8u);
  kernel& kk = sim_kernel_internals::of(*k);
  ASSERT_TRUE(k->reclaim(kPage).ok());  // 262,144: the tree shrinks to height 2
  EXPECT_EQ(kk.objects[kFile].tree.height, 2);
  EXPECT_EQ(nodes(*k), 3u);
  EXPECT_EQ(k->check_invariants(), "");
  ASSERT_TRUE(k->reclaim(kPage).ok());  // 64
  EXPECT_EQ(kk.objects[kFile].tree.height, 1);
  EXPECT_EQ(nodes(*k), 1u);
  EXPECT_EQ(k->check_invariants(), "");
  ASSERT_TRUE(k->reclaim(kPage).ok());  // 5
  EXPECT_EQ(kk.objects[kFile].tree.height, 0);
  EXPECT_EQ(nodes(*k), 0u);
  EXPECT_EQ(k->meminfo_now().cached, 0u);
  EXPECT_EQ(k->reclaim_counts().reclaimed, 3u);
  EXPECT_EQ(k->check_invariants(), "");
}

// A shmem THP is one multi-index entry in 8 slots of a level-2 node (xas_set_order(9)):
// no bottom node under it. Four 2 MiB folios of an 8 MiB segment (indices 0..2047, two
// levels): the root alone. A 4 KiB page of another segment's first word costs one bottom
// node (and is that object's root).
TEST(Filemap, ShmemThpFoliosNeedNoBottomNodes) {
  auto k = make("linux-6.18", {{"shmem_enabled", "always"}}, 0,
                {{"shm", object_kind::shm, 8 * MiB}, {"small", object_kind::shm, 1 * MiB}});
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, 0, 8 * MiB).shared().align(2 * MiB)).ok());
  ASSERT_TRUE(k->touch(1, 0, 0, 8 * MiB, kPage, false).ok());
  EXPECT_EQ(k->meminfo_now().shmem_huge, 8 * MiB);
  EXPECT_EQ(k->meminfo_now().cached, 8 * MiB);
  EXPECT_EQ(nodes(*k), 1u);
  EXPECT_EQ(k->check_invariants(), "");
  // The small segment is not a whole folio: 4 KiB pages, page 1 alone -> one node.
  ASSERT_TRUE(k->mmap(ops::mmap_object(1, 1, 1, 64 * kPage).shared().hint(advice::nohugepage)).ok());
  ASSERT_TRUE(k->touch(1, 1, kPage, kPage, kPage, false).ok());
  EXPECT_EQ(nodes(*k), 2u);
  EXPECT_EQ(k->check_invariants(), "");
}

// MADV_SEQUENTIAL / MADV_RANDOM split the VMA as any flag change does, and merge back
// when the flags agree again.
TEST(Filemap, ReadaheadAdviceSplitsAndMerges) {
  auto k = boot("linux-6.18");
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->spawn(1).ok());
  ASSERT_TRUE(k->mmap(ops::mmap_object(1, 0, kFile, 64 * kPage).shared()).ok());
  auto vmas = [&] { return sim_kernel_internals::of(*k).mms.at(1)->vmas.size(); };
  EXPECT_EQ(vmas(), 1u);
  ASSERT_TRUE(k->madvise(1, 0, 16 * kPage, 16 * kPage, advice::random).ok());
  EXPECT_EQ(vmas(), 3u);
  const auto& mm = *sim_kernel_internals::of(*k).mms.at(1);
  EXPECT_TRUE(std::next(mm.vmas.begin())->second.rand_read);
  EXPECT_FALSE(std::next(mm.vmas.begin())->second.seq_read);
  ASSERT_TRUE(k->madvise(1, 0, 16 * kPage, 16 * kPage, advice::sequential).ok());
  EXPECT_EQ(vmas(), 3u);
  EXPECT_TRUE(std::next(mm.vmas.begin())->second.seq_read);
  EXPECT_FALSE(std::next(mm.vmas.begin())->second.rand_read);
  ASSERT_TRUE(k->madvise(1, 0, 0, 64 * kPage, advice::random).ok());
  EXPECT_EQ(vmas(), 1u);
  EXPECT_EQ(k->check_invariants(), "");
}

}  // namespace
}  // namespace vmlab
