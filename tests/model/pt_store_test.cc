// The PTE page's two forms (pgtable.h): packed (a mask of non-empty 16-entry blocks and
// one 16-bit mask per such block) and bitmap. Random sets and clears are checked entry by
// entry against a plain bitset kept by the test; the form is what the rules say it must
// be: packed while no per-entry state is held and at most kPackedBlocks blocks have ever
// been non-empty at once, a bitmap from then until the table is empty again.
#include <gtest/gtest.h>

#include <bitset>
#include <random>

#include "model/pgtable.h"

namespace vmlab {
namespace {

constexpr uint32_t kMaxEntries = kMaxPteWords * 64;

uint32_t blocks_of(const std::bitset<kMaxEntries>& ref, uint32_t entries) {
  uint32_t n = 0;
  for (uint32_t b = 0; b < entries / 16; ++b)
    for (uint32_t i = 0; i < 16; ++i)
      if (ref[b * 16 + i]) {
        ++n;
        break;
      }
  return n;
}

void expect_same(const pte_table& t, const std::bitset<kMaxEntries>& ref, uint32_t entries, const std::string& where) {
  ASSERT_EQ(t.nr_present, ref.count()) << where;
  for (uint32_t w = 0; w < entries / 64; ++w) {
    uint64_t want = 0;
    for (uint32_t j = 0; j < 64; ++j)
      if (ref[w * 64 + j]) want |= uint64_t{1} << j;
    ASSERT_EQ(t.word(w), want) << where << ", word " << w;
  }
  for (uint32_t i = 0; i < entries; ++i) ASSERT_EQ(t.test(i), bool(ref[i])) << where << ", entry " << i;
}

// Random single words of random bits, set where absent and cleared where present, on the
// three table sizes the paging formats have (256, 512 and 1024 entries).
TEST(PtStore, PackedAndBitmapFormsAgreeWithABitset) {
  for (uint16_t words : {uint16_t{4}, uint16_t{8}, uint16_t{16}}) {
    const uint32_t entries = words * 64u;
    pt_store store(words);
    std::mt19937_64 r(words);
    for (int round = 0; round < 200; ++round) {
      pte_table* t = store.new_pte_table();
      std::bitset<kMaxEntries> ref;
      bool unpacked = false;  // once a bitmap, a bitmap until empty
      for (int step = 0; step < 60; ++step) {
        const auto w = uint32_t(r() % words);
        // Sparse bits (a fault, a fault-around window) more often than dense ones.
        uint64_t m = r() & r() & r();
        if (step % 3 == 0) m = uint64_t{0xffff} << (16 * (r() % 4));
        uint64_t present = 0, absent = 0;
        for (uint32_t j = 0; j < 64; ++j)
          if ((m >> j) & 1) (ref[w * 64 + j] ? present : absent) |= uint64_t{1} << j;
        const std::string where = "words " + std::to_string(words) + " round " + std::to_string(round) + " step " + std::to_string(step);
        if (r() % 3) {
          store.set_present(t, w, absent);
          for (uint32_t j = 0; j < 64; ++j)
            if ((absent >> j) & 1) ref.set(w * 64 + j);
        } else {
          store.clear_present_word(t, w, present);
          for (uint32_t j = 0; j < 64; ++j)
            if ((present >> j) & 1) ref.reset(w * 64 + j);
        }
        if (ref.none()) unpacked = false;
        if (blocks_of(ref, entries) > uint32_t(kPackedBlocks)) unpacked = true;
        expect_same(*t, ref, entries, where);
        ASSERT_EQ(t->packed(), !unpacked) << where << ", " << blocks_of(ref, entries) << " blocks";
      }
      store.free_pte_table(t);
    }
  }
}

// Compact values (pgtable.h): random tables whose blocks are each empty, full or partial.
// A table is a value exactly when it has at most one partial block, at most 512 entries
// and nothing but presence; the value reads back (view) and makes a node (expand) with
// the same entries, in the form set_present would give them.
TEST(PtStore, CompactValuesHoldFullBlocksAndOnePartial) {
  for (uint16_t words : {uint16_t{4}, uint16_t{8}, uint16_t{16}}) {
    const uint32_t entries = words * 64u;
    pt_store store(words);
    std::mt19937_64 r(words + 100);
    uint32_t made = 0;
    for (int round = 0; round < 400; ++round) {
      std::bitset<kMaxEntries> ref;
      uint32_t partial = 0;
      const auto full_share = r() % 100, partial_share = r() % 8;  // per cent of blocks
      for (uint32_t b = 0; b < entries / 16; ++b) {
        const auto x = r() % 100;
        uint16_t m = 0;
        if (x < full_share) m = 0xffff;
        else if (x < full_share + partial_share) m = static_cast<uint16_t>(1 + r() % 0xfffe);  // neither empty nor full
        partial += m && m != 0xffff;
        for (uint32_t i = 0; i < 16; ++i)
          if ((m >> i) & 1) ref.set(b * 16 + i);
      }
      uint64_t m[kMaxPteWords] = {};
      for (uint32_t i = 0; i < entries; ++i)
        if (ref[i]) m[i / 64] |= uint64_t{1} << (i % 64);
      const uint32_t all = (uint32_t{1} << words) - 1, even = all & 0x5555;
      pte_table* t = store.new_pte_table();
      pte_table* half = store.new_pte_table();  // the even words present, the odd ones added
      for (uint32_t w = 0; w < words; ++w) {
        store.set_present(t, w, m[w]);
        if ((even >> w) & 1) store.set_present(half, w, m[w]);
      }
      const std::string where = "words " + std::to_string(words) + " round " + std::to_string(round) + ", " +
                                std::to_string(partial) + " partial blocks";
      void* v = store.compact(t);
      ASSERT_EQ(v != nullptr, words <= 8 && partial <= 1) << where;
      pte_table* fresh = store.new_pte_table();
      EXPECT_EQ(store.compact(fresh, m, all), v) << where << ", all added";
      EXPECT_EQ(store.compact(half, m, all & ~even), v) << where << ", half added";
      store.free_pte_table(fresh);
      store.free_pte_table(half);
      // A table made from the words at once (read_fault_run's new tables): the same value,
      // or a node with the same entries, packed when its blocks allow.
      void* made_at_once = store.new_table(m, all);
      if (v) {
        EXPECT_EQ(made_at_once, v) << where << ", made at once";
      } else {
        ASSERT_FALSE(is_compact(made_at_once)) << where;
        auto* node = static_cast<pte_table*>(made_at_once);
        expect_same(*node, ref, entries, where + ", made at once");
        EXPECT_EQ(node->packed(), blocks_of(ref, entries) <= uint32_t(kPackedBlocks)) << where;
        store.free_pte_table(node);
      }
      if (v && !partial) {
        uint32_t full = 0;
        for (uint32_t b = 0; b < entries / 16; ++b) full |= uint32_t{ref[b * 16]} << b;
        EXPECT_EQ(store.compact_blocks(full), v) << where << ", full blocks";
      }
      if (v) {
        ++made;
        ASSERT_TRUE(is_compact(v)) << where;
        ASSERT_FALSE(is_uniform(v)) << where;
        const pte_ref view(store, v);
        expect_same(*view, ref, entries, where + ", view");
        EXPECT_EQ(view->is_full(), ref.count() == entries) << where;
        pte_table* e = store.expand(v);
        expect_same(*e, ref, entries, where + ", expanded");
        EXPECT_EQ(e->packed(), blocks_of(ref, entries) <= uint32_t(kPackedBlocks)) << where;
        EXPECT_EQ(store.compact(e), v) << where;
        store.free_pte_table(e);
        // Anything but presence keeps it a node.
        t->refcount = 2;
        EXPECT_EQ(store.compact(t), nullptr) << where;
        t->refcount = 1;
        t->shared_pt = 1;
        EXPECT_EQ(store.compact(t), nullptr) << where;
        t->shared_pt = 0;
        store.ensure_writable(t);
        EXPECT_EQ(store.compact(t), nullptr) << where;
      }
      store.free_pte_table(t);
    }
    if (words <= 8) {
      EXPECT_GT(made, 100u) << words;
    }
  }
}

TEST(PtStore, PerEntryStateTakesTheBitmapFormAndKeepsTheEntries) {
  pt_store store(8);
  pte_table* t = store.new_pte_table();
  store.set_present(t, 0, 0x8001);
  store.set_present(t, 7, uint64_t{1} << 63);
  ASSERT_TRUE(t->packed());
  EXPECT_EQ(t->writable(), nullptr);
  store.ensure_writable(t);
  EXPECT_FALSE(t->packed());
  ASSERT_NE(t->writable(), nullptr);
  EXPECT_EQ(t->writable_word(0), 0u);
  EXPECT_EQ(t->word(0), 0x8001u);
  EXPECT_EQ(t->word(7), uint64_t{1} << 63);
  EXPECT_EQ(t->nr_present, 3);
  // Clearing every entry and dropping the state packs it again.
  store.clear_present_word(t, 0, 0x8001);
  store.clear_present_word(t, 7, uint64_t{1} << 63);
  EXPECT_FALSE(t->packed());  // the writable bits are still held
  store.drop_private(t);
  EXPECT_TRUE(t->packed());
  EXPECT_TRUE(t->empty());
  store.free_pte_table(t);
}

TEST(PtStore, FullTablesShareOneBitmapAndClearingOneEntryCopiesIt) {
  pt_store store(8);
  pte_table* t = store.new_pte_table();
  store.set_present(t, 3, 1);
  store.set_full(t);
  EXPECT_TRUE(t->is_full());
  EXPECT_FALSE(t->owns_bitmap());
  EXPECT_EQ(t->nr_present, 512);
  store.clear_present_word(t, 2, uint64_t{1} << 5);
  EXPECT_FALSE(t->is_full());
  EXPECT_TRUE(t->owns_bitmap());
  EXPECT_EQ(t->nr_present, 511);
  EXPECT_EQ(t->word(2), ~(uint64_t{1} << 5));
  EXPECT_EQ(t->word(1), ~uint64_t{0});
  store.free_pte_table(t);
}

// What the form buys: a packed table needs no bitmap words, so 100,000 sparse tables cost
// their nodes only (40 bytes each, in chunks of up to 2 MiB); as bitmaps 64 more each.
TEST(PtStore, SparseTablesCostTheirNodesOnly) {
  pt_store store(8);
  std::vector<pte_table*> ts;
  for (uint32_t i = 0; i < 100'000; ++i) {
    pte_table* t = store.new_pte_table();
    for (uint32_t j = 0; j < 5; ++j) store.set_present(t, (i + j * 3) % 8, uint64_t{1} << ((i * 7 + j * 13) % 64));
    ts.push_back(t);
  }
  const size_t nodes = 100'000 * sizeof(pte_table);
  EXPECT_LE(store.host_bytes(), nodes + (size_t{1} << 20));
  for (pte_table* t : ts) store.ensure_writable(t);
  EXPECT_GE(store.host_bytes(), nodes + 100'000 * 2 * 64);  // a presence and a writable bitmap each
  for (pte_table* t : ts) store.free_pte_table(t);
}

}  // namespace
}  // namespace vmlab
