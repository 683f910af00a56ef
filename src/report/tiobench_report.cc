#include "report/tiobench_report.h"

#include <fmt/format.h>

namespace vmlab {
namespace {

// tiobench.pl prints CPU% with four significant digits ("98.58%", "180.5%").
std::string cpu_text(double pct) {
  return pct < 100 ? fmt::format("{:.2f}%", pct) : pct < 1000 ? fmt::format("{:.1f}%", pct) : fmt::format("{:.0f}%", pct);
}

const tiobench_test kTableOrder[] = {tiobench_test::read, tiobench_test::random_read, tiobench_test::write,
                                     tiobench_test::random_write};

}  // namespace

std::string format_tiobench_table(const tiobench_run& r) {
  const tiobench_spec& s = r.spec;
  std::string out =
      "Unit information\n"
      "================\n"
      "File size = megabytes\n"
      "Blk Size  = bytes\n"
      "Rate      = megabytes per second\n"
      "CPU%      = percentage of CPU used during the test\n"
      "Latency   = milliseconds\n"
      "Lat%      = percent of requests that took longer than X seconds\n"
      "CPU Eff   = Rate divided by CPU% - throughput per cpu load\n";
  out += fmt::format("\n{} engine, {}{}{}, {} random ops per thread, files in {}\n", r.engine,
                     !r.io.empty() ? r.io : s.mmap ? "mmap (tiotest -M)" : "pread/pwrite", s.direct ? ", O_DIRECT" : "",
                     s.drop_caches ? ", caches dropped before each test" : "", s.random_ops_per_thread(), r.dir);
  for (tiobench_test t : kTableOrder) {
    const tiobench_test_result* res = nullptr;
    for (const auto& x : r.tests)
      if (x.test == t) res = &x;
    if (!res) continue;
    out += fmt::format("\n{}\n", tiobench_test_title(t));
    out +=
        "                              File   Blk   Num                         Avg      Maximum      Lat%     Lat%     CPU\n"
        "Identifier                    Size   Size  Thr      Rate     (CPU%)  Latency    Latency      >2s      >10s     Eff\n"
        "---------------------------- ------ ------ ---  ------------ ------ --------- -----------  -------- -------- -------\n";
    const double ops = res->ops ? double(res->ops) : 1;
    out += fmt::format("{:<28} {:>6} {:>6} {:>3}  {:>12.2f} {:>6} {:>9.3f} {:>11.2f}  {:>8.5f} {:>8.5f} {:>7.0f}\n",
                       r.identifier.substr(0, 28), s.size_mb, s.block_bytes, s.threads, res->rate_mb_s(s.block_bytes),
                       cpu_text(res->cpu_percent()), res->lat_avg_ms, res->lat_max_ms,
                       100.0 * double(res->lat_over_2s) / ops, 100.0 * double(res->lat_over_10s) / ops,
                       res->cpu_eff(s.block_bytes));
  }
  return out;
}

nlohmann::json tiobench_json(const tiobench_run& r) {
  const tiobench_spec& s = r.spec;
  nlohmann::json j;
  j["schema_version"] = 1;
  j["engine"] = r.engine;
  j["identifier"] = r.identifier;
  j["dir"] = r.dir;
  j["spec"] = {{"size_bytes", s.size_mb << 20},
               {"file_bytes_per_thread", s.file_bytes()},
               {"block_bytes", s.block_bytes},
               {"threads", s.threads},
               {"random_ops", s.random_ops},
               {"random_ops_per_thread", s.random_ops_per_thread()},
               {"mmap", s.mmap},
               {"direct", s.direct},
               {"drop_caches", s.drop_caches}};
  nlohmann::json tests = nlohmann::json::array();
  for (const auto& t : r.tests)
    tests.push_back({{"test", tiobench_test_key(t.test)},
                     {"title", tiobench_test_title(t.test)},
                     {"blocks", t.blocks},
                     {"io_bytes", t.blocks * s.block_bytes},
                     {"seconds", t.seconds},
                     {"rate_mib_per_s", t.rate_mb_s(s.block_bytes)},
                     {"cpu_percent", t.cpu_percent()},
                     {"utime_s", t.utime},
                     {"stime_s", t.stime},
                     {"latency_avg_ms", t.lat_avg_ms},
                     {"latency_max_ms", t.lat_max_ms},
                     {"latency_over_2s", t.lat_over_2s},
                     {"latency_over_10s", t.lat_over_10s},
                     {"ops", t.ops},
                     {"cpu_eff", t.cpu_eff(s.block_bytes)}});
  j["tests"] = tests;
  return j;
}

}  // namespace vmlab
