// Differential property test of the rmap schemes: the same random op sequence runs on one
// base profile under every scheme (rmap = none, pte_chain, pte_chain with the two-pointer
// objects of 2.5.28-2.5.34, anon_vma, anon_vma_chain). How a kernel finds a page's PTEs
// must not change which PTEs exist, so after every op
//  * every kernel's check_invariants() is "",
//  * every op has the same outcome (the same address or the same error text),
//  * mappings() are identical as sets of (pid, addr) -> page, with the page made
//    scheme-independent: an object page by (object, pgoff); an anonymous page by the set
//    of (pid, addr) mapping it (its anon_id's sharers; an exclusive one by itself); the
//    zero page by its kind. Writable bits too.
//  * ReverseMaps (kept under every scheme) equals the number of PTEs of pages with an
//    rmap (all but the zero page's) everywhere, and every process's RSS is equal;
//  * a pte_chain kernel's cache holds what the mapping set implies (section 1.5 of the
//    reference notes): ceil(n / NRPTE) objects per page mapped n >= 2 times (n with the
//    two-pointer objects), 0 or 1 for a page mapped once; no other scheme has the cache;
//  * with rmap walks mixed in (the RmapWalks tests): try_to_unmap clears the same PTEs
//    and page_referenced finds the same number under every scheme, each with work that
//    fits how its scheme finds PTEs.
// Only rmap metadata (slab rows, chains, anon_vmas) may differ.
//
// VMA layout is not compared: vma_merge refuses to merge VMAs with different anon_vmas
// (is_mergeable_anon_vma), a restriction 2.4/2.5 did not have, so schemes legitimately end
// with different VMA splits. Two 6.x features make PTEs depend on that layout -
// fault-around (clipped at the VMA) and fork's vma_needs_copy() (per VMA) - so the 6.18
// base runs with fault_around_bytes = 0 and fork_skips_shared = false; RmapDifferential.
// LayoutDependentFeaturesMakeSchemesDiffer shows a case where they do differ.
//
// A failure names the base profile, the seed, the op number and the op, so the seed
// reproduces it. VMLAB_RMAP_PROPERTY_SEEDS=N runs N seeds per base (a soak);
// VMLAB_RMAP_PROPERTY_TRACE=1 prints every op.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/profile.h"
#include "vmlab/op_builder.h"
#include "vmlab/sim_kernel.h"

