// The rules an op or a declaration must obey, whichever reader made it (a scenario or a
// trace), checked in one place. Each failure names the field it is about, so that the
// reader can point at the line and column the value came from.
//
// What is checked here: huge pages (hugetlb object and mapping page sizes against the
// profile, the alignment a hugetlb mapping needs, options that apply only to hugetlb).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/profile.h"
#include "vmlab/op.h"

namespace vmlab {

struct rule_error {
  std::string field;    // the op's or declaration's field ("page_size", "off", ...)
  std::string message;  // the whole message, without a location
};

// "2 MiB", "1 GiB": a huge page size as messages print it.
std::string huge_size_text(bytes b);
// A hugetlb object: its page size is one the profile has.
std::optional<rule_error> check_object(const kernel_profile& p, const object_decl& d);
// A boot pool (hugepages / overcommit_hugepages): the size is one the profile has.
std::optional<rule_error> check_pool(const kernel_profile& p, bytes size, const char* what);
// An mmap: the hugetlb rules (MAP_HUGETLB and its page size, MAP_NORESERVE, a hugetlb
// object's offset, length and fixed address on huge page boundaries).
std::optional<rule_error> check_mmap(const kernel_profile& p, const std::vector<object_decl>& objects, const op& o);

// An mremap (op.h): a new length that is a non-zero page multiple ("len"); a fixed target
// on a page boundary inside user space ("addr").
std::optional<rule_error> check_mremap(const kernel_profile& p, const op& o);

// A read, readv or write (op.h): a file or shm object, whole pages inside it, iovecs of
// whole pages, the buffer inside its mapping (`buffer_size`: the mapping's size as
// created; 0 when the op has no buffer). Fields: "obj", "off", "len", "iovecs", "stride",
// "bufoff", "buf".
std::optional<rule_error> check_io(const std::vector<object_decl>& objects, const op& o, bytes buffer_size);

// The machine's cpus (1..65536) and cache_line (a power of two, 16..4096): `key` is
// "cpus" or "cache_line".
std::optional<rule_error> check_machine_count(const char* key, int64_t v);

}  // namespace vmlab
