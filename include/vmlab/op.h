// The op stream: what a workload asks of a kernel, one operation at a time.
//
// Why an op stream: the scenario generator, a trace file written by hand or by another
// tool, the sim engine and the live engine all meet here. The generator emits it, both
// engines consume it, `vmlab trace` writes it and `vmlab run --trace` reads it back, so
// "same scenario and seed -> same result" reduces to "same op stream -> same result".
//
// Mappings are named, not addressed: `mmap` creates mapping `map` in process `pid`, and
// later ops name it and an offset inside it. A child inherits its parent's mapping names at
// fork. This keeps traces valid on any host, and lets the kernel (simulated or real) pick
// addresses when the workload does not fix them.
//
// Invariants the parser and the generator guarantee (the engines rely on them):
//  1. pids are created by `spawn` or `fork` before use and not used after `exit`;
//  2. a mapping name is created by `mmap` before use; offsets/lengths are page multiples
//     and lie inside the mapping as created or as mremap last sized it (a later munmap
//     may have removed pages: that is a runtime fault, reported as the simulated kernel would: SIGSEGV);
//  3. objects are declared before any op that names them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "vmlab/units.h"

namespace vmlab {

// shm: a shmem segment (SysV, memfd); file: a regular file (page cache); hugetlb: a
// hugetlbfs file or SysV SHM_HUGETLB segment, made of huge pages from the pool.
enum class object_kind : uint8_t { shm, file, hugetlb };

// A shared memory object the workload maps: a SysV/memfd segment or a regular file.
struct object_decl {
  std::string name;
  object_kind kind = object_kind::shm;
  bytes size = 0;
  bytes page_size = 0;  // hugetlb: its huge page size (0 = the profile's default hstate)
  // An msharefs region (Oracle's mshare, linux-6.18-mshare): its processes share the page
  // tables that map it (src/model/ptshare.h).
  bool mshare = false;
};

// read covers read(2) and pread(2) (every read names its file offset), write covers
// write(2) and pwrite(2); readv(2) reads into `count` iovecs; fsync(2) the object;
// msync(MS_SYNC) a range of a mapping. mremap resizes or moves a whole mapping;
// remap_file_pages gives part of a shared file mapping other file pages.
enum class op_kind : uint8_t {
  spawn, fork, exit, mmap, munmap, mprotect, madvise, touch, phase, read, readv, write, fsync, msync, mremap,
  remap_file_pages, reclaim
};

// Protection bits, as PROT_READ / PROT_WRITE.
enum prot_bits : uint8_t { prot_none = 0, prot_read = 1, prot_write = 2 };

// madvise() advice. hugepage/nohugepage (MADV_HUGEPAGE, MADV_NOHUGEPAGE) set VM_HUGEPAGE /
// VM_NOHUGEPAGE on the range, which the THP policies read.
// sequential/random (MADV_SEQUENTIAL, MADV_RANDOM) set VM_SEQ_READ / VM_RAND_READ, which
// mapped-file readahead reads.
enum class advice : uint8_t { dontneed, hugepage, nohugepage, sequential, random };

// How a touch op chooses pages inside [off, off+len).
enum class touch_pattern : uint8_t {
  all,      // every page, in address order
  stride,   // one byte every `stride` bytes, starting at off
  uniform,  // `count` distinct pages chosen uniformly at random with `seed`
  zipf,     // `count` accesses, page ranks drawn from Zipf(`theta`) with `seed`
};

struct op {
  op_kind kind = op_kind::phase;
  uint32_t pid = 0;    // acting process
  uint32_t child = 0;  // fork: the new pid
  uint32_t map = 0;    // mapping name (index into the op stream's map names)

