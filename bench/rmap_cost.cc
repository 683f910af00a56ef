// vmlab_rmap_cost: which reverse-map design costs what, at which sharing level.
//
// One machine (seed 000's: i386, 4 GiB, Pentium III 32-byte lines, Linux 2.5.26's page
// tables and allocator) and one workload, run under each rmap design the profile can be
// switched to. N processes share a 64 MiB shm segment (each reads all of it), and a
// parent that wrote 64 MiB of private anonymous memory forks N - 1 children (2.5's fork
// copies every PTE, so each anonymous page ends up mapped N times). Printed per design and
// N: the rmap objects' low memory (slab pages of pte_chain, anon_vma, anon_vma_chain),
// and the work try_to_unmap does to find every PTE of one shm page and of one anonymous
// page. Exits 1 if a run fails or the model's invariants break.
#include <cstdio>
#include <string>
#include <vector>

#include "vmlab/op_builder.h"
#include "vmlab/sim_kernel.h"

namespace vmlab {
namespace {

struct design {
  const char* name;
  std::vector<std::pair<std::string, std::string>> overrides;
};

bool check(const status& s, const char* what) {
  if (s.ok()) return true;
  std::fprintf(stderr, "%s: %s\n", what, s.message().c_str());
  return false;
}

uint64_t slab_bytes(const std::vector<slab_row>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name) return r.num_slabs * r.pagesperslab * 4096;
  return 0;
}

int run() {
  constexpr bytes kLen = 64 * MiB;
  const std::vector<design> designs = {
      {"none (2.4)", {{"rmap", "none"}}},
      {"pte_chain pairs (2.5.28)", {{"pte_chain_slots", "1"}}},
      {"pte_chain lines (2.5.35)", {}},
      {"anon_vma (2.6.7)", {{"rmap", "anon_vma"}}},
      {"anon_vma_chain (2.6.34)", {{"rmap", "anon_vma_chain"}, {"anon_vma_reuse", "false"}}},
  };
  std::printf("| design | N | rmap slab (KiB) | shm page: entries / objects / VMAs / PT walks / PTEs scanned | anon page: "
              "entries / objects / VMAs / PT walks / PTEs scanned |\n|---|---|---|---|---|\n");
  for (const design& d : designs)
    for (uint32_t n : {1u, 2u, 8u, 64u, 512u}) {
      machine_decl m;
      m.profile = "linux-2.5.26";
      m.overrides = d.overrides;
      auto kr = sim_kernel::create(m, {{"seg", object_kind::shm, kLen}});
      if (!kr.ok()) return check(kr.error(), "create"), 1;
      sim_kernel& k = *kr.value();
      if (!check(k.spawn(1), "spawn")) return 1;
      if (!k.mmap(ops::mmap_object(1, 0, 0, kLen).shared()).ok() || !k.mmap(ops::mmap_anon(1, 1, kLen)).ok()) return 1;
      if (!check(k.touch(1, 0, 0, kLen, 4096, false), "touch shm")) return 1;
      if (!check(k.touch(1, 1, 0, kLen, 4096, true), "touch anon")) return 1;
      for (uint32_t c = 2; c <= n; ++c) {
        if (!check(k.fork(1, c), "fork")) return 1;
        if (!check(k.touch(c, 0, 0, kLen, 4096, false), "child touch")) return 1;
      }
      if (std::string bad = k.check_invariants(); !bad.empty()) {
        std::fprintf(stderr, "%s N=%u: %s\n", d.name, n, bad.c_str());
        return 1;
      }
      const std::vector<slab_row> rows = k.slabinfo(false);
      const uint64_t rmap_bytes =
          slab_bytes(rows, "pte_chain") + slab_bytes(rows, "anon_vma") + slab_bytes(rows, "anon_vma_chain");
      auto shm = k.try_to_unmap(1, 0, kLen / 2);
      auto anon = k.try_to_unmap(1, 1, kLen / 2);
      if (!shm.ok() || !anon.ok()) return 1;
      auto cell = [](const rmap_work& w) {
        char b[96];
        std::snprintf(b, sizeof b, "%llu / %llu / %llu / %llu / %llu", (unsigned long long)w.chain_entries,
                      (unsigned long long)w.chain_objects, (unsigned long long)w.vmas_visited,
                      (unsigned long long)w.pt_walks, (unsigned long long)w.ptes_scanned);
        return std::string(b);
      };
      std::printf("| %s | %u | %llu | %s | %s |\n", d.name, n, (unsigned long long)(rmap_bytes / KiB), cell(*shm).c_str(),
                  cell(*anon).c_str());
      if (shm->unmapped != n || anon->unmapped != n) {
        std::fprintf(stderr, "%s N=%u: unmapped %llu shm / %llu anon PTEs, expected %u\n", d.name, n,
                     (unsigned long long)shm->unmapped, (unsigned long long)anon->unmapped, n);
        return 1;
      }
    }
  return 0;
}

}  // namespace
}  // namespace vmlab

int main() { return vmlab::run(); }
