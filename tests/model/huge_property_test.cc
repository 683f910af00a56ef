// Property tests of the huge page model: random op sequences mixing hugetlb files and
// MAP_HUGETLB mappings (2 MiB and 1 GiB pages on linux-6.18, 4 MiB on linux-2.5.43-mm2,
// 2 MiB PAE on linux-2.6.15, 16 MiB on linux-2.6.15-ppc64 (every eighth PMD entry, in
// huge-page-only areas that refuse many mappings); shared, private, MAP_NORESERVE, MAP_LOCKED, at and off 1 GiB
// boundaries so that PMD tables get shared and unshared), anonymous and shmem memory
// under every THP policy with and without MADV_HUGEPAGE / MADV_NOHUGEPAGE, fork, exit,
// and munmap / mprotect / MADV_DONTNEED over ranges that cut huge pages and 1 GiB
// windows. Machines are fresh, fragmented or small, pools short or with surplus pages.
//
// The oracle is check_invariants() after every op, refused ones included (ENOMEM at mmap,
// SIGBUS at a fault, EINVAL for a split off a huge page boundary, SIGSEGV): a refusal is
// a fine outcome, an inconsistent state is not. Two more properties:
//  * a hugetlb mmap refused for want of pool pages leaves no mapping and the pool figures
//    (HugePages_Total/Free/Rsvd/Surp) as they were (gather_surplus_pages gives back what
//    it gathered);
//  * after every process exits, no page table, THP or PMD-mapped shmem folio is left.
// Only refusals are accepted as failures of an op: any other error (invalid_argument) is
// the generator's bug or the model's, and fails the test.
//
// A failure names the configuration, the seed and the op number, and prints the op, so
// `--gtest_filter` and the seed reproduce it; VMLAB_PROPERTY_TRACE=1 prints every op and
// VMLAB_PROPERTY_SEEDS=N soaks with N seeds per configuration.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "model/profile.h"
#include "vmlab/op_builder.h"
#include "vmlab/sim_kernel.h"

namespace vmlab {
namespace {

constexpr bytes kPage = 4 * KiB;
constexpr uint32_t kMaxProcs = 5;
constexpr int kOps = 200;  // per seed
constexpr int kSeeds = 4;  // per configuration

struct huge_config {
  std::string name;
  std::string profile;
  std::vector<std::pair<std::string, std::string>> overrides;
  double fragmentation = 0;
  bytes memory = 0;  // 0: the profile's
  // What the configuration's sequences must have exercised, over all its seeds (so that a
  // change to the generator cannot quietly stop covering them).
  bool expect_hugetlb = true;     // a hugetlb page mapped (none without a free pageblock)
  bool expect_share = false;      // a PMD table in two address spaces at once
  bool expect_thp = false;        // an anonymous THP
  bool expect_shmem_pmd = false;  // a shmem folio mapped by a PMD
};

// What the ops of a run did, beyond keeping the invariants.
struct coverage {
  uint64_t shared_tables = 0;  // ops after which some table was in two address spaces' VmPTE
  uint64_t thp = 0;            // ops after which AnonHugePages > 0
  uint64_t shmem_pmd = 0;      // ops after which ShmemPmdMapped > 0
  uint64_t hugetlb_mapped = 0; // ops after which some process had HugetlbPages
  uint64_t pool_enomem = 0, sigbus = 0, einval = 0, other_refusals = 0, ok = 0;
  void add(const coverage& c) {
    shared_tables += c.shared_tables;
    thp += c.thp;
    shmem_pmd += c.shmem_pmd;
    hugetlb_mapped += c.hugetlb_mapped;
    pool_enomem += c.pool_enomem;
    sigbus += c.sigbus;
    einval += c.einval;
    other_refusals += c.other_refusals;
    ok += c.ok;
  }
  [[nodiscard]] std::string text() const {
    std::ostringstream o;
    o << "shared tables " << shared_tables << ", THP " << thp << ", shmem PMD " << shmem_pmd << ", hugetlb mapped "
      << hugetlb_mapped << "; ok " << ok << ", pool ENOMEM " << pool_enomem << ", SIGBUS " << sigbus << ", EINVAL "
      << einval << ", other refusals " << other_refusals;
    return o.str();
  }
};

// What the generator knows of a mapping name.
struct map_rec {
  uint32_t name = 0;
  bytes len = 0;
  bytes hpage = 0;  // hugetlb: its page size; 0: 4 KiB pages
};

enum obj_index : int32_t { kShm = 0, kFile = 1, kHugeBig = 2, kHugeSmall = 3, kHugeGiant = 4 };

class huge_runner {
 public:
  huge_runner(const huge_config& c, uint64_t seed) : cfg_(c), seed_(seed), rng_(seed) {}