namespace vmlab {
namespace {

using overrides = std::vector<std::pair<std::string, std::string>>;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kObjectPages = 1024;  // every object: 4 MiB
constexpr uint32_t kMaxProcs = 6;
constexpr size_t kMaxNames = 6;          // live mapping names per process
constexpr uint64_t kMaxMapPages = 128;
constexpr int kOps = 200;
constexpr int kSeedsPerBase = 25;  // x 2 bases, without walks

struct scheme {
  std::string name;
  overrides ov;
};

const std::vector<scheme>& schemes() {
  static const std::vector<scheme> v = {
      {"none", {{"rmap", "none"}}},
      {"pte_chain", {{"rmap", "pte_chain"}}},
      {"pte_chain/1", {{"rmap", "pte_chain"}, {"pte_chain_slots", "1"}}},
      {"anon_vma", {{"rmap", "anon_vma"}}},
      {"anon_vma_chain", {{"rmap", "anon_vma_chain"}}},
  };
  return v;
}

// One PTE, with the page it maps made scheme-independent.
struct canon_pte {
  uint32_t pid = 0;
  vaddr addr = 0;
  int kind = 0;  // pte_mapping::kind_t
  bool writable = false;
  int32_t object = -1;
  uint64_t pgoff = 0;
  std::vector<std::pair<uint32_t, vaddr>> sharers;  // anonymous pages: who maps this page
  bool operator==(const canon_pte&) const = default;
};

std::string to_string(const canon_pte& c) {
  std::ostringstream o;
  o << "pid " << c.pid << " 0x" << std::hex << c.addr << std::dec << (c.writable ? " rw " : " ro ");
  switch (c.kind) {
    case pte_mapping::object: o << "object " << c.object << " pgoff " << c.pgoff; break;
    case pte_mapping::anon:
      o << "anon shared by";
      for (const auto& [p, a] : c.sharers) o << " " << p << ":0x" << std::hex << a << std::dec;
      break;
    default: o << "zero page";
  }
  return o.str();
}

std::vector<canon_pte> canonical(const sim_kernel& k) {
  const std::vector<pte_mapping> m = k.mappings();
  std::map<uint32_t, std::vector<std::pair<uint32_t, vaddr>>> groups;
  for (const pte_mapping& x : m)
    if (x.kind == pte_mapping::anon && x.anon_id) groups[x.anon_id].emplace_back(x.pid, x.addr);
  std::vector<canon_pte> out;
  out.reserve(m.size());
  for (const pte_mapping& x : m) {
    canon_pte c;
    c.pid = x.pid;
    c.addr = x.addr;
    c.kind = x.kind;
    c.writable = x.writable;
    if (x.kind == pte_mapping::object) {
      c.object = x.object_index;
      c.pgoff = x.pgoff;
    } else if (x.kind == pte_mapping::anon) {
      if (x.anon_id) c.sharers = groups[x.anon_id];
      else c.sharers = {{x.pid, x.addr}};
      std::sort(c.sharers.begin(), c.sharers.end());
    }
    out.push_back(std::move(c));
  }
  return out;
}

// A mapping name as created: length, object (-1: anonymous), first object page.
struct name_info {
  uint64_t pages = 0;
  int32_t object = -1;
  uint64_t obj_pg = 0;
  bool shared = false;
  // Never munmapped, mprotected or madvised in part: its range lies inside one VMA under
  // every scheme (VMA merges differ, splits do not), so mremap and remap_file_pages,
  // whose outcome depends on the VMA (vma_to_resize), agree across schemes.
  bool pristine = true;
};
// Per process: its mapping names (inherited at fork).
struct proc_names {
  std::map<uint32_t, name_info> maps;
};

class differential {
 public:
  differential(std::string base, overrides base_ov, uint64_t seed, bool walks)
      : base_(std::move(base)), base_ov_(std::move(base_ov)), seed_(seed), walks_(walks), rng_(seed) {}

  // "" when every property held; else the first violation, with where it happened.
  std::string run() {
    const std::vector<object_decl> objs = {{"shm0", object_kind::shm, kObjectPages * kPage},
                                           {"shm1", object_kind::shm, kObjectPages * kPage},
                                           {"file0", object_kind::file, kObjectPages * kPage}};
    for (const scheme& s : schemes()) {
      machine_decl m;
      m.profile = base_;
      m.overrides = base_ov_;
      m.overrides.insert(m.overrides.end(), s.ov.begin(), s.ov.end());
      auto r = sim_kernel::create(m, objs);
      if (!r.ok()) return "create " + s.name + ": " + r.error().to_string();
      ks_.push_back(std::move(r.value()));
    }
    for (op_no_ = 0; op_no_ < kOps; ++op_no_) {
      desc_.clear();
      std::string e = step();
      if (trace_) std::cerr << "seed " << seed_ << " op " << op_no_ << ": " << desc_ << " -> " << last_ << "\n";
      if (e.empty()) e = check();
      if (!e.empty()) return where() + e;
    }
    for (auto it = procs_.begin(); it != procs_.end();) {
      desc_ = "final exit " + std::to_string(it->first);
      for (auto& k : ks_)
        if (status s = k->exit(it->first); !s.ok()) return where() + "exit failed: " + s.message();
      it = procs_.erase(it);
      if (std::string e = check(); !e.empty()) return where() + e;
    }
    // Everything gone: no rmap object may be left behind under any scheme. (The page
    // cache outlives its mappers: its radix_tree_nodes stay, the same under every scheme.)
    for (size_t i = 0; i < ks_.size(); ++i)
      for (const slab_row& r : ks_[i]->slabinfo(false))
        if (r.active_objs && r.name != "radix_tree_node")
          return where() + schemes()[i].name + ": " + r.name + " has " + std::to_string(r.active_objs) +
                 " objects after every exit";
    return "";
  }

 private:
  uint64_t rnd(uint64_t n) { return n ? std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_) : 0; }
  bool chance(uint64_t percent) { return rnd(100) < percent; }

