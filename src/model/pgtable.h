// The page-table tree: page-table pages as nodes that address spaces point to.
//
// Kernel: include/linux/pgtable.h, mm/memory.c (__pte_alloc, __pmd_alloc, free_p*_range).
// A node is one page-table page (or the PAE 32-byte PGD). Nodes carry a reference count
// because later designs share them between address spaces (hugetlb PMD sharing,
// McCracken's PTSHARE, mshare): a node is freed when its last referrer lets go, and the
// kernel-wide accountant (phys) counts it once while each mm's VmPTE counts it per mm.
//
// Representation (DESIGN.md "simulate the metadata, not the data"): a PTE page keeps a
// presence bitmap, not frame numbers. Frames follow from (VMA, offset) for object pages;
// only private mappings keep per-entry state (`writable` bits, an `anonmap` bit per entry
// that maps an anonymous page, the two made together), and only once they need it. An
// anonymous page mapped by one PTE needs no identity; an id (and a mapcount in phys) is
// given to a page only when fork makes a second PTE map it, so populating private memory
// stays a bitmap operation. A completely present PTE page points at one shared all-ones
// bitmap, so 64 address spaces with 16 GiB mapped cost ~32 bytes per PTE page on the host.
//
// Packed PTE pages (issue 11). A sparse table, as random touches leave them (1% of a
// 300 GiB segment: ~5 faults, each with its fault-around window, in every 512 entries),
// keeps its presence inside its 32-byte node: a mask of the 16-entry blocks that hold
// any entry and a 16-bit mask per such block, up to kPackedBlocks of them. A table takes
// the bitmap form (64 more bytes) when it needs per-entry state or a ninth block, and
// is packed again when it is empty and holds no state. Only pt_store changes the form;
// readers see the same bits through test() and word(). Why eight blocks: in that case
// each of a table's 32 blocks is touched with probability 1 - 0.99^16 = 0.149, so a
// ninth block is needed by 3.9% of tables (64 bytes more each) and a thirteenth by
// 0.04%; eight keep the node at 32 bytes, half a cache line, for ~34.5 host bytes per
// PTE page on average against ~40 with twelve.
// Measured: BENCHMARKS.md, "Datacenter scale".
//
// Compact PTE pages (issue 11). Once the page cache holds a shared segment whole, the
// tables random touches leave have 16-entry blocks that are each empty or full (a
// fault-around window is an aligned block of 16 cached pages). Such a table needs no node:
// the slot of the directory above holds its value, tagged by bit 0 (nodes are at least
// 8-byte aligned): bits 32..63 the blocks that hold entries, all of them full but at most
// one, whose index (bits 2..6) and 16-bit mask (bits 7..22) bit 1 announces. It is the
// packed form without its node, for tables of up to 512 entries with no per-entry state,
// refcount 1, outside shared subtrees (invariant 8). Like a uniform node it is made a node
// (pt_materialize, and the walkers that change tables on their way down) before anything
// changes it; read-only walks see it through pt_store::view and pte_ref. 1,500 processes
// that each touch 1% of a 300 GiB segment at random hold 229 million PTE pages, 32 bytes
// each as nodes; about three quarters of them are values, which cost only their slot
// (the early processes meet a partly cold cache). BENCHMARKS.md, "compact PTE tables".
//
// Huge pages (huge.h): an entry of a directory level that can hold a leaf (arch.h) may map
// a huge page itself. Its slot is then not a child table: it holds the PTE table deposited
// for an anonymous THP (pgtable_trans_huge_deposit), or no_deposit() for a huge zero
// page without one, a shmem THP or a hugetlb page. The leaf bitmap says which slots are
// leaves, leaf_write which of them are writable, and leaf_page the huge anonymous page a
// leaf maps (a THP or a private hugetlb page; 0 for an object page, found from the VMA as
// for PTEs, and for the huge zero page).
//
// Invariants (checked by check_invariants in tests):
//  1. pte_table::nr_present == the entries present (in either form); a table with every
//     entry present is the bitmap form with present == full_bitmap().
//  2. pt_dir::nr_used == number of non-null slots; nr_leaves == popcount(leaf).
//  3. anon[i] != 0 implies anonmap bit i; anonmap bit i and writable bit i imply present
//     bit i. An anonmap entry without an id maps an exclusive page (mapcount 1).
//  4. A leaf slot is non-null; leaf_write and leaf_page are set only on leaf slots.
//  5. A uniform node (below) is never modified, never a leaf's deposit, and only ever
//     under a VMA whose PTEs keep no per-entry state (a shared mapping of an object,
//     without write-notify, on an rmap design without per-page state).
//  6. A node with shared_pt set (PTSHARE, ptshare.h) has only shared_pt nodes below it,
//     never a uniform node, and no leaf but the hugetlb pages of an mshare region (in
//     the host mm's PMD pages, or its PUD table for 1 GiB pages).
//  7. A packed table is never uniform and holds no per-entry state; bit b of its block
//     mask is set for at most kPackedBlocks blocks b < entries / 16, exactly the first
//     popcount(blocks) block masks are non-zero, and they are in block order.
//  8. A compact table (a tagged slot value) sits only in a slot of the level above PTE
//     pages, never in a shared subtree, never as a leaf's deposit; its blocks lie below
//     entries / 16, and a partial block it announces is one of them, neither empty nor
//     full. Whatever it holds is held the same way by the node pt_store::expand makes.
//
// Uniform nodes (issue 11, datacenter scale). A PTE page of a shared object mapping keeps
// only its presence bitmap: which pages it maps follows from the VMA. So a full one is the
// same value wherever it sits, and so is an empty one, and so is a directory every slot of
// which holds the full (or the empty) node of the level below. The store keeps one such
// node per level and state, and a slot that holds it stands for a whole subtree of
// simulated page-table pages, each counted as one page of this mm, as if it were private:
// 1,500 address spaces that each map a 300 GiB segment in full hold 1,500 x 300 pointers
// to the one full PMD page instead of 230 million PTE-page nodes. This is hash-consing
// restricted to the values that recur at scale; a general hash of partial bitmaps buys
// nothing for random touches (their tables differ) and costs a hash per update
// (docs/decisions.md "Issue 11"). A uniform node is copy-on-write: pt_materialize() gives
// its slot a private node of the same value before anything changes under it, and the
// walkers that change tables (pte_walk, dir_walk) do so on their way down.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "model/node_pool.h"

