// Which pages a touch op touches, in which order — shared by both engines, so that the
// sim and the live engine fault exactly the same pages.
//
// Why our own generator: std::uniform_int_distribution and friends are not specified
// bit for bit across standard libraries, and vmlab promises the same result for the same
// seed everywhere. xoshiro256** (seeded through splitmix64) and Lemire's bounded draw
// are fully specified; Zipf uses rejection-inversion (Hörmann & Derflinger 1996), which
// needs O(1) memory for any number of pages.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "vmlab/op.h"

namespace vmlab {

// splitmix64's output function: a well-mixed 64-bit hash of x + golden ratio. Seeds the
// rng, and derives per-op seeds from a scenario seed.
constexpr uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class rng {
 public:
  explicit rng(uint64_t seed);
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n): Lemire's nearly divisionless bounded draw.
  uint64_t below(uint64_t n) {
    __uint128_t m = __uint128_t(next()) * n;
    if (uint64_t(m) < n) [[unlikely]]
      return below_slow(n, m);
    return uint64_t(m >> 64);
  }
  double unit();  // uniform in [0, 1)

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t below_slow(uint64_t n, __uint128_t m);
  uint64_t s_[4];
};

// The pages a uniform or zipf touch op selects, in access order, a batch at a time.
// Why a generator: a touch's count may be 2^34 (fraction 1 of a 64 TiB mapping), and the
// whole list would need that many words of host memory before the first page is touched.
// The generator's own memory follows the pages it has produced (the uniform pattern's
// record of pages drawn), so a run's host memory follows what it touches.
//
// Pages are the kernel's (page_size: its paging format's, 4 KiB or 64 KiB): a uniform
// touch of 10% draws 10% of those, as the process would fault them.
class touch_page_gen {
 public:
  touch_page_gen(const op& o, bytes page_size);
  ~touch_page_gen();
  touch_page_gen(const touch_page_gen&) = delete;
  touch_page_gen& operator=(const touch_page_gen&) = delete;
  // Replaces `out` with up to `max` next pages (indices relative to the mapping, i.e.
  // op.off / page size already added); false when there are no more.
  bool next(std::vector<uint64_t>& out, size_t max);
  [[nodiscard]] uint64_t total() const { return count_; }     // pages (uniform) or accesses (zipf)
  [[nodiscard]] uint64_t produced() const { return done_; }
  // Every page it produces is below this (the range's end, in pages of the mapping).
  [[nodiscard]] uint64_t limit() const;

 private:
  struct state;
  std::unique_ptr<state> st_;
  uint64_t count_ = 0, done_ = 0;
};

// The page indices a uniform or zipf touch op selects, in access order: every batch of
// touch_page_gen. `pages` = op.len / page_size. For `uniform`, count distinct pages; for
// `zipf`, count accesses (pages may repeat), rank r mapped to page (r * step) mod pages
// with a step coprime to pages, so hot pages are spread over the range.
std::vector<uint64_t> touch_page_list(const op& o, bytes page_size);

// A set of page indices whose memory follows its size: a hash set while it is small
// against the range, a dense bitmap of the range once that is smaller (or the range is
// small anyway).
class page_set {
 public:
  // Pages are < `limit`; `expected` is how many will be inserted, when known: a set that
  // would outgrow the bitmap of the range starts as the bitmap.
  explicit page_set(uint64_t limit, uint64_t expected = 0);
  // Inserts p; false when it was already there.
  bool insert(uint64_t p) {
    if (!dense_) return insert_sparse(p);
    uint64_t& w = bits_[p >> 6];
    const uint64_t b = uint64_t{1} << (p & 63);
    if (w & b) return false;
    w |= b;
    return true;
  }
  // Starts loading what insert(p) will read (a dense bitmap's word).
  void prefetch(uint64_t p) const {
    if (dense_) __builtin_prefetch(&bits_[p >> 6], 1);
  }

 private:
  bool insert_sparse(uint64_t p);
  void densify();
  uint64_t limit_;
  std::vector<uint64_t> bits_;
  std::unordered_set<uint64_t> set_;
  bool dense_ = true;
};

// The first occurrence of each page, in order. Applying these is exactly equivalent to
// applying the whole list: within one touch op every access is of one kind (read or
// write), and a repeated access finds its page mapped as the first one left it — it
// neither faults nor maps anything (fault-around included). The sim engine uses it to
// skip repeats of a Zipf stream (a page_set kept across batches does the same a batch at
// a time).
std::vector<uint64_t> first_touches(const std::vector<uint64_t>& pages);

}  // namespace vmlab