  std::string where() const {
    std::ostringstream o;
    o << base_ << ": seed " << seed_ << ", op " << op_no_ << " [" << desc_ << "]: ";
    return o.str();
  }

  uint32_t random_pid() {
    auto it = procs_.begin();
    std::advance(it, static_cast<long>(rnd(procs_.size())));
    return it->first;
  }
  // A random mapping name of pid and its length in pages.
  std::pair<uint32_t, uint64_t> random_name(uint32_t pid) {
    auto& m = procs_[pid].maps;
    auto it = m.begin();
    std::advance(it, static_cast<long>(rnd(m.size())));
    return {it->first, it->second.pages};
  }
  // A page-aligned sub-range [off, off+len) of a mapping of n pages, in bytes.
  std::pair<bytes, bytes> random_subrange(uint64_t n) {
    uint64_t a = rnd(n), b = rnd(n);
    if (a > b) std::swap(a, b);
    if (chance(25)) { a = 0; b = n - 1; }
    else if (chance(30)) b = std::min(n - 1, a + rnd(4));
    return {a * kPage, (b - a + 1) * kPage};
  }

  // Applies `f` to every kernel; the outcomes (as text) must agree.
  template <typename F>
  std::string all(F f) {
    std::string first;
    for (size_t i = 0; i < ks_.size(); ++i) {
      const std::string r = f(*ks_[i]);
      if (i == 0) first = r;
      else if (r != first)
        return "outcome differs: " + schemes()[0].name + " '" + first + "' vs " + schemes()[i].name + " '" + r + "'";
    }
    last_ = first;
    return "";
  }
  static std::string text(const status& s) { return s.ok() ? "ok" : s.message(); }

  std::string step() {
    last_.clear();
    if (procs_.empty()) return do_spawn();
    const uint64_t r = rnd(100);
    if (r < 4) return procs_.size() < kMaxProcs ? do_spawn() : do_exit();
    if (r < 12) return procs_.size() < kMaxProcs ? do_fork() : do_exit();
    if (r < 16) return do_exit();
    const uint32_t pid = random_pid();
    auto& names = procs_[pid].maps;
    if (names.empty() || (r < 34 && names.size() < kMaxNames)) return do_mmap(pid);
    if (r < 64 || (r < 70 && !walks_)) return do_touch(pid);
    if (r < 70) return do_walk(pid);
    if (r < 76) return do_munmap(pid);
    if (r < 86) return do_mprotect(pid);
    if (r < 90) return do_remap(pid);
    return do_madvise(pid);
  }

  std::string do_spawn() {
    const uint32_t pid = next_pid_++;
    desc_ = "spawn " + std::to_string(pid);
    if (std::string e = all([&](sim_kernel& k) { return text(k.spawn(pid)); }); !e.empty()) return e;
    if (last_ != "ok") return "spawn failed: " + last_;
    procs_[pid];
    return "";
  }

  std::string do_fork() {
    const uint32_t parent = random_pid(), child = next_pid_++;
    desc_ = "fork " + std::to_string(parent) + " -> " + std::to_string(child);
    if (std::string e = all([&](sim_kernel& k) { return text(k.fork(parent, child)); }); !e.empty()) return e;
    if (last_ != "ok") return "fork failed: " + last_;
    procs_[child] = procs_[parent];
    return "";
  }

  std::string do_exit() {
    const uint32_t pid = random_pid();
    desc_ = "exit " + std::to_string(pid);
    if (std::string e = all([&](sim_kernel& k) { return text(k.exit(pid)); }); !e.empty()) return e;
    procs_.erase(pid);
    return "";
  }