namespace vmlab {

inline int popcount64(uint64_t v) { return __builtin_popcountll(v); }

// The n bits (0..64) of a word from bit lo up.
inline uint64_t bit_span(uint64_t lo, uint64_t n) { return (n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1)) << lo; }

// Calls fn(w, mask) for each 64-bit word w of a bitmap that bits [first, first + n) touch,
// in order, mask selecting those bits of it. An fn that returns bool stops the walk by
// returning false; the walk then returns false.
template <class F>
bool for_each_bit_word(uint64_t first, uint64_t n, F&& fn) {
  for (uint64_t i = first, end = first + n; i < end;) {
    const uint64_t lo = i & 63, k = std::min<uint64_t>(64 - lo, end - i);
    if constexpr (std::is_same_v<decltype(fn(i >> 6, uint64_t{0})), bool>) {
      if (!fn(i >> 6, bit_span(lo, k))) return false;
    } else {
      fn(i >> 6, bit_span(lo, k));
    }
    i += k;
  }
  return true;
}

inline constexpr int kMaxPteWords = 16;  // 1024 entries (i386 2-level)

// The all-ones bitmap shared by every full PTE page.
alignas(64) inline constexpr uint64_t kFullBitmap[kMaxPteWords] = {
    ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull};
inline const uint64_t* full_bitmap() { return kFullBitmap; }

// The packed form of a PTE page (below): at most this many non-empty 16-entry blocks.
inline constexpr int kPackedBlocks = 8;

