// Host memory for the page-table store's nodes: a pool of fixed-size blocks.
//
// Why not malloc: the store of a datacenter-scale run holds hundreds of millions of small
// nodes (a 32-byte PTE page, a 4 KiB directory's slots) that live until their process
// exits. A pool carves them from large chunks with no per-block header, and takes its
// chunks from the host already populated (MAP_POPULATE): the host kernel then fills a
// chunk's pages in one call instead of taking a page fault per 4 KiB. On this project's
// Firecracker guest that fault costs about 2.6 us, and filling 4 GiB took 3.8-4.1 s by
// first touch against 1.1-1.3 s populated (docs/decisions.md "the node store's memory
// comes populated"). A pool's chunks double from kFirstChunk to kMaxChunk, so a small
// kernel (a test's) populates kilobytes, not megabytes.
//
// Representation: chunks_ lists every chunk; [bump_, end_) is the unused tail of the
// newest; free_ is an intrusive list of freed blocks (the first word of a free block
// points at the next). A freed block is reused before the tail is. Memory goes back to
// the host only when the pool is destroyed, as slab caches keep their slabs.
#pragma once

#include <cstddef>
#include <vector>

namespace vmlab {

class node_pool {
 public:
  // Blocks of `size` bytes (at least a pointer's), aligned to `align` (a power of two
  // that divides kFirstChunk).
  explicit node_pool(size_t size, size_t align = alignof(std::max_align_t));
  ~node_pool();
  node_pool(const node_pool&) = delete;
  node_pool& operator=(const node_pool&) = delete;

  // An uninitialised block; throws std::bad_alloc when the host refuses a chunk.
  void* alloc() {
    ++live_;
    if (free_) {
      void* p = free_;
      free_ = *static_cast<void**>(p);
      return p;
    }
    if (end_ - bump_ < static_cast<std::ptrdiff_t>(size_)) grow();
    void* p = bump_;
    bump_ += size_;
    return p;
  }
  void free(void* p) {
    --live_;
    *static_cast<void**>(p) = free_;
    free_ = p;
  }
  [[nodiscard]] size_t block_size() const { return size_; }
  [[nodiscard]] size_t requested_size() const { return requested_; }  // as constructed
  // Bytes of every chunk taken from the host.
  [[nodiscard]] size_t host_bytes() const { return host_bytes_; }
  // Bytes of the blocks handed out and not freed.
  [[nodiscard]] size_t live_bytes() const { return live_ * size_; }

  static constexpr size_t kFirstChunk = size_t{64} << 10;
  static constexpr size_t kMaxChunk = size_t{2} << 20;

 private:
  void grow();
  struct chunk {
    void* base;
    size_t bytes;
  };
  size_t requested_;
  size_t size_;
  char* bump_ = nullptr;
  char* end_ = nullptr;
  void* free_ = nullptr;
  size_t next_chunk_ = kFirstChunk;
  size_t host_bytes_ = 0;
  size_t live_ = 0;  // blocks handed out and not freed
  std::vector<chunk> chunks_;
};

}  // namespace vmlab
