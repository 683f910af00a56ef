#include "model/pgtable.h"

#include <new>

namespace vmlab {

pt_store::pt_store(uint16_t pte_words)
    : pte_words_(pte_words), tables_(sizeof(pte_table), alignof(pte_table)),
      words_(pte_words * sizeof(uint64_t), 64), dirs_(sizeof(pt_dir), alignof(pt_dir)) {}

pt_store::~pt_store() {
  for (size_t i = 1; i + 1 < full_.size(); ++i)
    for (void* u : {full_[i], empty_[i]}) {
      auto* d = static_cast<pt_dir*>(u);
      delete[] d->slot;
      delete d;
    }
  if (!full_.empty()) {
    delete static_cast<pte_table*>(full_.back());
    delete static_cast<pte_table*>(empty_.back());
  }
}

size_t pt_store::host_bytes() const {
  size_t n = tables_.host_bytes() + words_.host_bytes() + dirs_.host_bytes();
  for (const auto& a : arrays_) n += a->host_bytes();
  return n;
}

size_t pt_store::live_bytes() const {
  size_t n = tables_.live_bytes() + words_.live_bytes() + dirs_.live_bytes();
  for (const auto& a : arrays_) n += a->live_bytes();
  return n;
}

node_pool& pt_store::array_pool(size_t bytes) {
  for (const auto& a : arrays_)
    if (a->requested_size() == bytes) return *a;
  return *arrays_.emplace_back(std::make_unique<node_pool>(bytes, bytes >= 64 ? 64 : 16));
}

void* pt_store::new_array(size_t bytes) {
  void* p = array_pool(bytes).alloc();
  std::memset(p, 0, bytes);
  return p;
}

void pt_store::free_array(void* p, size_t bytes) { array_pool(bytes).free(p); }

void pt_store::init_uniform(const std::vector<uint32_t>& entries) {
  entries_ = entries;
  const size_t n = entries.size();
  full_.assign(n, nullptr);
  empty_.assign(n, nullptr);
  for (bool full : {true, false}) {
    auto* t = new pte_table;
    t->refcount = kUniformRef;
    t->nwords = static_cast<uint8_t>(pte_words_);
    t->packed_ = 0;  // the bitmap form: invariant 5 (check.cc) reads it as such
    t->bm_ = {};
    if (full) {
      t->bm_.present = const_cast<uint64_t*>(full_bitmap());
      t->nr_present = static_cast<uint16_t>(entries[n - 1]);
    }
    (full ? full_ : empty_)[n - 1] = t;
  }
  for (size_t i = n - 1; i-- > 1;)
    for (bool full : {true, false}) {
      auto* d = new pt_dir;
      d->refcount = kUniformRef;
      d->entries = entries[i];
      d->nr_used = entries[i];
      d->slot = new void*[entries[i]];
      std::fill(d->slot, d->slot + entries[i], (full ? full_ : empty_)[i + 1]);
      (full ? full_ : empty_)[i] = d;
    }
}

void* pt_store::materialize(int idx, const void* u) {
  if (size_t(idx) + 1 == entries_.size()) {
    pte_table* t = new_pte_table();
    if (u == full_.back()) set_full(t);
    return t;
  }
  const auto* src = static_cast<const pt_dir*>(u);
  pt_dir* d = new_dir(src->entries);
  std::copy(src->slot, src->slot + src->entries, d->slot);
  d->nr_used = src->nr_used;
  return d;
}

namespace {

// Which of the four 16-entry blocks of a word hold any of the bits m (bit j: block j):
// a block's top bit is set when any bit of it is (its low 15 bits plus 0x7fff carry into
// the top, never beyond), and the four top bits are gathered into bits 60-63 by a
// multiply (their partial products never overlap, so nothing carries).
uint32_t word_blocks(uint64_t m) {
  constexpr uint64_t kLow = 0x7fff7fff7fff7fff, kTop = 0x8000800080008000;
  const uint64_t top = (((m & kLow) + kLow) | m) & kTop;
  return uint32_t((top * 0x0000200040008001) >> 60);
}

// The 16-entry blocks of word w that the entries m of that word lie in, as bits of a
// packed table's block mask (a fault-around window: one).
uint64_t blocks_of(uint32_t w, uint64_t m) { return uint64_t{word_blocks(m)} << (4 * w); }

using L = compact_layout;

// The 16-entry blocks of a table's entries (word(w) for each word w named in `words`):
// those holding any (a packed table's block mask), how many of them are not full, the
// first of those with its mask, and the entries.
struct block_scan {
  uint64_t blocks = 0;
  uint32_t partials = 0, n = 0;
  uint32_t partial_block = 0;
  uint16_t partial_mask = 0;
};

template <class F>
block_scan scan_blocks(uint32_t words, F&& word) {
  block_scan s;
  for (uint32_t x = words; x; x &= x - 1) {
    const auto w = uint32_t(__builtin_ctz(x));
    const uint64_t bits = word(w);
    const uint32_t used = word_blocks(bits), partial = used & word_blocks(~bits);
    s.blocks |= uint64_t{used} << (4 * w);
    s.n += uint32_t(popcount64(bits));
    if (partial && !s.partials) {
      const auto j = uint32_t(__builtin_ctz(partial));
      s.partial_block = 4 * w + j;
      s.partial_mask = static_cast<uint16_t>(bits >> (16 * j));
    }
    s.partials += uint32_t(popcount64(partial));
  }
  return s;
}

// The compact value of the scanned entries: its blocks, all full but at most one, which
// it announces (invariant 8); nullptr when more are partial or the store's tables are
// too large for a value.
void* compact_value(uint32_t pte_words, const block_scan& s) {
  if (pte_words * 4 > L::kMaxBlocks || s.partials > 1) return nullptr;
  uint64_t v = L::kTag | s.blocks << L::kBlocksShift;
  if (s.partials)
    v |= L::kPartial | uint64_t{s.partial_block} << L::kIndexShift | uint64_t{s.partial_mask} << L::kMaskShift;
  return reinterpret_cast<void*>(uintptr_t{v});
}

// Presence words [0, nwords) of compact value v; returns the entries present.
uint32_t compact_words(const void* v, uint32_t nwords, uint64_t* w) {
  const uint64_t x = L::bits(v);
  std::fill(w, w + nwords, uint64_t{0});
  uint32_t n = 0;
  for (uint64_t blocks = x >> L::kBlocksShift; blocks; blocks &= blocks - 1) {
    const auto b = uint32_t(__builtin_ctzll(blocks));
    w[b >> 2] |= uint64_t{0xffff} << (16 * (b & 3));
    n += 16;
  }
  if (x & L::kPartial) {
    const auto b = uint32_t(x >> L::kIndexShift) & 31;
    const auto m = uint16_t(x >> L::kMaskShift);
    w[b >> 2] &= ~(uint64_t{0xffff} << (16 * (b & 3)));
    w[b >> 2] |= uint64_t{m} << (16 * (b & 3));
    n = n - 16 + uint32_t(popcount64(m));
  }
  return n;
}

}  // namespace

void* pt_store::compact(const pte_table* t, const uint64_t* add, uint32_t add_words) const {
  if (t->refcount != 1 || t->shared_pt || (!t->packed_ && (t->bm_.state || t->bm_.anon))) return nullptr;
  const bool has = !t->empty();
  const block_scan s = scan_blocks(add_words | (has ? t->words_in_use() : 0), [&](uint32_t w) {
    return (has ? t->word(w) : 0) | ((add_words >> w) & 1 ? add[w] : 0);
  });
  return compact_value(pte_words_, s);
}

void* pt_store::new_table(const uint64_t* m, uint32_t words) {
  // One scan for both forms.
  const block_scan s = scan_blocks(words, [&](uint32_t w) { return m[w]; });
  if (void* v = compact_value(pte_words_, s)) return v;
  pte_table* t = new_pte_table();
  if (popcount64(s.blocks) <= kPackedBlocks) fill_packed(t, m, s.blocks, s.n);
  else set_present_words(t, m, words);
  return t;
}

void pt_store::fill_packed(pte_table* t, const uint64_t* m, uint64_t blocks, uint32_t n) {
  int pos = 0;
  for (uint64_t b = blocks; b; b &= b - 1) {
    const auto i = uint32_t(__builtin_ctzll(b));
    t->pk_.mask[pos++] = static_cast<uint16_t>(m[i >> 2] >> (16 * (i & 3)));
  }
  t->pk_.blocks = blocks;
  t->nr_present = static_cast<uint16_t>(n);
}

void* pt_store::compact_blocks(uint32_t full_blocks) const {
  block_scan s;
  s.blocks = full_blocks;
  return compact_value(pte_words_, s);
}

pte_table* pt_store::expand(const void* v) {
  uint64_t w[kMaxPteWords];
  compact_words(v, pte_words_, w);
  uint32_t words = 0;
  for (uint32_t x = 0; x < pte_words_; ++x)
    if (w[x]) words |= uint32_t{1} << x;
  pte_table* t = new_pte_table();
  set_present_words(t, w, words);
  return t;
}

const pte_table* pt_store::view(const void* slot, pte_ref& r) const {
  if (!is_compact(slot)) return static_cast<const pte_table*>(slot);
  pte_table& t = r.decoded_;
  const uint32_t n = compact_words(slot, pte_words_, r.words_);
  t.refcount = 1;
  t.nwords = static_cast<uint8_t>(pte_words_);
  t.shared_pt = 0;
  t.packed_ = 0;
  t.bm_ = {};
  t.bm_.present = n == uint32_t{pte_words_} * 64 ? const_cast<uint64_t*>(full_bitmap()) : n ? r.words_ : nullptr;
  t.nr_present = static_cast<uint16_t>(n);
  return &t;
}

pte_table* pt_store::new_pte_table() {
  auto* t = new (tables_.alloc()) pte_table{};
  t->nwords = static_cast<uint8_t>(pte_words_);
  return t;
}

void pt_store::free_pte_table(pte_table* t) {
  clear_present(t);
  drop_private(t);
  t->~pte_table();
  tables_.free(t);
}

pt_dir* pt_store::new_dir(uint32_t entries) {
  auto* d = new (dirs_.alloc()) pt_dir{};
  d->entries = entries;
  d->slot = static_cast<void**>(new_array(entries * sizeof(void*)));
  return d;
}

void pt_store::free_dir(pt_dir* d) {
  free_array(d->slot, d->entries * sizeof(void*));
  if (d->leaf) {
    free_array(d->leaf, leaf_bytes(d->entries));
    free_array(d->leaf_write, leaf_bytes(d->entries));
  }
  if (d->leaf_page) free_array(d->leaf_page, d->entries * sizeof(uint32_t));
  d->~pt_dir();
  dirs_.free(d);
}

void pt_store::set_leaf(pt_dir* d, uint32_t i, void* deposit, bool writable, uint32_t page) {
  if (!d->leaf) {
    d->leaf = static_cast<uint64_t*>(new_array(leaf_bytes(d->entries)));
    d->leaf_write = static_cast<uint64_t*>(new_array(leaf_bytes(d->entries)));
  }
  d->slot[i] = deposit;
  ++d->nr_used;
  ++d->nr_leaves;
  d->leaf[i >> 6] |= uint64_t{1} << (i & 63);
  set_leaf_writable(d, i, writable);
  set_leaf_page(d, i, page);
}

void pt_store::set_leaf_page(pt_dir* d, uint32_t i, uint32_t page) {
  if (!d->leaf_page) {
    if (!page) return;  // object pages only (hugetlb shared, shmem THP): no array
    d->leaf_page = static_cast<uint32_t*>(new_array(d->entries * sizeof(uint32_t)));
  }
  d->leaf_page[i] = page;
}

void* pt_store::clear_leaf(pt_dir* d, uint32_t i) {
  void* deposit = d->slot[i];
  d->slot[i] = nullptr;
  --d->nr_used;
  --d->nr_leaves;
  d->leaf[i >> 6] &= ~(uint64_t{1} << (i & 63));
  d->leaf_write[i >> 6] &= ~(uint64_t{1} << (i & 63));
  if (d->leaf_page) d->leaf_page[i] = 0;
  return deposit;
}

void pt_store::set_leaf_writable(pt_dir* d, uint32_t i, bool writable) {
  const uint64_t b = uint64_t{1} << (i & 63);
  if (writable) d->leaf_write[i >> 6] |= b;
  else d->leaf_write[i >> 6] &= ~b;
}

uint64_t* pt_store::alloc_words() { return static_cast<uint64_t*>(words_.alloc()); }

void pt_store::free_words(uint64_t* w) {
  if (w && w != full_bitmap()) words_.free(w);
}

void pt_store::unpack(pte_table* t) {
  if (!t->packed_) return;
  uint64_t* w = nullptr;
  if (t->pk_.blocks) {
    w = alloc_words();
    for (uint32_t i = 0; i < t->nwords; ++i) w[i] = t->word(i);
  }
  t->packed_ = 0;
  t->bm_ = {};
  t->bm_.present = w;
}

void pt_store::repack(pte_table* t) {
  if (t->packed_ || t->refcount == kUniformRef || t->bm_.present || t->bm_.state || t->bm_.anon)
    return;
  t->packed_ = 1;
  t->pk_ = {};
}

void pt_store::own_present(pte_table* t) {
  unpack(t);
  if (t->owns_bitmap()) return;
  uint64_t* w = alloc_words();
  const uint64_t fill = t->bm_.present ? ~uint64_t{0} : 0;
  for (int i = 0; i < t->nwords; ++i) w[i] = fill;
  t->bm_.present = w;
}

void pt_store::set_present_slow(pte_table* t, uint32_t w, uint64_t m) {
  if (!m) return;
  t->nr_present = static_cast<uint16_t>(t->nr_present + popcount64(m));
  if (t->packed_) {
    uint64_t add = blocks_of(w, m);
    if (popcount64(t->pk_.blocks | add) <= kPackedBlocks) {
      for (; add; add &= add - 1) {
        const auto b = uint32_t(__builtin_ctzll(add));
        const int pos = t->block_slot(b);
        if (!((t->pk_.blocks >> b) & 1)) {  // a new block: the ones after it move up
          const int n = popcount64(t->pk_.blocks);
          std::memmove(&t->pk_.mask[pos + 1], &t->pk_.mask[pos], sizeof(uint16_t) * size_t(n - pos));
          t->pk_.mask[pos] = 0;
          t->pk_.blocks |= uint64_t{1} << b;
        }
        t->pk_.mask[pos] = static_cast<uint16_t>(t->pk_.mask[pos] | (m >> (16 * (b - 4 * w))));
      }
      return;
    }
  }
  own_present(t);
  t->bm_.present[w] |= m;
  if (t->nr_present == t->nwords * 64) set_full(t);  // invariant 1
}

void pt_store::set_present_words(pte_table* t, const uint64_t* m, uint32_t words) {
  if (t->packed_) {
    uint64_t add = 0;
    int n = 0;
    for (uint32_t x = words; x; x &= x - 1) {
      const auto w = uint32_t(__builtin_ctz(x));
      add |= blocks_of(w, m[w]);
      n += popcount64(m[w]);
    }
    const uint64_t blocks = t->pk_.blocks | add;
    if (popcount64(blocks) <= kPackedBlocks) {
      if (!t->pk_.blocks) {
        fill_packed(t, m, blocks, uint32_t(n));  // an empty table: no old blocks to merge
        return;
      }
      // The union of the old blocks and the new, in block order (invariant 7).
      uint16_t mask[kPackedBlocks] = {};
      int pos = 0, old = 0;
      for (uint64_t b = blocks; b; b &= b - 1) {
        const auto i = uint32_t(__builtin_ctzll(b)), w = i >> 2;
        uint16_t v = (t->pk_.blocks >> i) & 1 ? t->pk_.mask[old++] : 0;
        if ((words >> w) & 1) v = static_cast<uint16_t>(v | (m[w] >> (16 * (i & 3))));
        mask[pos++] = v;
      }
      std::memcpy(t->pk_.mask, mask, sizeof mask);
      t->pk_.blocks = blocks;
      t->nr_present = static_cast<uint16_t>(t->nr_present + n);
      return;
    }
  }
  for (uint32_t x = words; x; x &= x - 1) set_present(t, uint32_t(__builtin_ctz(x)), m[__builtin_ctz(x)]);
}

void pt_store::clear_present_word(pte_table* t, uint32_t w, uint64_t m) {
  if (!m) return;
  t->nr_present = static_cast<uint16_t>(t->nr_present - popcount64(m));
  if (t->packed_) {
    for (uint64_t drop = blocks_of(w, m); drop; drop &= drop - 1) {
      const auto b = uint32_t(__builtin_ctzll(drop));
      const int pos = t->block_slot(b);
      t->pk_.mask[pos] = static_cast<uint16_t>(t->pk_.mask[pos] & ~(m >> (16 * (b - 4 * w))));
      if (!t->pk_.mask[pos]) {  // the block is empty now: the ones after it move down
        const int n = popcount64(t->pk_.blocks);
        std::memmove(&t->pk_.mask[pos], &t->pk_.mask[pos + 1], sizeof(uint16_t) * size_t(n - 1 - pos));
        t->pk_.mask[n - 1] = 0;
        t->pk_.blocks &= ~(uint64_t{1} << b);
      }
    }
    return;
  }
  own_present(t);
  t->bm_.present[w] &= ~m;
  if (t->nr_present == 0) clear_present(t);
}

void pt_store::set_full(pte_table* t) {
  if (t->packed_) {
    t->packed_ = 0;
    t->bm_ = {};
  }
  free_words(t->bm_.present);
  t->bm_.present = const_cast<uint64_t*>(full_bitmap());
  t->nr_present = static_cast<uint16_t>(t->nwords * 64);
}

void pt_store::clear_present(pte_table* t) {
  t->nr_present = 0;
  if (t->packed_) {
    t->pk_ = {};
    return;
  }
  free_words(t->bm_.present);
  t->bm_.present = nullptr;
  repack(t);
}

void pt_store::new_state_words(pte_table* t) {
  unpack(t);
  t->bm_.state = static_cast<uint64_t*>(new_array(state_bytes()));
}

void pt_store::new_anon_ids(pte_table* t) {
  unpack(t);
  t->bm_.anon = static_cast<uint32_t*>(new_array(anon_bytes()));
}

void pt_store::drop_private(pte_table* t) {
  if (t->packed_) return;
  if (t->bm_.state) free_array(t->bm_.state, state_bytes());
  t->bm_.state = nullptr;
  if (t->bm_.anon) {
    free_array(t->bm_.anon, anon_bytes());
    t->bm_.anon = nullptr;
  }
  repack(t);
}

}  // namespace vmlab