  // mmap
  int32_t object = -1;   // index into objects; -1 = anonymous
  bool shared = false;   // MAP_SHARED (else MAP_PRIVATE)
  bool locked = false;   // MAP_LOCKED: populate at mmap time and never reclaim
  bool fixed = false;    // addr is required (MAP_FIXED_NOREPLACE)
  bool hugetlb = false;  // anonymous: MAP_HUGETLB (huge pages from the pool)
  bool noreserve = false;  // MAP_NORESERVE: hugetlb pages are not reserved at mmap
  bytes page_size = 0;   // MAP_HUGETLB: MAP_HUGE_2MB / MAP_HUGE_1GB (0 = the default hstate)
  bool has_hint = false; // mmap is followed by madvise(`hint`) over the whole mapping
  advice hint = advice::hugepage;
  vaddr addr = 0;        // fixed address, or a hint of 0
  bytes align = 0;       // non-fixed: start % align == phase_off (0 = page alignment)
  bytes phase_off = 0;
  bytes obj_off = 0;     // offset into the object (file/shm)
  uint8_t prot = prot_read | prot_write;

  // munmap, mprotect, madvise, touch: [off, off+len) inside mapping `map`
  bytes off = 0;
  bytes len = 0;
  advice adv = advice::dontneed;

  // touch
  bool write = false;
  touch_pattern pattern = touch_pattern::all;
  bytes stride = 0;
  uint64_t count = 0;
  uint64_t seed = 0;
  double theta = 0.0;

  // read, readv, write: bytes [obj_off, obj_off+len) of file/shm `object`, to or from a
  // user buffer in mapping `map` when `buffer` (else a private buffer the workload does not
  // model): `count` iovecs (1 for read/write) of len/count bytes, iovec i at offset
  // off + i * stride of the mapping (stride 0: back to back). `direct`: O_DIRECT.
  // fsync: `object`. msync: [off, off+len) of mapping `map`.
  // mremap: mapping `map`, whole, to `len` bytes; `maymove` (MREMAP_MAYMOVE) lets it move,
  // `fixed` (MREMAP_FIXED) to `addr`. Later ops see the mapping as mremap left it.
  // remap_file_pages: [off, off+len) of mapping `map` maps object bytes from `obj_off`.
  // reclaim: kernel-wide (pid 0), up to `len` bytes of page cache through the LRU (0: all
  // that can be evicted): memory.reclaim's work, the scenario's memory pressure.
  bool buffer = false;
  bool direct = false;
  bool maymove = false;  // mremap: MREMAP_MAYMOVE

  // phase: a named sample point (the end of a scenario phase)
  std::string name;
};

// The machine and kernel the workload runs on. Overrides are "key=value" pairs applied
// to the named kernel profile (see profile.h for the keys).
struct machine_decl {
  std::string profile = "linux-6.18";
  std::vector<std::pair<std::string, std::string>> overrides;
  bytes memory = 0;       // 0 = the profile's default
  // Huge-page pools at boot, by page size: nr_hugepages and nr_overcommit_hugepages of
  // each hstate (/sys/kernel/mm/hugepages/hugepages-<size>kB/).
  std::vector<std::pair<bytes, uint64_t>> hugepages;
  std::vector<std::pair<bytes, uint64_t>> overcommit_hugepages;
  // Fraction of pageblocks (the huge page of the PMD level) that hold an unmovable page:
  // a long-running machine's scattered kernel allocations. Huge pages can use only the
  // others. 0 = a freshly booted machine.
  double fragmentation = 0;
  uint32_t cpus = 0;        // 0 = the profile's machine (8 for seed 000's box, ...)
  uint32_t cache_line = 0;  // L1_CACHE_BYTES; 0 = the profile's CPU (32 on a Pentium III)
};

// A whole workload: machine, objects, the names of mappings, and the ops in order.
// Mappings named "image.*" are a process image's (workload/image.h); no other may be.
inline constexpr const char* kImagePrefix = "image.";

struct op_stream {
  machine_decl machine;
  std::vector<object_decl> objects;
  std::vector<std::string> map_names;
  std::vector<op> ops;
  std::string source;  // where it came from (scenario or trace path), for messages
  // A group's mappings are the whole process (image = "inspected": what inspect wrote).
  bool whole_process = false;
  [[nodiscard]] bool has_process_image() const {
    if (whole_process) return true;
    for (const std::string& m : map_names)
      if (m.rfind(kImagePrefix, 0) == 0) return true;
    return false;
  }
};

}  // namespace vmlab
