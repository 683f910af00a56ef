#include "workload/pattern.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace vmlab {
namespace {

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

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

uint64_t rng::next() {
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

uint64_t rng::below(uint64_t n) {
  // Lemire's nearly divisionless bounded draw.
  __uint128_t m = __uint128_t(next()) * n;
  uint64_t l = uint64_t(m);
  if (l < n) {
    const uint64_t t = -n % n;
    while (l < t) {
      m = __uint128_t(next()) * n;
      l = uint64_t(m);
    }
  }
  return uint64_t(m >> 64);
}

double rng::unit() { return double(next() >> 11) * 0x1.0p-53; }

std::vector<uint64_t> touch_page_list(const op& o) {
  const uint64_t pages = o.len / 4096;
  std::vector<uint64_t> out;
  if (pages == 0) return out;
  rng r(o.seed);
  if (o.pattern == touch_pattern::uniform) {
    const uint64_t count = std::min(o.count, pages);
    // Distinct pages: a partial Fisher-Yates over a lazily materialised permutation
    // when dense, rejection with a bitmap when sparse.
    std::vector<uint64_t> seen((pages + 63) / 64, 0);
    out.reserve(count);
    if (count * 2 <= pages) {
      while (out.size() < count) {
        const uint64_t p = r.below(pages);
        if ((seen[p >> 6] >> (p & 63)) & 1) continue;
        seen[p >> 6] |= uint64_t{1} << (p & 63);
        out.push_back(p);
      }
    } else {
      std::vector<uint64_t> perm(pages);
      std::iota(perm.begin(), perm.end(), 0);
      for (uint64_t i = 0; i < count; ++i) {
        const uint64_t j = i + r.below(pages - i);
        std::swap(perm[i], perm[j]);
        out.push_back(perm[i]);
      }
    }
  } else if (o.pattern == touch_pattern::zipf) {
    zipf_sampler z(pages, o.theta);
    uint64_t step = 0x9e3779b97f4a7c15ull % pages;
    if (step == 0) step = 1;
    while (std::gcd(step, pages) != 1) ++step;
    out.reserve(o.count);
    for (uint64_t i = 0; i < o.count; ++i) {
      const uint64_t rank = z.sample(r);
      // 64-bit arithmetic when it cannot overflow: a 128-bit modulo is a libgcc call.
      if (is_pow2(pages)) out.push_back((rank * step) & (pages - 1));
      else if (pages <= (uint64_t{1} << 32)) out.push_back((rank * step) % pages);
      else out.push_back(uint64_t((__uint128_t(rank) * step) % pages));
    }
  }
  for (auto& p : out) p += o.off / 4096;
  return out;
}

std::vector<uint64_t> first_touches(const std::vector<uint64_t>& pages) {
  uint64_t max = 0;
  for (uint64_t p : pages) max = std::max(max, p);
  std::vector<uint64_t> seen(max / 64 + 1, 0);
  std::vector<uint64_t> out;
  out.reserve(pages.size());
  for (uint64_t p : pages) {
    uint64_t& w = seen[p >> 6];
    const uint64_t b = uint64_t{1} << (p & 63);
    if (w & b) continue;
    w |= b;
    out.push_back(p);
  }
  return out;
}

}  // namespace vmlab
