// libFuzzer target: the invariant oracle. The input is decoded into a small, valid op
// stream (a machine and kernel profile, a few objects, then spawn/fork/exit/mmap/munmap/
// mprotect/madvise/touch/phase on up to 8 pids and 6 mapping names; hugetlb pools,
// objects and MAP_HUGETLB mappings, THP policies, advice and fragmentation where the
// profile has them) and run through
// run_sim with check_invariants() after every op. A status_code::check_failed — the
// incremental counters disagreeing with a from-scratch recount — aborts with the trace.
//
// The decoder keeps the promises of include/vmlab/op.h that the parser and the generator
// make (pids exist, mapping names exist in the acting process, page-multiple ranges
// inside the mapping as created, objects declared), so a finding is the model's bug and
// not a malformed stream. Runtime refusals (EEXIST, ENOMEM, SIGSEGV) end a run normally.
// Work is bounded: at most 48 ops and about 64 Ki pages touched or populated per input.
#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/profile.h"
#include "vmlab/op.h"
#include "workload/trace.h"

namespace {

using vmlab::bytes;
using vmlab::op;
using vmlab::op_kind;

constexpr bytes kPage = 4096;
constexpr bytes kMiB = bytes{1} << 20;
constexpr bytes kGiB = bytes{1} << 30;
constexpr uint32_t kMaxPids = 8;
constexpr uint32_t kMaps = 6;
constexpr size_t kMaxOps = 48;
constexpr uint64_t kPageBudget = 64 * 1024;

const std::array<const char*, 5> kProfiles = {"linux-6.18", "linux-2.6.15-x86_64", "linux-2.6.15", "linux-2.5.26",
                                              "linux-2.5.43-mm2"};
const std::array<std::pair<const char*, const char*>, 22> kOverrides = {{
    {"thp_enabled", "always"}, {"thp_enabled", "never"}, {"shmem_enabled", "always"}, {"shmem_enabled", "advise"},
    {"shmem_enabled", "within_size"}, {"hugetlb_pmd_share", "false"},
    {"pti", "true"}, {"pti", "false"}, {"pt_reclaim", "true"}, {"pt_reclaim", "false"},
    {"fault_around_bytes", "0"}, {"fault_around_bytes", "65536"}, {"fork_skips_shared", "false"},
    {"fork_skips_shared", "true"}, {"pgtable_free", "pgd_gap"}, {"pgtable_free", "floor_ceiling"},
    {"mmap_layout", "legacy"}, {"mmap_layout", "topdown"}, {"paging", "x86-64-5level"},
    {"paging", "i386-pae"}, {"paging", "i386-2level"}, {"paging", "x86-64-4level"},
}};

struct proc {
  bool alive = true;
  std::map<uint32_t, bytes> maps;  // mapping name -> length as created
};

class decoder {
 public:
  decoder(const uint8_t* data, size_t size) : in_(data, size) {}

  bool build(vmlab::op_stream& s) {
    s.source = "fuzz_ops";
    if (!machine(s)) return false;
    const int nobj = in_.ConsumeIntegralInRange<int>(0, 3);
    for (int i = 0; i < nobj; ++i) {
      vmlab::object_decl d;
      d.name = "o" + std::to_string(i);
      if (hsize_ && in_.ConsumeIntegralInRange<int>(0, 3) == 0) {
        d.kind = vmlab::object_kind::hugetlb;  // a whole number of the default huge pages
        d.size = in_.ConsumeIntegralInRange<bytes>(1, 8) * hsize_;
        s.objects.push_back(std::move(d));
        continue;
      }
      d.kind = in_.ConsumeBool() ? vmlab::object_kind::file : vmlab::object_kind::shm;
      d.size = some_len(task_size_ - 64 * 1024);
      if (in_.ConsumeBool()) d.size -= in_.ConsumeIntegralInRange<bytes>(0, std::min<bytes>(d.size - 1, kPage - 1));  // unaligned
      s.objects.push_back(std::move(d));
    }
    for (uint32_t m = 0; m < kMaps; ++m) s.map_names.push_back("m" + std::to_string(m));
    spawn(s);  // one process to start with
    while (s.ops.size() < kMaxOps && in_.remaining_bytes() > 0) step(s);
    return true;
  }

