// Per-page arrays of an object that cost what is touched, not what is declared.
//
// Why: a scenario may declare an object of 2^60 bytes (the parser accepts it; the kernel
// would refuse only at mmap or fault time), and a dense bitmap or per-page array sized by
// the declared object needs host memory the simulated kernel never would: struct page
// and the page cache exist only for pages in memory. So the arrays are chunked, and a
// chunk exists only once one of its entries was written. Reading an absent chunk gives
// zeros. A bitmap chunk is 64 words (4096 pages, 512 host bytes). Chunks are found
// through a directory vector when the array is declared small enough for the directory
// to cost at most kMaxDir pointers (1 MiB; a 2 TiB object's bitmap), made at the first
// write so that an untouched object costs nothing, else through a hash map; both behind
// a one-entry cache: the fault paths walk pages in address order, so most lookups hit the
// chunk the previous one found.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vmlab {

// A sparse array of T (zero-initialised), chunked by kChunk entries.
template <class T, uint64_t kChunk>
class sparse_array {
 public:
  sparse_array() = default;
  sparse_array(sparse_array&& o) noexcept { *this = std::move(o); }
  sparse_array& operator=(sparse_array&& o) noexcept {
    clear();
    chunks_ = std::move(o.chunks_);
    dir_ = std::move(o.dir_);
    dir_want_ = o.dir_want_;
    nr_dir_ = o.nr_dir_;
    o.nr_dir_ = 0;
    acct_ = o.acct_;
    o.acct_ = nullptr;
    last_key_ = o.last_key_;
    last_ = o.last_;
    o.chunks_.clear();
    o.last_key_ = kNone;
    o.last_ = nullptr;
    return *this;
  }
  sparse_array(const sparse_array&) = delete;
  sparse_array& operator=(const sparse_array&) = delete;
  ~sparse_array() { clear(); }
  // The array's entries will mostly lie below `entries`: index those chunks through a
  // directory if it is small (faster than the hash map on random access). The directory
  // is made at the first write, so that an object never touched costs nothing.
  void expect_entries(uint64_t entries) {
    const uint64_t n = (entries + kChunk - 1) / kChunk;
    if (n <= kMaxDir) dir_want_ = std::max(dir_want_, n);
  }
  // Adds the host bytes of every chunk to *acct while it exists (the kernel's running
  // total, read by the sim engine's --max-host-memory guard in O(1)).
  void account_to(size_t* acct) {
    if (acct_) *acct_ -= nr_chunks() * kChunkBytes;
    acct_ = acct;
    if (acct_) *acct_ += nr_chunks() * kChunkBytes;
  }

