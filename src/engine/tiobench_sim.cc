#include "engine/tiobench_sim.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "block/cpu_cost.h"
#include "block/elevator.h"
#include "block/profiles.h"
#include "model/profile.h"
#include "model/readaround_24.h"

namespace vmlab::sim {
namespace {

using block::sim_ns;

// The first partition of a DOS-labelled disk starts at sector 63 (fdisk's default then).
constexpr uint64_t kPartitionStart = 63;
// include/linux/swap.h SWAP_CLUSTER_MAX (2.4.0): pages written per reclaim pass.
constexpr uint64_t kLaunderBatch = 32;

// pte_dirty: written through a PTE whose dirty bit has not reached the page yet (fsync
// and kupdate do not see it); dirty: PG_dirty, on the mapping's dirty_pages list;
// buf_dirty: written by write(), its buffers dirty (2.4.0 __block_commit_write marks the
// buffers, not the page, and queues them on the inode's i_dirty_buffers: fsync writes
// them, kupdate's sync_inodes does not).
enum class pg : uint8_t { absent, reading, clean, pte_dirty, dirty, buf_dirty, writeback };

struct page_state {
  pg st = pg::absent;
  bool on_disk = false;          // the block exists (written once); else a hole, read as zeros
  pg redirty_to = pg::absent;    // written to while under writeback: the state it returns to
};

// The four tests' I/O in the tiotest the sim replays (tiotest_build).
enum class madv : uint8_t { normal, random, sequential };
struct test_io {
  bool mapped = true;      // memcpy to or from a MAP_SHARED mapping; else lseek + read()/write()
  madv hint = madv::normal;  // the mapping's madvise
  bool munmap = true;      // unmapped at the end (its dirty PTEs reach the pages)
  bool fsync = true;       // fsync(fd) at the end
};
struct tiotest_ops {
  const char* name;  // for the table's heading
  test_io test[4];   // by tiobench_test
};
// tiotest.c of each build (tiobench_sim.h says where each is from), by tiotest_build.
constexpr tiotest_ops kTiotestBuilds[] = {
    // v0.3.1, -DUSE_MMAP: do_write_test maps, memcpys, munmaps, fsyncs; do_random_write_test
    // lseeks and write()s, fsyncs; do_read_test maps, memcpys and (`#ifdef MMAP`) does not
    // unmap, no fsync; do_random_read_test lseeks and read()s, no fsync.
    {"tiotest 0.3.1 -DUSE_MMAP (sequential tests mapped, random tests read()/write())",
     {{true, madv::normal, true, true}, {false, madv::normal, false, true}, {true, madv::normal, false, false},
      {false, madv::normal, false, false}}},
    // v0.3.1, -DUSE_MMAP -DUSE_MADVISE: madvise(file_loc, bytesize, MADV_RANDOM) after both mmaps.
    {"tiotest 0.3.1 -DUSE_MMAP -DUSE_MADVISE (sequential tests mapped with MADV_RANDOM, random tests read()/write())",
     {{true, madv::random, true, true}, {false, madv::normal, false, true}, {true, madv::random, false, false},
      {false, madv::normal, false, false}}},
    // v0.4.x -M.
    {"mmap (tiotest 0.4 -M)",
     {{true, madv::sequential, true, true}, {true, madv::random, true, true}, {true, madv::sequential, true, true},
      {true, madv::random, true, true}}},
    // v0.3.1 without USE_MMAP: do_write_test write()s and fsyncs, do_read_test read()s; the
    // random tests as in the mmap build.
    {"read()/write() (tiotest 0.3.1)",
     {{false, madv::normal, false, true}, {false, madv::normal, false, true}, {false, madv::normal, false, false},
      {false, madv::normal, false, false}}},
};
static_assert(std::size(kTiotestBuilds) == size_t(tiotest_build::v031_rw) + 1, "one row per tiotest_build");

// The page cache's capacity in pages: the machine's memory less mem_map and the kernel
// image, capped by what was free (`free`, 0: no cap).
uint64_t cache_pages_of(const kernel_profile& p, uint64_t memory, uint64_t free) {
  const uint64_t page = p.paging.page_size();
  const uint64_t reserved = memory / page * p.objs.struct_page + p.objs.kernel_image;
  const uint64_t cache = (memory - std::min(memory, reserved)) / page;
  return free ? std::min(cache, free / page) : cache;
}

struct costs {
  double copy_ns_per_byte = 0, fault_ns = 0, submit_ns = 0;
};

struct thread_state {
  uint32_t id = 0;
  bool kupdate = false;  // the kernel thread, not a tiotest thread (its CPU is not the process's)
  sim_ns t{};
  bool done = false, blocked = false;
  // The test's progress: ops, then fsync's submission from fsync_next, then its wait.
  uint64_t op = 0;
  bool fsync = false, unmapped = false;
  uint64_t fsync_next = 0;
  // kupdate: syncing inode `inode` (its pages from fsync_next down), or asleep until t.
  bool syncing = false;
  uint32_t inode = 0;
  // The op in progress: its start, the next page of it to fault in.
  bool in_op = false;
  sim_ns op_start{};
  uint64_t op_page = 0;
  seq_readahead_24 ra;
  std::vector<bool> mapped;  // pages faulted into this test's mapping
  // read(): the test's struct file (tiotest opens the file per test), the current read()'s
  // reada_ok, and whether the page at op_page has had its generic_file_readahead.
  file_readahead_24 fra;
  bool reada_ok = false, page_ra_done = false;
  // fsync: 0 filemap_fdatasync (PG_dirty pages), 1 fsync_inode_buffers, 2 the wait.
  uint32_t fsync_phase = 0;
  double user_ns = 0, sys_ns = 0, lat_sum_ns = 0, lat_max_ns = 0;
  uint64_t over2 = 0, over10 = 0;
};

class tiobench_sim {
 public:
  tiobench_sim(const tiobench_spec& s, const kernel_profile& p, std::unique_ptr<block::block_device> dev, costs c,
               uint64_t memory, uint64_t free, const tiotest_ops& ops)
      : s_(s),
        p_(p),
        ops_(ops),
        page_(p.paging.page_size()),
        sectors_per_page_(uint32_t(page_ / block::kSectorBytes)),
        dev_(std::move(dev)),
        c_(c),
        q_(elevator(p), limits(p)) {
    file_pages_ = s.file_bytes() / page_;
    cluster_ = page_cluster_24(memory, page_);
    ra_pages_ = p.page_cache.ra_max / page_;
    window_ = seq_ra_window_24(ra_pages_, cluster_);
    cache_pages_ = cache_pages_of(p, memory, free);
    pages_.resize(file_pages_ * s.threads);
    writeback_.assign(s.threads, 0);
    buf_dirty_order_.resize(s.threads);
    stats_.cache_pages = cache_pages_;
    stats_.page_cluster = cluster_;
  }

