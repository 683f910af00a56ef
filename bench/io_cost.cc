// vmlab_io_cost: the CPU costs behind src/block/cpu_cost.cc, measured on this host.
//
// Each figure is the median of 5 runs, printed with what it measured:
//   copy       memcpy of a 64 MiB buffer that misses the caches (ns per byte): what
//              copy_to_user costs per byte when read() copies page-cache data out
//   anon_fault first write to each page of fresh anonymous memory (ns per fault: the
//              fault, a zeroed page, its PTE)
//   file_fault first read of a cached file page through a MAP_SHARED mapping, one touch
//              per 64 KiB so every touch faults (ns per fault; 6.x fault-around maps the
//              16 pages of that 64 KiB window in the same fault)
//   readahead  posix_fadvise(WILLNEED) of 64 MiB of a file not in the page cache (ns per
//              4 KiB page: page allocation, page-cache insertion, bio submission; the
//              call returns before the reads complete)
//   dram       a dependent pointer chase over 256 MiB (ns per load): the latency of one
//              cold page-table entry load, the unit of a cold rmap walk
// usage: vmlab_io_cost [DIR]   (DIR: where the 64 MiB test file goes, default /var/tmp)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using clk = std::chrono::steady_clock;
constexpr size_t kMiB = 1 << 20, kPage = 4096;

double median_of_5(const std::function<double()>& f) {
  std::vector<double> v;
  for (int i = 0; i < 5; ++i) v.push_back(f());
  std::sort(v.begin(), v.end());
  return v[2];
}

double ns_since(clk::time_point t0) { return std::chrono::duration<double, std::nano>(clk::now() - t0).count(); }

double copy_ns_per_byte() {
  const size_t n = 64 * kMiB;
  std::vector<char> a(n, 1), b(n, 2);
  return median_of_5([&] {
    const auto t0 = clk::now();
    std::memcpy(b.data(), a.data(), n);
    const double ns = ns_since(t0);
    a[size_t(b[n / 2]) % n] ^= 1;  // keep the copy
    return ns / double(n);
  });
}

double anon_fault_ns() {
  const size_t n = 64 * kMiB;
  return median_of_5([&] {
    char* p = static_cast<char*>(::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ::madvise(p, n, MADV_NOHUGEPAGE);
    const auto t0 = clk::now();
    for (size_t off = 0; off < n; off += kPage) p[off] = 1;
    const double ns = ns_since(t0);
    ::munmap(p, n);
    return ns / double(n / kPage);
  });
}

double file_fault_ns(int fd, size_t n) {
  return median_of_5([&] {
    char* p = static_cast<char*>(::mmap(nullptr, n, PROT_READ, MAP_SHARED, fd, 0));
    volatile char sink = 0;
    const auto t0 = clk::now();
    for (size_t off = 0; off < n; off += 64 * 1024) sink = char(sink + p[off]);
    const double ns = ns_since(t0);
    ::munmap(p, n);
    return ns / double(n / (64 * 1024));
  });
}

double readahead_ns_per_page(int fd, size_t n) {
  return median_of_5([&] {
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, off_t(n), POSIX_FADV_DONTNEED);
    const auto t0 = clk::now();
    ::posix_fadvise(fd, 0, off_t(n), POSIX_FADV_WILLNEED);
    const double ns = ns_since(t0);
    return ns / double(n / kPage);
  });
}

double dram_ns() {
  const size_t n = 256 * kMiB / sizeof(size_t);
  std::vector<size_t> next(n);
  std::iota(next.begin(), next.end(), size_t{0});
  std::mt19937_64 rng(1);
  // One random cycle over every slot (Sattolo's algorithm): no prefetcher can follow it.
  for (size_t i = n - 1; i > 0; --i) std::swap(next[i], next[rng() % i]);
  return median_of_5([&] {
    size_t at = 0;
    const size_t loads = 4'000'000;
    const auto t0 = clk::now();
    for (size_t i = 0; i < loads; ++i) at = next[at];
    const double ns = ns_since(t0);
    if (at == n) std::puts("");
    return ns / double(loads);
  });
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "/var/tmp";
  std::string path = dir + "/vmlab-io-cost.XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) {
    std::perror(path.c_str());
    return 3;
  }
  ::unlink(path.c_str());
  const size_t n = 64 * kMiB;
  std::vector<char> block(kMiB, 7);
  for (size_t off = 0; off < n; off += kMiB)
    if (::write(fd, block.data(), kMiB) != ssize_t(kMiB)) {
      std::perror("write");
      return 3;
    }
  ::fsync(fd);
  std::printf("copy        %.4f ns/byte (%.2f GB/s)\n", copy_ns_per_byte(), 1.0 / copy_ns_per_byte());
  std::printf("anon_fault  %.0f ns/fault\n", anon_fault_ns());
  std::printf("file_fault  %.0f ns/fault (cached page, fault-around window of 16 pages)\n", file_fault_ns(fd, n));
  std::printf("readahead   %.0f ns/page (submission)\n", readahead_ns_per_page(fd, n));
  std::printf("dram        %.1f ns/load (dependent, 256 MiB)\n", dram_ns());
  ::close(fd);
  return 0;
}