  std::string run() {
    machine_decl m;
    m.profile = cfg_.profile;
    m.overrides = cfg_.overrides;
    m.fragmentation = cfg_.fragmentation;
    m.memory = cfg_.memory;
    x86_ = cfg_.profile == "linux-6.18";
    i386_ = cfg_.profile == "linux-2.5.43-mm2";
    ppc64_ = cfg_.profile == "linux-2.6.15-ppc64";
    hpage_ = i386_ ? 4 * MiB : ppc64_ ? 16 * MiB : 2 * MiB;  // the default hstate
    const bool small = cfg_.memory && cfg_.memory <= GiB;
    if (x86_) {
      m.hugepages = {{2 * MiB, small ? 32 + rnd(32) : 300 + rnd(700)}, {GiB, small ? 0 : rnd(3)}};
      if (chance(50)) m.overcommit_hugepages = {{2 * MiB, rnd(64)}};
      objects_ = {{"shm", object_kind::shm, 64 * MiB},
                  {"file", object_kind::file, 64 * MiB},
                  {"hbig", object_kind::hugetlb, 2 * GiB, 2 * MiB},
                  {"hsmall", object_kind::hugetlb, 64 * MiB, 2 * MiB},
                  {"hgiant", object_kind::hugetlb, 2 * GiB, GiB}};
    } else {
      // 16 MiB pages: a smaller pool, so that the 256 MiB file (16 pages) can exhaust it.
      m.hugepages = {{hpage_, ppc64_ ? 8 + rnd(16) : 24 + rnd(48)}};
      objects_ = {{"shm", object_kind::shm, 64 * MiB},
                  {"file", object_kind::file, 64 * MiB},
                  {"hbig", object_kind::hugetlb, 256 * MiB, 0},
                  {"hsmall", object_kind::hugetlb, 32 * MiB, 0}};
    }
    auto r = sim_kernel::create(m, objects_);
    if (!r.ok()) return "create: " + r.error().to_string();
    k_ = std::move(r.value());
    if (std::string e = k_->check_invariants(); !e.empty()) return "after boot: " + e;

    for (op_no_ = 0; op_no_ < kOps; ++op_no_) {
      desc_.clear();
      last_error_.clear();
      std::string e;
      try {
        e = step();
      } catch (const std::exception& x) {  // the model must not throw; name the op that did
        return where() + "exception: " + x.what();
      }
      if (trace_) std::cerr << "op " << op_no_ << ": " << desc_ << (last_error_.empty() ? "" : " -> " + last_error_) << "\n";
      if (!e.empty()) return where() + e;
      if (e = k_->check_invariants(); !e.empty()) return where() + "check_invariants: " + e;
      observe();
    }
    std::vector<uint32_t> pids;
    for (const auto& [pid, maps] : procs_) pids.push_back(pid);
    for (uint32_t pid : pids) {
      desc_ = "final exit " + std::to_string(pid);
      if (status s = k_->exit(pid); !s.ok()) return where() + "exit failed: " + s.message();
      procs_.erase(pid);
      if (std::string e = k_->check_invariants(); !e.empty()) return where() + "check_invariants: " + e;
    }
    const sample s = k_->snapshot("end");
    for (int l = 0; l < kLevels; ++l)
      if (s.pt_pages[l] != 0)
        return where() + "after every exit, " + level_name(static_cast<level>(l)) + " tables = " + std::to_string(s.pt_pages[l]);
    if (s.page_tables != 0) return where() + "after every exit, PageTables = " + std::to_string(s.page_tables);
    if (s.mi.anon_huge != 0) return where() + "after every exit, AnonHugePages = " + std::to_string(s.mi.anon_huge);
    if (s.mi.shmem_pmd_mapped != 0) return where() + "after every exit, ShmemPmdMapped = " + std::to_string(s.mi.shmem_pmd_mapped);
    return "";
  }

 private:
  uint64_t rnd(uint64_t n) { return n ? std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_) : 0; }
  bool chance(uint64_t percent) { return rnd(100) < percent; }