  std::string do_mmap(uint32_t pid) {
    op o;
    o.kind = op_kind::mmap;
    o.pid = pid;
    o.map = next_map_++;
    const uint64_t e = rnd(8);  // 1 .. 128 pages, log-uniform
    const uint64_t pages = std::min(kMaxMapPages, (uint64_t{1} << e) + rnd(uint64_t{1} << e));
    o.len = pages * kPage;
    const uint64_t kind = rnd(5);  // anon private, shm shared, shm private, file shared, file private
    o.shared = kind == 1 || kind == 3;
    o.object = kind == 0 ? -1 : kind <= 2 ? int32_t(rnd(2)) : 2;
    if (o.object >= 0) o.obj_off = rnd(kObjectPages - pages + 1) * kPage;
    const uint64_t pr = rnd(10);
    o.prot = pr < 7 ? uint8_t(prot_read | prot_write) : pr < 9 ? uint8_t(prot_read) : uint8_t(prot_none);
    auto& names = procs_[pid].maps;
    if (!names.empty() && chance(35)) {
      // Right after or right before one of its mappings (as created), so that VMAs become
      // adjacent: merges, find_mergeable_anon_vma, and now and then EEXIST.
      uint32_t name;
    uint64_t n;
    std::tie(name, n) = random_name(pid);
      const name_info nb = names[name];
      const vaddr a = ks_[0]->map_addr(pid, name);
      o.fixed = true;
      const bool after = chance(50) || a < o.len + 64 * KiB;
      o.addr = after ? a + n * kPage : a - o.len;
      // Half of the time the same object, continuing (or preceding) its pages, so that the
      // two can merge.
      if (nb.object >= 0 && chance(50)) {
        const int64_t pg = after ? int64_t(nb.obj_pg + n) : int64_t(nb.obj_pg) - int64_t(pages);
        if (pg >= 0 && uint64_t(pg) + pages <= kObjectPages) {
          o.object = nb.object;
          o.obj_off = uint64_t(pg) * kPage;
          o.shared = chance(50);
        }
      }
    }
    std::ostringstream d;
    d << "mmap pid " << pid << " #" << o.map << " kind " << kind << " pages " << pages << " prot " << int(o.prot);
    if (o.object >= 0) d << " obj " << o.object << "+" << o.obj_off / kPage;
    if (o.fixed) d << " fixed 0x" << std::hex << o.addr << std::dec;
    desc_ = d.str();
    if (std::string err = all([&](sim_kernel& k) {
          auto r = k.mmap(o);
          return r.ok() ? "ok 0x" + std::to_string(r.value()) : r.error().message();
        });
        !err.empty())
      return err;
    if (last_.rfind("ok", 0) == 0) names[o.map] = {pages, o.object, o.obj_off / kPage, o.shared};
    return "";
  }

  std::string do_touch(uint32_t pid) {
    uint32_t name;
    uint64_t n;
    std::tie(name, n) = random_name(pid);
    const bool write = chance(50);
    std::ostringstream d;
    d << "touch pid " << pid << " #" << name << (write ? " write" : " read");
    if (chance(30)) {
      std::vector<uint64_t> pages;
      for (uint64_t i = 0, c = 1 + rnd(8); i < c; ++i) pages.push_back(rnd(n));
      d << " pages";
      for (uint64_t p : pages) d << " " << p;
      desc_ = d.str();
      return all([&](sim_kernel& k) { return text(k.touch_pages(pid, name, pages, write)); });
    }
    bytes off, len;
    std::tie(off, len) = random_subrange(n);
    const bytes stride = chance(25) ? (1 + rnd(4)) * kPage : kPage;
    d << " off " << off / kPage << " pages " << len / kPage << " stride " << stride / kPage;
    desc_ = d.str();
    return all([&](sim_kernel& k) { return text(k.touch(pid, name, off, len, stride, write)); });
  }

