// Elevators (2.4 linus, 2.6 deadline, noop), merging, RAID-0 striping and NVMe queue
// depth: each against what the kernel's algorithm or the datasheet says it must do.
#include <gtest/gtest.h>

#include <map>
#include <queue>
#include <vector>

#include "block/elevator.h"
#include "block/profiles.h"

namespace vmlab::block {
namespace {

std::vector<uint64_t> drain(request_queue& q, sim_ns now = {}) {
  std::vector<uint64_t> order;
  while (auto r = q.take(now))
    for (uint64_t id : r->ids) order.push_back(id);
  return order;
}

io_request rd(uint64_t sector, uint32_t count = 8) { return {sector, count, false}; }

TEST(LinusElevator, OneWayAscendingWithTheWrap) {
  // 2.4's bh_rq_in_between: the queue ascends from its head and wraps once; a request
  // below the head goes after the wrap point, in order.
  request_queue q(elevator_kind::linus, {});
  for (uint64_t s : {5000, 1000, 4000, 2000, 3000, 6000}) q.add(rd(s), s, {});
  EXPECT_EQ(drain(q), (std::vector<uint64_t>{5000, 6000, 1000, 2000, 3000, 4000}));
}

TEST(LinusElevator, NoRequestIsPassedMoreThanItsLatencyAllows) {
  for (int32_t latency : {1, 3, 8}) {
    SCOPED_TRACE(latency);
    queue_limits l;
    l.read_latency = latency;
    request_queue q(elevator_kind::linus, l);
    // Descending sectors: each new request belongs ahead of every queued one but the head.
    const int n = 40;
    for (int i = 0; i < n; ++i) q.add(rd(uint64_t(1'000'000 - i * 100)), uint64_t(i), {});
    const std::vector<uint64_t> order = drain(q);
    ASSERT_EQ(order.size(), size_t(n));
    std::map<uint64_t, size_t> pos;
    for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
    int max_passed = 0, total_passes = 0;
    for (int r = 0; r < n; ++r) {
      int passed = 0;
      for (int later = r + 1; later < n; ++later) passed += pos[uint64_t(later)] < pos[uint64_t(r)];
      max_passed = std::max(max_passed, passed);
      total_passes += passed;
    }
    EXPECT_LE(max_passed, latency);
    // It did sort, within the bound (with latency 1 the aging of each scan uses it up).
    if (latency > 1) {
      EXPECT_GT(total_passes, 0);
    }
  }
}

TEST(Merging, AdjacentRequestsMergeUpToTheMaximumRequestSize) {
  queue_limits l;
  l.max_sectors = 128;  // 64 KiB, 2.4 IDE
  for (elevator_kind k : {elevator_kind::noop, elevator_kind::linus, elevator_kind::deadline}) {
    request_queue q(k, l);
    for (uint64_t i = 0; i < 32; ++i) q.add(rd(i * 8), i, {});  // 32 x 4 KiB, sequential
    EXPECT_EQ(q.size(), 2u);
    auto a = q.take({}), b = q.take({});
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->rq.sector, 0u);
    EXPECT_EQ(a->rq.count, 128u);
    EXPECT_EQ(b->rq.sector, 128u);
    EXPECT_EQ(b->rq.count, 128u);
    EXPECT_EQ(a->ids.size(), 16u);
  }
  // Front merge (not noop's tail-only merge); reads and writes never merge.
  request_queue q(elevator_kind::deadline, l);
  q.add(rd(16), 1, {});
  q.add(rd(8), 2, {});
  q.add({24, 8, true}, 3, {});
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.merges(), 1u);
}

TEST(DeadlineElevator, SortedBatchesThenTheExpiredRequest) {
  queue_limits l;
  l.fifo_batch = 4;
  request_queue q(elevator_kind::deadline, l);
  // Arrival order 900, 100, 500, 300, 700: the first batch starts at the FIFO head (900;
  // nothing dispatched yet) and ascends from there; then a new batch from the FIFO.
  for (uint64_t s : {900, 100, 500, 300, 700}) q.add(rd(s * 8), s, {});
  EXPECT_EQ(drain(q), (std::vector<uint64_t>{900, 100, 300, 500, 700}));

  // An expired read is served before the sorted successor.
  request_queue e(elevator_kind::deadline, l);
  e.add(rd(100 * 8), 100, {});
  e.add(rd(10 * 8), 10, {});
  e.add(rd(200 * 8), 200, {});
  EXPECT_EQ(e.take({})->ids[0], 100u);              // FIFO head starts the batch
  const sim_ns late = l.read_expire + sim_ns{1};
  e.add(rd(300 * 8), 300, late);
  EXPECT_EQ(e.take(late)->ids[0], 200u);            // batch continues in sector order
  e.take(late);                                     // 300
  EXPECT_EQ(e.take(late)->ids[0], 10u);             // new batch... only 10 left
}

TEST(DeadlineElevator, WritesAreNotStarvedByReads) {
  queue_limits l;
  l.fifo_batch = 1;
  l.writes_starved = 2;
  request_queue q(elevator_kind::deadline, l);
  q.add({1'000'000, 8, true}, 999, {});
  uint64_t id = 0;
  std::vector<uint64_t> order;
  for (int round = 0; round < 4; ++round) {
    q.add(rd(id * 8), id, {});
    ++id;
    order.push_back(q.take({})->ids[0]);
  }
  // Reads go first twice (writes_starved = 2), then the write.
  EXPECT_EQ(order[0], 0u);
  EXPECT_EQ(order[1], 1u);
  EXPECT_EQ(order[2], 999u);
}

