#include "workload/tiobench.h"

namespace vmlab {

uint64_t tiobench_spec::file_bytes() const {
  if (threads == 0 || block_bytes == 0) return 0;
  const uint64_t per = size_mb * (1ull << 20) / threads;
  return per / block_bytes * block_bytes;
}

uint64_t tiobench_spec::ops_per_thread(tiobench_test t) const {
  return is_random(t) ? random_ops_per_thread() : blocks_per_file();
}

status validate_tiobench(const tiobench_spec& s) {
  if (s.threads == 0 || s.threads > 1024) return status::invalid_argument("--threads must be between 1 and 1024");
  if (s.block_bytes == 0 || s.block_bytes % 512 != 0)
    return status::invalid_argument("--block must be a positive multiple of 512 bytes (got " + std::to_string(s.block_bytes) + ")");
  if (s.block_bytes > (64u << 20)) return status::invalid_argument("--block above 64 MiB");
  if (s.size_mb == 0) return status::invalid_argument("--size must be at least 1 (MB, in total)");
  if (s.size_mb > (1ull << 30)) return status::invalid_argument("--size above 2^30 MB");
  if (s.blocks_per_file() == 0)
    return status::invalid_argument("--size " + std::to_string(s.size_mb) + " MB over " + std::to_string(s.threads) +
                                    " threads leaves less than one " + std::to_string(s.block_bytes) +
                                    "-byte block per thread");
  if (s.random_ops_per_thread() == 0)
    return status::invalid_argument("--random " + std::to_string(s.random_ops) + " over " + std::to_string(s.threads) +
                                    " threads is no op per thread");
  if (s.direct && s.mmap)
    return status::invalid_argument("--direct and --mmap together: a mapping always goes through the page cache "
                                    "(O_DIRECT applies to read and write only)");
  if (s.direct && s.block_bytes % 4096 != 0)
    return status::invalid_argument("--direct needs --block to be a multiple of 4096 (the logical block size O_DIRECT "
                                    "aligns to)");
  return {};
}

namespace {
// JSON key and tiobench.pl's section title, by tiobench_test.
struct test_names {
  const char* key;
  const char* title;
};
constexpr test_names kTestNames[] = {{"write", "Sequential Writes"},
                                     {"random_write", "Random Writes"},
                                     {"read", "Sequential Reads"},
                                     {"random_read", "Random Reads"}};
}  // namespace

const char* tiobench_test_key(tiobench_test t) { return kTestNames[size_t(t)].key; }
const char* tiobench_test_title(tiobench_test t) { return kTestNames[size_t(t)].title; }

uint64_t tiobench_offset(const tiobench_spec& s, tiobench_test t, uint32_t thread, uint64_t i) {
  if (!is_random(t)) return i * s.block_bytes;
  uint64_t z = s.seed * 0x9e3779b97f4a7c15ull + (uint64_t(thread) << 40) + (uint64_t(t) << 56) + i;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z % s.blocks_per_file() * s.block_bytes;
}

double tiobench_test_result::rate_mb_s(uint32_t block_bytes) const {
  return seconds > 0 ? double(blocks) * block_bytes / double(1 << 20) / seconds : 0;
}

double tiobench_test_result::cpu_percent() const { return seconds > 0 ? 100.0 * (utime + stime) / seconds : 0; }

double tiobench_test_result::cpu_eff(uint32_t block_bytes) const {
  return rate_mb_s(block_bytes) / (cpu_percent() / 100 + 0.00001);
}

}  // namespace vmlab