  // An rmap walk on one page: try_to_unmap (every scheme must clear the same PTEs) or
  // page_referenced (every scheme must find the same number). Each scheme's work must
  // fit how it finds PTEs: pte_chain walks exactly its chain (one entry per PTE), the
  // object schemes visit at least the VMAs they walk, 2.4 scans at least what it finds.
  std::string do_walk(uint32_t pid) {
    uint32_t name;
    uint64_t n;
    std::tie(name, n) = random_name(pid);
    const bytes off = rnd(n) * kPage;
    const bool unmap = chance(60);
    desc_ = std::string(unmap ? "try_to_unmap" : "page_referenced") + " pid " + std::to_string(pid) + " #" +
            std::to_string(name) + " page " + std::to_string(off / kPage);
    std::string bad;
    std::string e = all([&](sim_kernel& k) -> std::string {
      auto pi = k.page_at(pid, name, off);
      if (!pi.ok()) return pi.error().message();
      const bool rmapped = pi->present && !pi->zero_page;  // a page with an rmap
      if (!unmap) {
        auto r = k.page_referenced(pid, name, off);
        if (!r.ok()) return r.error().message();
        if (rmapped && r.value() != pi->mapcount)
          bad = "page_referenced found " + std::to_string(r.value()) + " of " + std::to_string(pi->mapcount) + " PTEs";
        return "found " + std::to_string(r.value());
      }
      auto r = k.try_to_unmap(pid, name, off);
      if (!r.ok()) return r.error().message();
      const rmap_work& w = r.value();
      auto fail = [&](const std::string& why) {
        if (bad.empty())
          bad = rmap_scheme_of(k) + ": " + why + " (" + work_text(w) + ", mapcount " + std::to_string(pi->mapcount) + ")";
      };
      if (w.walks != (rmapped ? 1u : 0u)) fail("walks");
      if (rmapped && w.unmapped != pi->mapcount) fail("did not clear every PTE of the page");
      const std::string sc = rmap_scheme_of(k);
      if (sc == "pte_chain") {
        if (w.chain_entries != w.unmapped || w.pt_walks != w.unmapped) fail("chain entries != PTEs");
        if (w.vmas_visited || w.ptes_scanned) fail("object-rmap work");
        if (w.chain_objects != (pi->direct ? 0 : pi->chain_objects)) fail("chain objects");
      } else if (sc == "none") {
        if (w.ptes_scanned < w.unmapped || w.chain_entries || w.vmas_visited) fail("scan");
      } else {  // anon_vma, anon_vma_chain
        if (w.pt_walks < w.unmapped || w.vmas_visited < w.pt_walks || w.chain_entries || w.ptes_scanned)
          fail("object walk");
      }
      return "unmapped " + std::to_string(w.unmapped);
    });
    if (!e.empty()) return e;
    return bad;
  }

  static std::string rmap_scheme_of(const sim_kernel& k) { return rmap_scheme_name(k.profile().rmap.scheme); }
  static std::string work_text(const rmap_work& w) {
    std::ostringstream o;
    o << "walks " << w.walks << " entries " << w.chain_entries << " objects " << w.chain_objects << " vmas "
      << w.vmas_visited << " pt_walks " << w.pt_walks << " scanned " << w.ptes_scanned << " unmapped " << w.unmapped;
    return o.str();
  }

  // mremap (shrink, grow in place or moved, to a fixed address now and then) or
  // remap_file_pages of a mapping that lies in one VMA. The name follows a moved mapping.
  std::string do_remap(uint32_t pid) {
    uint32_t name;
    uint64_t n;
    std::tie(name, n) = random_name(pid);
    name_info& ni = procs_[pid].maps[name];
    if (!ni.pristine) return do_touch(pid);
    std::ostringstream d;
    if (ni.shared && ni.object >= 0 && chance(30)) {
      bytes off, len;
      std::tie(off, len) = random_subrange(n);
      const uint64_t pg = rnd(kObjectPages - len / kPage + 1);
      d << "remap_file_pages pid " << pid << " #" << name << " off " << off / kPage << " pages " << len / kPage
        << " to pgoff " << pg;
      desc_ = d.str();
      const op o = ops::remap_file_pages(pid, name, off, len, pg * kPage);
      ni.pristine = false;  // a nonlinear range is a VMA of its own
      return all([&](sim_kernel& k) { return text(k.remap_file_pages(o)); });
    }
    const uint64_t pages = std::max<uint64_t>(1, chance(40) ? n - rnd(n) : n + 1 + rnd(kMaxMapPages));
    op o = ops::mremap(pid, name, pages * kPage).maymove(chance(70));
    if (o.maymove && chance(25)) {
      // Somewhere in the first few GiB above 1 GiB: now over another mapping, now not.
      o = ops::mremap(pid, name, o.len).to((vaddr{1} << 30) + rnd(1 << 10) * 64 * kPage);
    }
    d << "mremap pid " << pid << " #" << name << " pages " << n << " -> " << pages << (o.maymove ? " maymove" : "");
    if (o.fixed) d << " fixed 0x" << std::hex << o.addr << std::dec;
    desc_ = d.str();
    if (std::string err = all([&](sim_kernel& k) {
          auto r = k.mremap(o);
          return r.ok() ? "ok 0x" + std::to_string(r.value()) : r.error().message();
        });
        !err.empty())
      return err;
    if (last_.rfind("ok", 0) == 0) {
      ni.pages = pages;
      if (o.fixed)  // MREMAP_FIXED unmapped whatever was there: those names are no longer whole
        for (auto& [other, info] : procs_[pid].maps) {
          const vaddr a = ks_[0]->map_addr(pid, other);
          if (other != name && a < o.addr + o.len && o.addr < a + info.pages * kPage) info.pristine = false;
        }
    }
    return "";
  }