  // Counts what the op just applied did and left (coverage, not correctness).
  void observe() {
    const std::string& m = last_error_;
    if (m.empty()) ++cov_.ok;
    else if (m.find("hugetlb pool") != std::string::npos) ++cov_.pool_enomem;
    else if (m.rfind("SIGBUS", 0) == 0) ++cov_.sigbus;
    else if (m.rfind("EINVAL", 0) == 0) ++cov_.einval;
    else ++cov_.other_refusals;
    const sample s = k_->snapshot("");
    // A table in two address spaces counts in both VmPTEs but once in PageTables: the sum
    // of VmPTE exceeds PageTables less the top levels, which VmPTE never counts (x86-64:
    // the PGD, all of the top level; on profiles whose PageTables is PTE pages only, the
    // shared tables are PMD tables it does not count, so this is for linux-6.18).
    if (x86_) {
      bytes vmpte = 0;
      for (const proc_sample& p : s.procs) vmpte += p.vmpte;
      const bytes pgd = k_->profile().pgd_bytes() * s.pt_pages[static_cast<int>(level::pgd)];
      if (vmpte + pgd > s.page_tables) ++cov_.shared_tables;
    }
    if (s.mi.anon_huge) ++cov_.thp;
    if (s.mi.shmem_pmd_mapped) ++cov_.shmem_pmd;
    for (const proc_sample& p : s.procs)
      if (p.hugetlb) {
        ++cov_.hugetlb_mapped;
        break;
      }
  }

 public:
  [[nodiscard]] const coverage& covered() const { return cov_; }

 private:
  std::string where() const {
    std::ostringstream o;
    o << cfg_.name << " (" << cfg_.profile << "): seed " << seed_ << ", op " << op_no_ << " [" << desc_ << "]: ";
    return o.str();
  }

  uint32_t random_pid() {
    auto it = procs_.begin();
    std::advance(it, static_cast<long>(rnd(procs_.size())));
    return it->first;
  }

  // An op the kernel may carry out or refuse; anything else is a failure.
  std::string outcome(const status& st) {
    last_error_ = st.message();
    if (st.ok() || st.code() == status_code::refused) return "";
    return "not a refusal: " + st.to_string();
  }

  std::string step() {
    if (procs_.empty()) return do_spawn();
    const uint64_t r = rnd(100);
    if (r < 3) return procs_.size() < kMaxProcs ? do_spawn() : do_exit();
    if (r < 9) return procs_.size() < kMaxProcs ? do_fork() : do_exit();
    if (r < 12) return do_exit();
    if (r < 16 && x86_) return do_share();
    const uint32_t pid = random_pid();
    if (r < 32 || procs_[pid].empty()) return do_mmap(pid);
    const map_rec mr = procs_[pid][rnd(procs_[pid].size())];
    if (r < 62) return do_touch(pid, mr);
    if (r < 72) return do_munmap(pid, mr);
    if (r < 82) return do_mprotect(pid, mr);
    return do_madvise(pid, mr);
  }

  std::string do_spawn() {
    const uint32_t pid = next_pid_++;
    desc_ = "spawn " + std::to_string(pid);
    const status st = k_->spawn(pid);
    if (st.ok()) procs_[pid];
    return outcome(st);
  }

  std::string do_fork() {
    const uint32_t parent = random_pid(), child = next_pid_++;
    desc_ = "fork " + std::to_string(parent) + " -> " + std::to_string(child);
    const status st = k_->fork(parent, child);
    if (st.ok()) procs_[child] = procs_[parent];
    if (!st.ok() && k_->has_process(child)) return "a failed fork left the child behind";
    return outcome(st);
  }

  std::string do_exit() {
    const uint32_t pid = random_pid();
    desc_ = "exit " + std::to_string(pid);
    const status st = k_->exit(pid);
    procs_.erase(pid);
    if (!st.ok()) return "exit failed: " + st.message();
    return "";
  }

