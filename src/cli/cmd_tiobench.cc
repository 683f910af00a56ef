// vmlab tiobench [--size MB] [--block B] [--threads N] [--random N] [--mmap] [--direct]
//                [--drop-caches] [--dir DIR] [--engine live|sim] [--json] [-o FILE]
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fstream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "engine/live/tiobench_runner.h"
#include "engine/tiobench_sim.h"
#include "model/profile.h"
#include "report/tiobench_report.h"

namespace vmlab::cli {
namespace {

// tiobench.pl's default --size: twice MemTotal, so that the reads cannot come from the
// page cache. 0 when /proc/meminfo cannot be read.
uint64_t twice_memtotal_mb() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  while (f >> key) {
    if (key == "MemTotal:") {
      f >> kb;
      return 2 * kb / 1024;
    }
    f.ignore(1 << 10, '\n');
  }
  return 0;
}

// Whether -o FILE can be written, tried before the run rather than after it: opened for
// writing without truncating it (an existing file keeps its contents until the run
// has succeeded), and removed again if this made it.
status check_output_writable(const std::string& file) {
  struct stat st {};
  const bool existed = ::stat(file.c_str(), &st) == 0;
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int e = errno;
    return status::invalid_argument("-o " + file + ": cannot write it (" + std::strerror(e) +
                                    "); nothing was run");
  }
  ::close(fd);
  if (!existed) ::unlink(file.c_str());
  return {};
}

struct opts {
  tiobench_spec spec;
  std::string engine = "live", dir, format = "table", file, profile, device;
  uint64_t memory_mb = 0;
  bool json = false, size_given = false;
};

int print_tiobench(const opts& o, const tiobench_run& r) {
  output_options out;
  out.file = o.file;
  out.json = o.json || o.format == "json";
  const std::string text = out.json ? tiobench_json(r).dump(2) + "\n" : format_tiobench_table(r);
  return write_output(out, text);
}

// The sim: the profile's memory, not this host's, sets tiobench.pl's default --size.
int run_tiobench_on_sim(opts& o) {
  if (o.spec.direct || o.spec.drop_caches || !o.dir.empty())
    return report_error(status::invalid_argument("--direct, --drop-caches and --dir are for --engine live"));
  sim::tiobench_sim_options so;
  if (!o.profile.empty()) so.profile = o.profile;
  if (!o.device.empty()) so.device = o.device;
  if (o.memory_mb >> 44)
    return report_error(status::invalid_argument("--memory " + std::to_string(o.memory_mb) +
                                                 " MiB is 16 EiB or more: past 64-bit byte counts"));
  so.memory_bytes = o.memory_mb << 20;
  if (!o.size_given) {
    auto p = find_profile(so.profile);
    if (!p.ok()) return report_error(p.error());
    o.spec.size_mb = 2 * ((so.memory_bytes ? so.memory_bytes : p->default_memory) >> 20);
  }
  if (!o.file.empty())
    if (status w = check_output_writable(o.file); !w.ok()) return report_error(w);
  auto r = sim::run_tiobench_sim(o.spec, so);
  if (!r.ok()) return report_error(r.error());
  return print_tiobench(o, r.value());
}

int run_tiobench(opts& o) {
  if (o.engine == "sim") return run_tiobench_on_sim(o);
  if (!o.profile.empty() || !o.device.empty() || o.memory_mb)
    return report_error(status::invalid_argument("--profile, --device and --memory are for --engine sim"));
  if (!o.size_given) o.spec.size_mb = twice_memtotal_mb();
  if (status v = validate_tiobench(o.spec); !v.ok()) return report_error(v);
  if (o.spec.drop_caches && ::geteuid() != 0)
    return report_error(status::invalid_argument(
        "--drop-caches writes 3 to /proc/sys/vm/drop_caches before each test, which needs root: run as root or leave "
        "it out"));
  if (!o.file.empty())
    if (status w = check_output_writable(o.file); !w.ok()) return report_error(w);
  auto r = live::run_tiobench_live(o.spec, {o.dir});
  if (!r.ok()) return report_error(r.error());
  return print_tiobench(o, r.value());
}

}  // namespace

action add_tiobench(CLI::App& app) {
  auto o = std::make_shared<opts>();
  app.footer(
      "tiotest's four tests in its order (sequential write, random write, sequential read, random read), one file per "
      "thread, Rate and CPU% as tiotest and tiobench.pl compute them (CPU% = process user+sys time over the test's "
      "wall time: it exceeds 100% with several busy threads). Sizes as tiobench.pl takes them: --size and --random "
      "are totals, split evenly over the threads; MB = 2^20 bytes.\n"
      "--engine sim replays the run in simulated time on a kernel profile and a disk profile (linux-2.4 with the IBM "
      "Deskstar 75GXP by default; its default --size is twice the profile's memory): with --mmap, tiotest 0.3.1 "
      "built with USE_MMAP, seed 003's run; without, tiotest's read()/write() build.\n"
      "Example: vmlab tiobench --size 1024 --block 4096 --threads 2 --mmap\n"
      "Exit status: 0; 2 for bad input (a missing or read-only --dir, too little free space, --drop-caches without "
      "root); 3 when the host fails the run (a full disk, an I/O error, SIGBUS); 128 + N when stopped by signal N. The "
      "files and the temporary directory are removed on every path.");
  CLI::Option* size = app.add_option("--size", o->spec.size_mb,
                                     "Total file size in MB (2^20 bytes), split over the threads as tiobench.pl does "
                                     "(default, as tiobench.pl: twice MemTotal)");
  app.add_option("--block", o->spec.block_bytes, "Block size in bytes (default 4096)");
  app.add_option("--threads", o->spec.threads, "Threads, each with its own file (default 1)");
  app.add_option("--random", o->spec.random_ops,
                 "Random ops in total, split over the threads (default 4000, as tiobench.pl)");
  app.add_flag("--mmap", o->spec.mmap, "mmap I/O as tiotest -M: memcpy to and from a MAP_SHARED mapping");
  app.add_flag("--direct", o->spec.direct, "O_DIRECT (tiotest -X); not with --mmap");
  app.add_flag("--drop-caches", o->spec.drop_caches,
               "Write 3 to /proc/sys/vm/drop_caches, then 1 to /proc/sys/vm/compact_memory, before each test "
               "(tiotest -F, and the same free memory for every cold test; root only)");
  app.add_option("--dir", o->dir, "Directory for the files (default: a new directory under $TMPDIR or /var/tmp, removed "
                                  "afterwards)");
  app.add_option("--seed", o->spec.seed, "Seed of the random tests' block choice (default 1)");
  app.add_option("--profile", o->profile, "sim: the kernel profile (default linux-2.4, the only one it models)");
  app.add_option("--device", o->device, "sim: the disk's profile (default ibm-dtla-307075)");
  app.add_option("--memory", o->memory_mb, "sim: the machine's memory in MiB (default: the profile's, 512 for linux-2.4)");
  app.add_option("--engine", o->engine, "live (this host; the default) or sim")->check(CLI::IsMember({"sim", "live"}));
  CLI::Option* fmt = app.add_option("--format", o->format, "table (default) or json")
                         ->check(CLI::IsMember({"table", "json"}));
  app.add_flag("--json", o->json, "The same as --format json")->excludes(fmt);
  app.add_option("-o,--output", o->file, "Write the output to this file (default: standard output)");
  return [o, size]() -> int {
    o->size_given = size->count() > 0;
    return run_tiobench(*o);
  };
}

}  // namespace vmlab::cli