TEST(Raid0, SequentialRateScalesWithTheNumberOfDisks) {
  const device_profile* p = find_device_profile("seagate-st336704");
  ASSERT_NE(p, nullptr);
  auto rate = [&](uint32_t disks) {
    std::string err;
    auto d = make_striped(*p, disks, 64 * 1024, &err);
    EXPECT_NE(d, nullptr) << err;
    const uint32_t req = disks * 256 * 1024, n = req / kSectorBytes;
    sim_ns now{}, first{};
    const int reqs = 64;
    for (int i = 0; i < reqs; ++i) {
      now = d->submit({uint64_t(i) * n, n, false}, now);
      if (i == 0) first = now;
    }
    return double(reqs - 1) * req / (now - first).seconds();
  };
  const double one = rate(1);
  for (uint32_t n : {2u, 4u, 8u}) EXPECT_NEAR(rate(n) / (n * one), 1.0, 0.03) << n << " disks";
}

TEST(Raid0, ARequestWithinOneChunkTouchesOneDisk) {
  const device_profile* p = find_device_profile("ibm-dtla-307075");
  std::string err;
  auto set = make_striped(*p, 4, 64 * 1024, &err);
  auto one = make_device(*p, &err);
  // Chunk 2 of the set is chunk 0 of disk 2: the same first positioning as sector 0 of a
  // lone disk, so the same completion time.
  EXPECT_EQ(set->submit({2 * 128, 8, false}, {}), one->submit({0, 8, false}, {}));
  EXPECT_EQ(set->capacity_sectors() % (4 * 128), 0u);
}

// Closed loop: `qd` 4 KiB random reads always outstanding; IOPS over `n` completions.
double nvme_iops(uint32_t qd, int n) {
  nvme_device d(find_device_profile("samsung-pm9a3")->nvme);
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> inflight;
  uint64_t s = 12345;
  auto submit = [&](sim_ns now) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    inflight.push(d.submit({(s >> 20) % (d.capacity_sectors() / 8) * 8, 8, false}, now).ns);
  };
  for (uint32_t i = 0; i < qd; ++i) submit({});
  uint64_t last = 0;
  for (int i = 0; i < n; ++i) {
    last = inflight.top();
    inflight.pop();
    submit({last});
  }
  return n / (double(last) * 1e-9);
}

TEST(Nvme, IopsScaleWithQueueDepthUpToTheDatasheet) {
  const nvme_datasheet& ds = find_device_profile("samsung-pm9a3")->nvme;
  for (uint32_t qd : {1u, 2u, 8u, 32u, 72u, 128u, 256u}) {
    const double expect = std::min(qd / (ds.read_latency_us * 1e-6), ds.read_iops);
    EXPECT_NEAR(nvme_iops(qd, 20000) / expect, 1.0, 0.02) << "queue depth " << qd;
  }
}

TEST(Nvme, LargeReadsRunAtTheSequentialBandwidth) {
  const nvme_datasheet& ds = find_device_profile("samsung-pm9a3")->nvme;
  nvme_device d(ds);
  const uint32_t n = 256;  // 128 KiB
  sim_ns now{}, done{};
  for (int i = 0; i < 1000; ++i) done = d.submit({uint64_t(i) * n, n, false}, now);  // all queued at 0
  EXPECT_NEAR(1000.0 * n * 512 / done.seconds() / (ds.read_mb_s * 1e6), 1.0, 0.01);
}

}  // namespace
}  // namespace vmlab::block

namespace vmlab::block {
namespace {

// A queue of random reads on the 75GXP, served in the elevator's order: sorted orders
// turn average seeks into short ones. Bound derived from the seek curve: n requests in one
// ascending sweep seek about max/n cylinders each (at most 2 max/n, with the wrap), plus
// at most a revolution and the command overhead.
TEST(ElevatorOnDisk, SortedOrdersBeatFifoByTheSeekCurve) {
  const device_profile* p = find_device_profile("ibm-dtla-307075");
  std::string err;
  auto served = [&](elevator_kind k) {
    auto d = rotating_disk::create(p->disk, &err);
    request_queue q(k, {});
    uint64_t s = 7;
    const int n = 64;
    for (int i = 0; i < n; ++i) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      q.add({(s >> 16) % (d->capacity_sectors() / 8) * 8, 8, false}, uint64_t(i), {});
    }
    sim_ns now{};
    while (auto r = q.take(now)) now = d->submit(r->rq, now);
    return now;
  };
  const sim_ns fifo = served(elevator_kind::noop), linus = served(elevator_kind::linus),
               deadline = served(elevator_kind::deadline);
  auto d = rotating_disk::create(p->disk, &err);
  const sim_ns per = from_ms(p->disk.command_overhead_ms) + d->seek().time(2 * d->cylinders() / 64) + d->revolution();
  for (sim_ns t : {linus, deadline}) {
    EXPECT_LT(t, fifo);
    EXPECT_LE(t.ns, 64 * per.ns + d->seek().time(d->cylinders()).ns);  // one full-stroke return at most
  }
}

}  // namespace
}  // namespace vmlab::block