  // Two processes map the same 1 GiB window(s) of the big hugetlb file shared at a 1 GiB
  // boundary, alike, and touch them: the second attaches to the first's PMD table where
  // the pool lets the first one populate it (and unless sharing is off).
  std::string do_share() {
    if (procs_.size() < 2 && procs_.size() < kMaxProcs)
      if (std::string e = do_spawn(); !e.empty()) return e;
    if (procs_.size() < 2) return "";
    const uint32_t a = random_pid();
    uint32_t b = random_pid();
    while (b == a) b = random_pid();
    const bytes off = rnd(2) * GiB, len = chance(50) ? GiB : 2 * GiB - off;
    const bool noreserve = chance(30);
    for (uint32_t pid : {a, b}) {
      op o = ops::mmap_object(pid, next_map_++, kHugeBig, len).shared().align(GiB).object_offset(off).noreserve(noreserve);
      desc_ = "share: mmap pid " + std::to_string(pid) + " #" + std::to_string(o.map) + " hbig +" + std::to_string(off) +
              " len " + std::to_string(len) + (noreserve ? " noreserve" : "");
      auto r = k_->mmap(o);
      if (!r.ok()) return outcome(r.error());
      procs_[pid].push_back({o.map, len, 2 * MiB});
      if (std::string e = k_->check_invariants(); !e.empty()) return "check_invariants: " + e;
      const bytes toff = chance(50) ? 0 : rnd(len / (2 * MiB)) * 2 * MiB;
      const bool write = chance(50);
      desc_ = "share: touch pid " + std::to_string(pid) + " #" + std::to_string(o.map) + " off " + std::to_string(toff) +
              (write ? " write" : " read");
      if (std::string e = outcome(k_->touch(pid, o.map, toff, len - toff, kPage, write)); !e.empty()) return e;
      if (std::string e = k_->check_invariants(); !e.empty()) return "check_invariants: " + e;
    }
    return "";
  }

  // A page count, log-uniform over 1 page .. 32 MiB.
  uint64_t random_pages() {
    const uint64_t lo = uint64_t{1} << rnd(14);
    return std::min<uint64_t>(32 * MiB / kPage, lo + rnd(lo));
  }

