// Ops built in code: tests, benchmarks and tools that drive a sim_kernel (or write an op
// stream) without a scenario file. One function per op kind with the arguments every op
// of that kind needs; the rest are named setters on the result, so a reader sees
//
//   apply(ops::mmap_object(1, kSga, sga, 256 * GiB).shared().align(GiB));
//   apply(ops::touch(1, kSga, 0, 256 * GiB).write());
//
// instead of twenty field assignments. The result converts to `op`. The builder does not
// validate (the scenario and trace readers do, through workload/op_rules.h): a test may
// build a bad op on purpose to see the kernel refuse it.
#pragma once

#include <string>
#include <utility>

#include "vmlab/op.h"

namespace vmlab::ops {

class op_builder {
 public:
  explicit op_builder(op o) : o_(std::move(o)) {}
  operator const op&() const { return o_; }  // NOLINT: implicit by design
  [[nodiscard]] const op& get() const { return o_; }

  // mmap
  op_builder& shared(bool v = true) { o_.shared = v; return *this; }
  op_builder& locked(bool v = true) { o_.locked = v; return *this; }
  op_builder& prot(uint8_t p) { o_.prot = p; return *this; }
  op_builder& align(bytes a, bytes phase = 0) { o_.align = a; o_.phase_off = phase; return *this; }
  op_builder& at(vaddr a) { o_.fixed = true; o_.addr = a; return *this; }
  op_builder& object_offset(bytes off) { o_.obj_off = off; return *this; }
  op_builder& hugetlb(bytes page_size = 0) { o_.hugetlb = true; o_.page_size = page_size; return *this; }
  op_builder& noreserve(bool v = true) { o_.noreserve = v; return *this; }
  op_builder& hint(advice a) { o_.has_hint = true; o_.hint = a; return *this; }
  // touch
  op_builder& write(bool v = true) { o_.write = v; return *this; }
  op_builder& stride(bytes s) { o_.pattern = touch_pattern::stride; o_.stride = s; return *this; }
  op_builder& uniform(uint64_t count, uint64_t seed) {
    o_.pattern = touch_pattern::uniform;
    o_.count = count;
    o_.seed = seed;
    return *this;
  }
  // read, readv, write: the user buffer is [off, ...) of mapping `map`; iovecs `stride`
  // bytes apart (readv); O_DIRECT.
  op_builder& into(uint32_t map, bytes off) { o_.buffer = true; o_.map = map; o_.off = off; return *this; }
  op_builder& iov_stride(bytes s) { o_.stride = s; return *this; }
  op_builder& direct(bool v = true) { o_.direct = v; return *this; }
  op_builder& maymove(bool v = true) { o_.maymove = v; return *this; }  // mremap: MREMAP_MAYMOVE
  // mremap: MREMAP_MAYMOVE | MREMAP_FIXED to addr (.at() is mmap's fixed address)
  op_builder& to(vaddr a) { o_.maymove = o_.fixed = true; o_.addr = a; return *this; }
  op_builder& zipf(uint64_t count, double theta, uint64_t seed) {
    o_.pattern = touch_pattern::zipf;
    o_.count = count;
    o_.theta = theta;
    o_.seed = seed;
    return *this;
  }

