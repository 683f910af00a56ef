#include "block/nvme.h"

#include <algorithm>
#include <cmath>

namespace vmlab::block {

nvme_device::nvme_device(const nvme_datasheet& d) : d_(d) {
  auto units = [](double iops, double lat_us) { return std::max<size_t>(1, size_t(std::llround(iops * lat_us * 1e-6))); };
  runits_.assign(units(d.read_iops, d.read_latency_us), sim_ns{});
  wunits_.assign(units(d.write_iops, d.write_latency_us), sim_ns{});
}

sim_ns nvme_device::submit(const io_request& r, sim_ns now) {
  auto& units = r.write ? wunits_ : runits_;
  auto unit = std::min_element(units.begin(), units.end());
  const sim_ns start = max(now, *unit);
  const sim_ns flash_done = start + from_us(r.write ? d_.write_latency_us : d_.read_latency_us);
  *unit = flash_done;
  sim_ns& path = path_free_[r.write];
  const sim_ns path_start = max(now, path);
  path = path_start + transfer_time(r.bytes(), uint64_t((r.write ? d_.write_mb_s : d_.read_mb_s) * 1e6));
  return max(flash_done, path);
}

}  // namespace vmlab::block
