#include "model/readahead.h"

#include <algorithm>

#include "model/filemap.h"
#include "model/kernel.h"

namespace vmlab {
namespace {

constexpr uint32_t kMmapLotsaMiss = 100;  // MMAP_LOTSAMISS

uint64_t ra_pages(const kernel& k) { return k.geo.pages(k.prof.page_cache.ra_max); }

// get_init_ra_size / get_next_ra_size (mm/readahead.c).
uint64_t init_ra_size(uint64_t size, uint64_t max) {
  uint64_t n = 1;
  while (n < size) n <<= 1;  // roundup_pow_of_two
  if (n <= max / 32) return n * 4;
  if (n <= max / 4) return n * 2;
  return max;
}
uint64_t next_ra_size(uint64_t cur, uint64_t max) {
  if (cur < max / 16) return 4 * cur;
  if (cur <= max / 2) return 2 * cur;
  return max;
}

// do_page_cache_ra + page_cache_ra_unbounded: the uncached pages of [start, start + n),
// clipped at EOF, PG_readahead on the page `lookahead` before the clipped end if this read
// adds it. Stops at the first page memory cannot hold.
void read_window(kernel& k, int32_t obj, uint64_t start, uint64_t n, uint64_t lookahead) {
  mem_object& o = k.objects[static_cast<size_t>(obj)];
  if (start >= o.nr_pages || n == 0) return;
  n = std::min(n, o.nr_pages - start);
  const uint64_t mark = lookahead <= n ? start + n - lookahead : UINT64_MAX;
  for (uint64_t p = start; p < start + n; ++p) {
    if (o.is_resident(p)) continue;
    if (!add_to_page_cache_word(k, obj, p / 64, uint64_t{1} << (p % 64))) break;
    if (p == mark) o.ra_mark.set(p);
  }
}

}  // namespace

bool mmap_readahead_applies(const kernel& k, const vm_area_struct& vma) {
  return k.prof.page_cache.mmap_ra == mmap_readahead::ondemand_6x && !vma.is_anon() &&
         k.objects[static_cast<size_t>(vma.object)].kind == object_kind::file;
}

void mmap_sync_readahead(kernel& k, const vm_area_struct& vma, uint64_t pg) {
  mem_object& o = k.objects[static_cast<size_t>(vma.object)];
  auto& ra = o.mra;
  const uint64_t max = ra_pages(k);
  if (vma.rand_read || max == 0) return;
  if (vma.seq_read) {
    // page_cache_sync_ra(ra_pages): only index 0 looks sequential to it here (prev_pos is
    // read()'s); elsewhere the cached history before pg is at most ra_pages long, so it
    // reads ra_pages from pg without a mark and leaves the state alone.
    if (pg != 0) {
      read_window(k, vma.object, pg, max, 0);
      return;
    }
    ra.start = 0;
    ra.size = init_ra_size(max, max);
    ra.async = ra.size > max ? ra.size - max : ra.size / 2;
    read_window(k, vma.object, ra.start, ra.size, ra.async);
    return;
  }
  if (ra.mmap_miss < kMmapLotsaMiss * 10) ++ra.mmap_miss;
  if (ra.mmap_miss > kMmapLotsaMiss) return;
  ra.start = pg > max / 2 ? pg - max / 2 : 0;
  ra.size = max;
  ra.async = max / 4;
  read_window(k, vma.object, ra.start, ra.size, ra.async);
}

bool mmap_async_readahead(kernel& k, const vm_area_struct& vma, uint64_t pg) {
  mem_object& o = k.objects[static_cast<size_t>(vma.object)];
  auto& ra = o.mra;
  const uint64_t max = ra_pages(k);
  if (vma.rand_read || max == 0) return false;
  if (ra.mmap_miss) --ra.mmap_miss;
  if (!o.ra_mark.test(pg)) return false;
  o.ra_mark.put(pg, false);  // folio_clear_readahead
  if (pg == ra.start + ra.size - ra.async) {
    ra.start += ra.size;
    ra.size = std::max(ra.size, next_ra_size(ra.size, max));
  } else {
    uint64_t start = pg + 1;  // page_cache_next_miss(pg + 1, max)
    while (start < pg + 1 + max && start < o.nr_pages && o.is_resident(start)) ++start;
    if (start - pg > max) return true;
    ra.start = start;
    ra.size = next_ra_size(start - pg + max, max);
  }
  // 6.18: the window's end rounded down to 1 << min(order + 2, ffs(max) - 1) pages, order 0.
  const uint64_t align = std::min<uint64_t>(4, max & (~max + 1));
  const uint64_t end = ra.start + ra.size, aligned = end / align * align;
  if (aligned > ra.start) ra.size -= end - aligned;
  ra.async = ra.size;
  read_window(k, vma.object, ra.start, ra.size, ra.async);
  return true;
}

void mmap_miss_hits(kernel& k, const vm_area_struct& vma, uint64_t n) {
  auto& miss = k.objects[static_cast<size_t>(vma.object)].mra.mmap_miss;
  miss = n >= miss ? 0 : miss - uint32_t(n);
}

}  // namespace vmlab