  std::string do_munmap(uint32_t pid) {
    uint32_t name;
    uint64_t n;
    std::tie(name, n) = random_name(pid);
    procs_[pid].maps[name].pristine = false;
    bytes off, len;
    std::tie(off, len) = random_subrange(n);
    desc_ = "munmap pid " + std::to_string(pid) + " #" + std::to_string(name) + " off " + std::to_string(off / kPage) +
            " pages " + std::to_string(len / kPage);
    return all([&](sim_kernel& k) { return text(k.munmap(pid, name, off, len)); });
  }

  std::string do_mprotect(uint32_t pid) {
    uint32_t name;
    uint64_t n;
    std::tie(name, n) = random_name(pid);
    procs_[pid].maps[name].pristine = false;
    bytes off, len;
    std::tie(off, len) = random_subrange(n);
    static const uint8_t prots[] = {prot_none, prot_read, prot_read | prot_write, prot_read | prot_write};
    const uint8_t prot = prots[rnd(4)];
    desc_ = "mprotect pid " + std::to_string(pid) + " #" + std::to_string(name) + " off " + std::to_string(off / kPage) +
            " pages " + std::to_string(len / kPage) + " prot " + std::to_string(prot);
    return all([&](sim_kernel& k) { return text(k.mprotect(pid, name, off, len, prot)); });
  }

  std::string do_madvise(uint32_t pid) {
    uint32_t name;
    uint64_t n;
    std::tie(name, n) = random_name(pid);
    procs_[pid].maps[name].pristine = false;
    bytes off, len;
    std::tie(off, len) = random_subrange(n);
    desc_ = "madvise_dontneed pid " + std::to_string(pid) + " #" + std::to_string(name) + " off " +
            std::to_string(off / kPage) + " pages " + std::to_string(len / kPage);
    return all([&](sim_kernel& k) { return text(k.madvise_dontneed(pid, name, off, len)); });
  }

  std::string check() {
    for (size_t i = 0; i < ks_.size(); ++i)
      if (std::string e = ks_[i]->check_invariants(); !e.empty()) return schemes()[i].name + ": check_invariants: " + e;
    const std::vector<canon_pte> ref = canonical(*ks_[0]);
    const meminfo mi0 = ks_[0]->meminfo_now();
    // ReverseMaps counts every PTE of a page with an rmap: all but the zero page's.
    const uint64_t ptes = uint64_t(
        std::count_if(ref.begin(), ref.end(), [](const canon_pte& c) { return c.kind != pte_mapping::zero_page; }));
    if (mi0.reverse_maps != ptes)
      return "ReverseMaps " + std::to_string(mi0.reverse_maps) + " != PTEs of rmapped pages " + std::to_string(ptes);
    for (size_t i = 0; i < ks_.size(); ++i)
      if (std::string e = check_chains(*ks_[i], ref); !e.empty()) return schemes()[i].name + ": " + e;
    const sample s0 = ks_[0]->snapshot("");
    for (size_t i = 1; i < ks_.size(); ++i) {
      const std::string who = schemes()[0].name + " vs " + schemes()[i].name + ": ";
      const std::vector<canon_pte> got = canonical(*ks_[i]);
      if (got != ref) {
        size_t j = 0;
        while (j < ref.size() && j < got.size() && ref[j] == got[j]) ++j;
        return who + "mappings differ at entry " + std::to_string(j) + " of " + std::to_string(ref.size()) + "/" +
               std::to_string(got.size()) + ": " + (j < ref.size() ? to_string(ref[j]) : "(none)") + " vs " +
               (j < got.size() ? to_string(got[j]) : "(none)");
      }
      const meminfo mi = ks_[i]->meminfo_now();
      if (mi.reverse_maps != mi0.reverse_maps)
        return who + "ReverseMaps " + std::to_string(mi0.reverse_maps) + " vs " + std::to_string(mi.reverse_maps);
      const sample s = ks_[i]->snapshot("");
      if (s.procs.size() != s0.procs.size()) return who + "process counts differ";
      for (size_t p = 0; p < s.procs.size(); ++p) {
        const proc_sample &a = s0.procs[p], &b = s.procs[p];
        if (a.pid != b.pid || a.rss_anon != b.rss_anon || a.rss_file != b.rss_file || a.rss_shmem != b.rss_shmem)
          return who + "RSS of pid " + std::to_string(a.pid) + " differs";
      }
    }
    return "";
  }