  std::string do_mmap(uint32_t pid) {
    op o = ops::mmap_anon(pid, next_map_++, kPage);
    bytes hpage = 0;
    std::ostringstream d;
    d << "mmap pid " << pid << " #" << o.map;
    // Alignment: none, 2 MiB with or without a phase, or a 1 GiB boundary (for sharing).
    auto random_align = [&] {
      const uint64_t al = rnd(4);
      if (al == 1) o.align = 2 * MiB;
      if (al == 2) { o.align = 2 * MiB; o.phase_off = rnd(512) * kPage; }
      if (al == 3 && o.len <= 2 * GiB && (x86_ || o.len <= 256 * MiB)) o.align = x86_ ? GiB : 4 * MiB;
    };
    // A length of whole 2 MiB ranges (THP-sized), sometimes a few pages longer.
    auto thp_len = [&] { return (1 + rnd(8)) * 2 * MiB + (chance(30) ? (1 + rnd(16)) * kPage : 0); };
    const uint64_t kind = rnd(100);
    if (kind < 25) {
      // Private anonymous memory: THP-sized and 2 MiB-aligned half the time, else any.
      if (chance(50)) {
        o.len = thp_len();
        o.align = 2 * MiB;
      } else {
        o.len = random_pages() * kPage;
        random_align();
      }
      d << " anon";
    } else if (kind < 45) {
      // shmem (shared or private) or a regular file; half the time at a 2 MiB boundary of
      // both the address and the file, as a PMD mapping of a shmem folio needs.
      const bool shm = chance(75);
      o.object = shm ? kShm : kFile;
      o.shared = chance(70);
      const bytes size = 64 * MiB;
      if (chance(50)) {
        o.len = thp_len();
        o.obj_off = rnd((size - o.len) / (2 * MiB) + 1) * 2 * MiB;
        o.align = 2 * MiB;
      } else {
        o.len = std::min<bytes>(random_pages() * kPage, size);
        o.obj_off = rnd((size - o.len) / kPage + 1) * kPage;
        random_align();
      }
      d << (shm ? " shm" : " file") << (o.shared ? " shared" : " private") << " +" << o.obj_off;
    } else if (kind < 85) {
      // A hugetlb file: the big one (1 GiB windows), the small one, or the 1 GiB-page one.
      const uint64_t which = rnd(x86_ ? 3 : 2);
      o.object = which == 0 ? kHugeBig : which == 1 ? kHugeSmall : kHugeGiant;
      const object_decl& obj = objects_[static_cast<size_t>(o.object)];
      hpage = obj.page_size ? obj.page_size : hpage_;
      if (x86_ && which == 0 && chance(60)) {
        // Whole 1 GiB windows of the big file at a 1 GiB boundary, shared: what PMD
        // sharing needs (between forks, or processes that map it alike).
        o.obj_off = rnd(2) * GiB;
        o.len = chance(50) ? GiB : obj.size - o.obj_off;
        o.shared = true;
        o.noreserve = chance(10);
        o.align = GiB;
      } else {
        const uint64_t pages = obj.size / hpage;
        o.obj_off = (chance(50) && x86_ && obj.size >= 2 * GiB) ? rnd(2) * GiB : rnd(pages) * hpage;
        const uint64_t left = (obj.size - o.obj_off) / hpage;
        o.len = (chance(40) ? left : 1 + rnd(left)) * hpage;
        o.shared = chance(75);
        o.noreserve = chance(20);
        random_align();
      }
      if (chance(3)) o.obj_off += kPage;  // EINVAL: not on a huge page boundary
      d << " hugetlb " << obj.name << (o.shared ? " shared" : " private") << " +" << o.obj_off
        << (o.noreserve ? " noreserve" : "");
    } else {
      // MAP_HUGETLB: the default hstate or an explicit size (1 GiB on x86-64; a size the
      // profile lacks is EINVAL).
      static const bytes x86_sizes[] = {0, 2 * MiB, GiB};
      o.hugetlb = true;
      o.page_size = x86_ ? x86_sizes[rnd(3)] : (chance(90) ? 0 : 2 * MiB);
      hpage = o.page_size ? o.page_size : hpage_;
      o.len = (1 + rnd(hpage >= GiB ? 2 : 16)) * hpage;
      o.shared = chance(50);
      o.noreserve = chance(30);
      random_align();
      d << " MAP_HUGETLB " << (o.page_size >> 20) << "M" << (o.shared ? " shared" : " private")
        << (o.noreserve ? " noreserve" : "");
    }
    const uint64_t pr = rnd(10);
    o.prot = pr < 8 ? uint8_t(prot_read | prot_write) : pr < 9 ? uint8_t(prot_read) : uint8_t(prot_none);
    o.locked = chance(4);
    if (chance(kind < 45 ? 60 : 15)) {  // MADV_HUGEPAGE matters to anonymous and shmem memory
      o.has_hint = true;
      o.hint = chance(75) ? advice::hugepage : advice::nohugepage;
    }
    d << " len " << o.len << " prot " << int(o.prot) << (o.locked ? " locked" : "") << " align " << o.align << "+"
      << o.phase_off << (o.has_hint ? (o.hint == advice::hugepage ? " MADV_HUGEPAGE" : " MADV_NOHUGEPAGE") : "");
    desc_ = d.str();

    const meminfo before = k_->meminfo_now();
    auto r = k_->mmap(o);
    if (!r.ok()) {
      const status& st = r.error();
      if (std::string e = outcome(st); !e.empty()) return e;
      // A reservation the pool could not make: no mapping, and the pool as it was.
      if (st.message().find("hugetlb pool") != std::string::npos) {
        if (k_->map_addr(pid, o.map) != 0) return "a refused hugetlb mmap left a mapping";
        const meminfo after = k_->meminfo_now();
        if (after.hugepages_total != before.hugepages_total || after.hugepages_free != before.hugepages_free ||
            after.hugepages_rsvd != before.hugepages_rsvd || after.hugepages_surp != before.hugepages_surp ||
            after.hugetlb != before.hugetlb)
          return "a refused hugetlb mmap changed the pool: " + pool_text(before) + " -> " + pool_text(after);
      }
      // MAP_LOCKED whose populate failed part-way leaves the mapping (sim_kernel.h).
      if (k_->map_addr(pid, o.map) == 0) return "";
    }
    procs_[pid].push_back({o.map, o.len, hpage});
    return "";
  }

  static std::string pool_text(const meminfo& mi) {
    return std::to_string(mi.hugepages_total) + "/" + std::to_string(mi.hugepages_free) + "/" +
           std::to_string(mi.hugepages_rsvd) + "/" + std::to_string(mi.hugepages_surp) + " (" +
           std::to_string(mi.hugetlb) + " B)";
  }

