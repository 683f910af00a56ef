#include "workload/pattern.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

namespace vmlab {
namespace {

// Rejection-inversion sampling of Zipf(theta) over ranks 1..n.
class zipf_sampler {
 public:
  zipf_sampler(uint64_t n, double theta) : n_(double(n)), s_(theta) {
    h_x1_ = h(1.5) - 1.0;
    h_n_ = h(n_ + 0.5);
    s0_ = 2.0 - h_inv(h(2.5) - std::pow(2.0, -s_));
  }
  uint64_t sample(rng& r) const {
    for (;;) {
      const double u = h_n_ + r.unit() * (h_x1_ - h_n_);
      const double x = h_inv(u);
      double k = std::floor(x + 0.5);
      if (k < 1) k = 1;
      if (k > n_) k = n_;
      if (k - x <= s0_ || u >= h(k + 0.5) - std::pow(k, -s_)) return uint64_t(k) - 1;
    }
  }

 private:
  // H(x) = integral of x^-s, with the s == 1 limit handled through helper functions.
  double h(double x) const { return helper2((1.0 - s_) * std::log(x)) * std::log(x); }
  double h_inv(double x) const {
    double t = x * (1.0 - s_);
    if (t < -1.0) t = -1.0;
    return std::exp(helper1(t) * x);
  }
  static double helper1(double x) { return std::fabs(x) > 1e-8 ? std::log1p(x) / x : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x)); }
  static double helper2(double x) { return std::fabs(x) > 1e-8 ? std::expm1(x) / x : 1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x)); }
  double n_, s_, h_x1_, h_n_, s0_;
};

}  // namespace

rng::rng(uint64_t seed) {
  // The splitmix64 generator: the state advances by the golden ratio per output.
  uint64_t x = seed;
  for (auto& s : s_) {
    s = splitmix64(x);
    x += 0x9e3779b97f4a7c15ull;
  }
}

// below()'s rare case: the low half fell under n, so the draw may be one of the -n % n
// that would bias it, and is redrawn while it is.
uint64_t rng::below_slow(uint64_t n, __uint128_t m) {
  const uint64_t t = -n % n;
  while (uint64_t(m) < t) m = __uint128_t(next()) * n;
  return uint64_t(m >> 64);
}

double rng::unit() { return double(next() >> 11) * 0x1.0p-53; }

namespace {

// Dense bitmaps up to this many bits (8 MiB of host memory), whatever the count: below it
// a bitmap is both smaller than a hash set of a few pages and faster.
constexpr uint64_t kDenseBits = uint64_t{1} << 26;
// Partial Fisher-Yates keeps the permutation in a vector up to this many pages, else in a
// hash map of the displaced entries (perm[i] == i for every other i): same draws, same
// pages, memory following the pages drawn.
constexpr uint64_t kDensePerm = uint64_t{1} << 20;

}  // namespace

// A hash set entry costs about this many host bytes (node, key, bucket).
constexpr uint64_t kSetEntryBytes = 32;

page_set::page_set(uint64_t limit, uint64_t expected) : limit_(limit) {
  dense_ = limit <= kDenseBits || expected * kSetEntryBytes >= limit / 8;
  if (dense_) bits_.assign((limit + 63) / 64, 0);
}

void page_set::densify() {
  bits_.assign((limit_ + 63) / 64, 0);
  for (uint64_t p : set_) bits_[p >> 6] |= uint64_t{1} << (p & 63);
  set_ = {};
  dense_ = true;
}

bool page_set::insert_sparse(uint64_t p) {
  const bool added = set_.insert(p).second;
  if (set_.size() * kSetEntryBytes >= limit_ / 8) densify();  // the bitmap is now the smaller
  return added;
}

struct touch_page_gen::state {
  explicit state(const op& op_) : r(op_.seed), o(op_) {}
  rng r;
  op o;
  uint64_t pages = 0, first = 0;  // pages in the range; its first page in the mapping
  // uniform, sparse (count * 2 <= pages): rejection against the pages drawn so far.
  // Draws are made kAhead at a time and their bitmap words prefetched before they are
  // tested (the draws do not depend on the tests, so the pages are the same): a random
  // probe of a bitmap of a 300 GiB range misses the caches, and these overlap.
  std::unique_ptr<page_set> seen;
  static constexpr size_t kAhead = 32;
  std::array<uint64_t, kAhead> ahead{};
  size_t ahead_pos = kAhead;  // kAhead: none drawn ahead
  // uniform, dense: the lazily materialised permutation.
  std::vector<uint64_t> perm;
  std::unordered_map<uint64_t, uint64_t> displaced;
  // zipf
  std::unique_ptr<zipf_sampler> z;
  uint64_t step = 0;
  uint64_t perm_at(uint64_t i) const {
    if (!perm.empty()) return perm[i];
    auto it = displaced.find(i);
    return it == displaced.end() ? i : it->second;
  }
};