  result<std::vector<tiobench_test_result>> run();
  [[nodiscard]] const tiobench_sim_stats& stats() const { return stats_; }

 private:
  static block::elevator_kind elevator(const kernel_profile& p) {
    switch (p.block_queue.elevator) {
      case io_elevator::noop: return block::elevator_kind::noop;
      case io_elevator::linus: return block::elevator_kind::linus;
      case io_elevator::deadline: break;
    }
    return block::elevator_kind::deadline;
  }
  static block::queue_limits limits(const kernel_profile& p) {
    block::queue_limits l;
    l.max_sectors = p.block_queue.max_sectors;
    l.read_latency = p.block_queue.read_passovers;
    l.write_latency = p.block_queue.write_passovers;
    return l;
  }
  [[nodiscard]] uint64_t key(uint32_t file, uint64_t page) const { return file * file_pages_ + page; }

  void charge(thread_state& th, double ns, bool user);
  bool step(thread_state& th, tiobench_test t);
  bool touch_page(thread_state& th, tiobench_test t, uint64_t page);
  bool fault_in(thread_state& th, tiobench_test t, uint64_t page);
  bool read_page(thread_state& th, uint64_t page);
  bool write_page(thread_state& th, uint64_t page);
  void set_buf_dirty(uint64_t k);
  void read_ahead(thread_state& th, uint64_t first, uint64_t count);
  bool add_page(thread_state& th, uint64_t k);
  bool make_room(thread_state& th);
  bool drop_clean();
  void launder(thread_state& th);
  bool sync_file(thread_state& th, uint32_t file, bool buffers);
  bool fsync_step(thread_state& th, tiobench_test t);
  bool kupdate_step(thread_state& th);
  void move_dirty_bits(uint32_t file, uint64_t first, uint64_t count);
  void submit(thread_state& th, uint64_t k, bool write);
  void kick(sim_ns now);
  void complete();
  bool block_on(thread_state& th);
  result<tiobench_test_result> run_test(tiobench_test t, std::vector<thread_state>& ths, sim_ns start);