struct pte_table {
  uint32_t refcount = 1;    // address spaces mapping through this table
  uint16_t nr_present = 0;  // present entries
  uint8_t nwords = 8;       // bitmap words (entries / 64)
  uint8_t shared_pt : 1 = 0;  // in a shared page-table subtree (ptshare.h): no mm owns it

  [[nodiscard]] bool packed() const { return packed_; }
  [[nodiscard]] bool empty() const { return nr_present == 0; }
  [[nodiscard]] bool is_full() const { return !packed_ && bm_.present == full_bitmap(); }
  [[nodiscard]] bool test(uint32_t i) const {
    if (packed_) {
      const uint32_t b = i >> 4;
      return ((pk_.blocks >> b) & 1) && (pk_.mask[block_slot(b)] >> (i & 15)) & 1;
    }
    return bm_.present && (bm_.present[i >> 6] >> (i & 63)) & 1;
  }
  // Word w of the presence bitmap (entries 64w .. 64w + 63), in either form.
  [[nodiscard]] uint64_t word(uint32_t w) const {
    if (!packed_) return bm_.present ? bm_.present[w] : 0;
    if (!((pk_.blocks >> (4 * w)) & 0xf)) return 0;
    int pos = block_slot(4 * w);
    return packed_word(w, pos);
  }
  // Bit w set for each word w that may be non-zero: in the packed form exactly the words
  // with a block, in the bitmap form every word (for walks that visit present entries).
  [[nodiscard]] uint32_t words_in_use() const {
    if (!packed_) return (uint32_t{1} << nwords) - 1;  // nwords <= kMaxPteWords
    uint32_t v = 0;
    for (uint64_t b = pk_.blocks; b; b &= b - 1) v |= uint32_t{1} << (__builtin_ctzll(b) >> 2);
    return v;
  }
  // Calls f(w, word(w)) for each word w words_in_use() names, in order: the packed form's
  // words assembled in one pass over its blocks.
  template <class F>
  void for_each_word(F&& f) const {
    if (!packed_) {
      for (uint32_t w = 0; w < nwords; ++w) f(w, word(w));
      return;
    }
    int pos = 0;
    for (uint64_t blocks = pk_.blocks; blocks;) {
      const uint32_t w = uint32_t(__builtin_ctzll(blocks)) >> 2;
      const uint64_t v = packed_word(w, pos);
      blocks &= ~(uint64_t{0xf} << (4 * w));
      f(w, v);
    }
  }
  // Per-entry state of private and write-notify mappings (invariant 3); null in the
  // packed form, which has none.
  // writable and anonmap are made together (one array of 2 x nwords words), so either is
  // null exactly when the other is.
  [[nodiscard]] uint64_t* writable() const { return packed_ ? nullptr : bm_.state; }  // PTE has write permission
  [[nodiscard]] uint64_t* anonmap() const { return packed_ || !bm_.state ? nullptr : bm_.state + nwords; }  // entry maps an anonymous page
  [[nodiscard]] uint32_t* anon() const { return packed_ ? nullptr : bm_.anon; }  // ids of shared anonymous pages (0 = exclusive)
  [[nodiscard]] uint64_t anon_word(uint32_t w) const { return writable() ? bm_.state[nwords + w] : 0; }  // state holds both
  [[nodiscard]] uint64_t writable_word(uint32_t w) const { return writable() ? bm_.state[w] : 0; }
  // Whether the presence is a bitmap of this table's own: not packed, not none, not the
  // shared full bitmap.
  [[nodiscard]] bool owns_bitmap() const { return !packed_ && bm_.present && bm_.present != full_bitmap(); }