 private:
  op o_;
};

namespace detail {
inline op make(op_kind k, uint32_t pid) {
  op o;
  o.kind = k;
  o.pid = pid;
  return o;
}
inline op_builder range(op_kind k, uint32_t pid, uint32_t map, bytes off, bytes len) {
  op o = make(k, pid);
  o.map = map;
  o.off = off;
  o.len = len;
  return op_builder(std::move(o));
}
}  // namespace detail

inline op_builder spawn(uint32_t pid) { return op_builder(detail::make(op_kind::spawn, pid)); }
inline op_builder fork(uint32_t pid, uint32_t child) {
  op o = detail::make(op_kind::fork, pid);
  o.child = child;
  return op_builder(std::move(o));
}
inline op_builder exit(uint32_t pid) { return op_builder(detail::make(op_kind::exit, pid)); }

// `len` bytes of object `object` (an index into the stream's objects; -1: private
// anonymous memory) from its start, as mapping `map`; private and read-write unless said.
inline op_builder mmap_object(uint32_t pid, uint32_t map, int32_t object, bytes len) {
  op o = detail::make(op_kind::mmap, pid);
  o.map = map;
  o.object = object;
  o.len = len;
  return op_builder(std::move(o));
}
inline op_builder mmap_anon(uint32_t pid, uint32_t map, bytes len) { return mmap_object(pid, map, -1, len); }

// Every page of [off, off+len) of mapping `map`, read unless .write(); .stride(),
// .uniform() and .zipf() choose other patterns.
inline op_builder touch(uint32_t pid, uint32_t map, bytes off, bytes len) {
  return detail::range(op_kind::touch, pid, map, off, len);
}
inline op_builder munmap(uint32_t pid, uint32_t map, bytes off, bytes len) {
  return detail::range(op_kind::munmap, pid, map, off, len);
}
inline op_builder mprotect(uint32_t pid, uint32_t map, bytes off, bytes len, uint8_t prot) {
  return detail::range(op_kind::mprotect, pid, map, off, len).prot(prot);
}
inline op_builder madvise(uint32_t pid, uint32_t map, bytes off, bytes len, advice a) {
  op o = detail::make(op_kind::madvise, pid);
  o.map = map;
  o.off = off;
  o.len = len;
  o.adv = a;
  return op_builder(std::move(o));
}
// read(2)/pread(2) of [file_off, file_off+len) of object `object` (.into() a mapping,
// else a private buffer); readv(2) into `iovecs` buffers of len/iovecs bytes; write.
inline op_builder read(uint32_t pid, int32_t object, bytes file_off, bytes len) {
  op o = detail::make(op_kind::read, pid);
  o.object = object;
  o.obj_off = file_off;
  o.len = len;
  o.count = 1;
  return op_builder(std::move(o));
}
inline op_builder readv(uint32_t pid, int32_t object, bytes file_off, bytes len, uint64_t iovecs) {
  op_builder b = read(pid, object, file_off, len);
  op o = b.get();
  o.kind = op_kind::readv;
  o.count = iovecs;
  return op_builder(std::move(o));
}
inline op_builder write(uint32_t pid, int32_t object, bytes file_off, bytes len) {
  op o = read(pid, object, file_off, len).get();
  o.kind = op_kind::write;
  return op_builder(std::move(o));
}
inline op_builder fsync(uint32_t pid, int32_t object) {
  op o = detail::make(op_kind::fsync, pid);
  o.object = object;
  return op_builder(std::move(o));
}
inline op_builder msync(uint32_t pid, uint32_t map, bytes off, bytes len) {
  return detail::range(op_kind::msync, pid, map, off, len);
}
// mremap of mapping `map` to new_len bytes; .maymove() lets it move, .to(addr) moves it
// there (MREMAP_FIXED).
inline op_builder mremap(uint32_t pid, uint32_t map, bytes new_len) {
  op o = detail::make(op_kind::mremap, pid);
  o.map = map;
  o.len = new_len;
  return op_builder(std::move(o));
}
// remap_file_pages of [off, off+len) of mapping `map` to the object's bytes from file_off.
inline op_builder remap_file_pages(uint32_t pid, uint32_t map, bytes off, bytes len, bytes file_off) {
  op o = detail::range(op_kind::remap_file_pages, pid, map, off, len).get();
  o.obj_off = file_off;
  return op_builder(std::move(o));
}
// reclaim: up to len bytes of page cache, kernel-wide (0: everything evictable).
inline op_builder reclaim(bytes len = 0) {
  op o = detail::make(op_kind::reclaim, 0);
  o.len = len;
  return op_builder(std::move(o));
}
inline op_builder phase(std::string name) {
  op o = detail::make(op_kind::phase, 0);
  o.name = std::move(name);
  return op_builder(std::move(o));
}

}  // namespace vmlab::ops