touch_page_gen::touch_page_gen(const op& o, bytes page_size) : st_(std::make_unique<state>(o)) {
  state& s = *st_;
  s.pages = o.len / page_size;
  s.first = o.off / page_size;
  if (s.pages == 0) return;
  if (o.pattern == touch_pattern::uniform) {
    count_ = std::min(o.count, s.pages);
    if (count_ * 2 <= s.pages) s.seen = std::make_unique<page_set>(s.pages, count_);
    else if (s.pages <= kDensePerm) {
      s.perm.resize(s.pages);
      std::iota(s.perm.begin(), s.perm.end(), 0);
    }
  } else if (o.pattern == touch_pattern::zipf) {
    count_ = o.count;
    s.z = std::make_unique<zipf_sampler>(s.pages, o.theta);
    s.step = 0x9e3779b97f4a7c15ull % s.pages;
    if (s.step == 0) s.step = 1;
    while (std::gcd(s.step, s.pages) != 1) ++s.step;
  }
}

touch_page_gen::~touch_page_gen() = default;

uint64_t touch_page_gen::limit() const { return st_->first + st_->pages; }

bool touch_page_gen::next(std::vector<uint64_t>& out, size_t max) {
  out.clear();
  if (done_ >= count_) return false;
  state& s = *st_;
  const uint64_t n = std::min<uint64_t>(max, count_ - done_);
  out.reserve(n);
  const uint64_t pages = s.pages;
  if (s.o.pattern == touch_pattern::uniform) {
    if (s.seen) {
      // Distinct pages by rejection: sparse enough that few draws are wasted. The
      // generator's state is copied in and out, so that it stays in registers (the
      // stores into the bitmap and `out` could otherwise alias it).
      rng r = s.r;
      page_set& seen = *s.seen;
      size_t pos = s.ahead_pos;
      for (uint64_t got = 0; got < n;) {
        if (pos == s.kAhead) {
          for (uint64_t& a : s.ahead) {
            a = r.below(pages);
            seen.prefetch(a);
          }
          pos = 0;
        }
        const uint64_t p = s.ahead[pos++];
        if (seen.insert(p)) {
          out.push_back(p + s.first);
          ++got;
        }
      }
      s.ahead_pos = pos;
      s.r = r;
    } else {
      // A partial Fisher-Yates shuffle; entry i of the permutation is fixed at step i.
      for (uint64_t i = done_; i < done_ + n; ++i) {
        const uint64_t j = i + s.r.below(pages - i);
        if (!s.perm.empty()) {
          std::swap(s.perm[i], s.perm[j]);
          out.push_back(s.perm[i] + s.first);
        } else {
          const uint64_t pi = s.perm_at(i), pj = s.perm_at(j);
          s.displaced[j] = pi;
          s.displaced.erase(i);  // never read again: step i is past
          out.push_back(pj + s.first);
        }
      }
    }
  } else {
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t rank = s.z->sample(s.r);
      // 64-bit arithmetic when it cannot overflow: a 128-bit modulo is a libgcc call.
      if (is_pow2(pages)) out.push_back(s.first + ((rank * s.step) & (pages - 1)));
      else if (pages <= (uint64_t{1} << 32)) out.push_back(s.first + (rank * s.step) % pages);
      else out.push_back(s.first + uint64_t((__uint128_t(rank) * s.step) % pages));
    }
  }
  done_ += n;
  return true;
}

std::vector<uint64_t> touch_page_list(const op& o, bytes page_size) {
  touch_page_gen g(o, page_size);
  std::vector<uint64_t> out, batch;
  out.reserve(std::min<uint64_t>(g.total(), uint64_t{1} << 20));
  while (g.next(batch, size_t{1} << 16)) out.insert(out.end(), batch.begin(), batch.end());
  return out;
}

std::vector<uint64_t> first_touches(const std::vector<uint64_t>& pages) {
  uint64_t max = 0;
  for (uint64_t p : pages) max = std::max(max, p);
  page_set seen(max + 1);
  std::vector<uint64_t> out;
  out.reserve(pages.size());
  for (uint64_t p : pages)
    if (seen.insert(p)) out.push_back(p);
  return out;
}

}  // namespace vmlab