 private:
  friend class pt_store;
  friend struct pte_table_check;  // check.cc's structural checks of the packed form
  // Packed form: the index in mask[] of block b (the blocks below it that hold entries).
  [[nodiscard]] int block_slot(uint32_t b) const { return popcount64(pk_.blocks & ((uint64_t{1} << b) - 1)); }  // b < 64
  // Packed form: word w from its blocks, the first of which is mask[pos]; pos moves past them.
  [[nodiscard]] uint64_t packed_word(uint32_t w, int& pos) const {
    uint64_t v = 0;
    for (uint64_t sub = (pk_.blocks >> (4 * w)) & 0xf; sub; sub &= sub - 1)
      v |= uint64_t{pk_.mask[pos++]} << (16 * __builtin_ctzll(sub));
    return v;
  }
  // Bitmap form: presence bitmap (nullptr = none present; full_bitmap() = all present)
  // and the per-entry state, each allocated when first needed.
  struct bitmap_form {
    uint64_t* present;
    uint64_t* state;  // writable (words 0 .. nwords - 1), then anonmap; null: neither held
    uint32_t* anon;
  };
  // Packed form: bit b of `blocks` says entries 16b .. 16b + 15 are not all absent;
  // mask[k] holds the entries of the k-th such block, in block order.
  struct packed_form {
    uint64_t blocks;
    uint16_t mask[kPackedBlocks];
  };
  uint8_t packed_ : 1 = 1;
  union {
    bitmap_form bm_;
    packed_form pk_ = {};
  };
};
static_assert(sizeof(pte_table) == 32, "a PTE page's host node: 8 bytes of header, 24 of presence");

struct pt_dir {
  uint32_t refcount = 1;
  uint32_t nr_used = 0;
  uint32_t entries = 0;
  uint16_t nr_leaves = 0;
  uint16_t shared_pt = 0;  // in a shared page-table subtree (ptshare.h): no mm owns it
  void** slot = nullptr;  // children: pt_dir* (upper levels) or pte_table* (level above PTE)
  uint64_t* leaf = nullptr;        // huge leaves (allocated with the first)
  uint64_t* leaf_write = nullptr;
  uint32_t* leaf_page = nullptr;

  [[nodiscard]] bool is_leaf(uint32_t i) const { return leaf && (leaf[i >> 6] >> (i & 63)) & 1; }
  [[nodiscard]] bool leaf_writable(uint32_t i) const { return leaf_write && (leaf_write[i >> 6] >> (i & 63)) & 1; }
  [[nodiscard]] uint32_t page_of(uint32_t i) const { return leaf_page ? leaf_page[i] : 0; }
  // Whether slots first, first + stride, ... below last are all leaves (and, with
  // `writable`, all writable ones): a word at a time when every slot holds one (stride 1),
  // for range touches of memory already mapped. A stride > 1 is a huge page larger than
  // its entry (arch.h invariant 5: ppc64-4k's 16 MiB pages, every eighth PMD entry).
  [[nodiscard]] bool all_leaves(uint32_t first, uint32_t last, bool writable, uint32_t stride = 1) const {
    if (!leaf) return first >= last;
    if (stride > 1) {
      for (uint32_t i = first; i < last; i += stride)
        if (!is_leaf(i) || (writable && !leaf_writable(i))) return false;
      return true;
    }
    bool all = true;
    for_each_bit_word(first, last - first, [&](uint64_t w, uint64_t m) {
      all = all && (leaf[w] & m) == m && (!writable || (leaf_write[w] & m) == m);
    });
    return all;
  }
};

// The slot value of a leaf with no deposited table: the address of a marker, even (so
// never a compact value) and inline (the fault path tests for it).
alignas(8) inline char no_deposit_marker;
inline void* no_deposit() { return &no_deposit_marker; }

// Whether a slot holds a compact PTE page (above): a value, not a node.
inline bool is_compact(const void* slot) { return reinterpret_cast<uintptr_t>(slot) & 1; }
// The layout of a compact value (above).
struct compact_layout {
  static constexpr uint64_t kTag = 1, kPartial = 2;
  static constexpr int kIndexShift = 2, kMaskShift = 7, kBlocksShift = 32;
  static constexpr uint32_t kMaxBlocks = 32;  // tables of up to 512 entries
  static uint64_t bits(const void* v) { return uint64_t(reinterpret_cast<uintptr_t>(v)); }
};
static_assert(sizeof(uintptr_t) == sizeof(uint64_t), "a compact value is a 64-bit slot");