  // A sub-range of a mapping: for hugetlb mostly on its huge page boundaries (else EINVAL
  // when it splits the VMA), for the rest on 2 MiB boundaries, a few pages apart from them,
  // or anywhere, so that THPs and 1 GiB windows get cut.
  std::pair<bytes, bytes> random_subrange(const map_rec& mr) {
    bytes unit = kPage;
    if (mr.hpage && chance(85)) unit = mr.hpage;
    else if (!mr.hpage && chance(40) && mr.len >= 2 * MiB) unit = 2 * MiB;
    const uint64_t n = mr.len / unit;
    uint64_t a = rnd(n), b = rnd(n);
    if (a > b) std::swap(a, b);
    if (chance(20)) { a = 0; b = n - 1; }
    bytes off = a * unit, len = (b - a + 1) * unit;
    if (unit == 2 * MiB && chance(30)) {  // nudge an edge off the boundary
      const bytes nudge = (1 + rnd(8)) * kPage;
      if (len > nudge) { if (chance(50)) off += nudge; len -= nudge; }
    }
    return {off, len};
  }

  std::string do_touch(uint32_t pid, const map_rec& mr) {
    const bool write = chance(50);
    std::ostringstream d;
    d << "touch pid " << pid << " #" << mr.name << (write ? " write" : " read");
    status st;
    const uint64_t kind = rnd(10);
    if (kind < 2) {
      std::vector<uint64_t> pages;
      for (uint64_t i = 0, n = 1 + rnd(16); i < n; ++i) pages.push_back(rnd(mr.len / kPage));
      d << " pages";
      for (uint64_t pg : pages) d << " " << pg;
      desc_ = d.str();
      st = k_->touch_pages(pid, mr.name, pages, write);
    } else {
      auto [off, len] = random_subrange(mr);
      bytes stride = kPage;
      if (kind < 4) {
        static const bytes strides[] = {64 * KiB, 2 * MiB, 4 * MiB, 3 * MiB};
        stride = strides[rnd(4)];
      }
      d << " off " << off << " len " << len << " stride " << stride;
      desc_ = d.str();
      st = k_->touch(pid, mr.name, off, len, stride, write);
    }
    return outcome(st);
  }

  std::string do_munmap(uint32_t pid, const map_rec& mr) {
    auto [off, len] = random_subrange(mr);
    desc_ = "munmap pid " + std::to_string(pid) + " #" + std::to_string(mr.name) + " off " + std::to_string(off) +
            " len " + std::to_string(len);
    return outcome(k_->munmap(pid, mr.name, off, len));
  }

  std::string do_mprotect(uint32_t pid, const map_rec& mr) {
    auto [off, len] = random_subrange(mr);
    static const uint8_t prots[] = {prot_none, prot_read, prot_read | prot_write, prot_read | prot_write};
    const uint8_t prot = prots[rnd(4)];
    desc_ = "mprotect pid " + std::to_string(pid) + " #" + std::to_string(mr.name) + " off " + std::to_string(off) +
            " len " + std::to_string(len) + " prot " + std::to_string(prot);
    return outcome(k_->mprotect(pid, mr.name, off, len, prot));
  }

  std::string do_madvise(uint32_t pid, const map_rec& mr) {
    auto [off, len] = random_subrange(mr);
    static const advice advs[] = {advice::dontneed, advice::dontneed, advice::hugepage, advice::nohugepage};
    static const char* names[] = {"dontneed", "dontneed", "hugepage", "nohugepage"};
    const uint64_t a = rnd(4);
    desc_ = std::string("madvise ") + names[a] + " pid " + std::to_string(pid) + " #" + std::to_string(mr.name) +
            " off " + std::to_string(off) + " len " + std::to_string(len);
    return outcome(k_->madvise(pid, mr.name, off, len, advs[a]));
  }

