// `vmlab estimate`: what N processes sharing a segment cost in page tables, reverse maps
// and slab objects, in closed form, for each design a profile offers (designs.h).
//
// The shape: `processes` processes each map one shared memory object of `shared` bytes
// (MAP_SHARED, aligned to the span of one PMD table, 1 GiB on x86-64, as
// scenarios/scale/sga-1500x300g does) and `private_bytes` of private anonymous memory
// (aligned to the span of one PTE table), touch a sequential prefix of `touched` of the
// segment, and write all of their private memory. estimate_scenario() writes exactly this
// as a scenario; tests/report/estimate_test.cc runs it on the sim engine and checks every
// figure here against it, byte for byte.
//
// How: the page-table pages of one address space are the distinct table windows its
// touched ranges pass through, level by level (mm/memory.c __p*d_alloc allocates one table
// per window on the first fault below it); the ranges come from placing the two mappings
// as mmap.cc's get_unmapped_area would in an address space that holds only them. What a
// design changes is read from its spec: the leaf level of the shared pages (PTE, PMD for a
// shmem THP or a 2 MiB hugetlb page, PUD for a 1 GiB one), PMD sharing, anon THP with its
// deposited PTE page. Figures are the ones the kernel reports: PageTables (the levels the
// profile counts, each shared page once), VmPTE (per process, a shared PMD page in each),
// slabinfo's active objects and slab pages.
//
// Exact for the shape above. Not modelled (so not exact for other shapes): touches that
// are not a prefix (a scattered fraction needs more tables: see scattered_tables), forks,
// several segments, and a process image (text, libraries, stack: issue 12 item 4).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/profile.h"
#include "vmlab/run_result.h"
#include "vmlab/status.h"
#include "workload/designs.h"

namespace vmlab {

struct estimate_shape {
  uint64_t processes = 1;
  bytes shared = 0;         // the shared object's size (> 0)
  bytes private_bytes = 0;  // private anonymous memory each process writes
  double touched = 1.0;     // fraction of the shared object touched, in (0, 1]: a prefix
};

// A slab cache's share of the shape, system-wide.
struct cache_estimate {
  std::string name;        // as /proc/slabinfo names the cache
  bool rmap = false;       // a reverse-map cache: pte_chain, anon_vma, anon_vma_chain
  uint64_t objects = 0;    // active_objs
  uint32_t objsize = 0;    // the slot size, as slabinfo prints it
  uint64_t slab_pages = 0; // num_slabs * pagesperslab (objects allocated, none freed)
  [[nodiscard]] bytes object_bytes() const { return objects * objsize; }
};

struct estimate_figures {
  design d;
  level_counts tables_per_proc{};  // page-table pages of one address space, by level
  level_counts tables_shared{};    // of those, pages every process shares (PMD sharing)
  level_counts tables_total{};     // system-wide: N per process, shared ones once
  bytes vmpte = 0;                 // VmPTE of each process
  bytes proc_table_bytes = 0;      // every level of one address space, the PGD included
  bytes page_tables = 0;           // /proc/meminfo PageTables (end of the run = its maximum)
  bytes table_bytes = 0;           // every page-table page system-wide, counted or not
  std::vector<cache_estimate> caches;
  bytes page_size = 0;             // the base page (slab pages are of this size)
  // Page-table pages expected if the touched fraction were scattered at random over the
  // segment instead of a prefix (≈: see estimate.cc); equals tables_total at 100%.
  level_counts scattered_tables{};
  bytes scattered_page_tables = 0;
  [[nodiscard]] bytes rmap_bytes() const;   // object bytes of the rmap caches
  [[nodiscard]] bytes slab_bytes() const;   // slab pages of every cache, in bytes
};

// The profile `name` as a kernel built from it would have it (rmap_policy_finish).
result<kernel_profile> estimate_profile(const std::string& name);

// invalid_argument for a shape no design can have (no processes, an empty segment, a
// fraction outside (0, 1], more processes than PID_MAX_LIMIT, sizes past the address
// space or past 64-bit byte counts); estimate_design checks it first.
status estimate_check_shape(const kernel_profile& p, const estimate_shape& s);

// The shape's figures under design d. invalid_argument for an impossible shape (no
// processes, an empty segment, a fraction outside (0, 1], a design the profile lacks).
result<estimate_figures> estimate_design(const kernel_profile& p, const estimate_shape& s, const design& d);

// Every design of designs_for(p), 4 KiB first.
result<std::vector<estimate_figures>> estimate_all(const kernel_profile& p, const estimate_shape& s);

// The scenario whose sim run the figures equal: the 4 KiB form, to which a design's
// settings apply (the shared object is "sga", the groups' maps "sga" and "private").
std::string estimate_scenario(const kernel_profile& p, const estimate_shape& s);
// The design target of that scenario (for designs_for / design_settings).
design_target estimate_target(const estimate_shape& s);

// ---- estimate_report.cc: what `vmlab estimate` prints ------------------------------------

// The focused design (all[focus]) per process and in total, then every design side by
// side with what each saves against the first (4 KiB). Sizes in binary units (GiB =
// 2^30), the totals in decimal ones too (GB = 10^9). `memory` > 0: say whether the shape
// fits a machine of that size.
std::string format_estimate(const kernel_profile& p, const estimate_shape& s, const std::vector<estimate_figures>& all,
                            size_t focus, bytes memory);
// {"schema_version": 1, "profile", "shape", "focus", "designs": [...]}: sizes in bytes,
// in keys ending in _bytes.
nlohmann::json estimate_json(const kernel_profile& p, const estimate_shape& s, const std::vector<estimate_figures>& all,
                             size_t focus, bytes memory);
// What the shape needs of a machine: the segment, every process's private memory, the
// page tables and the slabs of design e.
bytes estimate_machine_need(const estimate_shape& s, const estimate_figures& e);
// "601.2 MiB" (binary units) and "945.5 GB" (decimal units), one decimal.
std::string binary_size(bytes b);
std::string decimal_size(bytes b);

}  // namespace vmlab
