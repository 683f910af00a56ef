#include "report/seeds.h"

#include <cmath>

#include <fmt/format.h>

namespace vmlab {
namespace {

constexpr double kPageSize = 4096;

// The maximum of a slab cache over the run (peak.slabs, field by field), or nullptr.
const slab_row* peak_slab(const run_result& r, std::string_view name) {
  for (const auto& s : r.peak.slabs)
    if (s.name == name) return &s;
  return nullptr;
}

bool prints_reverse_maps(const run_result& r) {
  return r.peak.mi.has_reverse_maps || (!r.samples.empty() && r.samples.back().mi.has_reverse_maps);
}

// --- seed 000: Peter Wong, "Examining the Performance and Cost of Reversemaps on 2.5.26
// Under Heavy DB Workload" (linux-mm, 2002). Scenarios: seeds/rmap-dss (read) and
// seeds/rmap-dss-readv (the readv variant).

std::optional<double> reverse_maps_max(const run_result& r) {
  if (!prints_reverse_maps(r)) return std::nullopt;
  return double(r.peak.mi.reverse_maps);
}
std::optional<double> pte_chain_active_objs_max(const run_result& r) {
  const slab_row* s = peak_slab(r, "pte_chain");
  return s ? std::optional<double>(double(s->active_objs)) : std::nullopt;
}
std::optional<double> pte_chain_bytes_max(const run_result& r) {
  const slab_row* s = peak_slab(r, "pte_chain");
  return s ? std::optional<double>(double(s->active_objs) * s->objsize) : std::nullopt;
}
std::optional<double> pte_chain_slabs_max(const run_result& r) {
  const slab_row* s = peak_slab(r, "pte_chain");
  return s ? std::optional<double>(double(s->num_slabs)) : std::nullopt;
}
std::optional<double> pte_chain_slab_bytes_max(const run_result& r) {
  const slab_row* s = peak_slab(r, "pte_chain");
  return s ? std::optional<double>(double(s->num_slabs) * s->pagesperslab * kPageSize) : std::nullopt;
}

// --- seed 001: Peter Wong and Partha Narayanan, "Significant Memory Reduction Using Huge
// Page Patch on Database Workload" (linux-mm, 2002). Scenario: seeds/hugetlb-dss, the pool
// on 680 hugetlb pages of 4 MiB as written, on 4 KiB pages with k4KiBPool.

constexpr std::string_view k4KiBPool = "object.bufferpool.kind=shm; machine.hugepages={}";
constexpr double kMiB = 1024.0 * 1024.0;

std::optional<double> page_tables_max(const run_result& r) { return double(r.peak.page_tables); }
// What seed 001 adds up for "the low memory area": pte_chains and PTE pages (no HIGHPTE).
std::optional<double> pte_chain_and_page_tables_max(const run_result& r) {
  const auto chains = pte_chain_bytes_max(r);
  if (!chains) return std::nullopt;
  return *chains + double(r.peak.page_tables);
}

// --- seed 004: Brian Twichell (IBM), McCracken's shared page tables under OLTP
// (linux-kernel, 2006-01-12/24; linux-mm, 2006-05-05). Scenarios: seeds/ptshare-oltp-x86_64
// (DB2, 64 GB), seeds/ptshare-oltp-ppc64 (Oracle, 64 GB), seeds/ptshare-oltp-8g (the 8 GB
// follow-up), each written for the unshared 2.6.15 kernel; the sharing kernel and the
// hugetlb pool are variants. "Freed" is PageTables (max) unshared less shared, one scenario.

constexpr std::string_view kPtshareX86 = "kernel.profile=linux-2.6.15-ptshare";
constexpr std::string_view kPtsharePpc64 = "kernel.profile=linux-2.6.15-ppc64-ptshare";
// The 8 GB box's 5.75 GiB pool on 2,944 hugetlb pages of 2 MiB, without and with sharing.
constexpr std::string_view kHuge8g = "object.bufferpool.kind=hugetlb; machine.hugepages={\"2MiB\"=2944}";
constexpr std::string_view kHuge8gShared =
    "object.bufferpool.kind=hugetlb; machine.hugepages={\"2MiB\"=2944}; kernel.profile=linux-2.6.15-ptshare";
constexpr double kGiB = 1024.0 * kMiB;
// The 64 GB boxes with their pools on hugetlb pages, unshared: every pool page a huge page
// of the format's PMD-level size (x86-64: 48.5 GiB = 24,832 x 2 MiB; ppc64-4k: 52.5 GiB =
// 3,360 x 16 MiB), the pool size and everything else as in the 4 KiB runs.
constexpr std::string_view kHugeX86 = "object.bufferpool.kind=hugetlb; machine.hugepages={\"2MiB\"=24832}";
constexpr std::string_view kHugePpc64 = "object.sga.kind=hugetlb; machine.hugepages={\"16MiB\"=3360}";

// Page-table pages of the PMD level at their maximum (tables, not bytes: a 2.6.15 x86-64
// PMD table is a 4 KiB page, a ppc64-4k one a 1 KiB slab object; neither is in PageTables).
std::optional<double> pmd_tables_max(const run_result& r) {
  return double(r.peak.pt_pages[static_cast<int>(level::pmd)]);
}

// A seed-004 figure the seed does not publish (seed_figure::published).
seed_figure unpublished(std::string_view scenario, std::string_view metric, std::string_view unit,
                        std::string_view note, std::optional<double> (*extract)(const run_result&),
                        std::string_view settings) {
  return {"004", scenario, metric, 0, unit, note, 0, extract, settings, false, "", 0, 0, false};
}

// Whole numbers print as integers ("paper": 22817885, not 22817885.0).
nlohmann::json number(double v) {
  if (v >= 0 && v < 9.0e15 && v == std::floor(v)) return uint64_t(v);
  return v;
}

// Seed 003's rates: tiobench's "MB/s" are 2^20 bytes per second (tiotest.c).
std::optional<double> tiobench_rate(const tiobench_run& r, tiobench_test t) {
  for (const auto& x : r.tests)
    if (x.test == t) return x.rate_mb_s(r.spec.block_bytes);
  return std::nullopt;
}
std::optional<double> tio_write(const tiobench_run& r) { return tiobench_rate(r, tiobench_test::write); }
std::optional<double> tio_random_write(const tiobench_run& r) { return tiobench_rate(r, tiobench_test::random_write); }
std::optional<double> tio_read(const tiobench_run& r) { return tiobench_rate(r, tiobench_test::read); }
std::optional<double> tio_random_read(const tiobench_run& r) { return tiobench_rate(r, tiobench_test::random_read); }

// A seed-003 rate: the "2.4.1pre3 + Marcelo's patch" row, 25% (issue 9).
seed_figure tiobench_figure(std::string_view metric, double paper, std::string_view note,
                            std::optional<double> (*extract)(const tiobench_run&)) {
  return {"003", "tiobench/seed-003", metric, paper, "MiB/s", note, 0.25, nullptr, "", false, "", 0, 0, true, extract};
}

std::string signed_percent(double v) { return fmt::format("{:+.2f}%", v * 100); }

}  // namespace

const std::vector<seed_figure>& seed_figures() {
  static const std::vector<seed_figure> v = {
      {"000", "seeds/rmap-dss", "ReverseMaps_max", 22'817'885, "mappings",
       "22,817,885: \"the maximum reversemap size\" (/proc/meminfo)", 0.05, reverse_maps_max, "", false, "", 0, 0},
      {"000", "seeds/rmap-dss", "pte_chain_active_objs_max", 3'411'018, "objects",
       "3,411,018 active pte_chain objects, 32 bytes each (/proc/slabinfo)", 0.05, pte_chain_active_objs_max, "", false, "", 0, 0},
      {"000", "seeds/rmap-dss", "pte_chain_bytes_max", 3'411'018.0 * 32, "bytes", "\"about 104 MB\" (3,411,018 x 32 B)",
       0.05, pte_chain_bytes_max, "", false, "", 0, 0},
      {"000", "seeds/rmap-dss", "pte_chain_slabs_max", 30'186, "slabs", "30,186 pte_chain slabs \"with 4KB each\"", 0.10,
       pte_chain_slabs_max, "", false, "", 0, 0},
      {"000", "seeds/rmap-dss", "pte_chain_slab_bytes_max", 30'186.0 * 4096, "bytes", "\"about 118 MB\" (30,186 x 4 KB)",
       0.10, pte_chain_slab_bytes_max, "", false, "", 0, 0},
      // The readv variant (issue 9): the I/O servers readv() into the pool and map it too.
      {"000", "seeds/rmap-dss-readv", "pte_chain_slab_bytes_max_readv", 223.0 * kMiB, "bytes",
       "\"using readv is about 223 MB\" (2.5.32; pte_chain slabs, as the read runs' 118 MB)", 0.10, pte_chain_slab_bytes_max, "",
       false, "", 0, 0},
      {"001", "seeds/hugetlb-dss", "pte_chain_max_4KiB", 182.4 * kMiB, "bytes", "pte_chain (max) 182.4 MB, 4 KiB pages",
       0.05, pte_chain_bytes_max, k4KiBPool, false, "", 0, 0},
      {"001", "seeds/hugetlb-dss", "pte_chain_max_huge", 4.3 * kMiB, "bytes", "pte_chain (max) 4.3 MB, huge pages", 0.05,
       pte_chain_bytes_max, "", false, "", 0, 0},
      {"001", "seeds/hugetlb-dss", "PageTables_max_4KiB", 153.7 * kMiB, "bytes", "PageTables (max) 153.7 MB, 4 KiB pages",
       0.05, page_tables_max, k4KiBPool, false, "", 0, 0},
      {"001", "seeds/hugetlb-dss", "PageTables_max_huge", 9.5 * kMiB, "bytes", "PageTables (max) 9.5 MB, huge pages",
       0.05, page_tables_max, "", false, "", 0, 0},
      {"001", "seeds/hugetlb-dss", "lowmem_saved", 322 * kMiB, "bytes",
       "\"we save ~322 MB in the low memory area\" (pte_chain + PageTables)", 0.05, pte_chain_and_page_tables_max,
       k4KiBPool, true, "", 0, 0},
      tiobench_figure("seq_write_rate", 10.57, "Seq Write 10.57 MB/s (15.3% CPU), 2.4.1pre3 + Marcelo's patch",
                      tio_write),
      tiobench_figure("random_write_rate", 0.594, "Rand Write 0.594 MB/s (1.44% CPU)", tio_random_write),
      tiobench_figure("seq_read_rate", 12.68, "Seq Read 12.68 MB/s (9.23% CPU)", tio_read),
      tiobench_figure("random_read_rate", 0.497, "Rand Read 0.497 MB/s (0.92% CPU)", tio_random_read),
      {"004", "seeds/ptshare-oltp-x86_64", "freed_x86_64_64g", 14 * kGiB, "bytes",
       "\"over 14 GB of memory was freed\" (x86-64, DB2, 4 KB buffers; band 14-16 GB)", 0, page_tables_max, "", true,
       kPtshareX86, 14 * kGiB, 16 * kGiB},
      {"004", "seeds/ptshare-oltp-ppc64", "freed_ppc64_64g", 10 * kGiB, "bytes",
       "\"Over 10 GB of memory was freed\" (ppc64, Oracle, segment sharing; band 10-12 GB)", 0, page_tables_max, "",
       true, kPtsharePpc64, 10 * kGiB, 12 * kGiB},
      {"004", "seeds/ptshare-oltp-8g", "PageTables_8g_4KiB", 1.65 * kGiB, "bytes",
       "8 GB box, small pages: page tables \"1.65 GB\" unshared", 0.10, page_tables_max, "", false, "", 0, 0},
      {"004", "seeds/ptshare-oltp-8g", "PageTables_8g_4KiB_shared", 51 * kMiB, "bytes",
       "8 GB box, small pages: \"to 51 MB\" shared", 0.10, page_tables_max, kPtshareX86, false, "", 0, 0},
      {"004", "seeds/ptshare-oltp-8g", "PageTables_8g_huge", 53 * kMiB, "bytes",
       "8 GB box, hugepages: page tables 53 MB unshared", 0.10, page_tables_max, kHuge8g, false, "", 0, 0},
      {"004", "seeds/ptshare-oltp-8g", "PageTables_8g_huge_shared", 37 * kMiB, "bytes",
       "8 GB box, hugepages: 37 MB shared", 0.10, page_tables_max, kHuge8gShared, false, "", 0, 0},
      // Not published: the seed gives +4 % (x86-64, 2 MB pages) and +3 % (ppc64, 16 MB
      // pages) throughput for these runs, and no memory figure.
      unpublished("seeds/ptshare-oltp-x86_64", "PageTables_x86_64_64g_4KiB", "bytes",
                  "x86-64 64 GB, 4 KiB pages, unshared", page_tables_max, ""),
      unpublished("seeds/ptshare-oltp-x86_64", "PageTables_x86_64_64g_huge", "bytes",
                  "x86-64 64 GB, pool on 2 MiB hugetlb pages, unshared (seed: +4 % throughput)", page_tables_max,
                  kHugeX86),
      unpublished("seeds/ptshare-oltp-x86_64", "pmd_tables_x86_64_64g_huge", "tables",
                  "x86-64 64 GB, 2 MiB pages: PMD tables (4 KiB pages, not in 2.6.15's PageTables)", pmd_tables_max,
                  kHugeX86),
      unpublished("seeds/ptshare-oltp-ppc64", "PageTables_ppc64_64g_4KiB", "bytes",
                  "ppc64 64 GB, 4 KiB pages, unshared", page_tables_max, ""),
      unpublished("seeds/ptshare-oltp-ppc64", "PageTables_ppc64_64g_huge", "bytes",
                  "ppc64 64 GB, SGA on 16 MiB hugetlb pages, unshared (seed: +3 % throughput)", page_tables_max,
                  kHugePpc64),
      unpublished("seeds/ptshare-oltp-ppc64", "pmd_tables_ppc64_64g_huge", "tables",
                  "ppc64 64 GB, 16 MiB pages: PMD tables (1 KiB slab objects, not in PageTables)", pmd_tables_max,
                  kHugePpc64),
  };
  return v;
}

seed_check check_seed_figure(const seed_figure& f, const run_result& r, const run_result* minus) {
  seed_check c;
  c.figure = &f;
  c.completed = r.failures.empty() && (!f.difference || (minus && minus->failures.empty()));
  c.vmlab = f.extract(r);
  if (f.difference) {
    const auto m = minus ? f.extract(*minus) : std::nullopt;
    c.vmlab = c.vmlab && m ? std::optional<double>(*c.vmlab - *m) : std::nullopt;
  }
  if (!f.published) {
    c.ok = c.completed && c.vmlab.has_value();
    return c;
  }
  if (c.vmlab) c.rel_error = (*c.vmlab - f.paper) / f.paper;
  const bool within = f.band_high > 0 ? c.vmlab && *c.vmlab >= f.band_low && *c.vmlab <= f.band_high
                                      : c.vmlab && std::abs(c.rel_error) <= f.tolerance;
  c.ok = c.completed && within;
  return c;
}

tiobench_spec seed_tiobench_spec(std::string_view scenario) {
  tiobench_spec s;  // tiobench.pl's defaults: 4096-byte blocks, 4000 random ops in total
  if (scenario == "tiobench/seed-003") {
    s.size_mb = 1024;  // "File Size 1024", "Block Size 4096", "Num Thr 2", "with mmap()"
    s.threads = 2;
    s.mmap = true;
  }
  return s;
}

sim::tiobench_sim_options seed_tiobench_options(std::string_view scenario) {
  sim::tiobench_sim_options o;
  if (scenario == "tiobench/seed-003") {
    // Vlad Bolkhovitine, 12 Jan 2001 (quoted in the seed's thread): "tiotest v0.3.1",
    // "compiled for mmap() usage", "the system with ~200Mb free memory", "Tiotest tries to
    // create mmap'ed file with size ~memory_size*2" (each thread's file is 512 MB).
    o.tiotest = sim::tiotest_build::v031_mmap;
    o.memory_bytes = 256ull << 20;
    o.free_bytes = 200ull << 20;
  }
  return o;
}

seed_check check_seed_figure(const seed_figure& f, const tiobench_run& r) {
  seed_check c;
  c.figure = &f;
  c.vmlab = f.extract_tiobench ? f.extract_tiobench(r) : std::nullopt;
  if (c.vmlab) c.rel_error = (*c.vmlab - f.paper) / f.paper;
  c.ok = c.vmlab && std::abs(c.rel_error) <= f.tolerance;
  return c;
}

nlohmann::json seeds_json(const std::vector<seed_check>& checks) {
  nlohmann::json figs = nlohmann::json::array();
  for (const auto& c : checks) {
    const seed_figure& f = *c.figure;
    figs.push_back({{"seed", f.seed},
                    {"metric", f.metric},
                    {"paper", f.published ? number(f.paper) : nlohmann::json(nullptr)},
                    {"published", f.published},
                    {"vmlab", c.vmlab ? number(*c.vmlab) : nlohmann::json(nullptr)},
                    {"rel_error", c.vmlab && f.published ? nlohmann::json(c.rel_error) : nlohmann::json(nullptr)},
                    {"unit", f.unit},
                    {"tolerance", f.tolerance},
                    {"band", f.band_high > 0 ? nlohmann::json::array({number(f.band_low), number(f.band_high)})
                                             : nlohmann::json(nullptr)},
                    {"scenario", f.scenario},
                    {"settings", f.settings},
                    {"note", f.note},
                    {"completed", c.completed},
                    {"ok", c.ok}});
  }
  return {{"schema_version", 1}, {"figures", figs}};
}

std::string format_seeds_table(const std::vector<seed_check>& checks, size_unit u) {
  std::string out = fmt::format("{:<5} {:<26} {:>12} {:>12} {:>9} {:>5}  {:<6} {}\n", "seed", "metric", "paper", "vmlab",
                                "rel.err", "tol", "", "as published");
  size_t failed = 0, published = 0;
  auto row = [&](const seed_check& c) {
    const seed_figure& f = *c.figure;
    const std::string verdict = c.ok ? "ok" : !c.completed ? "FAIL*" : "FAIL";
    const bool size = f.unit == "bytes";
    auto value = [&](double v) {
      return size ? format_size(v, u) : f.unit == "MiB/s" ? fmt::format("{:.3f}", v) : fmt::format("{:.0f}", v);
    };
    // A band figure's tolerance column says "band"; its note gives the band.
    const std::string tol = !f.published ? "-" : f.band_high > 0 ? "band" : fmt::format("{:.0f}%", f.tolerance * 100);
    out += fmt::format("{:<5} {:<26} {:>12} {:>12} {:>9} {:>5}  {:<6} {}\n", f.seed, f.metric,
                       f.published ? value(f.paper) : "-", c.vmlab ? value(*c.vmlab) : "-",
                       c.vmlab && f.published ? signed_percent(c.rel_error) : "-", tol, verdict, f.note);
    failed += !c.ok;
  };
  for (const auto& c : checks)
    if (c.figure->published) row(c), ++published;
  if (published < checks.size()) {
    out += "\nvmlab's figures for runs the seeds publish no memory figure for:\n";
    for (const auto& c : checks)
      if (!c.figure->published) row(c);
  }
  bool cut_short = false;
  for (const auto& c : checks) cut_short |= !c.completed;
  if (cut_short) out += "* the scenario's run ended early (see `vmlab run SCENARIO`)\n";
  out += fmt::format("\n{} figures, {} outside tolerance\n", published, failed);
  return out;
}

}  // namespace vmlab