// The reference count of a uniform node: such nodes are never freed.
inline constexpr uint32_t kUniformRef = UINT32_MAX;
// Whether a node (pte_table or pt_dir: both begin with their reference count) is uniform.
inline bool is_uniform(const void* node) {
  return node && node != no_deposit() && !is_compact(node) && *static_cast<const uint32_t*>(node) == kUniformRef;
}

class pte_ref;

// Host-side storage for nodes: fixed-size free lists, so that millions of PTE pages cost
// a few tens of bytes each and allocation is a pointer pop. Not the simulated allocator:
// what the simulated kernel pays is counted by phys, whatever this costs.
class pt_store {
 public:
  explicit pt_store(uint16_t pte_words);
  ~pt_store();
  pt_store(const pt_store&) = delete;
  pt_store& operator=(const pt_store&) = delete;

  pte_table* new_pte_table();
  void free_pte_table(pte_table* t);
  pt_dir* new_dir(uint32_t entries);
  void free_dir(pt_dir* d);

  // Leaf entries of a directory (invariant 4): set_leaf makes slot i a leaf holding
  // `deposit` (a pte_table, or no_deposit()); clear_leaf empties the slot and returns what
  // it held (the deposit to free). REQUIRES: set_leaf on an empty slot, clear_leaf on a leaf.
  void set_leaf(pt_dir* d, uint32_t i, void* deposit, bool writable, uint32_t page);
  void* clear_leaf(pt_dir* d, uint32_t i);
  void set_leaf_writable(pt_dir* d, uint32_t i, bool writable);
  void set_leaf_page(pt_dir* d, uint32_t i, uint32_t page);  // the huge anonymous page leaf i maps

  // Presence. set_present marks the entries m of word w present (REQUIRES: none of them
  // is), clear_present_word marks them absent (REQUIRES: all of them are); both keep
  // nr_present. A table stays packed while it can (no per-entry state, at most
  // kPackedBlocks non-empty blocks) and takes a bitmap when it cannot.
  // A table whose last entry becomes present takes the shared full bitmap (invariant 1).
  void set_present(pte_table* t, uint32_t w, uint64_t m) {
    if (t->owns_bitmap()) {  // the common dense case, inline
      t->bm_.present[w] |= m;
      t->nr_present = static_cast<uint16_t>(t->nr_present + popcount64(m));
      if (t->nr_present == t->nwords * 64) set_full(t);
    } else {
      set_present_slow(t, w, m);
    }
  }
  // set_present(t, x, m[x]) for each word x named in `words` (bit x): a packed table's
  // blocks merged in one pass.
  void set_present_words(pte_table* t, const uint64_t* m, uint32_t words);
  void clear_present_word(pte_table* t, uint32_t w, uint64_t m);
  void set_full(pte_table* t);       // all present; frees an owned bitmap
  void clear_present(pte_table* t);  // none present
  // The per-entry state arrays (zeroed when made); a packed table takes the bitmap form.
  void ensure_writable(pte_table* t) {
    if (t->packed_ || !t->bm_.state) new_state_words(t);
  }
  void ensure_anonmap(pte_table* t) { ensure_writable(t); }
  void ensure_anon(pte_table* t) {
    if (t->packed_ || !t->bm_.anon) new_anon_ids(t);
  }
  void drop_private(pte_table* t);   // frees writable/anonmap/anon arrays

  // Uniform nodes: entries[i] is the number of entries of level index i (0 = PGD, which
  // is never uniform; the last is the PTE level). Builds them once.
  void init_uniform(const std::vector<uint32_t>& entries);
  // The uniform node of level index idx >= 1, full (every entry present) or empty.
  [[nodiscard]] void* uniform(int idx, bool full) const { return full ? full_[size_t(idx)] : empty_[size_t(idx)]; }
  // A private node with the value of uniform node `u` at level index idx (for a directory,
  // its slots hold the uniform nodes of the level below).
  void* materialize(int idx, const void* u);