 private:
  bool machine(vmlab::op_stream& s) {
    s.machine.profile = kProfiles[in_.ConsumeIntegralInRange<size_t>(0, kProfiles.size() - 1)];
    auto prof = vmlab::find_profile(s.machine.profile);
    if (!prof.ok()) return false;
    const int nov = in_.ConsumeIntegralInRange<int>(0, 3);
    for (int i = 0; i < nov; ++i) {
      const auto& [k, v] = kOverrides[in_.ConsumeIntegralInRange<size_t>(0, kOverrides.size() - 1)];
      if (!vmlab::apply_override(prof.value(), k, v).ok()) return false;
      s.machine.overrides.emplace_back(k, v);
    }
    task_size_ = prof->paging.task_size;
    // Mostly the profile's memory; sometimes a small machine, to reach the ENOMEM paths.
    if (in_.ConsumeIntegralInRange<int>(0, 3) == 0) s.machine.memory = in_.ConsumeIntegralInRange<bytes>(64, 64 * 1024) * kPage;
    // Huge pages where the profile has them: a pool of the default size (sometimes a
    // 1 GiB one), surplus, a fragmented machine.
    const auto sizes = vmlab::hugetlb_page_sizes(prof.value());
    hsize_ = sizes.empty() ? 0 : sizes.front();
    if (hsize_) {
      s.machine.hugepages.emplace_back(hsize_, in_.ConsumeIntegralInRange<uint64_t>(0, 64));
      if (sizes.size() > 1 && in_.ConsumeIntegralInRange<int>(0, 7) == 0)
        s.machine.hugepages.emplace_back(sizes[1], in_.ConsumeIntegralInRange<uint64_t>(0, 2));
      if (in_.ConsumeBool()) s.machine.overcommit_hugepages.emplace_back(hsize_, in_.ConsumeIntegralInRange<uint64_t>(0, 8));
    }
    static constexpr std::array<double, 4> frag = {0, 0.25, 0.5, 1};
    s.machine.fragmentation = frag[in_.ConsumeIntegralInRange<size_t>(0, frag.size() - 1)];
    return true;
  }

  // A length in pages: mostly small, sometimes a page-table span or its neighbours.
  bytes some_len(bytes max) {
    static constexpr std::array<bytes, 12> spans = {2 * kMiB, 2 * kMiB - kPage, 2 * kMiB + kPage, 4 * kMiB, 8 * kMiB,
                                                    64 * kMiB, kGiB, kGiB + 2 * kMiB, 2 * kGiB, 4 * kGiB, 512 * kGiB,
                                                    kGiB - kPage};
    bytes len = 0;
    switch (in_.ConsumeIntegralInRange<int>(0, 3)) {
      case 0: case 1: len = in_.ConsumeIntegralInRange<bytes>(1, 64) * kPage; break;
      case 2: len = in_.ConsumeIntegralInRange<bytes>(1, 4096) * kPage; break;
      default: len = spans[in_.ConsumeIntegralInRange<size_t>(0, spans.size() - 1)]; break;
    }
    max &= ~(kPage - 1);
    return std::min(len, max);
  }

  // An offset inside [0, len): page multiple.
  bytes some_off(bytes len) {
    const bytes pages = len / kPage;
    switch (in_.ConsumeIntegralInRange<int>(0, 3)) {
      case 0: return 0;
      case 1: return std::min<bytes>(pages - 1, in_.ConsumeIntegralInRange<bytes>(0, 1024)) * kPage;
      case 2: {  // near a 2 MiB or 1 GiB boundary inside the range
        const bytes span = in_.ConsumeBool() ? 2 * kMiB : kGiB;
        const bytes k = in_.ConsumeIntegralInRange<bytes>(0, len / span);
        const bytes d = in_.ConsumeIntegralInRange<bytes>(0, 2) * kPage;
        const bytes at = k * span + d >= kPage ? k * span + d - kPage : 0;
        return std::min(at, (pages - 1) * kPage);
      }
      default: return in_.ConsumeIntegralInRange<bytes>(0, pages - 1) * kPage;
    }
  }

  std::vector<uint32_t> live() const {
    std::vector<uint32_t> v;
    for (const auto& [pid, p] : procs_)
      if (p.alive) v.push_back(pid);
    return v;
  }
  uint32_t pick(const std::vector<uint32_t>& v) { return v[in_.ConsumeIntegralInRange<size_t>(0, v.size() - 1)]; }

  void spawn(vmlab::op_stream& s) {
    if (next_pid_ > kMaxPids) return;
    op o;
    o.kind = op_kind::spawn;
    o.pid = next_pid_++;
    procs_[o.pid] = proc{};
    s.ops.push_back(std::move(o));
  }

