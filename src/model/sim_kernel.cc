// sim_kernel: dispatch from syscall-shaped calls to the mm/ concepts (the recount behind
// check_invariants() is in check.cc).
#include "vmlab/sim_kernel.h"

#include <algorithm>
#include <memory>
#include <new>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "model/kernel.h"

namespace vmlab {

namespace {
// pageblock_order: the huge page of the PMD level (HPAGE_PMD_ORDER; HUGETLB_PAGE_ORDER, 4 MiB,
// on i386 without PAE), else what one PTE table maps.
uint64_t pageblock_pages(const paging_format& f) {
  const bytes b = f.pmd_huge_size() ? f.pmd_huge_size() : (bytes{f.pte().entries} << f.page_shift);
  return b >> f.page_shift;
}
}  // namespace

kernel::kernel(kernel_profile p, uint64_t total_pages, double fragmentation)
    : prof(std::move(p)),
      geo(prof.paging),
      rmap(&rmap_ops_for(prof.rmap.scheme)),
      pm(prof.zones, prof.paging.page_shift, total_pages, boot_reserved_pages(prof, total_pages),
         pageblock_pages(prof.paging), fragmentation),
      store(static_cast<uint16_t>(prof.paging.pte().entries / 64)) {
  std::vector<uint32_t> entries;
  for (int i = 0; i < prof.paging.nr_levels; ++i) entries.push_back(prof.paging.at(i).entries);
  store.init_uniform(entries);
}

sim_kernel::sim_kernel(std::unique_ptr<kernel> k) : k_(std::move(k)) {}
// No walk of the address spaces: every page-table node and array is in the store's
// pools, which free their chunks whole. So tearing down needs no memory, and a run that
// the host ran out of memory for gives all of it back before the error is printed.
sim_kernel::~sim_kernel() = default;

namespace {

// The profile the machine runs: the preset, its overrides, the machine's CPU (its cache
// line decides slab alignment and NRPTE), the rmap policy settled.
result<kernel_profile> machine_profile(const machine_decl& m) {
  auto prof = find_profile(m.profile);
  if (!prof.ok()) return prof.error();
  for (const auto& [key, value] : m.overrides)
    if (status s = apply_override(prof.value(), key, value); !s.ok()) return s;
  kernel_profile& p = prof.value();
  if (m.cache_line) p.objs.slab.cache_line = m.cache_line;
  if (m.cpus) p.objs.slab.nr_cpus = m.cpus;
  if (status st = rmap_policy_finish(p); !st.ok()) return st;
  return prof;
}

// Whether the machine's memory holds what boot reserves (mem_map and the kernel image)
// in the zone they come from.
status check_memory(const kernel_profile& p, const machine_decl& m) {
  const bytes memory = m.memory ? m.memory : p.default_memory;
  const bytes page = p.paging.page_size();
  if (boot_reserved_pages(p, memory / page) >= (p.zones.highmem ? std::min(memory, p.zones.lowmem_limit) : memory) / page)
    return status::invalid_argument("machine memory of " + std::to_string(memory) + " bytes is too small for " + p.name +
                                    "'s mem_map and kernel image");
  return {};
}

}  // namespace

status sim_kernel::check_machine(const machine_decl& m) {
  auto p = machine_profile(m);
  if (!p.ok()) return p.error();
  return check_memory(p.value(), m);
}

result<std::unique_ptr<sim_kernel>> sim_kernel::create(const machine_decl& m, const std::vector<object_decl>& objects) {
  auto prof = machine_profile(m);
  if (!prof.ok()) return prof.error();
  kernel_profile& p = prof.value();
  if (status st = check_memory(p, m); !st.ok()) return st;
  const bytes memory = m.memory ? m.memory : p.default_memory;
  const bytes page = p.paging.page_size();
  if (m.fragmentation < 0 || m.fragmentation > 1)
    return status::invalid_argument("fragmentation must be between 0 and 1, not " + std::to_string(m.fragmentation));
  auto k = std::make_unique<kernel>(p, memory / page, m.fragmentation);
  kmem_init(*k);
  if (status st = hugetlb_init(*k, m); !st.ok()) return st;
  vmscan_init(*k);
  for (const auto& o : objects) {
    mem_object obj;
    obj.kind = o.kind;
    obj.mshare = o.mshare;
    bytes size = o.size;
    if (o.kind == object_kind::hugetlb) {
      const hstate* h = find_hstate(*k, o.page_size);
      if (!h)
        return status::invalid_argument("object '" + o.name + "': " + p.name + " has no hugetlb pages" +
                                        (o.page_size ? " of " + std::to_string(o.page_size) + " bytes" : "") +
                                        " (it has: " + hstate_sizes(*k) + ")");
      obj.huge_shift = h->shift;
      size = round_up(size, h->size());  // newseg()/hugetlbfs: whole huge pages
    }
    obj.nr_pages = div_round_up(size, page);
    if (k->rmap->per_page_state) {  // struct page's rmap fields (rmap.h)
      obj.mapcount.assign_zero(obj.nr_pages);
      obj.chain.assign_zero(obj.nr_pages);
    }
    k->objects.push_back(std::move(obj));
    k->objects.back().account_to(&k->object_host_bytes);
  }
  return std::unique_ptr<sim_kernel>(new sim_kernel(std::move(k)));
}

namespace {

mm_struct* find_mm(kernel& k, uint32_t pid) {
  auto it = k.mms.find(pid);
  return it == k.mms.end() ? nullptr : it->second.get();
}

status no_such(uint32_t pid) { return status::invalid_argument("no process " + std::to_string(pid)); }

// Resolves [off, off+len) of mapping `map` to addresses.
result<std::pair<vaddr, vaddr>> resolve(mm_struct& mm, uint32_t map, bytes off, bytes len) {
  auto it = mm.maps.find(map);
  if (it == mm.maps.end()) return status::invalid_argument("process " + std::to_string(mm.pid) + " has no mapping #" + std::to_string(map));
  if (off + len > it->second.second || off + len < off)
    return status::invalid_argument("range [" + std::to_string(off) + ", +" + std::to_string(len) + ") lies outside the mapping");
  return std::pair<vaddr, vaddr>{it->second.first + off, it->second.first + off + len};
}

// Checks that [start, end) is mapped with `need` permissions; SIGSEGV text otherwise.
status check_access(mm_struct& mm, vaddr start, vaddr end, uint8_t need) {
  for (vaddr a = start; a < end;) {
    vm_area_struct* v = find_vma(mm, a);
    if (!v) return status::refused("SIGSEGV: access to unmapped address 0x" + fmt_hex(a));
    if ((v->prot & need) != need)
      return status::refused(std::string("SIGSEGV: ") + (need & prot_write ? "write" : "read") +
                              " access to a protected page at 0x" + fmt_hex(a));
    a = v->vm_end;
  }
  return {};
}

// A write to a private file/shm mapping can replace mapped page-cache pages by anonymous
// copies (COW), lowering Mapped: take its maximum first (rmap.h). `whole`: the VMA that
// covers [start, end), when the caller has found one.
void note_mapped_max_before_cow(kernel& k, mm_struct& mm, vaddr start, vaddr end, const vm_area_struct* whole = nullptr) {
  if (whole) {
    if (!whole->is_anon() && !whole->shared) note_mapped_max(k);
    return;
  }
  for (vaddr a = start; a < end;) {
    vm_area_struct* v = find_vma(mm, a);
    if (!v) {
      auto nx = mm.vmas.upper_bound(a);
      if (nx == mm.vmas.end()) return;
      a = nx->second.vm_start;
      continue;
    }
    if (!v->is_anon() && !v->shared) {
      note_mapped_max(k);
      return;
    }
    a = v->vm_end;
  }
}

}  // namespace

std::string fmt_hex(uint64_t v) {
  static const char* d = "0123456789abcdef";
  std::string s;
  do { s.insert(s.begin(), d[v & 15]); v >>= 4; } while (v);
  return s;
}

status sim_kernel::spawn(uint32_t pid) {
  if (find_mm(*k_, pid)) return status::invalid_argument("process " + std::to_string(pid) + " already exists");
  auto r = mm_create(*k_, pid);
  return r.ok() ? status{} : r.error();
}

status sim_kernel::fork(uint32_t parent, uint32_t child) {
  mm_struct* p = find_mm(*k_, parent);
  if (!p) return no_such(parent);
  if (find_mm(*k_, child)) return status::invalid_argument("process " + std::to_string(child) + " already exists");
  return dup_mm(*k_, *p, child);
}

status sim_kernel::exit(uint32_t pid) {
  if (!find_mm(*k_, pid)) return no_such(pid);
  note_mapped_max(*k_);
  exit_mmap(*k_, pid);
  return {};
}

result<vaddr> sim_kernel::mmap(const op& o) {
  mm_struct* mm = find_mm(*k_, o.pid);
  if (!mm) return no_such(o.pid);
  if (o.object >= static_cast<int32_t>(k_->objects.size())) return status::invalid_argument("no such object");
  if (o.object < 0 && o.hugetlb) {
    // MAP_HUGETLB: the kernel backs the mapping with an unlinked hugetlbfs file of its own
    // (hugetlb_file_setup), shared or private as the mapping is.
    const hstate* h = find_hstate(*k_, o.page_size);
    if (!h)
      return status::refused("EINVAL: MAP_HUGETLB: " + k_->prof.name + " has no hugetlb pages" +
                             (o.page_size ? " of " + std::to_string(o.page_size) + " bytes" : "") + " (it has: " +
                             hstate_sizes(*k_) + ")");
    mem_object obj;
    obj.kind = object_kind::hugetlb;
    obj.huge_shift = h->shift;
    obj.nr_pages = round_up(o.len, h->size()) >> k_->geo.shift;
    k_->objects.push_back(std::move(obj));
    k_->objects.back().account_to(&k_->object_host_bytes);
    op file = o;
    file.object = static_cast<int32_t>(k_->objects.size() - 1);
    file.obj_off = 0;
    return do_mmap(*k_, *mm, file);
  }
  if (o.object < 0 && o.shared)
    return status::invalid_argument("shared anonymous mappings are not modelled as such: declare a shm object (the kernel backs them with shmem)");
  if (o.object >= 0) {
    const mem_object& obj = k_->objects[o.object];
    if ((o.obj_off & (k_->geo.size() - 1)) || o.obj_off + o.len > obj.nr_pages * k_->geo.size())
      return status::refused("EINVAL: mapping extends beyond the end of the object (SIGBUS on access)");
  }
  return do_mmap(*k_, *mm, o);
}

status sim_kernel::munmap(uint32_t pid, uint32_t map, bytes off, bytes len) {
  mm_struct* mm = find_mm(*k_, pid);
  if (!mm) return no_such(pid);
  auto r = resolve(*mm, map, off, len);
  if (!r.ok()) return r.error();
  note_mapped_max(*k_);
  return do_munmap(*k_, *mm, r->first, r->second);
}

status sim_kernel::mprotect(uint32_t pid, uint32_t map, bytes off, bytes len, uint8_t prot) {
  mm_struct* mm = find_mm(*k_, pid);
  if (!mm) return no_such(pid);
  auto r = resolve(*mm, map, off, len);
  if (!r.ok()) return r.error();
  return do_mprotect(*k_, *mm, r->first, r->second, prot);
}

status sim_kernel::madvise_dontneed(uint32_t pid, uint32_t map, bytes off, bytes len) {
  return madvise(pid, map, off, len, advice::dontneed);
}

status sim_kernel::madvise(uint32_t pid, uint32_t map, bytes off, bytes len, advice adv) {
  mm_struct* mm = find_mm(*k_, pid);
  if (!mm) return no_such(pid);
  auto r = resolve(*mm, map, off, len);
  if (!r.ok()) return r.error();
  note_mapped_max(*k_);
  return do_madvise(*k_, *mm, r->first, r->second, adv);
}

status sim_kernel::touch(uint32_t pid, uint32_t map, bytes off, bytes len, bytes stride, bool write) {
  mm_struct* mm = find_mm(*k_, pid);
  if (!mm) return no_such(pid);
  auto r = resolve(*mm, map, off, len);
  if (!r.ok()) return r.error();
  auto [start, end] = r.value();
  if (status s = check_access(*mm, start, end, write ? prot_write : prot_read); !s.ok()) return s;
  if (write) note_mapped_max_before_cow(*k_, *mm, start, end);
  for (vaddr a = start; a < end;) {
    vm_area_struct* v = find_vma(*mm, a);
    const vaddr hi = std::min(end, v->vm_end);
    // Keep the stride grid anchored at `start` across VMA boundaries.
    vaddr first = a;
    if (stride > k_->geo.size()) first = start + div_round_up(a - start, stride) * stride;
    if (first < hi)
      if (status s = touch_range(*k_, *mm, *v, first, hi, stride, write); !s.ok()) return s;
    a = hi;
  }
  return {};
}

namespace {

// The sort's arrays, left uninitialised (the passes write every element): zeroing them
// cost as much as a pass.
template <class T>
struct page_buffer {
  explicit page_buffer(size_t count) : data(new T[count]), n(count) {}
  std::unique_ptr<T[]> data;
  size_t n;
  [[nodiscard]] size_t size() const { return n; }
  T& operator[](size_t i) { return data[i]; }
  const T& operator[](size_t i) const { return data[i]; }
  T* begin() const { return data.get(); }
  T* end() const { return data.get() + n; }
  void swap(page_buffer& o) noexcept {
    data.swap(o.data);
    std::swap(n, o.n);
  }
};

// The pages of a touch batch in the order of their PTE tables, each table's pages in
// their order in `pages` (a stable LSD radix sort on the table index, in as few passes
// of at most 11 bits as the index needs, the bits spread evenly over them: fewer buckets
// keep the scatter's write positions in the L1 cache): `first` is the entry index of
// page 0 within its table. T holds a page below `limit` (uint32_t when it can: half the
// memory the passes move).
template <class T>
page_buffer<T> in_table_order(const std::vector<uint64_t>& pages, uint64_t first, uint8_t entries_shift, uint64_t limit) {
  constexpr int kMaxBits = 11;
  const uint64_t max_key = (first + limit) >> entries_shift;
  const int key_bits = std::max(1, 64 - __builtin_clzll(max_key | 1));
  const int passes = (key_bits + kMaxBits - 1) / kMaxBits, bits = (key_bits + passes - 1) / passes;
  const size_t buckets = size_t{1} << bits;
  page_buffer<T> a(pages.size()), b(pages.size());
  // Every pass's digit counts in one read of `pages`, then their running sums.
  std::vector<size_t> start(size_t(passes) * (buckets + 1));
  auto digit = [&](uint64_t pg, int p) { return size_t(((first + pg) >> entries_shift >> (p * bits)) & (buckets - 1)); };
  for (uint64_t pg : pages)
    for (int p = 0; p < passes; ++p) ++start[size_t(p) * (buckets + 1) + digit(pg, p) + 1];
  for (int p = 0; p < passes; ++p)
    for (size_t d = 0, o = size_t(p) * (buckets + 1); d < buckets; ++d) start[o + d + 1] += start[o + d];
  // Pass p reads `pages` (the first) or a, and writes b; then a and b swap.
  const auto pass = [&](const auto& in, int p) {
    size_t* at = start.data() + size_t(p) * (buckets + 1);
    for (uint64_t pg : in) b[at[digit(pg, p)]++] = static_cast<T>(pg);
    a.swap(b);
  };
  pass(pages, 0);
  for (int p = 1; p < passes; ++p) pass(a, p);
  return a;
}

// The batch, checked before anything moves: every page inside the mapping, under a VMA
// that allows the access and whose faults commute across PTE tables, no two of those
// VMAs mapping the same object page (a remap_file_pages alias would let a fault under one
// table read in a page that fault-around under another maps), and room for all of it
// without reclaim. Anything else goes page by page, in order, as it always did (which
// also reports the first bad page after faulting the pages before it, as the kernel would).
bool batch_commutes(kernel& k, mm_struct& mm, vaddr base, uint64_t limit, const std::vector<uint64_t>& pages, bool write) {
  constexpr size_t kMinBatch = 64;  // below this, sorting buys nothing
  constexpr size_t kMaxVmas = 16;   // the alias check is pairwise
  if (!k.touch_in_table_order || pages.size() < kMinBatch) return false;
  const uint8_t need = write ? prot_write : prot_read;
  // The common case first: one VMA covers the whole mapping, so a page below `limit` is
  // under it, and no alias is possible.
  if (const vm_area_struct* one = find_vma(mm, base);
      one && one->vm_start <= base && (one->vm_end - base) >> k.geo.shift >= limit) {
    if (*std::max_element(pages.begin(), pages.end()) >= limit) return false;
    if ((one->prot & need) != need || !faults_commute_across_tables(k, mm, *one)) return false;
    return faults_fit_without_reclaim(k, pages.size());
  }
  std::vector<const vm_area_struct*> vmas;
  const vm_area_struct* v = nullptr;
  for (uint64_t pg : pages) {
    if (pg >= limit) return false;
    const vaddr a = base + (pg << k.geo.shift);
    if (v && a >= v->vm_start && a < v->vm_end) continue;
    v = nullptr;
    for (const vm_area_struct* seen : vmas)
      if (a >= seen->vm_start && a < seen->vm_end) v = seen;
    if (v) continue;
    vm_area_struct* found = find_vma(mm, a);
    if (!found || (found->prot & need) != need || vmas.size() == kMaxVmas ||
        !faults_commute_across_tables(k, mm, *found))
      return false;
    for (const vm_area_struct* seen : vmas) {
      if (seen->object != found->object || found->is_anon()) continue;
      const uint64_t lo = std::max(seen->pgoff, found->pgoff);
      const uint64_t hi = std::min(seen->pgoff + seen->pages(k.geo.shift), found->pgoff + found->pages(k.geo.shift));
      if (lo < hi) return false;
    }
    vmas.push_back(v = found);
  }
  return faults_fit_without_reclaim(k, pages.size());
}

}  // namespace

void sim_kernel::set_touch_in_table_order(bool on) { k_->touch_in_table_order = on; }
uint64_t sim_kernel::touch_batches_in_table_order() const { return k_->touch_batches_in_table_order; }
uint64_t sim_kernel::tables_compacted() const { return k_->tables_compacted; }
uint64_t sim_kernel::tables_by_windows() const { return k_->tables_by_windows; }

status sim_kernel::touch_pages(uint32_t pid, uint32_t map, const std::vector<uint64_t>& pages, bool write) {
  mm_struct* mm = find_mm(*k_, pid);
  if (!mm) return no_such(pid);
  auto it = mm->maps.find(map);
  if (it == mm->maps.end()) return resolve(*mm, map, 0, 0).error();
  const vaddr base = it->second.first;
  const uint8_t shift = k_->geo.shift;
  const uint64_t limit = it->second.second >> shift;
  const uint8_t need = write ? prot_write : prot_read;
  // The VMA that covers the whole mapping, when one does (the common case): no lookup per page.
  vm_area_struct* whole = find_vma(*mm, base);
  if (whole && (whole->vm_start > base || whole->vm_end - base < it->second.second)) whole = nullptr;
  if (write) note_mapped_max_before_cow(*k_, *mm, base, base + it->second.second, whole);
  if (batch_commutes(*k_, *mm, base, limit, pages, write)) {
    ++k_->touch_batches_in_table_order;
    const uint8_t entries_shift = k_->geo.index_bits();
    const uint64_t first = k_->geo.index(base);
    // Writes fault page by page. Reads fault a PTE table's pages together: one
    // read_fault_run per table and VMA (a table under two VMAs gets one run each time its
    // faults pass from one to the other).
    uint64_t new_tables = 0;  // PTE tables the runs add, charged after them
    const auto runs = [&](auto&& sorted) -> status {
      if (write) {
        vm_area_struct* v = nullptr;
        for (const auto pg : sorted) {
          const vaddr a = base + (vaddr{pg} << shift);
          if (!v || a < v->vm_start || a >= v->vm_end) v = find_vma(*mm, a);
          if (status s = fault_page(*k_, *mm, *v, a, true); !s.ok()) return s;
        }
        return {};
      }
      std::vector<uint32_t> run;
      vm_area_struct* v = nullptr;
      const uint64_t entry_mask = k_->geo.entries - 1;
      for (size_t j = 0; j < sorted.size();) {
        const vaddr a = base + (vaddr{sorted[j]} << shift);
        const vaddr table = k_->geo.table_base(a);
        if (!v || a < v->vm_start || a >= v->vm_end) v = find_vma(*mm, a);
        const vaddr lo = std::max(v->vm_start, table), hi = std::min(v->vm_end, table + k_->geo.table_span());
        if constexpr (std::is_same_v<std::decay_t<decltype(sorted[0])>, uint32_t>) {
          if (lo == table && hi == table + k_->geo.table_span()) {
            // The table lies in the VMA: its pages are the run. They become its entry
            // indices where they stand (nothing reads them as pages again).
            const uint64_t key = (first + sorted[j]) >> entries_shift;
            const size_t from = j;
            for (; j < sorted.size() && (first + sorted[j]) >> entries_shift == key; ++j)
              sorted[j] = uint32_t((first + sorted[j]) & entry_mask);
            if (status s = read_fault_run(*k_, *mm, *v, table, &sorted[from], j - from, &new_tables); !s.ok()) return s;
            continue;
          }
        }
        run.clear();
        for (vaddr b = a; j < sorted.size() && (b = base + (vaddr{sorted[j]} << shift)) >= lo && b < hi; ++j)
          run.push_back(k_->geo.index(b));
        if (status s = read_fault_run(*k_, *mm, *v, table, run.data(), run.size(), &new_tables); !s.ok()) return s;
      }
      return {};
    };
    // A read under one VMA: first the tables whose windows decide them, without sorting
    // (read_fault_by_windows); the rest as below.
    std::vector<uint64_t> rest;
    bool by_windows = false;
    status s = !write && whole ? read_fault_by_windows(*k_, *mm, *whole, base, limit, pages, &rest, &new_tables, &by_windows)
                               : status{};
    const std::vector<uint64_t>& todo = by_windows ? rest : pages;
    if (s.ok())
      s = limit <= UINT32_MAX ? runs(in_table_order<uint32_t>(todo, first, entries_shift, limit))
                              : runs(in_table_order<uint64_t>(todo, first, entries_shift, limit));
    // The runs' new PTE tables, charged together (read_fault_run); faults_fit_without_reclaim
    // left room for them.
    if (new_tables && !pt_charge_pte_tables(*k_, *mm, new_tables)) return oom_status(*k_, "a page-table page", pte_gfp(*k_));
    return s;
  }
  vm_area_struct* v = whole;
  for (uint64_t pg : pages) {
    if (pg >= limit) return status::invalid_argument("page " + std::to_string(pg) + " lies outside the mapping");
    const vaddr a = base + (pg << shift);
    // VMAs do not move while we only fault, so the last one found is reused.
    if (!v || a < v->vm_start || a >= v->vm_end) v = find_vma(*mm, a);
    if (!v || (v->prot & need) != need) return check_access(*mm, a, a + k_->geo.size(), need);
    if (status s = fault_page(*k_, *mm, *v, a, write); !s.ok()) return s;
  }
  return {};
}

status sim_kernel::file_io(const op& o) {
  mm_struct* mm = find_mm(*k_, o.pid);
  if (!mm) return no_such(o.pid);
  if (o.object < 0 || o.object >= static_cast<int32_t>(k_->objects.size())) return status::invalid_argument("no such object");
  kernel& k = *k_;
  const mem_object& obj = k.objects[size_t(o.object)];
  if (obj.kind == object_kind::hugetlb) return status::invalid_argument("read/write of a hugetlb object is not modelled");
  const uint64_t pg = k.geo.pages(o.obj_off), n = k.geo.pages(o.len);
  if (pg + n > obj.nr_pages) return status::invalid_argument("the I/O extends beyond the end of the object");
  const bool reading = o.kind != op_kind::write;
  // The buffer first: a buffer the caller cannot write (read) or read (write) is EFAULT
  // before anything moves, as access_ok / the first failing copy makes it.
  // iovecs back to back are one buffer to fault (the same pages, in the same order).
  uint64_t iovs = std::max<uint64_t>(1, o.count);
  bytes iov_len = o.len / iovs, stride = o.stride ? o.stride : iov_len;
  if (stride == iov_len) {
    iovs = 1;
    iov_len = stride = o.len;
  }
  if (o.buffer)
    for (uint64_t i = 0; i < iovs; ++i) {
      auto r = resolve(*mm, o.map, o.off + i * stride, iov_len);
      if (!r.ok()) return r.error();
      if (status s = check_access(*mm, r->first, r->second, reading ? prot_write : prot_read); !s.ok())
        return status::refused("EFAULT: " + s.message());
    }
  if (o.direct) {
    // O_DIRECT (generic_file_direct_write / filemap_read's IOCB_DIRECT path): dirty
    // cached pages of the range are written first; the data skips the page cache.
    filemap_write_and_wait(k, o.object, pg, n);
  } else if (reading ? !filemap_read(k, o.object, pg, n) : !filemap_write(k, o.object, pg, n)) {
    return oom_status(k, "a page-cache page", gfp_zone::highuser);
  }
  // copy_to_user / copy_from_user, or get_user_pages(FOLL_WRITE for a read) for O_DIRECT:
  // the buffer's pages are faulted in, written by a read.
  if (o.buffer)
    for (uint64_t i = 0; i < iovs; ++i)
      if (status s = touch(o.pid, o.map, o.off + i * stride, iov_len, k.geo.size(), reading); !s.ok()) return s;
  return {};
}

status sim_kernel::fsync(uint32_t pid, int32_t object) {
  if (!find_mm(*k_, pid)) return no_such(pid);
  if (object < 0 || object >= static_cast<int32_t>(k_->objects.size())) return status::invalid_argument("no such object");
  filemap_write_and_wait(*k_, object, 0, k_->objects[size_t(object)].nr_pages);
  return {};
}

status sim_kernel::msync(uint32_t pid, uint32_t map, bytes off, bytes len) {
  mm_struct* mm = find_mm(*k_, pid);
  if (!mm) return no_such(pid);
  auto r = resolve(*mm, map, off, len);
  if (!r.ok()) return r.error();
  // msync(MS_SYNC): vfs_fsync_range over each shared file VMA's part of the range; ENOMEM
  // when part of it is unmapped (after syncing the rest, as the kernel does).
  bool unmapped = false;
  for (vaddr a = r->first; a < r->second;) {
    vm_area_struct* v = find_vma(*mm, a);
    if (!v || v->vm_start >= r->second) { unmapped = true; break; }
    if (v->vm_start > a) unmapped = true;
    const vaddr lo = std::max(a, v->vm_start), hi = std::min(r->second, v->vm_end);
    if (v->shared && !v->is_anon())
      filemap_write_and_wait(*k_, v->object, v->pgoff_at(lo, k_->geo.shift), k_->geo.pages(hi - lo));
    a = v->vm_end;
  }
  if (unmapped) return status::refused("ENOMEM: msync range includes unmapped pages");
  return {};
}

result<vaddr> sim_kernel::mremap(const op& o) {
  mm_struct* mm = find_mm(*k_, o.pid);
  if (!mm) return no_such(o.pid);
  auto it = mm->maps.find(o.map);
  if (it == mm->maps.end()) return resolve(*mm, o.map, 0, 0).error();
  auto r = do_mremap(*k_, *mm, it->second.first, it->second.second, o.len, o.maymove, o.fixed, o.addr);
  if (r.ok()) it->second = {r.value(), o.len};
  return r;
}

status sim_kernel::remap_file_pages(const op& o) {
  mm_struct* mm = find_mm(*k_, o.pid);
  if (!mm) return no_such(o.pid);
  auto r = resolve(*mm, o.map, o.off, o.len);
  if (!r.ok()) return r.error();
  return do_remap_file_pages(*k_, *mm, r->first, o.len, k_->geo.pages(o.obj_off));
}

std::array<uint64_t, 2> sim_kernel::page_cache_counts() const { return {k_->fm.written, k_->fm.ra_pages}; }

status sim_kernel::reclaim(bytes len) {
  kernel& k = *k_;
  // As much as the list holds when no length is given (len 0).
  shrink_page_cache(k, len ? k.geo.pages(len) : k.lru.nr_pages);
  return {};
}

const reclaim_stats& sim_kernel::reclaim_counts() const { return k_->lru.st; }

std::array<uint64_t, 3> sim_kernel::watermarks() const { return {k_->lru.wmark_min, k_->lru.wmark_low, k_->lru.wmark_high}; }

const kernel_profile& sim_kernel::profile() const { return k_->prof; }
uint64_t sim_kernel::faults() const { return k_->faults; }
peaks sim_kernel::peak() const {
  peaks p = k_->peak;
  const kernel& k = *k_;
  p.mi = meminfo_now();
  const bytes page = k.geo.size();
  p.mi.mem_free = k.pm.min_free() * page;
  p.mi.low_free = k.pm.min_low_free() * page;
  p.mi.high_free = k.pm.min_high_free() * page;
  p.mi.page_tables = k.peak.page_tables;
  p.mi.mapped = std::max(k.rm.max_mapped, mapped_pages(k)) * page;
  p.mi.slab = k.pm.max_used(page_use::slab) * page;
  p.mi.reverse_maps = k.rm.max_reverse_maps;
  p.mi.cached = k.fm.max_cached * page;
  p.mi.dirty = k.fm.max_dirty * page;
  p.slabs = slabinfo(true);
  return p;
}

meminfo sim_kernel::meminfo_now() const {
  const kernel& k = *k_;
  const phys& pm = k.pm;
  meminfo mi;
  const bytes page = k.geo.size();
  mi.mem_map = div_round_up(pm.total_pages() * k.prof.objs.struct_page, page) * page;
  mi.mem_total = (pm.total_pages() - pm.used(page_use::reserved)) * page;
  mi.mem_free = (pm.total_pages() - pm.used()) * page;
  mi.has_highmem = pm.has_highmem();
  if (mi.has_highmem) {
    mi.low_total = (pm.low_pages() - pm.used(page_use::reserved)) * page;
    mi.low_free = pm.low_free() * page;
    mi.high_total = pm.zone_pages(zone_type::highmem) * page;
    mi.high_free = pm.zone_free(zone_type::highmem) * page;
  }
  mi.page_tables = pm.nr_pagetable;
  mi.has_mapped = k.prof.meminfo.mapped;
  mi.mapped = mapped_pages(k) * page;
  mi.cached = k.fm.nr_cached * page;
  mi.dirty = k.fm.nr_dirty * page;
  mi.writeback = k.fm.nr_writeback * page;
  mi.slab = pm.used(page_use::slab) * page;
  mi.has_reverse_maps = k.prof.meminfo.reverse_maps;
  mi.reverse_maps = k.rm.reverse_maps;
  // hugetlb_report_meminfo(): the default hstate's counts, then every pool's bytes.
  mi.has_hugetlb = !k.huge.hstates.empty();
  mi.has_hugetlb_total = mi.has_hugetlb && k.prof.meminfo.hugetlb_total;
  if (mi.has_hugetlb) {
    const hstate& h = k.huge.hstates.front();
    mi.hugepages_total = h.nr;
    mi.hugepages_free = h.free;
    mi.hugepages_rsvd = h.resv;
    mi.hugepages_surp = h.surplus;
    mi.hugepagesize = h.size();
    for (const hstate& x : k.huge.hstates) mi.hugetlb += x.nr * x.size();
  }
  mi.has_thp = k.prof.huge.thp;
  mi.anon_huge = k.huge.anon_thps * page;
  mi.has_shmem_thp = k.prof.huge.shmem_thp;
  mi.shmem_huge = k.huge.shmem_thps * page;
  mi.shmem_pmd_mapped = k.huge.shmem_pmdmapped * page;
  return mi;
}

std::vector<slab_row> sim_kernel::slabinfo(bool maxima) const {
  std::vector<slab_row> rows;
  for (const auto& c : k_->km.caches)
    if (c) rows.push_back(to_slab_row(*c, maxima));
  return rows;
}

const char* sim_kernel::slabinfo_version() const { return vmlab::slabinfo_version(k_->prof.objs.slabinfo); }

const rmap_work& sim_kernel::rmap_work_total() const { return k_->rm.work; }

namespace {

// The page-table entry for offset `off` of mapping `map`.
result<std::pair<mm_struct*, vaddr>> page_addr(kernel& k, uint32_t pid, uint32_t map, bytes off) {
  mm_struct* mm = find_mm(k, pid);
  if (!mm) return no_such(pid);
  auto r = resolve(*mm, map, off & ~(k.geo.size() - 1), k.geo.size());
  if (!r.ok()) return r.error();
  return std::pair<mm_struct*, vaddr>{mm, r->first};
}

}  // namespace

result<rmap_work> sim_kernel::try_to_unmap(uint32_t pid, uint32_t map, bytes off) {
  auto r = page_addr(*k_, pid, map, off);
  if (!r.ok()) return r.error();
  note_mapped_max(*k_);
  return vmlab::try_to_unmap(*k_, *r->first, r->second);
}

result<uint64_t> sim_kernel::page_referenced(uint32_t pid, uint32_t map, bytes off) {
  auto r = page_addr(*k_, pid, map, off);
  if (!r.ok()) return r.error();
  return vmlab::page_referenced(*k_, *r->first, r->second);
}

std::vector<pte_mapping> sim_kernel::mappings() const {
  kernel& k = *k_;
  std::vector<pte_mapping> out;
  for (auto& [pid, mm] : k.mms)
    for (auto& vma_entry : mm->vmas) {
      const vm_area_struct& v = vma_entry.second;  // clang 14 cannot capture a structured binding
      for_each_pte_table(k, *mm, v, [&, pid = pid](vaddr base, const pte_table* t, vaddr lo, vaddr hi) {
        for (vaddr a = lo; a < hi; a += k.geo.size()) {
          const uint32_t i = uint32_t(k.geo.pages(a - base));
          if (!t->test(i)) continue;
          pte_mapping m;
          m.pid = pid;
          m.addr = a;
          m.writable = (t->writable_word(i >> 6) >> (i & 63)) & 1;
          if ((t->anon_word(i >> 6) >> (i & 63)) & 1) {
            m.kind = pte_mapping::anon;
            m.anon_id = t->anon() ? t->anon()[i] : 0;
          } else if (v.is_anon()) {
            m.kind = pte_mapping::zero_page;
          } else {
            m.object_index = v.object;
            m.pgoff = v.pgoff_at(a, k.geo.shift);
          }
          out.push_back(m);
        }
      });
      for_each_leaf(k, *mm, v.vm_start, v.vm_end, [&, pid = pid](const leaf_ref& l) {
        pte_mapping m;
        m.pid = pid;
        m.addr = l.base;
        m.size = l.size;
        m.writable = l.d->leaf_writable(l.i);
        if (const uint32_t id = l.d->page_of(l.i)) {
          m.kind = pte_mapping::anon;
          m.anon_id = id;
        } else if (v.is_anon()) {
          m.kind = pte_mapping::zero_page;
        } else {
          m.object_index = v.object;
          m.pgoff = v.pgoff_at(l.base, k.geo.shift);
        }
        out.push_back(m);
      }, /*into_shared=*/v.is_hugetlb() && is_mshare_vma(k, v));
    }
  std::sort(out.begin(), out.end(), [](const pte_mapping& a, const pte_mapping& b) {
    return a.pid != b.pid ? a.pid < b.pid : a.addr < b.addr;
  });
  return out;
}

result<page_info> sim_kernel::page_at(uint32_t pid, uint32_t map, bytes off) const {
  kernel& k = *k_;
  auto r = page_addr(k, pid, map, off);
  if (!r.ok()) return r.error();
  auto [mm, addr] = r.value();
  page_info pi;
  vm_area_struct* v = find_vma(*mm, addr);
  if (const leaf_ref l = find_leaf(k, *mm, addr); v && l.d) {
    pi.present = true;
    pi.huge = l.size;
    const uint32_t id = l.d->page_of(l.i);
    pi.anon = id != 0;
    pi.zero_page = !id && v->is_anon();
    pi.mapcount = id ? k.huge.anons[id].entire : 0;
    return pi;
  }
  if (!v) return pi;
  const pte_ref t = pte_lookup(k, *mm, addr);
  const uint32_t i = k.geo.index(addr);
  if (!t || !t->test(i)) return pi;
  pi.present = true;
  const bool anon = (t->anon_word(i >> 6) >> (i & 63)) & 1;
  uint32_t chain = 0;
  if (anon) {
    const uint32_t id = t->anon() ? t->anon()[i] : 0;
    pi.mapcount = id ? k.pm.mapcount(id) : 1;
    chain = id ? k.pm.chain(id) : 0;
    pi.anon = true;
  } else if (!v->is_anon()) {
    const uint64_t pg = v->pgoff_at(addr, k.geo.shift);
    const mem_object& o = k.objects[static_cast<size_t>(v->object)];
    pi.mapcount = static_cast<uint32_t>(object_page_mapcount(k, v->object, pg));
    chain = o.chain.empty() ? 0 : o.chain[pg];
  } else {
    pi.zero_page = true;
  }
  for (uint32_t c = chain; c; c = k.rm.chain_next[c]) ++pi.chain_objects;
  pi.direct = pi.mapcount >= 1 && !chain && !pi.zero_page;
  return pi;
}
uint64_t sim_kernel::cow_faults() const { return k_->cow_faults; }

std::array<uint64_t, 3> sim_kernel::ptshare_counts() const {
  return {k_->pts.attaches, k_->pts.unshares, k_->pts.tlb_flush_all};
}
bool sim_kernel::has_process(uint32_t pid) const { return k_->mms.count(pid) != 0; }
size_t sim_kernel::host_bytes() const { return k_->store.host_bytes(); }
size_t sim_kernel::live_host_bytes() const { return k_->store.live_bytes(); }
size_t sim_kernel::model_host_bytes() const {
  // The big structures that grow with a run, each counted in O(1): page-table nodes, the
  // objects' per-page chunks, and one mm_struct with its PGD node per process (counted
  // by the store) and its map table.
  return k_->store.host_bytes() + k_->object_host_bytes + k_->mms.size() * sizeof(mm_struct) +
         k_->objects.capacity() * sizeof(mem_object);
}

vaddr sim_kernel::map_addr(uint32_t pid, uint32_t map) const {
  auto it = k_->mms.find(pid);
  if (it == k_->mms.end()) return 0;
  auto m = it->second->maps.find(map);
  return m == it->second->maps.end() ? 0 : m->second.first;
}

bytes sim_kernel::map_len(uint32_t pid, uint32_t map) const {
  auto it = k_->mms.find(pid);
  if (it == k_->mms.end()) return 0;
  auto m = it->second->maps.find(map);
  return m == it->second->maps.end() ? 0 : m->second.second;
}

sample sim_kernel::snapshot(const std::string& name) const {
  sample s;
  s.name = name;
  s.mi = meminfo_now();
  s.mi_known = true;
  s.slabs = slabinfo(false);
  s.page_tables = k_->pm.nr_pagetable;
  s.page_tables_workload = k_->pm.nr_pagetable;
  s.pt_pages = k_->pm.tables;
  s.pt_pages_known = true;
  s.cached_workload = s.mi.cached;
  s.cached_known = true;
  s.nr_procs = k_->mms.size();
  std::unordered_map<const void*, uint64_t> shared_counts;  // ptshare_rss, per shared subtree
  for (const auto& [pid, mm] : k_->mms) {
    proc_sample p;
    p.pid = pid;
    p.vmpte = mm->pgtables_bytes;
    p.vmpte_workload = mm->pgtables_bytes;
    p.rss_anon = mm->rss.anon;
    // Entries of shared page tables are in no counter: a walk adds them (ptshare.h).
    const ptshare_rss_part shared = ptshare_rss(*k_, *mm, &shared_counts);
    p.rss_file = mm->rss.file + shared.file;
    p.rss_shmem = mm->rss.shmem + shared.shmem;
    p.min_flt = mm->min_flt;
    p.hugetlb = mm->hugetlb_usage;
    s.procs.push_back(p);
  }
  return s;
}

}  // namespace vmlab
