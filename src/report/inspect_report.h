// `vmlab inspect`'s table and JSON: each process's page tables attributed to its mappings,
// the segments processes share, and the reconciliation with VmPTE and PageTables.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/live/inspect.h"
#include "report/units.h"  // human_bytes

namespace vmlab {

struct inspect_format {
  bool vmas = false;       // every VMA that needs a table, per process
  size_t top_segments = 10;
};

std::string format_inspection(const live::inspection& in, const inspect_format& how);

// {"schema_version":1, "paging", "exact_huge", "processes":[{pid, comm, vmpte_bytes,
//  vmrss_bytes, pss_bytes, attributed_bytes, residual_bytes, tables:{pte,pmd,pud},
//  vmas:[{start, end, perms, offset, inode, path, kernel_page_size_bytes, present_pages,
//  huge_entries, tables:{...}, table_bytes, shared_pmd_windows}]}], "segments":[...],
//  "skipped":[{pid, reason}], "page_tables":{meminfo_bytes, processes_bytes, residual_bytes}}
nlohmann::json inspection_json(const live::inspection& in);

}  // namespace vmlab
