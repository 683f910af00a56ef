// The page-table store's block pool (node_pool.h): blocks are distinct, aligned and
// usable; a freed block is reused before the chunk's tail; chunks double from
// kFirstChunk to kMaxChunk, so the host bytes follow the blocks handed out.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "model/node_pool.h"

namespace vmlab {
namespace {

// The host bytes a pool of `size`-byte blocks holds after handing out n blocks, none
// freed: chunks of kFirstChunk, doubling to kMaxChunk, each filled before the next.
size_t expected_host_bytes(size_t size, size_t n) {
  size_t bytes = 0, chunk = node_pool::kFirstChunk;
  while (n > 0) {
    const size_t c = std::max(chunk, (4 * size + 4095) / 4096 * 4096);
    bytes += c;
    n -= std::min(n, c / size);
    chunk = std::min(2 * chunk, node_pool::kMaxChunk);
  }
  return bytes;
}

TEST(NodePool, BlocksAreDistinctAlignedAndUsable) {
  node_pool pool(40, 8);
  EXPECT_EQ(pool.block_size(), 40u);
  std::set<uintptr_t> seen;
  std::vector<void*> blocks;
  for (int i = 0; i < 100'000; ++i) {
    void* p = pool.alloc();
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 8, 0u);
    ASSERT_TRUE(seen.insert(reinterpret_cast<uintptr_t>(p)).second) << "block " << i << " handed out twice";
    std::memset(p, i & 0xff, 40);
    blocks.push_back(p);
  }
  // No block overlaps another: each still holds the byte written into it.
  for (size_t i = 0; i < blocks.size(); ++i)
    for (int j = 0; j < 40; ++j) ASSERT_EQ(static_cast<unsigned char*>(blocks[i])[j], i & 0xff) << "block " << i;
  EXPECT_EQ(pool.host_bytes(), expected_host_bytes(40, 100'000));
}

TEST(NodePool, SizeIsRoundedToTheAlignment) {
  node_pool pool(4100, 64);
  EXPECT_EQ(pool.block_size(), 4160u);
  void* a = pool.alloc();
  void* b = pool.alloc();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  EXPECT_EQ(static_cast<char*>(b) - static_cast<char*>(a), 4160);
}

TEST(NodePool, FreedBlocksAreReusedBeforeTheTail) {
  node_pool pool(64, 64);
  void* a = pool.alloc();
  void* b = pool.alloc();
  void* c = pool.alloc();
  pool.free(a);
  pool.free(c);
  EXPECT_EQ(pool.alloc(), c);  // last freed, first reused
  EXPECT_EQ(pool.alloc(), a);
  void* d = pool.alloc();  // the free list is empty: the tail, after c
  EXPECT_EQ(static_cast<char*>(d) - static_cast<char*>(c), 64);
  EXPECT_NE(d, b);
  EXPECT_EQ(pool.host_bytes(), node_pool::kFirstChunk);  // one chunk so far
}

// A block too big for four to a first chunk gets a chunk of four blocks, in whole pages.
TEST(NodePool, BigBlocksGetChunksOfFour) {
  node_pool pool(100'000, 8);
  for (int i = 0; i < 5; ++i) pool.alloc();
  EXPECT_EQ(pool.host_bytes(), 2 * ((4 * 100'000 + 4095) / 4096 * 4096));
}

TEST(NodePool, HostBytesFollowTheBlocksHandedOut) {
  node_pool pool(4096, 64);
  EXPECT_EQ(pool.host_bytes(), 0u);  // nothing until the first block
  for (int i = 0; i < 3000; ++i) pool.alloc();
  EXPECT_EQ(pool.host_bytes(), expected_host_bytes(4096, 3000));
  // Less than one chunk of kMaxChunk more than the blocks themselves.
  EXPECT_LT(pool.host_bytes(), 3000 * 4096 + node_pool::kMaxChunk);
}

}  // namespace
}  // namespace vmlab
