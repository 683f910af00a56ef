#include "engine/live/host_huge.h"

#include <fmt/format.h>

namespace vmlab::live {
namespace {

constexpr const char* kThp = "/sys/kernel/mm/transparent_hugepage";

std::string size_text(bytes b) { return b >= GiB ? fmt::format("{} GiB", b / GiB) : fmt::format("{} MiB", b / MiB); }

// The pool of `size` grows by `n` pages for the run; false plus a reason when it cannot.
status grow_pool(host_settings& hs, proc_source& src, bytes size, uint64_t n, const char* file, std::vector<note>& notes) {
  const std::string path = hstate_dir(size) + "/" + file;
  auto now = read_count(src, path);
  if (!now.ok())
    return status::not_supported("this host has no hugetlb pages of " + size_text(size) + " (" + now.error().message() + ")");
  const uint64_t want = now.value() + n;
  if (status s = hs.set(path, std::to_string(want)); !s.ok()) return s;
  auto got = read_count(src, path);
  if (!got.ok()) return got.error();
  if (got.value() < want) {
    const uint64_t had = got.value() - now.value();
    (void)hs.restore();  // give back what was had, now
    return status::not_supported(fmt::format(
        "this host could give only {} of the {} hugetlb pages of {} the scenario's machine has ({} asked of {}; free "
        "memory is too fragmented for them, or too small)",
        had, n, size_text(size), want, path));
  }
  notes.push_back({"live.huge_pool." + std::to_string(size),
                   fmt::format("{} {} grown by {} for the run ({} -> {}), restored after", path, file, n, now.value(), want),
                   "", false});
  return {};
}

status set_policy(host_settings& hs, proc_source& src, const std::string& file, const std::string& value,
                  std::vector<note>& notes) {
  const std::string path = std::string(kThp) + "/" + file;
  auto now = host_settings::get(path);
  if (!now.ok()) return status::not_supported("this host has no transparent huge pages (" + now.error().message() + ")");
  (void)src;
  if (now.value() == value) return {};
  if (status s = hs.set(path, value); !s.ok()) return s;
  notes.push_back({"live.thp." + file, fmt::format("{} set to {} for the run (was {}), restored after", path, value, now.value()),
                   "", false});
  return {};
}

}  // namespace

std::string hstate_dir(bytes size) { return fmt::format("/sys/kernel/mm/hugepages/hugepages-{}kB", size / KiB); }

status apply_huge_settings(const kernel_profile& p, const machine_decl& m, host_settings& hs, proc_source& src,
                           std::vector<note>& notes) {
  // The profile's THP policies are this host's kernel's only where the profile has THP.
  if (p.huge.thp)
    if (status s = set_policy(hs, src, "enabled", thp_mode_name(p.huge.enabled), notes); !s.ok()) return s;
  if (p.huge.shmem_thp)
    if (status s = set_policy(hs, src, "shmem_enabled", shmem_thp_mode_name(p.huge.shmem_enabled), notes); !s.ok())
      return s;
  for (const auto& [size, n] : m.hugepages)
    if (n)
      if (status s = grow_pool(hs, src, size, n, "nr_hugepages", notes); !s.ok()) return s;
  for (const auto& [size, n] : m.overcommit_hugepages)
    if (n)
      if (status s = grow_pool(hs, src, size, n, "nr_overcommit_hugepages", notes); !s.ok()) return s;
  return {};
}

}  // namespace vmlab::live
