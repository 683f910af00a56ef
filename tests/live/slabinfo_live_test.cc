// The SLUB geometry model against this host's /proc/slabinfo: for the rmap caches, mm_struct
// and the kmalloc caches, objsize / objperslab / pagesperslab must be what
// calculate_geometry() gives for the cache's object size and kmem_cache_create() flags
// (as the 6.x sources create them), with this machine's present CPU count.
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "model/slab.h"

namespace vmlab {
namespace {

// name -> geometry, from the rows of /proc/slabinfo; empty when it cannot be read.
std::map<std::string, slab_geometry> read_slabinfo(std::string* header) {
  std::map<std::string, slab_geometry> rows;
  std::ifstream in("/proc/slabinfo");
  std::string line;
  for (int i = 0; i < 2 && std::getline(in, line); ++i) *header += line + "\n";
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string name;
    uint64_t active = 0, num = 0;
    slab_geometry g;
    if (ls >> name >> active >> num >> g.objsize >> g.objperslab >> g.pagesperslab) rows[name] = g;
  }
  return rows;
}

// A number from a sysfs file, or fallback.
uint32_t read_u32(const std::string& path, uint32_t fallback) {
  std::ifstream in(path);
  uint32_t v = 0;
  return in >> v ? v : fallback;
}

// num_present_cpus(), from a cpulist such as "0-1" or "0,2-3".
uint32_t present_cpus() {
  std::ifstream in("/sys/devices/system/cpu/present");
  std::string list;
  if (!(in >> list)) return static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF));
  uint32_t n = 0;
  std::istringstream ls(list);
  std::string part;
  while (std::getline(ls, part, ',')) {
    const size_t dash = part.find('-');
    if (dash == std::string::npos) {
      n += 1;
    } else {
      n += static_cast<uint32_t>(std::stoul(part.substr(dash + 1)) - std::stoul(part.substr(0, dash)) + 1);
    }
  }
  return n;
}

struct cache_case {
  const char* name;
  uint32_t object_size;  // the 6.18 x86-64 sizeof, used when /sys/kernel/slab is absent
  slab_flags flags;
};

TEST(SlabLive, SlubGeometryMatchesProcSlabinfo) {
#if !defined(__linux__) || !defined(__x86_64__)
  GTEST_SKIP() << "the SLUB policy modelled is x86-64 Linux";
#endif
  std::string header;
  const std::map<std::string, slab_geometry> rows = read_slabinfo(&header);
  if (rows.empty()) GTEST_SKIP() << "/proc/slabinfo is not readable (needs root)";
  if (sysconf(_SC_PAGESIZE) != 4096) GTEST_SKIP() << "the model's x86-64 policy has 4 KiB pages";
  EXPECT_EQ(header, slabinfo_header(slabinfo_format::v2_1));

  uint32_t cpus = present_cpus();
  // calculate_order(): with one present CPU the kernel uses nr_cpu_ids instead.
  if (cpus <= 1) cpus = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF));
  const slab_policy p = slub_policy_x86_64(cpus);
  const slab_flags km{.kmalloc = true};
  const cache_case cases[] = {
      // mm/vma_init.c: KMEM_CACHE with SLAB_HWCACHE_ALIGN | SLAB_TYPESAFE_BY_RCU and a freeptr_offset.
      {"vm_area_struct", 192, {.hwcache_align = true, .typesafe_by_rcu = true, .rcu_freeptr_offset = true}},
      // mm/rmap.c: SLAB_TYPESAFE_BY_RCU with anon_vma_ctor; anon_vma_chain plain KMEM_CACHE.
      {"anon_vma", 96, {.ctor = true, .typesafe_by_rcu = true}},
      {"anon_vma_chain", 64, {}},
      // kernel/fork.c: SLAB_HWCACHE_ALIGN, ARCH_MIN_MMSTRUCT_ALIGN 0 on x86.
      {"mm_struct", 1568, {.hwcache_align = true}},
      {"kmalloc-8", 8, km},     {"kmalloc-16", 16, km},   {"kmalloc-32", 32, km},   {"kmalloc-64", 64, km},
      {"kmalloc-96", 96, km},   {"kmalloc-128", 128, km}, {"kmalloc-192", 192, km}, {"kmalloc-256", 256, km},
      {"kmalloc-512", 512, km}, {"kmalloc-1k", 1024, km}, {"kmalloc-2k", 2048, km}, {"kmalloc-4k", 4096, km},
      {"kmalloc-8k", 8192, km},
  };
  int compared = 0;
  for (const cache_case& c : cases) {
    auto it = rows.find(c.name);
    if (it == rows.end()) {
      std::cout << "[ info ] no " << c.name << " row (merged into another cache?)\n";
      continue;
    }
    const uint32_t size = read_u32(std::string("/sys/kernel/slab/") + c.name + "/object_size", c.object_size);
    const slab_geometry model = calculate_geometry(p, size, c.flags);
    const slab_geometry& host = it->second;
    std::cout << "[ info ] " << c.name << " object " << size << ": model " << model.objsize << "/"
              << model.objperslab << "/" << model.pagesperslab << ", host " << host.objsize << "/"
              << host.objperslab << "/" << host.pagesperslab << "\n";
    EXPECT_EQ(model, host) << c.name;
    ++compared;
  }
  EXPECT_GE(compared, 4);
}

}  // namespace
}  // namespace vmlab
