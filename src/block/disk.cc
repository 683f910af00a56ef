#include "block/disk.h"

#include <algorithm>
#include <cmath>

namespace vmlab::block {

std::unique_ptr<rotating_disk> rotating_disk::create(const disk_datasheet& d, std::string* error) {
  auto fail = [&](const std::string& what) -> std::unique_ptr<rotating_disk> {
    if (error) *error = d.model + ": " + what;
    return nullptr;
  };
  if (d.rpm == 0 || d.heads == 0 || d.zones == 0 || d.capacity_bytes < kSectorBytes)
    return fail("rpm, heads, zones and capacity must be positive");
  if (!(d.sustained_outer_mb_s >= d.sustained_inner_mb_s) || !(d.sustained_inner_mb_s > 0))
    return fail("the outer zone's sustained rate must be at least the inner zone's, and positive");
  if (!(d.interface_mb_s > 0) || d.command_overhead_ms < 0 || d.head_switch_ms < 0)
    return fail("interface rate, command overhead and head switch must be non-negative (interface positive)");
  const sim_ns rev{uint64_t(std::llround(60e9 / d.rpm))};
  const double rev_s = 60.0 / d.rpm;
  // Sectors per track from the sustained-rate definition S = A / (B + C + D).
  std::vector<zone_geom> zones(d.zones);
  double spt_sum = 0;
  for (uint32_t z = 0; z < d.zones; ++z) {
    const double f = d.zones == 1 ? 0.0 : double(z) / double(d.zones - 1);
    const double s = (d.sustained_outer_mb_s + f * (d.sustained_inner_mb_s - d.sustained_outer_mb_s)) * 1e6;
    const double cyl_s = double(d.heads - 1) * d.head_switch_ms * 1e-3 + d.seek.track_to_track_ms * 1e-3 +
                         double(d.heads) * rev_s;
    zones[z].spt = uint32_t(s * cyl_s / (double(d.heads) * kSectorBytes));
    if (zones[z].spt == 0) return fail("a zone with no whole sector per track");
    spt_sum += zones[z].spt;
  }
  const uint64_t want = d.capacity_bytes / kSectorBytes;
  const double per_cyl = double(d.heads) * spt_sum / double(d.zones);
  uint32_t cyls = uint32_t(std::ceil(double(want) / per_cyl));
  uint32_t per_zone = std::max<uint32_t>(1, cyls / d.zones);
  uint64_t sector = 0;
  uint32_t cyl = 0;
  for (uint32_t z = 0; z < d.zones; ++z) {
    zones[z].first_cyl = cyl;
    zones[z].first_sector = sector;
    zones[z].cyls = z + 1 < d.zones ? per_zone : std::max<uint32_t>(1, cyls - cyl);
    // The last zone takes what is left, and grows until the datasheet's capacity fits.
    if (z + 1 == d.zones)
      while (sector + uint64_t(zones[z].cyls) * d.heads * zones[z].spt < want) ++zones[z].cyls;
    sector += uint64_t(zones[z].cyls) * d.heads * zones[z].spt;
    cyl += zones[z].cyls;
  }
  seek_datasheet sd = d.seek;
  sd.cylinders = cyl;
  auto curve = seek_curve::fit(sd);
  if (!curve) return fail("no monotone seek curve passes through the track-to-track, average and full-stroke figures");
  std::unique_ptr<rotating_disk> disk(new rotating_disk(d, *curve));
  disk->d_.seek.cylinders = cyl;
  disk->rev_ = rev;
  disk->head_switch_ = from_ms(d.head_switch_ms);
  disk->cyl_switch_ = from_ms(d.seek.track_to_track_ms);
  disk->overhead_ = from_ms(d.command_overhead_ms);
  disk->zone_ = std::move(zones);
  disk->cylinders_ = cyl;
  disk->capacity_ = want;
  return disk;
}

chs rotating_disk::locate(uint64_t sector) const {
  auto it = std::upper_bound(zone_.begin(), zone_.end(), sector,
                             [](uint64_t s, const zone_geom& z) { return s < z.first_sector; });
  const uint32_t z = uint32_t(it - zone_.begin()) - 1;
  const zone_geom& g = zone_[z];
  const uint64_t off = sector - g.first_sector, per_cyl = uint64_t(d_.heads) * g.spt;
  const uint64_t rem = off % per_cyl;
  return {g.first_cyl + uint32_t(off / per_cyl), uint32_t(rem / g.spt), uint32_t(rem % g.spt), z};
}

// Time for the media to pass `count` sectors from `sector`, with a head switch or a
// cylinder change (single-track seek) between tracks; skew hides everything else.
sim_ns rotating_disk::media_time(uint64_t sector, uint64_t count) const {
  sim_ns t{};
  while (count > 0) {
    const chs at = locate(sector);
    const uint32_t spt = zone_[at.zone].spt;
    const uint64_t n = std::min<uint64_t>(count, spt - at.sector);
    t += sim_ns{rev_.ns * n / spt};
    count -= n;
    sector += n;
    if (count > 0) t += at.head + 1 < d_.heads ? head_switch_ : cyl_switch_;
  }
  return t;
}

// Seek (or head switch) from the current position, then wait for the target sector to
// come round: the platter's angle at time t is t modulo a revolution.
sim_ns rotating_disk::position(const chs& to, sim_ns at) const {
  sim_ns t = at;
  if (to.cylinder != cur_cyl_)
    t += seek_.time(to.cylinder > cur_cyl_ ? to.cylinder - cur_cyl_ : cur_cyl_ - to.cylinder);
  else if (to.head != cur_head_)
    t += head_switch_;
  const uint64_t angle = t.ns % rev_.ns;
  const uint64_t target = rev_.ns * to.sector / zone_[to.zone].spt;
  t += sim_ns{(target + rev_.ns - angle) % rev_.ns};
  return t;
}

sim_ns rotating_disk::submit(const io_request& r, sim_ns now) {
  const sim_ns start = max(now, free_at_), decoded = start + overhead_;
  const uint64_t iface_bps = uint64_t(d_.interface_mb_s * 1e6);
  const uint64_t buf = d_.buffer_bytes / kSectorBytes;
  sim_ns done{};
  if (!r.write && streaming_ && buf && r.sector >= stream_next_ && r.sector - stream_next_ < buf) {
    // Read-ahead hit: the data are in the segment, or on their way under the head.
    const uint64_t ahead = r.end() - stream_next_;
    // The stream ended a track: the switch to the next one comes first.
    const chs at = locate(stream_next_);
    const sim_ns since = stream_since_ + (at.sector ? sim_ns{} : at.head ? head_switch_ : cyl_switch_);
    sim_ns media_ready;
    if (ahead <= buf) {
      media_ready = since + media_time(stream_next_, ahead);
    } else {
      const sim_ns full = since + media_time(stream_next_, buf);
      media_ready = max(full, decoded) + media_time(stream_next_ + buf, ahead - buf);
    }
    done = max(decoded + transfer_time(r.bytes(), iface_bps), media_ready);
    stream_since_ = media_ready;
  } else {
    const chs to = locate(r.sector);
    const sim_ns on_sector = position(to, decoded);
    done = on_sector + media_time(r.sector, r.count);
    stream_since_ = done;
  }
  const chs last = locate(r.end() - 1);
  cur_cyl_ = last.cylinder;
  cur_head_ = last.head;
  streaming_ = !r.write;
  stream_next_ = r.end();
  free_at_ = done;
  return done;
}

}  // namespace vmlab::block
