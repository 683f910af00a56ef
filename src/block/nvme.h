// An NVMe flash device: fixed access latency, internal parallelism, a link bandwidth.
//
// Linux: drivers/nvme/host (blk-mq, no elevator by default: "none"). The model, from the
// three figures a product brief gives:
//   * latency: the time one 4 KiB read takes at queue depth 1 (flash read tR, controller,
//     PCIe), and the same for writes;
//   * IOPS at high queue depth (4 KiB random): units = IOPS x latency requests can be in
//     flight inside the device at once (dies and planes behind the channels);
//   * sequential bandwidth: the link and the controller's data path, shared by all
//     requests, moving each request's bytes in turn.
// A request takes the unit that frees first for `latency`, and its data cross the shared
// path at `bandwidth`; it completes when both are done. So at queue depth q, 4 KiB IOPS
// = min(q / latency, IOPS_max, bandwidth / 4 KiB), and large requests run at bandwidth.
// Not modelled: garbage collection and write amplification (steady-state write figures
// from the brief already include them), SLC caching, thermal throttling.
#pragma once

#include <string>
#include <vector>

#include "block/device.h"

namespace vmlab::block {

struct nvme_datasheet {
  std::string model;
  uint64_t capacity_bytes = 0;
  double read_latency_us = 0, write_latency_us = 0;  // 4 KiB, queue depth 1
  double read_iops = 0, write_iops = 0;              // 4 KiB random, high queue depth
  double read_mb_s = 0, write_mb_s = 0;              // sequential, decimal MB/s
};

class nvme_device final : public block_device {
 public:
  explicit nvme_device(const nvme_datasheet& d);
  sim_ns submit(const io_request& r, sim_ns now) override;
  [[nodiscard]] uint64_t capacity_sectors() const override { return d_.capacity_bytes / kSectorBytes; }
  [[nodiscard]] std::string describe() const override { return d_.model; }
  [[nodiscard]] uint32_t units(bool write) const { return uint32_t(write ? wunits_.size() : runits_.size()); }

 private:
  nvme_datasheet d_;
  std::vector<sim_ns> runits_, wunits_;  // when each unit frees
  sim_ns path_free_[2]{};                // the shared data path, per direction
};

}  // namespace vmlab::block