  void step(vmlab::op_stream& s) {
    const auto pids = live();
    const int what = in_.ConsumeIntegralInRange<int>(0, 15);
    if (pids.empty() || what == 0) return spawn(s);
    const uint32_t pid = pick(pids);
    op o;
    o.pid = pid;
    switch (what) {
      case 1: case 2: {  // fork
        if (next_pid_ > kMaxPids) return;
        o.kind = op_kind::fork;
        o.child = next_pid_++;
        procs_[o.child] = proc{true, procs_[pid].maps};
        break;
      }
      case 3: {
        o.kind = op_kind::exit;
        procs_[pid].alive = false;
        break;
      }
      case 4: case 5: case 6: case 7:
        if (!mmap(s, o)) return;
        break;
      case 15: {
        o.kind = op_kind::phase;
        o.name = "p" + std::to_string(s.ops.size());
        break;
      }
      default: {
        auto& maps = procs_[pid].maps;
        if (maps.empty()) {
          if (!mmap(s, o)) return;
          break;
        }
        auto it = maps.begin();
        std::advance(it, in_.ConsumeIntegralInRange<size_t>(0, maps.size() - 1));
        o.map = it->first;
        const bytes size = it->second;
        o.off = some_off(size);
        o.len = in_.ConsumeBool() ? size - o.off : some_len(size - o.off);
        if (what == 8) o.kind = op_kind::munmap;
        else if (what == 9) { o.kind = op_kind::mprotect; o.prot = in_.ConsumeIntegralInRange<uint8_t>(0, 3); }
        else if (what == 10) {
          o.kind = op_kind::madvise;
          static constexpr std::array<vmlab::advice, 4> adv = {vmlab::advice::dontneed, vmlab::advice::dontneed,
                                                               vmlab::advice::hugepage, vmlab::advice::nohugepage};
          o.adv = adv[in_.ConsumeIntegralInRange<size_t>(0, adv.size() - 1)];
        } else {
          touch(o);
        }
        break;
      }
    }
    s.ops.push_back(std::move(o));
  }

  bool mmap(vmlab::op_stream& s, op& o) {
    auto& maps = procs_[o.pid].maps;
    std::vector<uint32_t> free_names;
    for (uint32_t m = 0; m < kMaps; ++m)
      if (!maps.count(m)) free_names.push_back(m);
    if (free_names.empty()) return false;
    o.kind = op_kind::mmap;
    o.map = pick(free_names);
    o.prot = in_.ConsumeIntegralInRange<uint8_t>(0, 3);
    const int nobj = static_cast<int>(s.objects.size());
    o.object = in_.ConsumeIntegralInRange<int>(-1, nobj - 1);
    if (in_.ConsumeIntegralInRange<int>(0, 3) == 0) {  // MADV_HUGEPAGE / MADV_NOHUGEPAGE after the mmap
      o.has_hint = true;
      o.hint = in_.ConsumeBool() ? vmlab::advice::hugepage : vmlab::advice::nohugepage;
    }
    const bool huge_obj = o.object >= 0 && s.objects[o.object].kind == vmlab::object_kind::hugetlb;
    if (huge_obj || (o.object < 0 && hsize_ && in_.ConsumeIntegralInRange<int>(0, 5) == 0)) {
      // hugetlb: offset, length and address in whole huge pages (op_rules.h).
      o.hugetlb = !huge_obj;
      o.shared = in_.ConsumeBool();
      o.noreserve = in_.ConsumeIntegralInRange<int>(0, 3) == 0;
      const bytes pages = huge_obj ? s.objects[o.object].size / hsize_ : 8;
      const bytes first = huge_obj ? in_.ConsumeIntegralInRange<bytes>(0, pages - 1) : 0;
      o.obj_off = first * hsize_;
      o.len = in_.ConsumeIntegralInRange<bytes>(1, pages - first) * hsize_;
      o.align = in_.ConsumeBool() ? hsize_ : kGiB;
      maps[o.map] = o.len;
      return true;
    }
    if (o.object >= 0) {
      const bytes osize = (s.objects[o.object].size + kPage - 1) & ~(kPage - 1);
      o.shared = in_.ConsumeBool();
      o.obj_off = in_.ConsumeBool() ? 0 : some_off(osize);
      o.len = in_.ConsumeBool() ? osize - o.obj_off : some_len(osize - o.obj_off);
    } else {
      o.len = some_len(task_size_ - 64 * 1024);
    }
    if (o.len == 0) return false;
    o.locked = in_.ConsumeIntegralInRange<int>(0, 7) == 0 && spend(o.len / kPage);
    switch (in_.ConsumeIntegralInRange<int>(0, 5)) {
      case 0: {  // fixed, near an interesting boundary
        if (o.len > task_size_ - 64 * 1024) break;
        static constexpr std::array<bytes, 6> bases = {64 * 1024, 2 * kMiB, kGiB, 512 * kGiB, bytes{1} << 39, bytes{1} << 46};
        bytes a = bases[in_.ConsumeIntegralInRange<size_t>(0, bases.size() - 1)];
        a += in_.ConsumeIntegralInRange<bytes>(0, 1024) * kPage;
        if (a < 64 * 1024 || a >= task_size_ || o.len > task_size_ - a) a = task_size_ - o.len;
        if (a < 64 * 1024) break;
        o.fixed = true;
        o.addr = a & ~(kPage - 1);
        break;
      }
      case 1: case 2: {  // aligned with a phase, to straddle a table boundary
        const int shift = in_.ConsumeIntegralInRange<int>(12, 31);
        o.align = bytes{1} << shift;
        o.phase_off = in_.ConsumeIntegralInRange<bytes>(0, o.align / kPage - 1) * kPage;
        break;
      }
      default: break;
    }
    maps[o.map] = o.len;
    return true;
  }

