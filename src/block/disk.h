// A rotating disk: seek curve, rotation, zoned recording, head and cylinder switches,
// per-command controller overhead and a read-ahead segment in the drive's buffer.
//
// Linux: what drivers/ide (2.4) or drivers/scsi/sd.c talk to; the model is the drive's.
// Following Ruemmler and Wilkes, "An introduction to disk drive modeling", IEEE Computer
// 27(3), 1994: seek (src/block/seek_curve.h), rotational latency from the angular
// position of the platter (time since 0 modulo a revolution), transfer at the zone's
// media rate, track and cylinder switches, controller overhead, and the read-ahead cache.
//
// Geometry from the datasheet: the drive's sustained rate per zone is defined (IBM
// specifications, "Data transfer speed") as
//     S = A / (B + C + D),  A = 512 x sectors per cylinder,  B = (heads - 1) x head switch,
//     C = cylinder change (single-track seek),  D = heads x one revolution,
// so sectors per track follow from S; zones interpolate S linearly from the outermost to
// the innermost zone and hold equal numbers of cylinders; cylinders follow from capacity.
//
// Simplifications (docs/decisions.md, "Issue 9: storage models and tiobench"):
//   * Track and cylinder skew are exactly the switch times: a transfer that runs onto the
//     next track loses the switch time and no more (the formula above assumes the same).
//   * No write cache (writes reach the media before completing), no command queuing
//     (one request at a time, as 2.4's IDE driver issued them), no bad-sector sparing.
//   * Read-ahead: after a read the drive keeps reading sequentially into one segment of
//     its buffer until the segment is full or the next command arrives; a later read that
//     starts inside what was streamed is served from the buffer (at interface speed) and
//     continues streaming from there without a seek or a rotational wait.
//   * Reads and writes use the read seek figures.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "block/device.h"
#include "block/seek_curve.h"

namespace vmlab::block {

struct disk_datasheet {
  std::string model;            // e.g. "IBM Deskstar 75GXP DTLA-307075"
  uint32_t rpm = 0;
  seek_datasheet seek;          // seek.cylinders is derived; leave 0
  uint32_t heads = 0;           // data surfaces
  double head_switch_ms = 0;
  uint64_t capacity_bytes = 0;
  double sustained_outer_mb_s = 0;  // decimal MB/s, zone 0 (outermost)
  double sustained_inner_mb_s = 0;  // decimal MB/s, innermost zone
  uint32_t zones = 0;
  double command_overhead_ms = 0;   // controller time per command
  uint64_t buffer_bytes = 0;        // read-ahead segment; 0 = no read-ahead
  double interface_mb_s = 0;        // buffer to host (ATA-100: 100)
};

struct chs {
  uint32_t cylinder = 0, head = 0, sector = 0, zone = 0;
};

class rotating_disk final : public block_device {
 public:
  // The drive the datasheet describes, or an error saying which figure is inconsistent.
  static std::unique_ptr<rotating_disk> create(const disk_datasheet& d, std::string* error);

  sim_ns submit(const io_request& r, sim_ns now) override;
  [[nodiscard]] uint64_t capacity_sectors() const override { return capacity_; }
  [[nodiscard]] std::string describe() const override { return d_.model; }

  [[nodiscard]] const disk_datasheet& datasheet() const { return d_; }
  [[nodiscard]] const seek_curve& seek() const { return seek_; }
  [[nodiscard]] sim_ns revolution() const { return rev_; }
  [[nodiscard]] uint32_t cylinders() const { return cylinders_; }
  [[nodiscard]] uint32_t sectors_per_track(uint32_t zone) const { return zone_[zone].spt; }
  [[nodiscard]] uint64_t zone_first_sector(uint32_t zone) const { return zone_[zone].first_sector; }
  [[nodiscard]] chs locate(uint64_t sector) const;

 private:
  struct zone_geom {
    uint32_t spt = 0, first_cyl = 0, cyls = 0;
    uint64_t first_sector = 0;
  };
  explicit rotating_disk(const disk_datasheet& d, seek_curve s) : d_(d), seek_(s) {}
  [[nodiscard]] sim_ns media_time(uint64_t sector, uint64_t count) const;
  [[nodiscard]] sim_ns position(const chs& to, sim_ns at) const;

  disk_datasheet d_;
  seek_curve seek_;
  sim_ns rev_{}, head_switch_{}, cyl_switch_{}, overhead_{};
  std::vector<zone_geom> zone_;
  uint32_t cylinders_ = 0;
  uint64_t capacity_ = 0;
  // Mechanical state: where the heads are and when the drive is free.
  uint32_t cur_cyl_ = 0, cur_head_ = 0;
  sim_ns free_at_{};
  // Read-ahead stream: sectors from stream_next_ on are being read into the buffer since
  // stream_since_, up to buffer_bytes; valid only after a read.
  bool streaming_ = false;
  uint64_t stream_next_ = 0;
  sim_ns stream_since_{};
};

}  // namespace vmlab::block