  tiobench_spec s_;
  const kernel_profile& p_;
  const tiotest_ops& ops_;
  const uint64_t page_;              // the profile's base page (PAGE_SIZE)
  const uint32_t sectors_per_page_;  // a page's 512-byte sectors
  std::unique_ptr<block::block_device> dev_;
  costs c_;
  block::request_queue q_;
  uint64_t file_pages_ = 0, cache_pages_ = 0, window_ = 0, resident_ = 0;
  uint64_t ra_pages_ = 0;  // get_max_readahead: the profile's ra_max in pages (2.4 IDE: MAX_READAHEAD)
  uint32_t cluster_ = 0;
  tiobench_test test_ = tiobench_test::write;  // the test running
  std::vector<page_state> pages_;
  std::deque<uint64_t> lru_;        // page keys in the order they entered the page cache
  std::vector<uint64_t> writeback_;  // per file: pages under writeback
  // per file: pages in the order write() dirtied their buffers (i_dirty_buffers, whose
  // head is the most recent: buffer_insert_inode_queue's list_add); stale entries skipped.
  std::vector<std::vector<uint64_t>> buf_dirty_order_;
  uint32_t queued_[2] = {0, 0};      // requests in the queue per direction (merges excluded)
  struct in_flight {
    std::vector<uint64_t> ids;
    sim_ns done{};
    bool write = false;
  };
  std::optional<in_flight> busy_;
  std::vector<thread_state>* ths_ = nullptr;
  std::vector<uint32_t> woken_;  // threads complete() made runnable, for run_test's queue
  tiobench_sim_stats stats_;
};

void tiobench_sim::charge(thread_state& th, double ns, bool user) {
  (user ? th.user_ns : th.sys_ns) += ns;
  th.t += sim_ns{uint64_t(ns + 0.5)};
}

bool tiobench_sim::block_on(thread_state& th) {
  th.blocked = true;
  return false;
}

void tiobench_sim::submit(thread_state& th, uint64_t k, bool write) {
  const uint32_t file = uint32_t(k / file_pages_);
  const uint64_t page = k % file_pages_;
  block::io_request r;
  r.sector = kPartitionStart + k * sectors_per_page_;  // files back to back
  r.count = sectors_per_page_;
  r.write = write;
  const size_t before = q_.size();
  q_.add(r, k, th.t);
  if (q_.size() > before) ++queued_[write];
  page_state& ps = pages_[k];
  if (write) {
    ps.st = pg::writeback;
    ps.on_disk = true;
    ++writeback_[file];
  } else {
    ps.st = pg::reading;
  }
  (void)page;
  charge(th, c_.submit_ns, false);
}

void tiobench_sim::kick(sim_ns now) {
  if (busy_ || q_.size() == 0) return;
  auto r = q_.take(now);
  --queued_[r->rq.write];
  (r->rq.write ? stats_.write_requests : stats_.read_requests)++;
  if (!r->rq.write) ++stats_.test_read_requests[size_t(test_)];
  busy_ = in_flight{std::move(r->ids), dev_->submit(r->rq, now), r->rq.write};
}

void tiobench_sim::complete() {
  in_flight f = std::move(*busy_);
  busy_.reset();
  for (uint64_t k : f.ids) {
    page_state& ps = pages_[k];
    if (f.write) {
      ps.st = pg::clean;
      if (ps.redirty_to == pg::buf_dirty) set_buf_dirty(k);
      else if (ps.redirty_to != pg::absent) ps.st = ps.redirty_to;
      ps.redirty_to = pg::absent;
      --writeback_[k / file_pages_];
      ++stats_.pages_written;
    } else {
      ps.st = pg::clean;
      ++stats_.pages_read;
      ++stats_.test_pages_read[size_t(test_)];
    }
  }
  // Every waiting thread looks again (each waits for a page, a free request or its
  // fsync; re-checking is cheaper than keeping wait lists and gives the same order).
  for (uint32_t i = 0; i < ths_->size(); ++i)
    if (thread_state& th = (*ths_)[i]; th.blocked) {
      th.blocked = false;
      th.t = block::max(th.t, f.done);
      woken_.push_back(i);
    }
  kick(f.done);
}

// Drops the oldest clean page if the oldest page is clean (what reclaim finds first);
// pages being read are passed over. false when the oldest page needs writing first.
bool tiobench_sim::drop_clean() {
  for (size_t scanned = 0; scanned < lru_.size(); ++scanned) {
    const uint64_t k = lru_.front();
    page_state& ps = pages_[k];
    if (ps.st == pg::reading) {  // locked: not reclaimable now, to the back
      lru_.pop_front();
      lru_.push_back(k);
      continue;
    }
    if (ps.st != pg::clean) return false;
    lru_.pop_front();
    ps.st = pg::absent;
    --resident_;
    return true;
  }
  return false;
}

// Writes the oldest dirty pages, up to SWAP_CLUSTER_MAX of them among the oldest
// 2 x SWAP_CLUSTER_MAX (swap_out moving their PTE dirty bits, then page_launder's pass
// over the inactive_dirty list, in order).
void tiobench_sim::launder(thread_state& th) {
  uint64_t written = 0;
  for (size_t i = 0; i < lru_.size() && i < 2 * kLaunderBatch && written < kLaunderBatch; ++i) {
    const uint64_t k = lru_[i];
    const pg st = pages_[k].st;
    if (st != pg::dirty && st != pg::pte_dirty && st != pg::buf_dirty) continue;
    if (queued_[1] >= p_.block_queue.nr_requests) break;
    submit(th, k, true);
    ++written;
  }
}

// One free page frame for the page cache, or the thread waits: for the oldest page's
// writeback, for a request slot, or for the writes it has just started.
bool tiobench_sim::make_room(thread_state& th) {
  while (resident_ >= cache_pages_) {
    if (drop_clean()) continue;
    const pg oldest = pages_[lru_.front()].st;
    if (oldest == pg::dirty || oldest == pg::pte_dirty || oldest == pg::buf_dirty) launder(th);
    kick(th.t);
    return block_on(th);
  }
  return true;
}

bool tiobench_sim::add_page(thread_state& th, uint64_t k) {
  page_state& ps = pages_[k];
  lru_.push_back(k);
  ++resident_;
  if (ps.on_disk) {
    submit(th, k, false);
    return true;
  }
  ps.st = pg::clean;  // a hole: block_read_full_page zero-fills it, no I/O
  charge(th, double(page_) * c_.copy_ns_per_byte / 2, false);
  return true;
}

// Read-ahead pages enter the cache only where a clean page can go without waiting.
void tiobench_sim::read_ahead(thread_state& th, uint64_t first, uint64_t count) {
  const uint32_t file = th.id;
  for (uint64_t p = first; p < first + count; ++p) {
    const uint64_t k = key(file, p);
    if (pages_[k].st != pg::absent) continue;
    if (resident_ >= cache_pages_ && !drop_clean()) return;
    if (pages_[k].on_disk && queued_[0] >= p_.block_queue.nr_requests) return;
    add_page(th, k);
  }
}

// filemap_nopage for an uncached page: room for it, then its read-around.
bool tiobench_sim::fault_in(thread_state& th, tiobench_test t, uint64_t page) {
  const uint64_t k = key(th.id, page);
  if (queued_[0] >= p_.block_queue.nr_requests) {
    kick(th.t);
    return block_on(th);
  }
  if (!make_room(th)) return false;
  ++stats_.major_faults;
  add_page(th, k);
  const page_span around = read_around_24(page, file_pages_, cluster_, ops_.test[size_t(t)].hint == madv::random);
  read_ahead(th, around.first, around.count);
  return true;
}

// do_generic_file_read for one page of a read() (2.4.0): a cached, up-to-date page is
// copied (and may start an asynchronous read-ahead); an uncached one is added and read
// (readpage), the read-ahead runs while it is locked, and the reader waits for it.
bool tiobench_sim::read_page(thread_state& th, uint64_t page) {
  const uint64_t k = key(th.id, page);
  if (!th.page_ra_done) {
    bool locked = true;
    if (pages_[k].st == pg::absent) {
      if (queued_[0] >= p_.block_queue.nr_requests) {
        kick(th.t);
        return block_on(th);
      }
      if (!make_room(th)) return false;
      ++stats_.major_faults;
      add_page(th, k);
    } else {
      locked = pages_[k].st == pg::reading;
    }
    const page_span ra = th.fra.readahead(th.reada_ok, page, locked, file_pages_, ra_pages_);
    read_ahead(th, ra.first, ra.count);
    th.page_ra_done = true;
  }
  if (pages_[k].st == pg::reading) {
    kick(th.t);
    return block_on(th);
  }
  th.page_ra_done = false;
  return true;
}

// generic_file_write for one whole page (2.4.0): __grab_cache_page finds or adds the page;
// ext2's block_prepare_write reads only buffers the write covers in part, so a whole page
// needs no read; __block_commit_write dirties its buffers.
bool tiobench_sim::write_page(thread_state& th, uint64_t page) {
  const uint64_t k = key(th.id, page);
  page_state& ps = pages_[k];
  if (ps.st == pg::reading) {  // grab_cache_page locks the page: wait for its read
    kick(th.t);
    return block_on(th);
  }
  if (ps.st == pg::absent) {
    if (!make_room(th)) return false;
    lru_.push_back(k);
    ++resident_;
    charge(th, c_.submit_ns, false);  // page allocation, page-cache insertion, buffer heads
    set_buf_dirty(k);
  } else if (ps.st == pg::clean) {
    set_buf_dirty(k);
  } else if (ps.st == pg::writeback) {
    ps.redirty_to = pg::buf_dirty;
  }  // dirty or pte_dirty: the page is written by whatever writes those
  return true;
}

void tiobench_sim::set_buf_dirty(uint64_t k) {
  pages_[k].st = pg::buf_dirty;
  buf_dirty_order_[k / file_pages_].push_back(k % file_pages_);
}

// The first touch of `page` in this test's mapping (a fault), or a later one (nothing).
bool tiobench_sim::touch_page(thread_state& th, tiobench_test t, uint64_t page) {
  const uint64_t k = key(th.id, page);
  if (!th.mapped[page]) {
    if (pages_[k].st == pg::absent && !fault_in(th, t, page)) return false;
    if (pages_[k].st == pg::reading) {
      kick(th.t);
      return block_on(th);
    }
    th.mapped[page] = true;
    ++stats_.faults;  // every fault ends by mapping a cached page
    charge(th, c_.fault_ns, false);
    if (ops_.test[size_t(t)].hint == madv::sequential) {
      const page_span ra = th.ra.after_fault(page, window_, file_pages_);
      move_dirty_bits(th.id, th.ra.flushed.first, th.ra.flushed.count);
      read_ahead(th, ra.first, ra.count);
      kick(th.t);
    }
  }
  if (is_write(t)) {
    page_state& ps = pages_[k];
    if (ps.st == pg::clean) ps.st = pg::pte_dirty;
    if (ps.st == pg::writeback && ps.redirty_to == pg::absent) ps.redirty_to = pg::pte_dirty;
  }
  return true;
}

// filemap_sync / zap_pte_range: dirty PTEs of [first, first + count) make their pages
// dirty (set_page_dirty).
void tiobench_sim::move_dirty_bits(uint32_t file, uint64_t first, uint64_t count) {
  for (uint64_t p = first; p < first + count && p < file_pages_; ++p)
    if (pages_[key(file, p)].st == pg::pte_dirty) pages_[key(file, p)].st = pg::dirty;
}

// filemap_fdatasync of `file`: its PG_dirty pages from the most recently dirtied (the
// dirty_pages list's head; the highest index here) down, written; with `buffers` (fsync:
// ext2_sync_file's fsync_inode_buffers) then its dirty buffers from the most recently
// dirtied; then filemap_fdatawait. th.fsync_next: how many pages from the bottom (phase 0)
// or entries of the buffer list from its start (phase 1) are left to look at.
bool tiobench_sim::sync_file(thread_state& th, uint32_t file, bool buffers) {
  if (th.fsync_phase == 0) {
    for (; th.fsync_next > 0; --th.fsync_next) {
      const uint64_t k = key(file, th.fsync_next - 1);
      if (pages_[k].st != pg::dirty) continue;
      if (queued_[1] >= p_.block_queue.nr_requests) {
        kick(th.t);
        return block_on(th);
      }
      submit(th, k, true);
    }
    th.fsync_phase = buffers ? 1 : 2;
    th.fsync_next = buf_dirty_order_[file].size();
  }
  if (th.fsync_phase == 1) {
    std::vector<uint64_t>& order = buf_dirty_order_[file];
    for (; th.fsync_next > 0; --th.fsync_next) {
      const uint64_t k = key(file, order[th.fsync_next - 1]);
      if (pages_[k].st != pg::buf_dirty) continue;
      if (queued_[1] >= p_.block_queue.nr_requests) {
        kick(th.t);
        return block_on(th);
      }
      submit(th, k, true);
    }
    order.clear();
    th.fsync_phase = 2;
  }
  kick(th.t);
  return writeback_[file] == 0 || block_on(th);
}

// munmap if the test unmaps (its zap moves the dirty PTEs' bits to the pages), then fsync
// if it fsyncs.
bool tiobench_sim::fsync_step(thread_state& th, tiobench_test t) {
  const test_io& io = ops_.test[size_t(t)];
  if (!th.unmapped) {
    if (io.munmap) move_dirty_bits(th.id, 0, file_pages_);
    th.unmapped = true;
    th.fsync_next = file_pages_;
    th.fsync_phase = 0;
  }
  if (io.fsync && !sync_file(th, th.id, true)) return false;
  th.done = true;
  return true;
}

// kupdate's sync_inodes(0): each inode with dirty pages in turn, synced; then asleep for
// the interval.
bool tiobench_sim::kupdate_step(thread_state& th) {
  if (!th.syncing) {
    th.syncing = true;
    th.inode = 0;
    th.fsync_next = file_pages_;
    th.fsync_phase = 0;
  }
  for (; th.inode < s_.threads; ++th.inode, th.fsync_next = file_pages_, th.fsync_phase = 0)
    if (!sync_file(th, th.inode, false)) return false;
  th.syncing = false;
  th.t += sim_ns{uint64_t(p_.page_cache.kupdate_interval_ms) * 1'000'000};
  return true;
}

// One op of `th` (or as much of it as can be done before it must wait).
bool tiobench_sim::step(thread_state& th, tiobench_test t) {
  if (th.kupdate) return kupdate_step(th);
  if (th.fsync) return fsync_step(th, t);
  const test_io& io = ops_.test[size_t(t)];
  const uint64_t off = tiobench_offset(s_, t, th.id, th.op);
  if (!th.in_op) {
    th.in_op = true;
    th.op_start = th.t;
    th.op_page = off / page_;
    if (!io.mapped && !is_write(t))
      th.reada_ok = th.fra.start_read(off / page_, off % page_, s_.block_bytes, page_, ra_pages_);
  }
  const uint64_t last = (off + s_.block_bytes - 1) / page_;
  for (; th.op_page <= last; ++th.op_page) {
    const bool ok = io.mapped ? touch_page(th, t, th.op_page)
                    : is_write(t) ? write_page(th, th.op_page)
                                  : read_page(th, th.op_page);
    if (!ok) return false;
  }
  // memcpy to or from the mapping is user time; read()'s copy_to_user and write()'s
  // copy_from_user are the kernel's.
  charge(th, double(s_.block_bytes) * c_.copy_ns_per_byte, io.mapped);
  const double lat = double((th.t - th.op_start).ns);
  th.lat_sum_ns += lat;
  th.lat_max_ns = std::max(th.lat_max_ns, lat);
  th.over2 += lat > 2e9;
  th.over10 += lat > 10e9;
  th.in_op = false;
  if (++th.op == s_.ops_per_thread(t)) th.fsync = true;
  return true;
}

result<tiobench_test_result> tiobench_sim::run_test(tiobench_test t, std::vector<thread_state>& ths, sim_ns start) {
  test_ = t;
  for (thread_state& th : ths) {
    if (th.kupdate) continue;
    const uint32_t id = th.id;
    th = thread_state{};
    th.id = id;
    th.t = start;
    th.mapped.assign(file_pages_, false);
  }
  // The runnable threads by (time, index): the first is the one furthest behind, the
  // lower index on a tie. A thread is in it while neither done nor waiting; only the
  // thread stepped and the threads a completion wakes change (a scan of every thread per
  // step made 1,024 threads take minutes).
  std::set<std::pair<uint64_t, uint32_t>> runnable;
  const auto queue = [&](uint32_t i) { runnable.emplace(ths[i].t.ns, i); };
  size_t left = 0;  // tiotest threads not done
  for (uint32_t i = 0; i < ths.size(); ++i) {
    left += !ths[i].done && !ths[i].kupdate;
    if (!ths[i].done && !ths[i].blocked) queue(i);
  }
  while (left) {
    thread_state* next = runnable.empty() ? nullptr : &ths[runnable.begin()->second];
    if (busy_ && (!next || busy_->done <= next->t)) {
      complete();
      for (uint32_t i : woken_) queue(i);
      woken_.clear();
      continue;
    }
    if (!next) return status::check_failed("tiobench sim: every thread waits and the disk is idle (a model bug)");
    const uint32_t i = runnable.begin()->second;
    runnable.erase(runnable.begin());
    step(*next, t);
    if (next->done) left -= !next->kupdate;
    else if (!next->blocked) queue(i);
    kick(next->t);
  }
  tiobench_test_result r;
  r.test = t;
  sim_ns end = start;
  double user = 0, sys = 0, lat = 0, lat_max = 0;
  for (const thread_state& th : ths) {
    if (th.kupdate) continue;
    end = block::max(end, th.t);
    user += th.user_ns;
    sys += th.sys_ns;
    lat += th.lat_sum_ns;
    lat_max = std::max(lat_max, th.lat_max_ns);
    r.lat_over_2s += th.over2;
    r.lat_over_10s += th.over10;
  }
  r.ops = s_.ops_per_thread(t) * s_.threads;
  r.blocks = r.ops;
  r.seconds = (end - start).seconds();
  // tiotest: each thread's getrusage(RUSAGE_SELF) delta is process-wide, summed and
  // divided by the threads: the process's CPU time over the test.
  r.utime = user * 1e-9;
  r.stime = sys * 1e-9;
  r.lat_avg_ms = lat / double(r.ops) * 1e-6;
  r.lat_max_ms = lat_max * 1e-6;
  return r;
}

result<std::vector<tiobench_test_result>> tiobench_sim::run() {
  std::vector<thread_state> ths(s_.threads);
  for (uint32_t i = 0; i < s_.threads; ++i) ths[i].id = i;
  if (p_.page_cache.kupdate_interval_ms) {  // asleep until its first interval has passed
    thread_state k;
    k.id = s_.threads;
    k.kupdate = true;
    k.t = sim_ns{uint64_t(p_.page_cache.kupdate_interval_ms) * 1'000'000};
    ths.push_back(std::move(k));
  }
  ths_ = &ths;
  std::vector<tiobench_test_result> out;
  sim_ns now{};
  for (tiobench_test t : kTiobenchOrder) {
    auto r = run_test(t, ths, now);
    if (!r.ok()) return r.error();
    for (const thread_state& th : ths)
      if (!th.kupdate) now = block::max(now, th.t);
    out.push_back(r.value());
  }
  ths_ = nullptr;
  return out;
}

}  // namespace

result<tiobench_run> run_tiobench_sim(const tiobench_spec& s, const tiobench_sim_options& o,
                                            tiobench_sim_stats* stats) {
  if (status v = validate_tiobench(s); !v.ok()) return v;
  if (s.direct)
    return status::not_supported("the sim's tiobench does not model O_DIRECT (--direct); use --engine live");
  if (s.mmap && o.tiotest == tiotest_build::v031_rw)
    return status::invalid_argument("tiotest build v031_rw is tiotest's read()/write() build: not with --mmap");
  const tiotest_build build = s.mmap ? o.tiotest : tiotest_build::v031_rw;
  auto p = find_profile(o.profile);
  if (!p.ok()) return p.error();
  // 2.4's read-around stands for all of 2.4's page-cache I/O here: do_generic_file_read's
  // read-ahead (file_readahead_24) is modelled for 2.4.0 alone as well.
  if (!p->page_cache.mmap_read_around_24)
    return status::not_supported("the sim's tiobench models 2.4's page-cache I/O (its mapped-fault read-around and "
                                 "read()'s read-ahead) only; profile " + o.profile + " does not have it (use linux-2.4)");
  const block::device_profile* dp = block::find_device_profile(o.device);
  if (!dp) return status::invalid_argument("unknown device profile '" + o.device + "'");
  std::string err;
  auto dev = block::make_device(*dp, &err);
  if (!dev) return status::invalid_argument(err);
  if (s.file_bytes() / block::kSectorBytes * s.threads + kPartitionStart > dev->capacity_sectors())
    return status::invalid_argument("--size does not fit on " + dev->describe());
  if (const uint64_t page = p.value().paging.page_size(); s.block_bytes % page != 0)
    return status::not_supported("the sim's tiobench needs --block to be a multiple of " + std::to_string(page) +
                                 " (" + p.value().name + "'s page: whole pages)");
  const block::cpu_cost* copy = block::find_cpu_cost("copy", o.cpu);
  const block::cpu_cost* fault = block::find_cpu_cost("file_fault", o.cpu);
  const block::cpu_cost* sub = block::find_cpu_cost("readahead_page", o.cpu);
  if (!copy || !fault || !sub) return status::invalid_argument("no CPU cost table for machine '" + o.cpu + "'");
  const uint64_t memory = o.memory_bytes ? o.memory_bytes : p->default_memory;
  // The page cache the machine leaves must hold each thread's read-around cluster: the
  // unit a fault reads, and what the threads have in flight at once. Below that the run
  // cannot proceed (a thread would wait for a frame no one frees); a model limit, not a
  // kernel's: 2.4 would be swapping or killing processes long before.
  {
    const uint64_t cache = cache_pages_of(p.value(), memory, o.free_bytes);
    const uint64_t need = uint64_t(s.threads) << page_cluster_24(memory, p->paging.page_size());
    if (cache < need)
      return status::invalid_argument(
          "a " + std::to_string(memory >> 20) + " MiB machine" +
          (o.free_bytes ? " with " + std::to_string(o.free_bytes >> 20) + " MiB free" : std::string{}) + " leaves " +
          std::to_string(cache) + " page-cache pages after mem_map and the kernel image; " + std::to_string(s.threads) +
          " thread(s) need at least " + std::to_string(need) + " (a read-around cluster each): give more --memory");
  }
  tiobench_sim sim(s, p.value(), std::move(dev), {copy->ns, fault->ns, sub->ns}, memory, o.free_bytes,
                   kTiotestBuilds[size_t(build)]);
  auto tests = sim.run();
  if (!tests.ok()) return tests.error();
  if (stats) *stats = sim.stats();
  tiobench_run run;
  run.spec = s;
  run.engine = "sim";
  run.identifier = o.profile;
  run.io = kTiotestBuilds[size_t(build)].name;
  run.dir = "a simulated " + o.device + " on a " + std::to_string(memory >> 20) + " MiB machine";
  if (o.free_bytes) run.dir += " with " + std::to_string(o.free_bytes >> 20) + " MiB free";
  run.tests = std::move(tests.value());
  return run;
}

}  // namespace vmlab::sim