  // Entry i, 0 when its chunk was never written.
  [[nodiscard]] T get(uint64_t i) const {
    const T* c = find(i / kChunk);
    return c ? c[i % kChunk] : T{};
  }
  // Entries [i, i + n) into out[]: one chunk lookup per chunk they span.
  void get(uint64_t i, uint64_t n, T* out) const {
    for (uint64_t end = i + n; i < end;) {
      const uint64_t k = std::min(end - i, kChunk - i % kChunk);
      const T* c = find(i / kChunk);
      // A PTE table's 8 words as a constant size: moved as vectors, not by `rep movs`,
      // whose start-up costs more than the copy.
      if (c && k == 8) std::copy_n(c + i % kChunk, 8, out);
      else if (c) std::copy_n(c + i % kChunk, k, out);
      else std::fill_n(out, k, T{});
      out += k;
      i += k;
    }
  }
  // Entry i for writing: its chunk is allocated (zeroed) now if absent. The reference
  // stays valid until clear() or destruction (chunks never move).
  T& at(uint64_t i) {
    const uint64_t key = i / kChunk;
    if (key != last_key_) {
      if (dir_.size() < dir_want_) grow_dir();
      auto& slot = key < dir_.size() ? dir_[key] : chunks_[key];
      if (!slot) {
        slot.reset(new T[kChunk]());
        if (key < dir_.size()) ++nr_dir_;
        if (acct_) *acct_ += kChunkBytes;
      }
      last_key_ = key;
      last_ = slot.get();
    }
    return last_[i % kChunk];
  }
  void clear() {
    if (acct_) *acct_ -= nr_chunks() * kChunkBytes;
    chunks_.clear();
    for (auto& c : dir_) c.reset();
    nr_dir_ = 0;
    last_key_ = kNone;
    last_ = nullptr;
  }
  // Calls f(first_index, chunk) for every allocated chunk, in index order (the order the
  // consistency checks report in; not a hot path).
  template <class F>
  void for_each_chunk(F&& f) const {
    for (uint64_t key = 0; key < dir_.size(); ++key)
      if (dir_[key]) f(key * kChunk, static_cast<const T*>(dir_[key].get()));
    std::vector<uint64_t> keys;
    keys.reserve(chunks_.size());
    for (const auto& [key, c] : chunks_) keys.push_back(key);
    std::sort(keys.begin(), keys.end());
    for (uint64_t key : keys) f(key * kChunk, static_cast<const T*>(chunks_.at(key).get()));
  }
  // Calls f(first_index, chunk) for every allocated chunk whose key lies in [lo, hi), in
  // index order: the directory's slots in the range (at most kMaxDir), then the hash
  // map's chunks, never the range itself.
  template <class F>
  void for_each_chunk_in(uint64_t lo, uint64_t hi, F&& f) const {
    for (uint64_t key = lo; key < std::min<uint64_t>(hi, dir_.size()); ++key)
      if (dir_[key]) f(key * kChunk, static_cast<const T*>(dir_[key].get()));
    if (chunks_.empty() || hi <= dir_.size()) return;
    std::vector<uint64_t> keys;
    for (const auto& [key, c] : chunks_)
      if (key >= lo && key < hi) keys.push_back(key);
    std::sort(keys.begin(), keys.end());
    for (uint64_t key : keys) f(key * kChunk, static_cast<const T*>(chunks_.at(key).get()));
  }
  [[nodiscard]] size_t nr_chunks() const { return chunks_.size() + nr_dir_; }
  // Host bytes: the chunks and the hash map's nodes and buckets (an estimate of the
  // latter: a node holds the key, the pointer and the next pointer).
  [[nodiscard]] size_t host_bytes() const {
    return nr_chunks() * kChunkBytes + (chunks_.bucket_count() + dir_.capacity()) * sizeof(void*);
  }
  static constexpr uint64_t chunk_entries = kChunk;

 private:
  static constexpr uint64_t kNone = ~uint64_t{0};
  static constexpr size_t kChunkBytes = kChunk * sizeof(T) + 4 * sizeof(void*);
  // 1 MiB of directory at most (objects up to 2 TiB of 4 KiB pages, for a bitmap), made
  // only once the object is touched.
  static constexpr uint64_t kMaxDir = uint64_t{1} << 17;
  // The directory reaches dir_want_ chunks; chunks the hash map holds below that move in.
  void grow_dir() {
    dir_.resize(dir_want_);
    for (auto it = chunks_.begin(); it != chunks_.end();)
      if (it->first < dir_.size()) {
        dir_[it->first] = std::move(it->second);
        ++nr_dir_;
        it = chunks_.erase(it);
      } else {
        ++it;
      }
    last_key_ = kNone;
    last_ = nullptr;
  }
  const T* find(uint64_t key) const {
    if (key == last_key_) return last_;
    T* c = key < dir_.size() ? dir_[key].get() : nullptr;
    if (key >= dir_.size() && !chunks_.empty()) {
      const auto it = chunks_.find(key);
      if (it != chunks_.end()) c = it->second.get();
    }
    // A read caches too (an absent chunk is never cached: at() would write through it):
    // the next word is almost always in this chunk, and a write often follows the read.
    if (c) {
      last_key_ = key;
      last_ = c;
    }
    return c;
  }
  std::vector<std::unique_ptr<T[]>> dir_;  // chunks [0, dir_.size()), when small
  uint64_t dir_want_ = 0;                  // the directory's size once anything is written
  uint64_t nr_dir_ = 0;                    // allocated chunks in dir_
  std::unordered_map<uint64_t, std::unique_ptr<T[]>> chunks_;  // the others
  // The chunk found last (a cache; never owns).
  mutable uint64_t last_key_ = kNone;
  mutable T* last_ = nullptr;
  size_t* acct_ = nullptr;
};

