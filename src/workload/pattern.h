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
  uint64_t next();
  uint64_t below(uint64_t n);  // uniform in [0, n)
  double unit();               // uniform in [0, 1)

 private:
  uint64_t s_[4];
};

// The page indices (relative to op.off) a uniform or zipf touch op selects, in access
// order. `pages` = op.len / 4096. For `uniform`, count distinct pages; for `zipf`, count
// accesses (pages may repeat), rank r mapped to page (r * step) mod pages with a step
// coprime to pages, so hot pages are spread over the range.
std::vector<uint64_t> touch_page_list(const op& o);

// The first occurrence of each page, in order. Applying these is exactly equivalent to
// applying the whole list: within one touch op every access is of one kind (read or
// write), and a repeated access finds its page mapped as the first one left it — it
// neither faults nor maps anything (fault-around included). The sim engine uses it to
// skip repeats of a Zipf stream.
std::vector<uint64_t> first_touches(const std::vector<uint64_t>& pages);

}  // namespace vmlab
