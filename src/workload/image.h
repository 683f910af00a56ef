// The process image: what a process has besides the workload's mappings (its executable's
// text and data, heap, shared libraries, stack), so that a scenario's VmPTE can be the
// whole process's, as /proc/PID/status shows it for a real backend, and not only the
// workload's share.
//
// A group asks for one with `image = "typical"` or a table of resident sizes
// (`image = { text = "1MiB", heap = "64MiB" }`, the rest typical). The image becomes
// ordinary mappings of each process of the group, mapped and touched at spawn (a child of
// fork inherits them): in the sim they are counted like any mapping; the live engine
// creates them as real mappings at the same addresses in its worker (whose own
// executable and libraries stay its baseline), so both engines report the whole
// simulated process: image + workload.
//
// Where they are: as a dynamically linked program on x86-64 Linux 6.x has them with ASLR,
// as `vmlab inspect` read bash 5.2 on Debian 12 (this project's host): the executable at
// 0x555bb9483000, the heap 742 MiB above it (another PMD table's span), the libraries
// ending at 0x7f5bafe8c000 and the stack at 0x7ffdd7897000 (two more PUD tables' spans).
// The image keeps each address's offset within its PUD table's 512 GiB span, so it needs
// the tables that bash needed, but in spans no process's own layout reaches: the
// executable at 0x505bb9483000 (PIE bases start at 0x555555554000), the libraries and the
// stack 2 TiB below where ASLR puts them (0x7c5bafe8c000, 0x7cfdd7897000; mmap_base is at
// most 1 TiB below the stack gap). So the live engine's worker, whose own executable and
// libraries are where ASLR put them (its baseline), shares no table with the image, and
// both engines count the image's tables in full. On the i386 formats (3 GiB user space):
// the executable at 0x08048000 with the heap after it, the libraries from
// TASK_UNMAPPED_BASE (0x40000000) and the stack under 0xc0000000. On the ppc64 formats:
// the executable at 0x10000000 (the 64-bit PowerPC ELF link address) with the heap after
// it, the stack ending at TASK_SIZE and the libraries ending at mmap_base, 128 MiB below
// (arch/powerpc/mm/mmap.c), without randomisation. A part that leaves TASK_SIZE or runs
// into the next is a load error (scenario.cc). The sizes are what is
// resident (present pages need tables; mapped but untouched ones do not); "typical" is
// what inspect read of that bash, rounded: 1 MiB of text, 128 KiB of data, 512 KiB of
// heap, 2 MiB of libraries, 32 KiB of stack.
#pragma once

#include <string>
#include <vector>

#include "model/arch.h"
#include "vmlab/units.h"

namespace vmlab {

struct image_spec {
  bytes text = 1 << 20;        // the executable's text and read-only data (a file mapping)
  bytes data = 128 << 10;      // its data and bss (private, written)
  bytes heap = 512 << 10;      // brk heap (written)
  bytes libraries = 2 << 20;   // shared libraries' text (a file mapping)
  bytes stack = 32 << 10;      // the stack in use (written, at the top of a 132 KiB VMA)
};

// One mapping of an image: at `addr`, `size` bytes, of the executable's or the libraries'
// file (object "image.exe" / "image.libs") or anonymous; [touch_off, touch_off +
// touch_len) touched at spawn.
struct image_map {
  std::string name;    // "image.text", ...
  std::string object;  // "image.exe", "image.libs" or "anon"
  vaddr addr = 0;
  bytes size = 0;
  bytes touch_off = 0, touch_len = 0;
  bool write = false;
};

// The mappings of `img` on paging format `f` (sizes rounded up to its pages).
std::vector<image_map> image_maps(const image_spec& img, const paging_format& f);

}  // namespace vmlab
