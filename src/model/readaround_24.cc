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

bool file_readahead_24::start_read(uint64_t index, uint64_t offset, uint64_t count, uint64_t page_bytes,
                                   uint64_t max_readahead) {
  bool reada_ok = true;
  if (index > raend || index + rawin < raend) {
    reada_ok = false;
    raend = ralen = ramax = rawin = 0;
  }
  if (index == 0 && offset + count <= page_bytes / 2) {
    ramax = 0;
  } else {
    const uint64_t needed = (offset + count) / page_bytes + 1;
    ramax = std::max(ramax, needed);
    if (reada_ok && ramax < kMinReadahead24) ramax = kMinReadahead24;
    ramax = std::min(ramax, max_readahead);
  }
  return reada_ok;
}

page_span file_readahead_24::readahead(bool reada_ok, uint64_t index, bool locked, uint64_t end_index,
                                       uint64_t max_readahead) {
  uint64_t r = raend, max_ahead = 0;
  if (locked) {
    if (ralen == 0 || index >= r || index + rawin < r) {
      r = index;
      if (r < end_index) max_ahead = ramax;
      rawin = 0;
      ralen = 1;
      if (max_ahead == 0) {
        raend = index + ralen;
        rawin += ralen;
      }
    }
  } else if (reada_ok && ramax != 0 && r >= 1 && index <= r && index + ralen >= r) {
    r -= 1;
    if (r < end_index) max_ahead = ramax + 1;
    if (max_ahead != 0) {
      rawin = ralen;
      ralen = 0;
    }
  }
  // while (ahead < max_ahead) { ahead++; if (raend + ahead >= end_index) break; read it }
  uint64_t ahead = 0, pages = 0;
  while (ahead < max_ahead) {
    ++ahead;
    if (r + ahead >= end_index) break;
    ++pages;
  }
  if (ahead != 0) {
    ralen += ahead;
    rawin += ralen;
    raend = r + ahead + 1;
    ramax = std::min(ramax + ramax, max_readahead);
  }
  return {r + 1, pages};
}

}  // namespace vmlab
