// Reading a RunResult back from `vmlab run --json` (report.h: run_result_from_json).
#include "report/report.h"

namespace vmlab {
namespace {

using nlohmann::json;

uint64_t u64(const json& j, const char* key) { return j.contains(key) ? j.at(key).get<uint64_t>() : 0; }

// meminfo_json's inverse: a line the kernel does not print is absent, so the has_* flags
// follow from which keys are there; the peaks' free figures carry "_min".
meminfo meminfo_from_json(const json& j, bool peak) {
  const std::string min = peak ? "_min" : "";
  meminfo m;
  m.mem_total = u64(j, "MemTotal");
  m.mem_free = u64(j, ("MemFree" + min).c_str());
  m.has_highmem = j.contains("LowTotal");
  m.low_total = u64(j, "LowTotal");
  m.low_free = u64(j, ("LowFree" + min).c_str());
  m.high_total = u64(j, "HighTotal");
  m.high_free = u64(j, ("HighFree" + min).c_str());
  m.page_tables = u64(j, "PageTables");
  m.cached = u64(j, "Cached");
  m.dirty = u64(j, "Dirty");
  m.writeback = u64(j, "Writeback");
  m.has_mapped = j.contains("Mapped");
  m.mapped = u64(j, "Mapped");
  m.slab = u64(j, "Slab");
  m.has_reverse_maps = j.contains("ReverseMaps");
  m.reverse_maps = u64(j, "ReverseMaps");
  m.has_thp = j.contains("AnonHugePages");
  m.anon_huge = u64(j, "AnonHugePages");
  m.has_shmem_thp = j.contains("ShmemPmdMapped");
  m.shmem_huge = u64(j, "ShmemHugePages");
  m.shmem_pmd_mapped = u64(j, "ShmemPmdMapped");
  m.has_hugetlb = j.contains("HugePages_Total");
  m.hugepages_total = u64(j, "HugePages_Total");
  m.hugepages_free = u64(j, "HugePages_Free");
  m.hugepages_rsvd = u64(j, "HugePages_Rsvd");
  m.hugepages_surp = u64(j, "HugePages_Surp");
  m.hugepagesize = u64(j, "Hugepagesize");
  m.has_hugetlb_total = j.contains("Hugetlb");
  m.hugetlb = u64(j, "Hugetlb");
  m.mem_map = u64(j, "mem_map");
  return m;
}

std::vector<slab_row> slabs_from_json(const json& j) {
  std::vector<slab_row> rows;
  for (const auto& s : j) {
    slab_row r;
    r.name = s.at("name").get<std::string>();
    r.active_objs = u64(s, "active_objs");
    r.num_objs = u64(s, "num_objs");
    r.objsize = s.at("objsize").get<uint32_t>();
    r.objperslab = s.at("objperslab").get<uint32_t>();
    r.pagesperslab = s.at("pagesperslab").get<uint32_t>();
    r.active_slabs = u64(s, "active_slabs");
    r.num_slabs = u64(s, "num_slabs");
    rows.push_back(std::move(r));
  }
  return rows;
}

void samples_from_json(const json& j, run_result& r) {
  for (const auto& sj : j) {
    sample s;
    s.name = sj.at("name").get<std::string>();
    s.op_index = u64(sj, "op_index");
    s.page_tables = u64(sj, "PageTables");
    s.nr_procs = u64(sj, "nr_procs");
    s.mi_known = sj.contains("meminfo");
    if (s.mi_known) s.mi = meminfo_from_json(sj.at("meminfo"), false);
    if (sj.contains("slabs")) s.slabs = slabs_from_json(sj.at("slabs"));
    s.cached_known = sj.contains("Cached_workload");
    s.cached_workload = u64(sj, "Cached_workload");
    r.samples.push_back(std::move(s));
  }
}

}  // namespace

result<run_result> run_result_from_json(const json& j, const std::string& where) {
  try {
    if (!j.is_object() || !j.contains("schema_version") || !j.contains("peak"))
      return status::invalid_argument(where + ": not a RunResult (the JSON `vmlab run --json` prints)");
    run_result r;
    r.engine = j.at("engine").get<std::string>();
    r.scenario = j.at("scenario").get<std::string>();
    r.profile = j.at("profile").get<std::string>();
    r.page_size = j.value("page_size", uint64_t{4096});
    r.ops_applied = u64(j, "ops_applied");
    r.faults = u64(j, "faults");
    r.cow_faults = u64(j, "cow_faults");
    if (j.contains("shared_page_tables")) {
      const json& sp = j.at("shared_page_tables");
      r.shares_page_tables = true;
      r.pt_attaches = u64(sp, "attaches");
      r.pt_unshares = u64(sp, "unshares");
      r.tlb_flush_all = u64(sp, "tlb_flush_all");
    }
    if (j.contains("reclaim")) {
      const json& c = j.at("reclaim");
      reclaim_stats& t = r.reclaim;
      t.scanned = u64(c, "scanned");
      t.reclaimed = u64(c, "reclaimed");
      t.rotated = u64(c, "rotated");
      t.kept = u64(c, "kept");
      t.unmapped = u64(c, "unmapped");
      t.written = u64(c, "written");
      t.swap_out_calls = u64(c, "swap_out_calls");
      const json& w = c.at("rmap_work");
      t.work = {u64(w, "walks"), u64(w, "chain_entries"), u64(w, "chain_objects"), u64(w, "vmas_visited"),
                u64(w, "pt_walks"), u64(w, "ptes_scanned"), u64(w, "unmapped")};
    }
    if (j.contains("page_cache")) {
      r.pages_written = u64(j.at("page_cache"), "written_pages");
      r.readahead_pages = u64(j.at("page_cache"), "readahead_pages");
    }
    samples_from_json(j.at("samples"), r);
    const json& p = j.at("peak");
    r.peak.page_tables = u64(p, "PageTables");
    r.peak.page_tables_workload = u64(p, "PageTables_workload");
    r.peak.vmpte_max_proc = u64(p, "VmPTE_max_process");
    if (p.contains("meminfo")) r.peak.mi = meminfo_from_json(p.at("meminfo"), true);
    if (p.contains("slabs")) r.peak.slabs = slabs_from_json(p.at("slabs"));
    for (const auto& f : j.at("failures"))
      r.failures.push_back({u64(f, "op_index"), f.at("op").get<std::string>(), f.at("error").get<std::string>(),
                            host_answer::none});
    return r;
  } catch (const json::exception& e) {
    return status::invalid_argument(where + ": not a RunResult: " + e.what());
  }
}

}  // namespace vmlab
