// A scenario as read from TOML, before it becomes an op stream: the hand-off between the
// reader (scenario.cc) and the generator (generator.cc). Every value keeps the place it
// came from, because the generator makes the checks that depend on the state at a point
// of the scenario (does group 'workers' exist yet? is anyone left alive?) and must still
// point at the offending line.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/profile.h"
#include "vmlab/op.h"
#include "vmlab/status.h"

namespace vmlab {

inline constexpr bytes kPage = 4096;
inline constexpr uint64_t kPidMaxLimit = 4194304;  // PID_MAX_LIMIT on 64-bit

inline status error_at(const source_location& l, std::string msg) { return status::invalid_argument(std::move(msg)).at(l); }

struct map_spec {
  std::string name;
  source_location where;       // the [[group.map]] table
  source_location size_at;     // 'size' (or the table)
  source_location addr_at;
  int32_t object = -1;
  bool shared = false;
  bool locked = false;
  bool fixed = false;
  vaddr addr = 0;
  bytes size = 0;
  bytes offset = 0;
  bytes align = 0;
  bytes phase = 0;
  uint8_t prot = prot_read | prot_write;
  bool hugetlb = false;     // anonymous MAP_HUGETLB
  bool noreserve = false;   // MAP_NORESERVE
  bytes page_size = 0;      // MAP_HUGETLB page size (0: the default)
  bool has_hint = false;    // madvise right after mmap
  advice hint = advice::hugepage;
  // Touched right after the mapping at spawn (a process image's mappings; image.h).
  bytes spawn_touch_off = 0, spawn_touch_len = 0;
  bool spawn_touch_write = false;
};

struct group_spec {
  std::string name;
  uint32_t count = 0;
  bool image = false;  // its processes have a process image (the image.* mappings)
  std::vector<map_spec> maps;
};

enum class phase_action {
  touch, fork, exit, munmap, mprotect, madvise, read, readv, write, fsync, msync, mremap, remap_file_pages, reclaim
};

struct phase_spec {
  std::string name;
  source_location where;
  std::optional<std::string> group;
  source_location group_at;
  phase_action act = phase_action::touch;
  std::string map;
  source_location map_at;
  bytes offset = 0;
  source_location offset_at;
  std::optional<bytes> length;
  source_location length_at;
  // touch: [offset, length] ranges each touched in full, instead of offset/length (what
  // `vmlab inspect --scenario` writes: the runs a real process has present).
  std::vector<std::pair<bytes, bytes>> ranges;
  source_location ranges_at;
  touch_pattern pattern = touch_pattern::all;
  bytes stride = 0;
  double fraction = 0;
  source_location fraction_at;
  double theta = 0.99;
  bool write = false;
  uint8_t prot = prot_read;
  advice adv = advice::dontneed;
  uint32_t children = 1;
  std::string into;
  source_location into_at;
  std::optional<uint64_t> processes;
  source_location processes_at;
  // read, readv, write, fsync: the object (a file or shm object) and, for the I/O, each
  // process's bytes [file_offset, file_offset + length) in calls of `request` bytes (the
  // whole length in one call when absent), into or from mapping `map` at `offset` (when
  // given; the buffer is reused cyclically when smaller than the I/O), readv with
  // `iovecs` iovecs a call; `direct`: O_DIRECT.
  std::string object;
  source_location object_at;
  bytes file_offset = 0;
  source_location file_offset_at;
  std::optional<bytes> request;
  source_location request_at;
  uint64_t iovecs = 1;
  source_location iovecs_at;
  bool direct = false;
  // mremap: the whole mapping `map` to `length` bytes (the key 'size'); `maymove`
  // (MREMAP_MAYMOVE); `address` (MREMAP_MAYMOVE | MREMAP_FIXED). remap_file_pages:
  // [offset, offset + length) of `map` to the object's bytes from `file_offset`.
  bool maymove = false;
  std::optional<vaddr> address;
  source_location address_at;
  // false: no sample point at the end of the phase (its ops still run). For scenarios of
  // thousands of phases (what `vmlab inspect --scenario` writes), where a sample after
  // each would cost more than the phases.
  bool sample = true;
};

struct scenario_spec {
  std::string name;
  uint64_t seed = 1;
  machine_decl machine;
  kernel_profile profile;
  std::vector<object_decl> objects;
  // Object name -> index in `objects`: maps find their object in O(1), so that reading is
  // linear in the input (200,000 objects; issue 11).
  std::unordered_map<std::string, int32_t> object_ids;
  std::vector<group_spec> groups;
  std::vector<phase_spec> phases;
};

// Plays the scenario forward (spawning groups, mapping, running phases) and emits its op
// stream. Deterministic: the same spec gives the same ops, seeds included.
result<op_stream> generate(const scenario_spec& sc);

}  // namespace vmlab
