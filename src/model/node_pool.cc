#include "model/node_pool.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace vmlab {
namespace {

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

// `bytes` of host memory, page-aligned, its pages already present where the host can do that.
void* host_chunk(size_t bytes) {
#ifdef __linux__
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
#else
  return std::aligned_alloc(4096, bytes);
#endif
}

void free_host_chunk(void* p, size_t bytes) {
#ifdef __linux__
  munmap(p, bytes);
#else
  (void)bytes;
  std::free(p);
#endif
}

}  // namespace

node_pool::node_pool(size_t size, size_t align)
    : requested_(size), size_(round_up(std::max(size, sizeof(void*)), align)) {}

node_pool::~node_pool() {
  for (const chunk& c : chunks_) free_host_chunk(c.base, c.bytes);
}

void node_pool::grow() {
  // At least four blocks a chunk, in whole host pages.
  const size_t bytes = std::max(next_chunk_, round_up(4 * size_, 4096));
  chunks_.reserve(chunks_.size() + 1);  // so that recording the chunk cannot throw
  void* p = host_chunk(bytes);
  if (!p) throw std::bad_alloc();
  chunks_.push_back({p, bytes});
  host_bytes_ += bytes;
  next_chunk_ = std::min(2 * next_chunk_, kMaxChunk);
  // The old tail, too small for a block, is left unused (less than one block per chunk).
  bump_ = static_cast<char*>(p);
  end_ = bump_ + bytes;
}

}  // namespace vmlab