  // The pte_chain cache against the mapping set alone (section 1.5): a page mapped n >= 2
  // times holds ceil(n / NRPTE) objects (n with the two-pointer objects); a page mapped
  // once holds 0, or 1 if it was shared before and page_referenced has not collapsed it
  // (never with the two-pointer objects, which collapse on removal). Other schemes have
  // no pte_chain cache at all.
  static std::string check_chains(const sim_kernel& k, const std::vector<canon_pte>& ptes) {
    const rmap_policy& rp = k.profile().rmap;
    bool has = false;
    uint64_t active = 0;
    for (const slab_row& r : k.slabinfo(false))
      if (r.name == "pte_chain") { has = true; active = r.active_objs; }
    if (has != (rp.scheme == rmap_scheme::pte_chain)) return "pte_chain cache present under the wrong scheme";
    if (!has) return "";
    std::map<std::pair<int32_t, uint64_t>, uint64_t> object_pages;
    std::map<std::vector<std::pair<uint32_t, vaddr>>, uint64_t> anon_pages;
    for (const canon_pte& c : ptes)
      if (c.kind == pte_mapping::object) ++object_pages[{c.object, c.pgoff}];
      else if (c.kind == pte_mapping::anon) anon_pages[c.sharers] = c.sharers.size();
    const uint64_t r = rp.pte_chain_slots;
    uint64_t need = 0, ones = 0;
    auto add = [&](uint64_t n) {
      if (n >= 2) need += r == 1 ? n : (n + r - 1) / r;
      else ones += n == 1;
    };
    for (const auto& [pg, n] : object_pages) add(n);
    for (const auto& [who, n] : anon_pages) add(n);
    const uint64_t most = need + (rp.collapse_on_remove ? 0 : ones);
    if (active < need || active > most)
      return "pte_chain active objects " + std::to_string(active) + " outside [" + std::to_string(need) + ", " +
             std::to_string(most) + "] (NRPTE " + std::to_string(r) + ")";
    return "";
  }

