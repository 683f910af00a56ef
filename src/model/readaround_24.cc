#include "model/readaround_24.h"

#include <algorithm>

namespace vmlab {

uint32_t page_cluster_24(uint64_t memory_bytes, uint64_t page_bytes) {
  const uint64_t pages = memory_bytes / page_bytes;
  if (pages < (16ull << 20) / page_bytes) return 2;
  if (pages < (32ull << 20) / page_bytes) return 3;
  return 4;
}

page_span read_around_24(uint64_t pgoff, uint64_t file_pages, uint32_t page_cluster, bool random_hint) {
  if (random_hint) return {pgoff, 1};
  const uint64_t first = (pgoff >> page_cluster) << page_cluster;
  return {first, std::min<uint64_t>(uint64_t(1) << page_cluster, file_pages - first)};
}

uint64_t seq_ra_window_24(uint64_t ra_pages, uint32_t page_cluster) {
  const uint64_t cluster = uint64_t(1) << page_cluster;
  return (ra_pages + cluster - 1) >> page_cluster << page_cluster;
}

page_span seq_readahead_24::after_fault(uint64_t pgoff, uint64_t window, uint64_t file_pages) {
  if (raend == 0) raend = window;
  flushed = {};
  if (pgoff + window / 2 != raend) return {};
  const uint64_t start = raend, end = std::min(start + window, file_pages);
  if (start > end) return {};  // the kernel returns before flushing or moving vm_raend
  if (raend > 2 * window) flushed = {raend - 3 * window, window};
  raend += window;
  if (start == end) return {};
  return {start, end - start};
}

}  // namespace vmlab