  // Compact PTE pages (above). compact() is the slot value that holds what t holds and,
  // when given, the entries add[w] of each word w named in add_words (none of them present
  // in t), or nullptr when that cannot be one (invariant 8); t is unchanged either way, so
  // a run of faults can go straight to the value (read_fault_run). expand() is a
  // private node holding what compact value v holds. view() reads a slot of the level
  // above PTE pages: the node it points at, or its compact value decoded into `r`.
  [[nodiscard]] void* compact(const pte_table* t, const uint64_t* add = nullptr, uint32_t add_words = 0) const;
  // The compact value of a table whose entries are the whole 16-entry blocks of
  // `full_blocks` (bit b: block b, below entries / 16), what compact() makes of such a
  // table; nullptr when this store's tables are too large to be compact.
  [[nodiscard]] void* compact_blocks(uint32_t full_blocks) const;
  // A new table whose present entries are the words m[w] of the words named in `words`:
  // the compact value when it can be one, else a node (packed when it can be). What a new
  // node, compact() and set_present_words would make together, in one pass.
  [[nodiscard]] void* new_table(const uint64_t* m, uint32_t words);
  pte_table* expand(const void* v);
  const pte_table* view(const void* slot, pte_ref& r) const;

  // Host memory of every node and array the store holds (its pools' chunks, whole). All
  // of it is in the pools, so destroying the store frees it without a walk of the tree.
  [[nodiscard]] size_t host_bytes() const;
  // Host memory of the nodes and arrays in use: host_bytes() less the pools' free blocks
  // and unused tails (what a change of the tree costs, whatever the chunks).
  [[nodiscard]] size_t live_bytes() const;

 private:
  uint64_t* alloc_words();
  void free_words(uint64_t* w);
  void own_present(pte_table* t);  // a private bitmap (from packed, null or full)
  void set_present_slow(pte_table* t, uint32_t w, uint64_t m);
  void new_state_words(pte_table* t);  // unpacks t; zeroed writable and anonmap words
  void new_anon_ids(pte_table* t);  // unpacks t; zeroed anon ids
  void unpack(pte_table* t);       // the bitmap form, same entries
  void repack(pte_table* t);       // the packed form, when nothing but presence is held
  // An empty packed t gets the entries m of `blocks` (at most kPackedBlocks), n of them.
  void fill_packed(pte_table* t, const uint64_t* m, uint64_t blocks, uint32_t n);
  // Zeroed arrays of `bytes` (directory slots, huge-leaf bitmaps and pages, per-entry
  // state, anon ids), from a pool per size: a paging format has a few.
  node_pool& array_pool(size_t bytes);
  void* new_array(size_t bytes);
  void free_array(void* p, size_t bytes);
  static size_t leaf_bytes(uint32_t entries) { return (entries + 63) / 64 * sizeof(uint64_t); }
  size_t state_bytes() const { return 2 * pte_words_ * sizeof(uint64_t); }  // writable, then anonmap
  size_t anon_bytes() const { return pte_words_ * 64 * sizeof(uint32_t); }   // an id per entry
  uint16_t pte_words_;
  node_pool tables_;  // pte_table
  node_pool words_;   // presence bitmaps of pte_words_ words (not zeroed: their users fill them)
  node_pool dirs_;    // pt_dir
  std::vector<std::unique_ptr<node_pool>> arrays_;  // new_array's, one per size
  std::vector<void*> full_, empty_;  // by level index; [0] unused
  std::vector<uint32_t> entries_;
};

// A PTE page to read: the node a slot points at, or a compact slot's value decoded
// (pt_store::view). It may point into itself, so it is neither copied nor moved; return
// it as a prvalue.
class pte_ref {
 public:
  pte_ref() = default;
  pte_ref(const pt_store& store, const void* slot) { p_ = slot ? store.view(slot, *this) : nullptr; }
  pte_ref(const pte_ref&) = delete;
  pte_ref& operator=(const pte_ref&) = delete;

  [[nodiscard]] const pte_table* get() const { return p_; }
  const pte_table* operator->() const { return p_; }
  const pte_table& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  friend class pt_store;
  pte_table decoded_;
  uint64_t words_[kMaxPteWords];
  const pte_table* p_ = nullptr;
};

}  // namespace vmlab
