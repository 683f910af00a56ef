#include "model/filemap.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "model/kernel.h"

namespace vmlab {
namespace {

constexpr uint32_t kShift = 6;  // RADIX_TREE_MAP_SHIFT / XA_CHUNK_SHIFT; one bitmap word per level-1 node

uint64_t pack(slab_object o) { return ((uint64_t{o.slab} << 32) | o.index) + 1; }
slab_object unpack(uint64_t v) { return {uint32_t((v - 1) >> 32), uint32_t(v - 1)}; }

bool indexed(const kernel& k, const mem_object& o) {
  return o.kind != object_kind::hugetlb && k.km.cache(kmem_kind::radix_tree_node) != nullptr;
}

// Whether word w lies in a shmem THP folio (its pages are one entry of a level-2 node).
bool in_folio(const kernel& k, const mem_object& o, uint64_t w) {
  return mem_object::test_bit(o.huge_folio, (w * 64) >> k.geo.index_bits());
}

void ensure_levels(page_cache_tree& t, uint8_t h) {
  while (t.node.size() < h) {
    t.node.emplace_back();
    t.used.emplace_back();
    t.nr.push_back(0);
    if (t.acct) {
      t.node.back().account_to(t.acct);
      t.used.back().account_to(t.acct);
    }
  }
}

// The levels of a tree whose indices are 64-bit (page_cache_height of ~0).
constexpr uint32_t kMaxHeight = (64 + kShift - 1) / kShift;

// radix_tree_preload()'s per-CPU pool: node objects allocated before an insertion, so that
// it cannot fail half-way. An extension or a path needs at most kMaxHeight of them.
struct node_pool {
  slab_object obj[kMaxHeight];
  uint32_t n = 0;
  [[nodiscard]] bool empty() const { return n == 0; }
  slab_object take() { return obj[--n]; }
};

// The radix_tree_preload() of one insertion: up to `n` node objects, all or none.
bool preload(kernel& k, node_pool& pool, uint64_t n) {
  if (n > kMaxHeight) return false;  // cannot happen: no path is longer than the tallest tree
  while (pool.n < n) {
    auto o = kmem_alloc(k, kmem_kind::radix_tree_node);
    if (!o) return false;
    pool.obj[pool.n++] = *o;
  }
  return true;
}

void node_new(page_cache_tree& t, node_pool& pool, uint32_t l, uint64_t g) {
  t.node[l - 1].at(g) = pack(pool.take());
  ++t.nr[l - 1];
}

void node_free(kernel& k, page_cache_tree& t, uint32_t l, uint64_t g) {
  uint64_t& v = t.node[l - 1].at(g);
  kmem_free(k, kmem_kind::radix_tree_node, unpack(v));
  v = 0;
  --t.nr[l - 1];
}

bool node_exists(const page_cache_tree& t, uint32_t l, uint64_t g) {
  return l <= t.node.size() && t.node[l - 1].get(g) != 0;
}

// Slot of word w becomes used (w was empty): the level-1 node when `leaf`, then each
// level's count, building the nodes a first entry needs.
void link_word(page_cache_tree& t, node_pool& pool, uint64_t w, bool leaf) {
  if (t.height == 0) return;
  if (leaf) node_new(t, pool, 1, w);
  for (uint32_t l = 2; l <= t.height; ++l) {
    const uint64_t g = w >> (kShift * (l - 1));
    if (t.used[l - 1].at(g)++ != 0) return;  // the node was there: nothing above changes
    node_new(t, pool, l, g);
  }
}

// Word w became empty: its level-1 node goes, and every node left with no used slot.
void unlink_word(kernel& k, page_cache_tree& t, uint64_t w) {
  if (t.height == 0) return;
  if (node_exists(t, 1, w)) node_free(k, t, 1, w);
  for (uint32_t l = 2; l <= t.height; ++l) {
    const uint64_t g = w >> (kShift * (l - 1));
    if (--t.used[l - 1].at(g) != 0) return;
    node_free(k, t, l, g);
  }
}

// Nodes link_word(w, leaf) will create: the level-1 node, then each level up to the first
// node that exists.
uint64_t path_need(const page_cache_tree& t, uint64_t w, bool leaf) {
  if (t.height == 0) return 0;
  uint64_t n = leaf ? 1 : 0;
  for (uint32_t l = 2; l <= t.height; ++l) {
    if (l - 1 < t.used.size() && t.used[l - 1].get(w >> (kShift * (l - 1))) != 0) break;
    ++n;
  }
  return n;
}

// radix_tree_extend / xas_expand: the tree grows to height h (> t.height). The old
// contents sit under slot 0 of every new level.
void extend(mem_object& o, node_pool& pool, uint8_t h) {
  page_cache_tree& t = o.tree;
  const uint8_t old = t.height;
  ensure_levels(t, h);
  t.height = h;
  if (old == 0) {
    // An empty tree, or the single entry at index 0 that lived in the root.
    if (o.resident.test(0)) link_word(t, pool, 0, true);
    return;
  }
  for (uint32_t l = old + 1u; l <= h; ++l) {
    node_new(t, pool, l, 0);
    t.used[l - 1].at(0) = 1;
  }
}

// xas_shrink: while the root uses only slot 0 and that slot holds a node (or, at the
// bottom, the entry of index 0), the root goes.
void shrink(kernel& k, mem_object& o) {
  page_cache_tree& t = o.tree;
  while (t.height > 0) {
    const uint32_t h = t.height;
    if (!node_exists(t, h, 0)) {  // the last entry went: the tree is empty
      t.height = 0;
      return;
    }
    if (h == 1) {
      if (o.resident.word(0) != 1) return;
      node_free(k, t, 1, 0);
      t.height = 0;
      return;
    }
    if (t.used[h - 1].get(0) != 1 || !node_exists(t, h - 1, 0)) return;
    node_free(k, t, h, 0);
    t.used[h - 1].at(0) = 0;
    t.height = uint8_t(h - 1);
  }
}

void note_cached(kernel& k, uint64_t n) {
  k.fm.nr_cached += n;
  k.fm.max_cached = std::max(k.fm.max_cached, k.fm.nr_cached);
}

// The index part of adding `bits` to word w (frames already had): the extension and the
// path, each preloaded with exactly the nodes it builds. false (the index as before) when
// a node could not be had. The word is looked up once, for writing: a failure can leave
// its bitmap chunk allocated (zero, so nothing reads it as cached; host memory only).
bool index_word(kernel& k, mem_object& o, uint64_t w, uint64_t bits, bool leaf) {
  page_cache_tree& t = o.tree;
  uint64_t& word = o.resident.word_ref(w);
  const uint8_t h = page_cache_height(w * 64 + 63 - uint64_t(__builtin_clzll(bits)));
  if (word != 0 && h <= t.height) {  // the path to word w is there already
    word |= bits;
    return true;
  }
  const bool was_empty = word == 0;
  node_pool pool;
  auto give_back = [&] {
    while (!pool.empty()) kmem_free(k, kmem_kind::radix_tree_node, pool.take());
  };
  if (h > t.height) {
    const uint64_t need = t.height == 0 ? (o.resident.test(0) ? h : 0) : uint64_t(h - t.height);
    if (!preload(k, pool, need)) {
      give_back();
      return false;
    }
    extend(o, pool, h);
  }
  if (was_empty) {
    if (!preload(k, pool, path_need(t, w, leaf))) {
      give_back();
      shrink(k, o);  // the extension had nothing to hold: undone
      return false;
    }
    link_word(t, pool, w, leaf);
  }
  word |= bits;
  return true;
}

}  // namespace

uint8_t page_cache_height(uint64_t max) {
  // The levels of kShift bits that max's significant bits fill, the last one in part.
  const auto bits = uint32_t(max ? 64 - __builtin_clzll(max) : 0);
  return static_cast<uint8_t>((bits + kShift - 1) / kShift);
}

uint64_t page_hash_table_bytes(uint64_t mempages, uint64_t page_size, uint64_t ptr_bytes) {
  uint64_t order = 0;
  while ((page_size << order) < mempages * ptr_bytes) ++order;
  return page_size << order;
}

bool add_to_page_cache_word(kernel& k, int32_t obj, uint64_t w, uint64_t bits) {
  if (!bits) return true;
  mem_object& o = k.objects[size_t(obj)];
  const uint64_t n = uint64_t(popcount64(bits));
  if (!k.pm.alloc(page_use::cache, gfp_zone::highuser, n)) return false;
  if (!indexed(k, o)) {
    o.resident.word_ref(w) |= bits;
  } else if (!index_word(k, o, w, bits, !in_folio(k, o, w))) {
    k.pm.free(page_use::cache, n);
    return false;
  }
  o.nr_resident += n;
  if (o.kind != object_kind::hugetlb) note_cached(k, n);
  lru_add_word(k, obj, w, bits);
  return true;
}

void undo_add_to_page_cache(kernel& k, int32_t obj, uint64_t pg) {
  lru_unadd(k, obj, pg);
  remove_from_page_cache(k, obj, pg);
}

bool add_to_page_cache_range(kernel& k, int32_t obj, uint64_t pg, uint64_t n) {
  uint64_t failed = 0;  // the first page of the word that did not fit
  if (for_each_bit_word(pg, n, [&](uint64_t w, uint64_t bits) {
        failed = w * 64 + uint64_t(__builtin_ctzll(bits));
        return add_to_page_cache_word(k, obj, w, bits);
      }))
    return true;
  // Undo what this call added, last page first (as it went onto reclaim's list): it
  // leaves nothing changed.
  for (uint64_t q = failed; q-- > pg;) undo_add_to_page_cache(k, obj, q);
  return false;
}

bool add_huge_folio(kernel& k, int32_t obj, uint64_t first, uint64_t n) {
  mem_object& o = k.objects[size_t(obj)];
  for (uint64_t w = first / 64; w < (first + n) / 64; ++w) {
    if (!indexed(k, o)) {
      o.resident.word_ref(w) = ~uint64_t{0};
    } else if (!index_word(k, o, w, ~uint64_t{0}, false)) {
      for (uint64_t x = first / 64; x < w; ++x) {  // undone: nothing changed
        o.resident.word_ref(x) = 0;
        unlink_word(k, o.tree, x);
      }
      shrink(k, o);
      return false;
    }
  }
  o.nr_resident += n;
  note_cached(k, n);
  return true;
}

void remove_from_page_cache(kernel& k, int32_t obj, uint64_t pg) {
  mem_object& o = k.objects[size_t(obj)];
  const uint64_t w = pg / 64;
  o.resident.put(pg, false);
  o.referenced.put(pg, false);
  o.ra_mark.put(pg, false);  // PG_readahead goes with the page
  --o.nr_resident;
  k.pm.free(page_use::cache, 1);
  if (o.kind != object_kind::hugetlb) --k.fm.nr_cached;
  if (!indexed(k, o)) return;
  if (o.resident.word(w) == 0) unlink_word(k, o.tree, w);
  shrink(k, o);
}

void filemap_dirty_range(kernel& k, int32_t obj, uint64_t pg, uint64_t n) {
  mem_object& o = k.objects[size_t(obj)];
  if (o.kind != object_kind::file) return;
  for (uint64_t p = pg; p < pg + n; ++p)
    if (!o.dirty.test(p)) {
      o.dirty.set(p);
      ++o.nr_dirty;
      ++k.fm.nr_dirty;
    }
  k.fm.max_dirty = std::max(k.fm.max_dirty, k.fm.nr_dirty);
}

uint64_t filemap_write_and_wait(kernel& k, int32_t obj, uint64_t pg, uint64_t n) {
  mem_object& o = k.objects[size_t(obj)];
  const uint64_t end = std::min(pg + n, o.nr_pages);
  if (!o.nr_dirty || pg >= end) return 0;
  // The dirty words of the range, found through the bitmap's written chunks: an fsync of
  // a 1 PiB file with one dirty page costs that page, not the file's size.
  std::vector<std::pair<uint64_t, uint64_t>> words;
  o.dirty.for_each_word_in(pg / 64, (end - 1) / 64 + 1, [&](uint64_t w, uint64_t bits) {
    if (w * 64 < pg) bits &= ~uint64_t{0} << (pg - w * 64);
    if (end - w * 64 < 64) bits &= (uint64_t{1} << (end - w * 64)) - 1;
    if (bits) words.emplace_back(w, bits);
  });
  // __filemap_fdatawrite_range: each dirty page is cleared for I/O and set under
  // writeback; filemap_fdatawait_range: the writeback ends (no clock: at once).
  uint64_t done = 0;
  for (const auto& [w, bits] : words) {
    o.dirty.word_ref(w) &= ~bits;
    o.writeback.word_ref(w) |= bits;
    const uint64_t c = uint64_t(popcount64(bits));
    o.nr_dirty -= c;
    k.fm.nr_dirty -= c;
    o.nr_writeback += c;
    k.fm.nr_writeback += c;
    done += c;
  }
  for (const auto& [w, bits] : words) {
    o.writeback.word_ref(w) &= ~bits;
    const uint64_t c = uint64_t(popcount64(bits));
    o.nr_writeback -= c;
    k.fm.nr_writeback -= c;
  }
  k.fm.written += done;
  return done;
}

namespace {

// Adds the uncached pages of [pg, pg + n), counting them in *added; with `access`, the
// cached ones are marked accessed (mark_page_accessed: PG_referenced, vmscan.h); with
// `dirty`, every page is dirtied as its word is copied. A reclaim point comes before each
// word: a read or write may be larger than memory, and reclaim then takes its own first
// pages (already dirtied, so written back first).
bool fill_range(kernel& k, int32_t obj, uint64_t pg, uint64_t n, bool access, bool dirty, uint64_t* added) {
  return for_each_bit_word(pg, n, [&](uint64_t w, uint64_t span) {
    reclaim_point(k, 64 + k.prof.paging.nr_levels);
    mem_object& o = k.objects[size_t(obj)];
    const uint64_t cached = span & o.resident.word(w);
    if (access && cached && o.kind == object_kind::file) o.referenced.word_ref(w) |= cached;
    if (!add_to_page_cache_word(k, obj, w, span & ~cached)) return false;
    *added += uint64_t(popcount64(span & ~cached));
    if (dirty) filemap_dirty_range(k, obj, w * 64 + uint64_t(__builtin_ctzll(span)), uint64_t(popcount64(span)));
    return true;
  });
}

}  // namespace

bool filemap_read(kernel& k, int32_t obj, uint64_t pg, uint64_t n) {
  mem_object& o = k.objects[size_t(obj)];
  // page_cache_sync_ra(): a read at the start of the file or right after the previous
  // one is sequential and gets the readahead window past it; any other is read as asked.
  const bool sequential = pg == 0 || pg == o.ra_next;
  const uint64_t ra = sequential ? k.geo.pages(k.prof.page_cache.ra_max) : 0;
  const uint64_t end = std::min(o.nr_pages, pg + n + ra);
  uint64_t asked = 0, ahead = 0;
  if (!fill_range(k, obj, pg, std::min(n, o.nr_pages - pg), true, false, &asked)) return false;
  if (end > pg + n && !fill_range(k, obj, pg + n, end - pg - n, false, false, &ahead)) return false;
  k.fm.ra_pages += ahead;
  o.ra_next = pg + n;
  return true;
}

bool filemap_write(kernel& k, int32_t obj, uint64_t pg, uint64_t n) {
  uint64_t added = 0;
  return fill_range(k, obj, pg, n, true, true, &added);
}

}  // namespace vmlab
