// The rotating-disk model against its datasheets: the seek curve passes through the
// datasheet's points, sequential reads run at each zone's sustained rate, and random 4 KiB
// reads cost what seek plus rotation say. Expected figures are derived here from the
// datasheet parameters, not copied from the model.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "block/disk.h"
#include "block/profiles.h"

namespace vmlab::block {
namespace {

const char* const kDisks[] = {"ibm-dtla-307075", "seagate-st336704"};

std::unique_ptr<rotating_disk> disk_of(const std::string& name) {
  const device_profile* p = find_device_profile(name);
  EXPECT_NE(p, nullptr) << name;
  std::string err;
  auto d = rotating_disk::create(p->disk, &err);
  EXPECT_NE(d, nullptr) << err;
  return d;
}

// splitmix64: a fixed, portable random sequence.
uint64_t next_random(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

TEST(SeekCurve, PassesThroughTheDatasheetPointsAndIsMonotone) {
  for (const char* name : kDisks) {
    SCOPED_TRACE(name);
    auto d = disk_of(name);
    const seek_datasheet& ds = d->datasheet().seek;
    const seek_curve& s = d->seek();
    EXPECT_EQ(s.time(0).ns, 0u);
    EXPECT_NEAR(s.time(1).ms(), ds.track_to_track_ms, 1e-6);
    EXPECT_NEAR(s.time(s.max_distance()).ms(), ds.full_stroke_ms, 1e-6);
    // The datasheet's own definition of the average: sum (max+1-n) t(n) / sum (max+1-n).
    double num = 0, den = 0;
    sim_ns prev{};
    for (uint32_t n = 1; n <= s.max_distance(); ++n) {
      const sim_ns t = s.time(n);
      ASSERT_GE(t, prev) << "seek time falls at distance " << n;
      prev = t;
      num += double(s.max_distance() + 1 - n) * t.ms();
      den += double(s.max_distance() + 1 - n);
    }
    EXPECT_NEAR(num / den, ds.average_ms, 1e-3);
    // sqrt below the boundary: t(4) - t(1) = 2 (t(2) - t(1)) / (sqrt 2 - 1) x (2 - 1) / 1... in
    // short: (t(4) - t(1)) / (t(9) - t(1)) = (2 - 1) / (3 - 1).
    const double r = (s.time(4).ms() - s.time(1).ms()) / (s.time(9).ms() - s.time(1).ms());
    EXPECT_NEAR(r, 0.5, 1e-3);
  }
}

TEST(SeekCurve, RefusesADatasheetNoCurveFits) {
  EXPECT_FALSE(seek_curve::fit({2.0, 1.5, 10.0, 10000}));  // average below single track
  EXPECT_FALSE(seek_curve::fit({1.0, 9.0, 8.0, 10000}));   // full stroke below average
  EXPECT_FALSE(seek_curve::fit({1.0, 8.0, 15.0, 4}));      // no real stroke
}

// Reads `bytes` from `start` in `req`-byte requests, each issued when the previous one
// completes; returns the rate (bytes/s) from the first completion to the last, so the
// first positioning is left out.
double sequential_rate(block_device& d, uint64_t start, uint64_t bytes, uint32_t req) {
  sim_ns now{}, first{};
  const uint32_t n = req / kSectorBytes;
  uint64_t s = start;
  for (uint64_t done = 0; done < bytes; done += req, s += n) {
    now = d.submit({s, n, false}, now);
    if (done == 0) first = now;
  }
  return double(bytes - req) / (now - first).seconds();
}

TEST(Disk, SequentialReadRunsAtEachZonesSustainedRate) {
  for (const char* name : kDisks) {
    auto d = disk_of(name);
    const disk_datasheet& ds = d->datasheet();
    const double rev = 60.0 / ds.rpm;
    for (uint32_t z : {0u, ds.zones / 2, ds.zones - 1}) {
      SCOPED_TRACE(std::string(name) + " zone " + std::to_string(z));
      // The specification's definition, with this model's whole sectors per track.
      const double spt = d->sectors_per_track(z);
      const double cyl_time = double(ds.heads - 1) * ds.head_switch_ms * 1e-3 + ds.seek.track_to_track_ms * 1e-3 +
                              double(ds.heads) * rev;
      const double expect = 512.0 * ds.heads * spt / cyl_time;
      const uint64_t cyl_bytes = uint64_t(512 * ds.heads * spt);
      const double got = sequential_rate(*d, d->zone_first_sector(z), 6 * cyl_bytes, 64 * 1024);
      EXPECT_NEAR(got / expect, 1.0, 0.01);
      // And the datasheet's figure, interpolated for this zone (whole sectors lose < 0.5%).
      const double f = double(z) / double(ds.zones - 1);
      const double sheet = (ds.sustained_outer_mb_s + f * (ds.sustained_inner_mb_s - ds.sustained_outer_mb_s)) * 1e6;
      EXPECT_NEAR(got / sheet, 1.0, 0.015);
    }
  }
}

TEST(Disk, Random4KiBReadsCostSeekPlusRotation) {
  for (const char* name : kDisks) {
    SCOPED_TRACE(name);
    auto d = disk_of(name);
    const disk_datasheet& ds = d->datasheet();
    const double rev_ms = 60e3 / ds.rpm;
    // Per read: command overhead + average seek + half a revolution + 8 sectors of a track
    // of the middle zone. The datasheet's average weights every cylinder pair equally;
    // LBAs drawn uniformly favour the outer zones (more sectors per cylinder), so seeks are
    // a little shorter: 10% tolerance.
    const double xfer_ms = 8.0 / d->sectors_per_track(ds.zones / 2) * rev_ms;
    const double expect_ms = ds.command_overhead_ms + ds.seek.average_ms + rev_ms / 2 + xfer_ms;
    uint64_t seed = 42;
    sim_ns now{};
    const int n = 4000;
    for (int i = 0; i < n; ++i) {
      const uint64_t s = next_random(seed) % (d->capacity_sectors() / 8) * 8;
      now = d->submit({s, 8, false}, now);
    }
    const double iops = n / now.seconds(), expect_iops = 1e3 / expect_ms;
    EXPECT_NEAR(iops / expect_iops, 1.0, 0.10) << iops << " vs " << expect_iops;
  }
}

TEST(Disk, ReadAheadServesTheNextSequentialReadFromTheBuffer) {
  auto d = disk_of("ibm-dtla-307075");
  const disk_datasheet& ds = d->datasheet();
  sim_ns t = d->submit({1000, 8, false}, sim_ns{});
  // Long after: the segment holds what followed; served at interface speed after the
  // command overhead, with no seek and no rotational wait.
  const sim_ns later = t + sim_ns{100'000'000};
  const sim_ns done = d->submit({1008, 8, false}, later);
  EXPECT_EQ(done - later, from_ms(ds.command_overhead_ms) + transfer_time(4096, uint64_t(ds.interface_mb_s * 1e6)));
  // A write ends the stream: the next read is mechanical again (at least a partial turn
  // or a seek away, never the buffer's 0.5 ms).
  t = d->submit({500000, 8, true}, done);
  const sim_ns after = d->submit({500008, 8, false}, t);
  EXPECT_GT(after - t, from_ms(ds.command_overhead_ms) + transfer_time(4096, uint64_t(ds.interface_mb_s * 1e6)));
}

TEST(Disk, RefusesAnInconsistentDatasheet) {
  disk_datasheet d = find_device_profile("ibm-dtla-307075")->disk;
  d.sustained_inner_mb_s = d.sustained_outer_mb_s * 2;
  std::string err;
  EXPECT_EQ(rotating_disk::create(d, &err), nullptr);
  EXPECT_NE(err.find("sustained"), std::string::npos) << err;
}

}  // namespace
}  // namespace vmlab::block