  void touch(op& o) {
    o.kind = op_kind::touch;
    o.write = in_.ConsumeBool();
    const bytes pages = o.len / kPage;
    switch (in_.ConsumeIntegralInRange<int>(0, 3)) {
      case 0: {
        o.pattern = vmlab::touch_pattern::all;
        const bytes cap = std::max<uint64_t>(1, std::min<uint64_t>(pages, kPageBudget - std::min(used_, kPageBudget - 1)));
        o.len = std::min(o.len, cap * kPage);
        used_ += o.len / kPage;
        break;
      }
      case 1: {
        o.pattern = vmlab::touch_pattern::stride;
        int shift = in_.ConsumeIntegralInRange<int>(12, 31);
        while ((o.len >> shift) > 16384 && shift < 40) ++shift;
        o.stride = bytes{1} << shift;
        used_ += o.len / o.stride + 1;
        break;
      }
      case 2:
        o.pattern = vmlab::touch_pattern::uniform;
        o.count = in_.ConsumeIntegralInRange<uint64_t>(1, std::min<uint64_t>(pages, 1024));
        o.seed = in_.ConsumeIntegral<uint16_t>();
        used_ += o.count;
        break;
      default:
        o.pattern = vmlab::touch_pattern::zipf;
        o.count = in_.ConsumeIntegralInRange<uint64_t>(1, 1024);
        o.seed = in_.ConsumeIntegral<uint16_t>();
        o.theta = in_.ConsumeIntegralInRange<int>(1, 300) / 100.0;
        used_ += o.count;
        break;
    }
  }

  // Takes `pages` from the work budget; false (and takes nothing) when it would overflow.
  bool spend(uint64_t pages) {
    if (used_ + pages > kPageBudget) return false;
    used_ += pages;
    return true;
  }

  FuzzedDataProvider in_;
  std::map<uint32_t, proc> procs_;
  uint32_t next_pid_ = 1;
  bytes task_size_ = 0;
  bytes hsize_ = 0;  // the profile's default huge page size; 0 without hugetlb
  uint64_t used_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vmlab::op_stream s;
  if (!decoder(data, size).build(s)) return 0;
  // VMLAB_FUZZ_DUMP=1 prints each input as a trace, for `vmlab run --trace --check`.
  static const bool dump = std::getenv("VMLAB_FUZZ_DUMP") != nullptr;
  if (dump) std::fprintf(stderr, "%s", vmlab::write_trace(s).c_str());
  vmlab::sim_options opt;
  opt.check_invariants = true;
  auto r = vmlab::run_sim(s, opt);
  if (!r.ok() && r.error().code() == vmlab::status_code::check_failed) {
    std::fprintf(stderr, "%s\n--- op stream ---\n%s\n", r.error().to_string().c_str(), vmlab::write_trace(s).c_str());
    std::abort();
  }
  if (!r.ok() && dump) std::fprintf(stderr, "run_sim: %s\n", r.error().to_string().c_str());
  return 0;
}