  huge_config cfg_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  bool x86_ = false, i386_ = false, ppc64_ = false;
  bytes hpage_ = 2 * MiB;
  std::vector<object_decl> objects_;
  std::unique_ptr<sim_kernel> k_;
  std::map<uint32_t, std::vector<map_rec>> procs_;  // live pids -> mapping names
  std::string last_error_;
  bool trace_ = std::getenv("VMLAB_PROPERTY_TRACE") != nullptr;
  uint32_t next_pid_ = 1;
  uint32_t next_map_ = 0;
  int op_no_ = 0;
  std::string desc_;
  coverage cov_;
};

std::vector<huge_config> huge_configs() {
  using ov = std::vector<std::pair<std::string, std::string>>;
  auto cfg = [](std::string name, std::string profile, ov o, double frag, bytes memory, bool share, bool thp, bool shmem) {
    huge_config c;
    c.name = std::move(name);
    c.profile = std::move(profile);
    c.overrides = std::move(o);
    c.fragmentation = frag;
    c.memory = memory;
    c.expect_share = share;
    c.expect_thp = thp;
    c.expect_shmem_pmd = shmem;
    return c;
  };
  std::vector<huge_config> v = {
      // name, profile, overrides, fragmentation, memory, expect: shared PMD, THP, shmem PMD
      cfg("x86_always_shmem_always", "linux-6.18", ov{{"thp_enabled", "always"}, {"shmem_enabled", "always"}}, 0, 0,
          true, true, true),
      cfg("x86_madvise_shmem_advise_frag", "linux-6.18", ov{{"thp_enabled", "madvise"}, {"shmem_enabled", "advise"}},
          0.3, 0, true, true, true),
      cfg("x86_never_within_size_noshare", "linux-6.18",
          ov{{"thp_enabled", "never"}, {"shmem_enabled", "within_size"}, {"hugetlb_pmd_share", "false"}}, 0, 0, false,
          false, true),
      cfg("x86_always_force_no_pageblocks", "linux-6.18", ov{{"thp_enabled", "always"}, {"shmem_enabled", "force"}},
          1.0, 0, false, false, false),
      cfg("x86_always_deny_small", "linux-6.18",
          ov{{"thp_enabled", "always"}, {"shmem_enabled", "deny"}, {"pt_reclaim", "false"}}, 0.5, 512 * MiB, false,
          true, false),
      cfg("x86_madvise_never", "linux-6.18", ov{}, 0, 0, true, true, false),
      cfg("i386_2543", "linux-2.5.43-mm2", ov{}, 0, 0, false, false, false),
      cfg("i386_2543_fragmented", "linux-2.5.43-mm2", ov{}, 0.5, 1 * GiB, false, false, false),
      cfg("pae_2615", "linux-2.6.15", ov{}, 0.2, 0, false, false, false),
      // 16 MiB pages eight PMD entries apart, in huge-page-only areas (arch.h 5).
      cfg("ppc64_2615", "linux-2.6.15-ppc64", ov{}, 0.2, 0, false, false, false),
  };
  v[3].expect_hugetlb = false;  // no free pageblock: no pool, no surplus page
  return v;
}

std::string huge_config_name(const testing::TestParamInfo<huge_config>& info) { return info.param.name; }

void PrintTo(const huge_config& c, std::ostream* os) { *os << c.name << " (" << c.profile << ")"; }

class HugeProperty : public testing::TestWithParam<huge_config> {};

TEST_P(HugeProperty, RandomOpsKeepInvariants) {
  const uint64_t base = std::hash<std::string>{}(GetParam().name) % 100000;
  const char* env = std::getenv("VMLAB_PROPERTY_SEEDS");
  const int seeds = env ? std::max(1, std::atoi(env)) : kSeeds;
  coverage cov;
  for (int i = 0; i < seeds; ++i) {
    const uint64_t seed = base * 10 + uint64_t(i);
    huge_runner r(GetParam(), seed);
    const std::string err = r.run();
    EXPECT_EQ(err, "") << "reproduce with this configuration and seed " << seed;
    if (!err.empty()) return;
    cov.add(r.covered());
  }
  const huge_config& c = GetParam();
  if (std::getenv("VMLAB_PROPERTY_TRACE")) std::cerr << c.name << ": " << cov.text() << "\n";
  if (c.expect_hugetlb) {
    EXPECT_GT(cov.hugetlb_mapped, 0u) << cov.text();
  }
  EXPECT_GT(cov.pool_enomem + cov.sigbus, 0u) << cov.text();
  EXPECT_GT(cov.einval, 0u) << cov.text();
  if (c.expect_share) {
    EXPECT_GT(cov.shared_tables, 0u) << cov.text();
  }
  if (c.expect_thp) {
    EXPECT_GT(cov.thp, 0u) << cov.text();
  }
  if (c.expect_shmem_pmd) {
    EXPECT_GT(cov.shmem_pmd, 0u) << cov.text();
  }
}

INSTANTIATE_TEST_SUITE_P(Huge, HugeProperty, testing::ValuesIn(huge_configs()), huge_config_name);

}  // namespace
}  // namespace vmlab