  std::string base_;
  overrides base_ov_;
  uint64_t seed_;
  bool walks_;  // also try_to_unmap / page_referenced ops
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<sim_kernel>> ks_;
  std::map<uint32_t, proc_names> procs_;
  uint32_t next_pid_ = 1;
  uint32_t next_map_ = 0;
  int op_no_ = 0;
  std::string desc_;
  std::string last_;  // the agreed outcome of the last op
  bool trace_ = std::getenv("VMLAB_RMAP_PROPERTY_TRACE") != nullptr;
};

int seeds(int dflt) {
  const char* env = std::getenv("VMLAB_RMAP_PROPERTY_SEEDS");
  return env ? std::max(1, std::atoi(env)) : dflt;
}

void run_seeds(const std::string& base, const overrides& ov, uint64_t first_seed, int n, bool walks) {
  for (int i = 0; i < n; ++i) {
    const uint64_t seed = first_seed + uint64_t(i);
    differential d(base, ov, seed, walks);
    const std::string err = d.run();
    EXPECT_EQ(err, "") << "reproduce: base " << base << ", seed " << seed << (walks ? ", with rmap walks" : "");
    if (!err.empty()) break;
  }
}

const overrides k618 = {{"fault_around_bytes", "0"}, {"fork_skips_shared", "false"}};

// i386 2-level, legacy layout, fork copies every VMA, no fault-around: nothing in the
// PTEs depends on the VMA layout.
TEST(RmapDifferential, AllSchemesMapTheSamePagesOn2526) {
  run_seeds("linux-2.5.26", {}, 1000, seeds(kSeedsPerBase), false);
}

// x86-64 4-level with PTI and PT_RECLAIM; see the header for the two overrides.
TEST(RmapDifferential, AllSchemesMapTheSamePagesOn618) {
  run_seeds("linux-6.18", k618, 2000, seeds(kSeedsPerBase), false);
}

// The same op streams with rmap walks mixed in: every scheme's try_to_unmap must clear the
// same PTEs (then the mappings still agree) and page_referenced must find the same count.
// (These found the 2.4 scan taking every PTE of the object for the page - fixed in
// 5409acc; RmapWalk.NoneSchemeScanMatchesOnlyThePage in rmap_test.cc pins it.)
TEST(RmapDifferential, RmapWalksFindTheSamePtesOn2526) { run_seeds("linux-2.5.26", {}, 3000, seeds(10), true); }
TEST(RmapDifferential, RmapWalksFindTheSamePtesOn618) { run_seeds("linux-6.18", k618, 4000, seeds(10), true); }

// Why the 6.18 base turns fault-around and the fork shortcut off: with them, the PTEs
// depend on the VMA layout, and the layout legitimately depends on the scheme. P1 writes
// an 8-page anonymous VMA A and forks P2; P2's copy of A is on two anon_vmas (two AVCs).
// P2 maps an anonymous VMA B right after A and reads B's first page (the zero page; no
// anon_vma). anon_vma_chain refuses the merge of A and B (is_mergeable_anon_vma: A "had
// uncowed parents", its chain is not singular); the other schemes merge them (2.6.7 and
// earlier had no such rule). P2 forks P3: vma_needs_copy() is false for the separate B
// (no anon_vma), so P3 does not get B's zero-page PTE under anon_vma_chain, and does get
// it, as part of the merged VMA, under the others. VMAs: P1 1 + P2 1 + P3 1 = 3 merged,
// 1 + 2 + 2 = 5 separate.
TEST(RmapDifferential, LayoutDependentFeaturesMakeSchemesDiffer) {
  for (const scheme& sc : schemes()) {
    SCOPED_TRACE(sc.name);
    machine_decl m;
    m.profile = "linux-6.18";
    m.overrides = sc.ov;
    auto r = sim_kernel::create(m, {});
    ASSERT_TRUE(r.ok());
    sim_kernel& k = *r.value();
    op a;
    a.kind = op_kind::mmap;
    a.pid = 1;
    a.map = 0;
    a.len = 8 * kPage;
    ASSERT_TRUE(k.spawn(1).ok());
    auto at = k.mmap(a);
    ASSERT_TRUE(at.ok());
    ASSERT_TRUE(k.touch(1, 0, 0, 8 * kPage, kPage, true).ok());
    ASSERT_TRUE(k.fork(1, 2).ok());
    op b = a;
    b.pid = 2;
    b.map = 1;
    b.fixed = true;
    b.addr = at.value() + 8 * kPage;
    ASSERT_TRUE(k.mmap(b).ok());
    ASSERT_TRUE(k.touch(2, 1, 0, kPage, kPage, false).ok());
    ASSERT_TRUE(k.fork(2, 3).ok());
    const bool avc = k.profile().rmap.scheme == rmap_scheme::anon_vma_chain;
    auto pi = k.page_at(3, 1, 0);
    ASSERT_TRUE(pi.ok());
    EXPECT_EQ(pi->present, !avc);
    EXPECT_EQ(pi->zero_page, !avc);
    uint64_t vmas = 0;
    for (const slab_row& row : k.slabinfo(false))
      if (row.name == "vm_area_struct") vmas = row.active_objs;
    EXPECT_EQ(vmas, avc ? 5u : 3u);
    EXPECT_EQ(k.check_invariants(), "");
  }
}

}  // namespace
}  // namespace vmlab
