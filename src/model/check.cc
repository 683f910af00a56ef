// check_invariants(): validate_mm for the model. Recounts every figure the model keeps
// incrementally — tables per level per mm and kernel-wide, VmPTE, PageTables, RSS, anon
// mapcounts, presence counts — from the trees themselves, and reports the differences.
// Property tests call it after every op.
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "model/kernel.h"
#include "vmlab/sim_kernel.h"

namespace vmlab {
namespace {

struct recount {
  std::set<const void*> nodes[kLevels];
  std::unordered_map<uint32_t, uint32_t> anon_refs;  // shared anonymous pages: PTEs per id
  uint64_t exclusive_anon = 0;                       // anonymous pages mapped once, without id
  std::ostringstream err;
};

void walk(const kernel& k, const mm_struct& mm, int idx, const void* node, vaddr base, recount& rc,
          level_counts& mm_tables, mm_rss& rss) {
  const paging_format& f = k.prof.paging;
  const level l = f.at(idx).lvl;
  rc.nodes[static_cast<int>(l)].insert(node);
  ++mm_tables[static_cast<int>(l)];
  if (idx == f.nr_levels - 1) {
    const auto* t = static_cast<const pte_table*>(node);
    uint32_t n = 0;
    for (uint32_t i = 0; i < f.pte().entries; ++i) {
      const bool is_anon = (t->anon_word(i >> 6) >> (i & 63)) & 1;
      if (t->anon && t->anon[i] && !is_anon) rc.err << "anon id on an entry without its anonmap bit; ";
      if (!t->test(i)) {
        if (is_anon) rc.err << "anonmap bit on a non-present entry; ";
        if ((t->writable_word(i >> 6) >> (i & 63)) & 1) rc.err << "writable bit on a non-present entry; ";
        continue;
      }
      ++n;
      const vaddr a = base + (vaddr{i} << 12);
      auto it = mm.vmas.upper_bound(a);
      const vm_area_struct* v = nullptr;
      if (it != mm.vmas.begin() && std::prev(it)->second.vm_end > a) v = &std::prev(it)->second;
      if (!v) { rc.err << "present PTE outside any VMA at 0x" << fmt_hex(a) << "; "; continue; }
      const uint32_t id = t->anon ? t->anon[i] : 0;
      if (is_anon) {
        ++rss.anon;
        if (id) ++rc.anon_refs[id];
        else ++rc.exclusive_anon;
      } else if (!v->is_anon()) {
        (k.objects[v->object].kind == object_kind::file ? rss.file : rss.shmem)++;
      }
    }
    if (n != t->nr_present) rc.err << "nr_present " << t->nr_present << " != " << n << "; ";
    if (t->present && t->present != full_bitmap() && n == f.pte().entries) rc.err << "full table not shared; ";
    return;
  }
  const auto* d = static_cast<const pt_dir*>(node);
  uint32_t used = 0;
  for (uint32_t i = 0; i < d->entries; ++i) {
    if (!d->slot[i]) continue;
    ++used;
    walk(k, mm, idx + 1, d->slot[i], base + (vaddr{i} << f.at(idx).shift), rc, mm_tables, rss);
  }
  if (used != d->nr_used) rc.err << "nr_used " << d->nr_used << " != " << used << "; ";
}

}  // namespace

std::string sim_kernel::check_invariants() const {
  const kernel& k = *k_;
  const paging_format& f = k.prof.paging;
  recount rc;
  for (const auto& [pid, mmp] : k.mms) {
    const mm_struct& mm = *mmp;
    level_counts tables{};
    mm_rss rss;
    walk(k, mm, 0, mm.pgd, 0, rc, tables, rss);
    if (tables != mm.nr_tables) rc.err << "pid " << pid << ": per-level table counts differ; ";
    bytes vmpte = 0;
    for (int i = 1; i < f.nr_levels; ++i)
      if (k.prof.counts_in_vmpte(f.at(i).lvl)) vmpte += tables[static_cast<int>(f.at(i).lvl)] * f.at(i).table_bytes();
    if (vmpte != mm.pgtables_bytes) rc.err << "pid " << pid << ": VmPTE " << mm.pgtables_bytes << " != recount " << vmpte << "; ";
    if (rss.anon != mm.rss.anon || rss.file != mm.rss.file || rss.shmem != mm.rss.shmem)
      rc.err << "pid " << pid << ": RSS anon/file/shmem " << mm.rss.anon << "/" << mm.rss.file << "/" << mm.rss.shmem
             << " != recount " << rss.anon << "/" << rss.file << "/" << rss.shmem << "; ";
    vaddr prev_end = 0;
    for (const auto& [start, v] : mm.vmas) {
      if (start != v.vm_start || v.vm_start >= v.vm_end || v.vm_start < prev_end) rc.err << "VMA order broken; ";
      prev_end = v.vm_end;
    }
  }
  bytes nr_pagetable = 0;
  uint64_t pages = 0;
  for (int i = 0; i < f.nr_levels; ++i) {
    const level l = f.at(i).lvl;
    const uint64_t n = rc.nodes[static_cast<int>(l)].size();
    if (n != k.pm.tables[static_cast<int>(l)]) rc.err << level_name(l) << " tables " << k.pm.tables[static_cast<int>(l)] << " != recount " << n << "; ";
    const bytes each = i == 0 ? k.prof.pgd_bytes() : f.at(i).table_bytes();
    const uint64_t pg = (i == 0 && f.pgd_from_slab) ? 0 : each / 4096;
    pages += n * pg;
    if (k.prof.counts_in_page_tables(l)) nr_pagetable += n * pg * 4096;
  }
  if (pages != k.pm.pgtable_pages) rc.err << "page-table pages " << k.pm.pgtable_pages << " != recount " << pages << "; ";
  if (nr_pagetable != k.pm.nr_pagetable) rc.err << "PageTables " << k.pm.nr_pagetable << " != recount " << nr_pagetable << "; ";
  uint64_t anon_pages = rc.exclusive_anon;
  for (const auto& [id, n] : rc.anon_refs) {
    ++anon_pages;
    if (k.pm.mapcount(id) != n) { rc.err << "anon page " << id << " mapcount " << k.pm.mapcount(id) << " != " << n << "; "; break; }
  }
  if (anon_pages != k.pm.anon_pages) rc.err << "AnonPages " << k.pm.anon_pages << " != recount " << anon_pages << "; ";
  uint64_t cache = 0;
  for (const auto& o : k.objects) {
    uint64_t n = 0;
    for (uint64_t w : o.resident) n += uint64_t(popcount64(w));
    if (n != o.nr_resident) rc.err << "object residency count differs; ";
    cache += n;
  }
  if (cache != k.pm.cache_pages) rc.err << "page cache " << k.pm.cache_pages << " != recount " << cache << "; ";
  return rc.err.str();
}

}  // namespace vmlab