// A bitmap of pages in 64-bit words, sparse by chunks of 64 words (4096 bits).
class sparse_bitmap {
 public:
  // Word w (bits 64w .. 64w+63).
  [[nodiscard]] uint64_t word(uint64_t w) const { return words_.get(w); }
  // Words [w, w + n) into out[].
  void words(uint64_t w, uint64_t n, uint64_t* out) const { words_.get(w, n, out); }
  uint64_t& word_ref(uint64_t w) { return words_.at(w); }
  [[nodiscard]] bool test(uint64_t i) const { return (word(i >> 6) >> (i & 63)) & 1; }
  void set(uint64_t i) { word_ref(i >> 6) |= uint64_t{1} << (i & 63); }
  void put(uint64_t i, bool on) {
    if (on) set(i);
    else if (test(i)) word_ref(i >> 6) &= ~(uint64_t{1} << (i & 63));
  }
  // The 64 bits starting at bit `first` (first may be any bit index).
  [[nodiscard]] uint64_t window(uint64_t first) const {
    const uint64_t i = first >> 6, sh = first & 63;
    uint64_t v = word(i) >> sh;
    if (sh) v |= word(i + 1) << (64 - sh);
    return v;
  }
  // Sets the bits m of the 64 starting at bit `first` (first may be any bit index);
  // returns how many of them were clear.
  uint64_t or_window(uint64_t first, uint64_t m) {
    if (!m) return 0;
    const uint64_t i = first >> 6, sh = first & 63;
    uint64_t added = 0;
    auto or_word = [&](uint64_t w, uint64_t bits) {
      uint64_t& x = word_ref(w);
      added += uint64_t(__builtin_popcountll(bits & ~x));
      x |= bits;
    };
    if (m << sh) or_word(i, m << sh);
    if (sh && m >> (64 - sh)) or_word(i + 1, m >> (64 - sh));
    return added;
  }
  // Calls f(w, bits) for every non-zero word, in order.
  template <class F>
  void for_each_word(F&& f) const {
    words_.for_each_chunk([&](uint64_t first, const uint64_t* c) {
      for (uint64_t j = 0; j < kWords; ++j)
        if (c[j]) f(first + j, c[j]);
    });
  }
  // Calls f(w, bits) for every non-zero word w in [w_begin, w_end), in order, through the
  // written chunks (for_each_chunk_in): a huge range with few chunks costs those chunks.
  template <class F>
  void for_each_word_in(uint64_t w_begin, uint64_t w_end, F&& f) const {
    if (w_begin >= w_end) return;
    words_.for_each_chunk_in(w_begin / kWords, (w_end - 1) / kWords + 1, [&](uint64_t first, const uint64_t* c) {
      for (uint64_t j = std::max(first, w_begin) - first; j < kWords && first + j < w_end; ++j)
        if (c[j]) f(first + j, c[j]);
    });
  }
  [[nodiscard]] bool any() const {
    bool found = false;
    for_each_word([&](uint64_t, uint64_t) { found = true; });
    return found;
  }
  [[nodiscard]] uint64_t popcount() const {
    uint64_t n = 0;
    for_each_word([&](uint64_t, uint64_t bits) { n += uint64_t(__builtin_popcountll(bits)); });
    return n;
  }
  void clear() { words_.clear(); }
  void account_to(size_t* acct) { words_.account_to(acct); }
  void expect_bits(uint64_t n) { words_.expect_entries((n + 63) / 64); }
  [[nodiscard]] size_t host_bytes() const { return words_.host_bytes(); }

 private:
  static constexpr uint64_t kWords = 64;
  sparse_array<uint64_t, kWords> words_;
};

}  // namespace vmlab
