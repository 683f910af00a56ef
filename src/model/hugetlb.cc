// hugetlb pages: pools, reservations, faults, PMD sharing. The model's mm/hugetlb.c (see
// huge.h for the rules and what is simplified).
#include <algorithm>

#include <fmt/format.h>

#include "model/kernel.h"

namespace vmlab {
namespace {

std::string size_text(bytes b) {
  return b >= GiB ? fmt::format("{} GiB", b / GiB) : fmt::format("{} MiB", b / MiB);
}

hstate& hstate_of(kernel& k, const vm_area_struct& vma) {
  for (hstate& h : k.huge.hstates)
    if (h.shift == vma.huge_shift) return h;
  return k.huge.hstates.front();  // REQUIRES: a hugetlb VMA has a valid hstate
}

// Pageblocks one huge page of h takes.
uint64_t blocks_of(const kernel& k, const hstate& h) {
  return std::max<uint64_t>(1, (h.size() >> k.geo.shift) / k.pm.pageblock_pages());
}

// alloc_surplus_hugetlb_folio: a page beyond the pool, while nr_overcommit_hugepages allows.
// Never a gigantic page (more than one pageblock: the 1 GiB pages of x86-64):
// alloc_surplus_hugetlb_folio() starts with "if (hstate_is_gigantic(h)) return NULL".
bool alloc_surplus(kernel& k, hstate& h) {
  if (blocks_of(k, h) > 1) return false;
  if (h.surplus >= h.max_surplus) return false;
  if (!k.pm.alloc_huge(page_use::hugetlb, blocks_of(k, h))) return false;
  ++h.nr;
  ++h.surplus;
  ++h.free;
  return true;
}

// A free page of h for a fault: from the reservation it holds (`reserved`), else one no
// reservation claims, else a surplus one. false: none (the fault is SIGBUS).
bool take_page(kernel& k, hstate& h, bool reserved) {
  if (reserved) {
    --h.resv;
    --h.free;
    return true;
  }
  if (h.free <= h.resv && !alloc_surplus(k, h)) return false;
  --h.free;
  return true;
}

// A free surplus page goes back to the buddy allocator.
void free_surplus(kernel& k, hstate& h) {
  --h.surplus;
  --h.nr;
  --h.free;
  k.pm.free_huge(page_use::hugetlb, blocks_of(k, h));
}

// A page goes back to the pool; a surplus page back to the buddy allocator.
void put_page(kernel& k, hstate& h) {
  if (h.surplus) {
    --h.surplus;
    --h.nr;
    k.pm.free_huge(page_use::hugetlb, blocks_of(k, h));
    return;
  }
  ++h.free;
}

// Huge page index of addr in the VMA's file.
uint64_t hindex(const kernel& k, const vm_area_struct& vma, vaddr addr) {
  return (vma.pgoff >> (vma.huge_shift - k.geo.shift)) + ((addr - vma.vm_start) >> vma.huge_shift);
}

// A private mapping's reservations (its resv_map): whether page `hidx` of the file still
// has its reservation in this VMA (vma_needs_reservation() == 0: the owner's map has no
// region for it), and the allocation's commit (vma_commit_reservation: the region is
// added whether or not a reservation was used, so a page faulted again after a zap is
// not reserved any more).
bool private_reserved(kernel& k, const vm_area_struct& vma, uint64_t hidx) {
  if (!vma.resv || *vma.resv == 0) return false;
  auto it = k.huge.resv_consumed.find(vma.resv.get());
  return it == k.huge.resv_consumed.end() || !mem_object::test_bit(it->second, hidx);
}

void private_commit(kernel& k, const vm_area_struct& vma, uint64_t hidx, bool reserved) {
  if (!vma.resv) return;
  if (reserved) --*vma.resv;
  mem_object::put_bit(k.huge.resv_consumed[vma.resv.get()], hidx, true);
}

bool is_pmd_level(const kernel& k, const hstate& h) { return h.level == k.prof.paging.nr_levels - 2; }

// want_pmd_share() and vma_shareable(): a shared VMA of PMD-size pages covering the whole
// PUD-aligned window around addr. Never inside an mshare region: its hugetlb file (the
// anonymous one msharefs_create_mapping sets up with hugetlb_file_setup) is mapped by the
// host mm's VMA alone, so huge_pmd_share's i_mmap search finds no partner, and every
// process reaches the host's PMD pages through the shared PUD table anyway (ptshare.h).
bool want_pmd_share(const kernel& k, const vm_area_struct& vma, const hstate& h, vaddr addr) {
  if (!k.prof.huge.pmd_share || !vma.shared || !is_pmd_level(k, h) || h.level < 1) return false;
  if (is_mshare_vma(k, vma)) return false;
  const uint64_t window = k.prof.paging.at(h.level - 1).span();
  const vaddr start = addr & ~(window - 1);
  return vma.vm_start <= start && start + window <= vma.vm_end;
}

share_key key_of(const kernel& k, const vm_area_struct& vma, const hstate& h, vaddr addr) {
  const uint64_t window = k.prof.paging.at(h.level - 1).span();
  const vaddr start = addr & ~(window - 1);
  return {vma.object, (vma.pgoff << k.geo.shift) + (start - vma.vm_start), vma.prot, vma.noreserve};
}

void forget(kernel& k, const pt_dir* d) {
  auto it = k.huge.share_key_of.find(d);
  if (it == k.huge.share_key_of.end()) return;
  k.huge.shareable.erase(it->second);
  k.huge.share_key_of.erase(it);
}

// The table holding the leaves of h for addr: through huge_pmd_share where it applies.
pt_dir* huge_pte_alloc(kernel& k, mm_struct& mm, const vm_area_struct& vma, const hstate& h, vaddr addr, bool* oom) {
  if (h.level == 0) return mm.pgd;
  pt_dir* parent = dir_walk(k, mm, h.level - 1, addr, true, oom);
  if (!parent) return nullptr;
  const uint32_t pi = k.prof.paging.index(h.level - 1, addr);
  if (void* s = parent->slot[pi]) return static_cast<pt_dir*>(s);
  const bool share = want_pmd_share(k, vma, h, addr);
  if (share) {
    auto it = k.huge.shareable.find(key_of(k, vma, h, addr));
    if (it != k.huge.shareable.end()) {
      parent->slot[pi] = it->second;
      ++parent->nr_used;
      pt_get(k, mm, h.level, it->second);
      return it->second;
    }
  }
  void* t = pt_alloc(k, mm, h.level, parent);  // under an mshare PUD table: the host mm's
  if (!t) { *oom = true; return nullptr; }
  parent->slot[pi] = t;
  ++parent->nr_used;
  auto* d = static_cast<pt_dir*>(t);
  if (share) {
    const share_key key = key_of(k, vma, h, addr);
    k.huge.shareable[key] = d;
    k.huge.share_key_of[d] = key;
  }
  return d;
}

// The table holding the leaves of h for addr, if there is one (huge_pte_offset).
pt_dir* huge_pte_offset(kernel& k, mm_struct& mm, const hstate& h, vaddr addr) {
  bool oom = false;
  return dir_walk(k, mm, h.level, addr, false, &oom);
}

// huge_pmd_unshare(): this mm stops pointing at a PMD table others share. true if it did.
bool huge_pmd_unshare(kernel& k, mm_struct& mm, const hstate& h, vaddr addr) {
  if (h.level < 1) return false;
  bool oom = false;
  pt_dir* parent = dir_walk(k, mm, h.level - 1, addr, false, &oom);
  if (!parent) return false;
  const uint32_t pi = k.prof.paging.index(h.level - 1, addr);
  auto* t = static_cast<pt_dir*>(parent->slot[pi]);
  if (!t || parent->is_leaf(pi) || t->refcount <= 1) return false;
  parent->slot[pi] = nullptr;
  --parent->nr_used;
  pt_put(k, mm, h.level, t);  // mm_dec_nr_pmds
  k.forget_walks();
  return true;
}

// The table at addr stops being shareable (its only user's VMA no longer qualifies).
void unshareable(kernel& k, mm_struct& mm, const hstate& h, vaddr addr) {
  if (pt_dir* t = huge_pte_offset(k, mm, h, addr)) forget(k, t);
}

// One hugetlb fault at addr (hugetlb_fault -> hugetlb_no_page / hugetlb_wp), without the
// per-process count (hugetlb_fault below). `table`, if not null, caches this mm's table of
// leaves for addr's window across the calls of one range touch (null at first: found or
// allocated here, then kept).
status do_hugetlb_fault(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr addr, bool write, pt_dir** table) {
  hstate& h = hstate_of(k, vma);
  const vaddr base = addr & ~(h.size() - 1);
  const uint32_t i = k.prof.paging.index(h.level, base);
  mem_object& obj = k.objects[static_cast<size_t>(vma.object)];
  const uint64_t hidx = hindex(k, vma, base);
  const bytes pages = h.size() >> k.geo.shift;
  pt_dir* cached = table ? *table : nullptr;
  // mshare: link the host's PUD table first (find_shared_vma); the fault then runs in the
  // host's tables, where a page another process faulted is already mapped.
  if (!cached && is_mshare_vma(k, vma) && !ptshare_prepare(k, mm, vma, base))
    return oom_status(k, "a page-table page (mshare)", gfp_zone::kernel);
  if (pt_dir* d = cached ? cached : huge_pte_offset(k, mm, h, base); d && d->is_leaf(i)) {
    if (table) *table = d;  // found through the region's tables just linked (mshare)
    // Present. A write to a read-only private page: reuse it if it is this mm's alone,
    // else copy it (hugetlb_wp).
    if (!write || d->leaf_writable(i) || vma.shared) return {};
    ++k.faults;
    const uint32_t id = d->page_of(i);
    if (!id || k.huge.anons[id].entire > 1) {
      // The file's page, or a private page another process maps too: a copy of its own,
      // from this VMA's reservation for the page if it still has it.
      const bool reserved = private_reserved(k, vma, hidx);
      if (!take_page(k, h, reserved))
        return status::refused("SIGBUS: no free huge page of " + size_text(h.size()) +
                               " for a copy-on-write of a private hugetlb page (HugePages_Free " + std::to_string(h.free) +
                               ", HugePages_Rsvd " + std::to_string(h.resv) + ")");
      private_commit(k, vma, hidx, reserved);
      ++k.cow_faults;
      if (id) --k.huge.anons[id].entire;
      k.store.set_leaf_page(d, i, huge_anon_new(k, int8_t(&h - k.huge.hstates.data())));
    }
    k.store.set_leaf_writable(d, i, true);
    return {};
  }
  // Not present for this mm: the access faults.
  ++k.faults;
  bool oom = false;
  pt_dir* d = cached ? cached : huge_pte_alloc(k, mm, vma, h, base, &oom);
  if (!d) return oom_status(k, "a page-table page (hugetlb)", gfp_zone::kernel);
  if (table) *table = d;
  // Attached to a shared PMD table that maps the page already: nothing more to do (and,
  // as huge_pmd_share never calls hugetlb_count_add, nothing for HugetlbPages).
  if (d->is_leaf(i)) return {};
  uint32_t id = 0;
  if (vma.shared) {
    if (!mem_object::test_bit(obj.hpage, hidx)) {
      const bool reserved = mem_object::test_bit(obj.hpage_resv, hidx);
      if (!take_page(k, h, reserved))
        return status::refused("SIGBUS: no free huge page of " + size_text(h.size()) + " at fault (a MAP_NORESERVE "
                               "mapping, HugePages_Free " + std::to_string(h.free) + ", HugePages_Rsvd " +
                               std::to_string(h.resv) + ")");
      mem_object::put_bit(obj.hpage_resv, hidx, false);
      mem_object::put_bit(obj.hpage, hidx, true);
    }
  } else {
    // A private mapping: the file's page if it has it (mapped read-only: a write copies
    // it, hugetlb_wp), else a private page of its own; anon_vma_prepare first, and the
    // page from this VMA's reservation while it has one.
    if (!vma.has_anon_vma)
      if (status s = anon_vma_prepare(k, mm, vma); !s.ok()) return s;
    const bool in_file = mem_object::test_bit(obj.hpage, hidx);
    if (!in_file || write) {
      const bool reserved = private_reserved(k, vma, hidx);
      if (!take_page(k, h, reserved))
        return status::refused("SIGBUS: no free huge page of " + size_text(h.size()) + " at fault (HugePages_Free " +
                               std::to_string(h.free) + ", HugePages_Rsvd " + std::to_string(h.resv) + ")");
      private_commit(k, vma, hidx, reserved);
      if (in_file) ++k.cow_faults;
      id = huge_anon_new(k, int8_t(&h - k.huge.hstates.data()));
    }
  }
  // make_huge_pte(): writable for a shared writable VMA; a private page is mapped
  // writable only by a write fault (a read fault's is write-protected until hugetlb_wp).
  k.store.set_leaf(d, i, no_deposit(), vma.writable() && (vma.shared || write), id);
  // An mshare region's leaf is the host mm's (hugetlb_count_add on vma->vm_mm, the host's
  // VMA): no process's HugetlbPages or RSS counts it.
  if (d->shared_pt) return {};
  mm.hugetlb_usage += h.size();
  if (k.prof.huge.hugetlb_in_rss) mm.rss.file += pages;
  return {};
}

// A fault counts in PGFAULT (k.faults) whether or not it succeeds, but in the process's
// min_flt only when it does: mm_account_fault() returns before current->min_flt++ on
// VM_FAULT_ERROR (the SIGBUS of an empty pool, VM_FAULT_OOM).
status hugetlb_fault(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr addr, bool write, pt_dir** table = nullptr) {
  const uint64_t before = k.faults;
  status s = do_hugetlb_fault(k, mm, vma, addr, write, table);
  if (s.ok() && k.faults != before) ++mm.min_flt;
  return s;
}

}  // namespace

status hugetlb_init(kernel& k, const machine_decl& m) {
  const paging_format& f = k.prof.paging;
  // The default hstate first: the PMD (PSE PGD) leaf, then the larger ones.
  for (bytes size : hugetlb_page_sizes(k.prof)) {
    hstate h;
    h.level = f.leaf_index(size);
    h.shift = static_cast<uint8_t>(__builtin_ctzll(f.at(h.level).leaf_size()));
    k.huge.hstates.push_back(h);
  }
  auto find = [&](bytes size, const char* what) -> result<hstate*> {
    hstate* h = find_hstate(k, size);
    if (!h)
      return status::invalid_argument(fmt::format("{}: {} has no hugetlb pages of {} bytes (it has: {})", what,
                                                  k.prof.name, size, hstate_sizes(k)));
    return h;
  };
  for (const auto& [size, n] : m.hugepages) {
    auto h = find(size, "hugepages");
    if (!h.ok()) return h.error();
    hstate& hs = *h.value();
    hs.requested = n;
    // set_max_huge_pages(): as many as the buddy allocator can give.
    while (hs.nr < n && k.pm.alloc_huge(page_use::hugetlb, blocks_of(k, hs))) {
      ++hs.nr;
      ++hs.free;
    }
  }
  for (const auto& [size, n] : m.overcommit_hugepages) {
    auto h = find(size, "overcommit_hugepages");
    if (!h.ok()) return h.error();
    h.value()->max_surplus = n;
  }
  return {};
}

hstate* find_hstate(kernel& k, bytes size) {
  if (k.huge.hstates.empty()) return nullptr;
  if (size == 0) return &k.huge.hstates.front();
  for (hstate& h : k.huge.hstates)
    if (h.size() == size) return &h;
  return nullptr;
}

std::string hstate_sizes(const kernel& k) {
  std::string out;
  for (const hstate& h : k.huge.hstates) out += (out.empty() ? "" : ", ") + size_text(h.size());
  return out.empty() ? "none" : out;
}

status hugetlb_reserve(kernel& k, vm_area_struct& vma) {
  hstate& h = hstate_of(k, vma);
  // prepare_hugepage_range() / hugetlb_get_unmapped_area(): a hugetlb VMA starts and ends
  // on huge page boundaries; an address that is not (an alignment phase that is not a
  // multiple of the page) is EINVAL, as a MAP_FIXED mapping there would be.
  if ((vma.vm_start | vma.vm_end) & (h.size() - 1))
    return status::refused("EINVAL: a hugetlb mapping must start and end on a " + size_text(h.size()) +
                           " boundary, not at 0x" + fmt_hex(vma.vm_start) + "-0x" + fmt_hex(vma.vm_end));
  if (vma.noreserve) return {};
  mem_object& obj = k.objects[static_cast<size_t>(vma.object)];
  const uint64_t first = hindex(k, vma, vma.vm_start), n = (vma.vm_end - vma.vm_start) >> vma.huge_shift;
  uint64_t chg = n;
  if (vma.shared) {
    // region_chg(): the file's pages in range that are neither allocated nor reserved.
    chg = 0;
    for_each_bit_word(first, n, [&](uint64_t w, uint64_t m) {
      chg += uint64_t(popcount64(m & ~mem_object::word_of(obj.hpage, w) & ~mem_object::word_of(obj.hpage_resv, w)));
    });
  }
  // hugetlb_acct_memory(): the unreserved free pages, topped up with surplus pages
  // (gather_surplus_pages). When they cannot all be had, the ones gathered go back to the
  // buddy allocator ("we free what we've allocated so far") and the pool is as it was.
  uint64_t gathered = 0;
  while (h.free - h.resv < chg && alloc_surplus(k, h)) ++gathered;
  if (h.free - h.resv < chg) {
    for (; gathered; --gathered) free_surplus(k, h);
    return status::refused(fmt::format(
        "ENOMEM: the hugetlb pool of {} pages is short: this mapping must reserve {} more, the pool has {} free of "
        "which {} are reserved (HugePages_Total {}, nr_overcommit_hugepages {}, HugePages_Surp {})",
        size_text(h.size()), chg, h.free, h.resv, h.nr, h.max_surplus, h.surplus));
  }
  h.resv += chg;
  if (vma.shared) {
    for_each_bit_word(first, n, [&](uint64_t w, uint64_t m) {
      if (const uint64_t add = m & ~mem_object::word_of(obj.hpage, w)) obj.hpage_resv.word_ref(w) |= add;
    });
  } else {
    vma.resv = std::make_shared<uint64_t>(chg);
    k.huge.resv_consumed.erase(vma.resv.get());  // a fresh resv_map (the address may be reused)
  }
  return {};
}

// hugetlb_vm_op_close() for a private mapping's piece: the reservations of its range that
// no fault consumed go back ("reserve = (end - start) - region_count(resv, start, end)"),
// whether or not other pieces of the split VMA live on (they keep their own range's); the
// resv_map goes with the last piece. A page another live piece still covers is not this
// piece's to give back (a piece freed on a failed split overlaps the VMA it came from).
void hugetlb_unreserve(kernel& k, vm_area_struct& vma) {
  if (!vma.resv) return;
  hstate& h = hstate_of(k, vma);
  const uint64_t* key = vma.resv.get();
  if (vma.resv.use_count() == 1) {
    h.resv -= *vma.resv;
    *vma.resv = 0;
    k.huge.resv_consumed.erase(key);
    vma.resv.reset();
    return;
  }
  std::vector<std::pair<uint64_t, uint64_t>> others;  // [first, end) of the other live pieces
  for (const auto& [pid, mm] : k.mms)
    for (const auto& [start, v] : mm->vmas)
      if (&v != &vma && v.resv.get() == key)
        others.emplace_back(hindex(k, v, v.vm_start), hindex(k, v, v.vm_end - 1) + 1);
  const std::vector<uint64_t>& consumed = k.huge.resv_consumed[key];
  const uint64_t first = hindex(k, vma, vma.vm_start), end = hindex(k, vma, vma.vm_end - 1) + 1;
  uint64_t unused = 0;
  for (uint64_t i = first; i < end; ++i) {
    if (mem_object::test_bit(consumed, i)) continue;
    bool covered = false;
    for (const auto& [a, b] : others) covered = covered || (a <= i && i < b);
    if (!covered) ++unused;
  }
  unused = std::min(unused, *vma.resv);
  h.resv -= unused;
  *vma.resv -= unused;
  vma.resv.reset();
}

status hugetlb_fault_range(kernel& k, mm_struct& mm, vm_area_struct& vma, vaddr start, vaddr end, bytes stride,
                           bool write) {
  const hstate& h = hstate_of(k, vma);
  const bytes hsize = h.size();
  if (stride < hsize) stride = hsize;  // one fault per huge page, whatever the access pattern inside it
  for (vaddr a = start; a < end;) {
    if (stride == hsize) {
      // Every huge page of the range: skip the part of this table already mapped (as this
      // access needs it), which takes no fault. A process attached to a populated shared
      // PMD table passes over its 512 pages here at once.
      const uint64_t table = k.prof.paging.at(h.level).table_span();
      const uint32_t step = k.prof.paging.at(h.level).leaf_stride();  // entries per huge page
      const vaddr table_end = std::min<vaddr>((a & ~(table - 1)) + table, end);
      const vaddr last = table_end - 1;
      const bool need_write = write && !vma.shared;
      const uint32_t end_slot = k.prof.paging.index(h.level, last) + 1;
      pt_dir* t = huge_pte_offset(k, mm, h, a);
      if (!t || !t->all_leaves(k.prof.paging.index(h.level, a), end_slot, need_write, step)) {
        // Fault the missing pages of this table, with one walk for all of them; stop when
        // the rest is mapped (an attach to a shared table maps it all at once).
        for (; a < table_end; a += hsize) {
          const uint32_t i = k.prof.paging.index(h.level, a);
          if (t && t->is_leaf(i) && (!need_write || t->leaf_writable(i))) continue;
          const bool attach = !t;  // this fault finds (or shares) the table
          if (status s = hugetlb_fault(k, mm, vma, a, write, &t); !s.ok()) return s;
          if (attach && t->all_leaves(i + step, end_slot, need_write, step)) break;
        }
      }
      a = start + div_round_up(table_end - start, stride) * stride;
      continue;
    }
    if (status s = hugetlb_fault(k, mm, vma, a, write); !s.ok()) return s;
    // The next touched address in another huge page.
    const vaddr next_page = (a & ~(hsize - 1)) + hsize;
    a += stride;
    if (a < next_page) a = start + div_round_up(next_page - start, stride) * stride;
  }
  return {};
}

void hugetlb_zap(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr start, vaddr end) {
  // mshare: the region VMA's unmap_page_range op unlinks this process's P4D entries and
  // zaps nothing of the host's (mshare_vm_op_unshare_page_range); the last holder's unlink
  // takes the tables and their leaves (ptshare_drop).
  if (is_mshare_vma(k, vma)) return ptshare_unshare_range(k, mm, start, end);
  hstate& h = hstate_of(k, vma);
  const bytes pages = h.size() >> k.geo.shift;
  const uint64_t table = k.prof.paging.at(h.level).table_span();
  pt_dir* d = nullptr;
  vaddr d_end = 0;  // d is the table of leaves for [d_end - table, d_end)
  for (vaddr a = start & ~(h.size() - 1); a < end; a += h.size()) {
    if (a >= d_end) {
      // A new table's range: one unshare check and one walk for all its pages.
      if (is_pmd_level(k, h) && huge_pmd_unshare(k, mm, h, a)) {
        // The whole window goes at once for this mm (the VMA covered it: it was shared).
        const uint64_t window = k.prof.paging.at(h.level - 1).span();
        a = (a & ~(window - 1)) + window - h.size();
        d_end = 0;
        continue;
      }
      d = huge_pte_offset(k, mm, h, a);
      d_end = (a & ~(table - 1)) + table;
    }
    if (!d) continue;
    const uint32_t i = k.prof.paging.index(h.level, a);
    if (!d->is_leaf(i)) continue;
    const uint32_t id = d->page_of(i);
    k.store.clear_leaf(d, i);
    mm.hugetlb_usage -= h.size();
    if (k.prof.huge.hugetlb_in_rss) mm.rss.file -= pages;
    if (id && --k.huge.anons[id].entire == 0) {
      put_page(k, h);
      huge_anon_release(k, id);
    }
  }
}

void hugetlb_change_protection(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr start, vaddr end,
                               bool writable) {
  if (is_mshare_vma(k, vma)) return mshare_change_protection(k, vma.object, writable);  // the host's leaves
  hstate& h = hstate_of(k, vma);
  for (vaddr a = start; a < end; a += h.size()) {
    if (is_pmd_level(k, h)) {
      if (huge_pmd_unshare(k, mm, h, a)) {
        const uint64_t window = k.prof.paging.at(h.level - 1).span();
        a = (a & ~(window - 1)) + window - h.size();
        continue;
      }
      unshareable(k, mm, h, a);  // its entries' permissions now differ from its key
    }
    pt_dir* d = huge_pte_offset(k, mm, h, a);
    const uint32_t i = k.prof.paging.index(h.level, a);
    // Write permission follows the new protection only for shared pages; a private page
    // stays write-protected until its next write fault (as for 4 KiB pages, mprotect.c).
    if (d && d->is_leaf(i) && (!writable || vma.shared)) k.store.set_leaf_writable(d, i, writable);
  }
}

void hugetlb_split(kernel& k, mm_struct& mm, const vm_area_struct& vma, vaddr addr) {
  hstate& h = hstate_of(k, vma);
  if (!is_pmd_level(k, h) || h.level < 1) return;
  const uint64_t window = k.prof.paging.at(h.level - 1).span();
  if (!(addr & (window - 1))) return;  // a split on the window's edge leaves it whole
  if (!huge_pmd_unshare(k, mm, h, addr)) unshareable(k, mm, h, addr);
}

status copy_hugetlb_range(kernel& k, mm_struct& dst, mm_struct& src, const vm_area_struct& vma) {
  if (is_mshare_vma(k, vma)) return {};  // the child links the host's tables at its first fault
  hstate& h = hstate_of(k, vma);
  const bytes pages = h.size() >> k.geo.shift;
  for (vaddr a = vma.vm_start; a < vma.vm_end; a += h.size()) {
    pt_dir* sd = huge_pte_offset(k, src, h, a);
    if (!sd) continue;
    const uint32_t i = k.prof.paging.index(h.level, a);
    if (!sd->is_leaf(i)) continue;
    bool oom = false;
    pt_dir* dd = huge_pte_alloc(k, dst, vma, h, a, &oom);
    if (!dd) return oom_status(k, "a page-table page (fork)", gfp_zone::kernel);
    if (dd == sd) {  // the child shares the parent's PMD table: nothing to copy under it
      const uint64_t window = k.prof.paging.at(h.level - 1).span();
      a = (a & ~(window - 1)) + window - h.size();
      continue;
    }
    if (dd->is_leaf(i)) continue;
    const uint32_t id = sd->page_of(i);
    bool writable = sd->leaf_writable(i);
    if (id) {
      ++k.huge.anons[id].entire;  // a private page: shared copy-on-write
      k.store.set_leaf_writable(sd, i, false);
      writable = false;
    }
    k.store.set_leaf(dd, i, no_deposit(), writable, id);
    dst.hugetlb_usage += h.size();
    if (k.prof.huge.hugetlb_in_rss) dst.rss.file += pages;
  }
  return {};
}

void hugetlb_forget_table(kernel& k, const void* node) { forget(k, static_cast<const pt_dir*>(node)); }

uint32_t huge_anon_new(kernel& k, int8_t hs) {
  uint32_t id;
  if (!k.huge.free_anons.empty()) {
    id = k.huge.free_anons.back();
    k.huge.free_anons.pop_back();
  } else {
    id = static_cast<uint32_t>(k.huge.anons.size());
    k.huge.anons.emplace_back();
  }
  k.huge.anons[id] = {1, 0, hs, true};
  return id;
}

void huge_anon_release(kernel& k, uint32_t id) {
  k.huge.anons[id] = {};
  k.huge.free_anons.push_back(id);
}

}  // namespace vmlab
