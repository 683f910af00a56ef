#include "workload/trace.h"

#include <gtest/gtest.h>
#include "tests/known_profiles.h"

#include "workload/scenario.h"

namespace vmlab {
namespace {

// Field-by-field equality of two ops (every field of struct op).
void expect_same_op(const op& a, const op& b, size_t i) {
  SCOPED_TRACE("op " + std::to_string(i));
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.child, b.child);
  EXPECT_EQ(a.map, b.map);
  EXPECT_EQ(a.object, b.object);
  EXPECT_EQ(a.shared, b.shared);
  EXPECT_EQ(a.locked, b.locked);
  EXPECT_EQ(a.fixed, b.fixed);
  EXPECT_EQ(a.addr, b.addr);
  EXPECT_EQ(a.align, b.align);
  EXPECT_EQ(a.phase_off, b.phase_off);
  EXPECT_EQ(a.obj_off, b.obj_off);
  EXPECT_EQ(a.prot, b.prot);
  EXPECT_EQ(a.off, b.off);
  EXPECT_EQ(a.len, b.len);
  EXPECT_EQ(a.adv, b.adv);
  EXPECT_EQ(a.write, b.write);
  EXPECT_EQ(a.pattern, b.pattern);
  EXPECT_EQ(a.stride, b.stride);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.theta, b.theta);  // exact: the writer prints the shortest round-trip form
  EXPECT_EQ(a.buffer, b.buffer);
  EXPECT_EQ(a.direct, b.direct);
  EXPECT_EQ(a.maymove, b.maymove);
  EXPECT_EQ(a.name, b.name);
}

void expect_same_stream(const op_stream& a, const op_stream& b) {
  EXPECT_EQ(a.machine.profile, b.machine.profile);
  EXPECT_EQ(a.machine.overrides, b.machine.overrides);
  EXPECT_EQ(a.machine.memory, b.machine.memory);
  EXPECT_EQ(a.machine.cpus, b.machine.cpus);
  EXPECT_EQ(a.machine.cache_line, b.machine.cache_line);
  ASSERT_EQ(a.objects.size(), b.objects.size());
  for (size_t i = 0; i < a.objects.size(); ++i) {
    EXPECT_EQ(a.objects[i].name, b.objects[i].name);
    EXPECT_EQ(a.objects[i].kind, b.objects[i].kind);
    EXPECT_EQ(a.objects[i].size, b.objects[i].size);
  }
  EXPECT_EQ(a.map_names, b.map_names);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) expect_same_op(a.ops[i], b.ops[i], i);
}

op_stream parse_ok(const std::string& text) {
  result<op_stream> r = parse_trace(text, "t.trace");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
  return r.ok() ? *r : op_stream{};
}

// "line:col: message" of a trace that must fail.
std::string fail(const std::string& text) {
  result<op_stream> r = parse_trace(text, "t.trace");
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "(parsed)";
  EXPECT_EQ(r.error().exit_code(), 2);
  const auto& w = r.error().where();
  if (!w) return r.error().message();
  EXPECT_EQ(w->file, "t.trace");
  return std::to_string(w->line) + ":" + std::to_string(w->column) + ": " + r.error().message();
}

const char* kDocExample = R"(# vmlab trace v1
machine profile=linux-6.18 memory=25769803776 cpus=2 cache_line=64
override pti=false
object sga shm size=1073741824
spawn 1
mmap 1 buf obj=sga off=0 len=1073741824 prot=rw shared locked addr=0x300000000000
mmap 1 heap obj=anon len=67108864 prot=rw private align=2097152 phase=0
touch 1 buf off=0 len=1073741824 read
touch 1 buf off=0 len=1073741824 write stride=2097152
touch 1 buf off=0 len=1073741824 read uniform count=1000 seed=77
touch 1 buf off=0 len=1073741824 write zipf theta=0.99 count=5000 seed=78
fork 1 2
munmap 1 buf off=0 len=2097152
mprotect 1 buf off=0 len=2097152 prot=r
madvise 1 buf off=0 len=2097152 dontneed
exit 2
phase load
)";

TEST(Trace, ParsesTheDocumentedExample) {
  op_stream s = parse_ok(kDocExample);
  EXPECT_EQ(s.source, "t.trace");
  EXPECT_EQ(s.machine.memory, 24 * GiB);
  EXPECT_EQ(s.machine.cpus, 2u);
  ASSERT_EQ(s.machine.overrides.size(), 1u);
  EXPECT_EQ(s.machine.overrides[0].first, "pti");
  ASSERT_EQ(s.objects.size(), 1u);
  EXPECT_EQ(s.map_names, (std::vector<std::string>{"buf", "heap"}));
  ASSERT_EQ(s.ops.size(), 13u);
  const op& m = s.ops[1];
  EXPECT_EQ(m.kind, op_kind::mmap);
  EXPECT_EQ(m.object, 0);
  EXPECT_TRUE(m.shared);
  EXPECT_TRUE(m.locked);
  EXPECT_TRUE(m.fixed);
  EXPECT_EQ(m.addr, 0x300000000000ull);
  EXPECT_EQ(s.ops[2].object, -1);
  EXPECT_EQ(s.ops[2].align, 2 * MiB);
  EXPECT_EQ(s.ops[4].pattern, touch_pattern::stride);
  EXPECT_EQ(s.ops[4].stride, 2 * MiB);
  EXPECT_TRUE(s.ops[4].write);
  EXPECT_EQ(s.ops[5].pattern, touch_pattern::uniform);
  EXPECT_EQ(s.ops[5].count, 1000u);
  EXPECT_EQ(s.ops[5].seed, 77u);
  EXPECT_EQ(s.ops[6].pattern, touch_pattern::zipf);
  EXPECT_DOUBLE_EQ(s.ops[6].theta, 0.99);
  EXPECT_EQ(s.ops[7].kind, op_kind::fork);
  EXPECT_EQ(s.ops[7].child, 2u);
  EXPECT_EQ(s.ops[9].prot, prot_read);
  EXPECT_EQ(s.ops[10].kind, op_kind::madvise);
  EXPECT_EQ(s.ops[12].name, "load");
  // The writer reproduces the example line for line (after the header).
  const std::string w = write_trace(s);
  EXPECT_EQ(w.substr(w.find("machine")), std::string(kDocExample).substr(std::string(kDocExample).find("machine")));
}

TEST(Trace, HandWrittenDefaultsAndSizeSyntax) {
  op_stream s = parse_ok(
      "\n"
      "   # a comment\n"
      "object f file size=10MiB   # trailing comment\n"
      "spawn 7\n"
      "mmap 7 win obj=f off=1MiB\n"
      "mmap 7 a len=1GiB\n"
      "touch 7 a\n"
      "touch 7 win off=4KiB write\n"
      "madvise 7 a len=2MiB\n");
  EXPECT_EQ(s.machine.profile, "linux-6.18");
  EXPECT_EQ(s.machine.cpus, 0u);  // 0: the profile's machine
  ASSERT_EQ(s.ops.size(), 6u);
  EXPECT_EQ(s.ops[1].obj_off, MiB);
  EXPECT_EQ(s.ops[1].len, 9 * MiB);  // the rest of the object
  EXPECT_EQ(s.ops[1].prot, prot_read | prot_write);
  EXPECT_FALSE(s.ops[1].shared);
  EXPECT_EQ(s.ops[2].object, -1);
  EXPECT_EQ(s.ops[2].len, GiB);
  EXPECT_EQ(s.ops[3].off, 0u);
  EXPECT_EQ(s.ops[3].len, GiB);
  EXPECT_FALSE(s.ops[3].write);
  EXPECT_EQ(s.ops[3].pattern, touch_pattern::all);
  EXPECT_EQ(s.ops[4].off, 4 * KiB);
  EXPECT_EQ(s.ops[4].len, 9 * MiB - 4 * KiB);
  EXPECT_EQ(s.ops[5].adv, advice::dontneed);
  EXPECT_EQ(s.ops[5].len, 2 * MiB);
}

TEST(Trace, ChildrenInheritMappings) {
  op_stream s = parse_ok("spawn 1\nmmap 1 a len=8KiB\nfork 1 2\ntouch 2 a write\nexit 1\ntouch 2 a\n");
  EXPECT_EQ(s.ops.size(), 6u);
}

// The I/O ops (issue 9): read, readv, write, fsync, msync and the readahead advice, read
// and written back to the same stream.
const char* kIoTrace =
    "machine profile=linux-6.18 memory=4294967296\n"
    "object d file size=1048576\n"
    "object p shm size=1048576\n"
    "spawn 1\n"
    "mmap 1 pool obj=p off=0 len=1048576 prot=rw shared\n";

TEST(Trace, IoOpsRoundTrip) {
  const std::string text = std::string(kIoTrace) +
                           "read 1 d off=0 len=65536 buf=pool bufoff=8192\n"
                           "read 1 d off=65536 len=4096\n"
                           "readv 1 d off=0 len=65536 buf=pool bufoff=0 iovecs=4 stride=32768 direct\n"
                           "write 1 d off=4096 len=8192 buf=pool bufoff=0\n"
                           "fsync 1 d\n"
                           "msync 1 pool off=0 len=4096\n"
                           "madvise 1 pool off=0 len=4096 sequential\n"
                           "madvise 1 pool off=0 len=4096 random\n";
  const op_stream a = parse_ok(text);
  ASSERT_EQ(a.ops.size(), 10u);
  const op& r = a.ops[2];
  EXPECT_EQ(r.kind, op_kind::read);
  EXPECT_TRUE(r.buffer);
  EXPECT_EQ(r.obj_off, 0u);
  EXPECT_EQ(r.len, 65536u);
  EXPECT_EQ(r.off, 8192u);
  EXPECT_EQ(r.count, 1u);
  EXPECT_FALSE(a.ops[3].buffer);
  const op& v = a.ops[4];
  EXPECT_EQ(v.kind, op_kind::readv);
  EXPECT_EQ(v.count, 4u);
  EXPECT_EQ(v.stride, 32768u);
  EXPECT_TRUE(v.direct);
  EXPECT_EQ(a.ops[5].kind, op_kind::write);
  EXPECT_EQ(a.ops[6].kind, op_kind::fsync);
  EXPECT_EQ(a.ops[6].object, 0);
  EXPECT_EQ(a.ops[7].kind, op_kind::msync);
  EXPECT_EQ(a.ops[8].adv, advice::sequential);
  EXPECT_EQ(a.ops[9].adv, advice::random);
  const std::string written = write_trace(a);
  const op_stream b = parse_ok(written);
  expect_same_stream(a, b);
  EXPECT_EQ(write_trace(b), written);
}

TEST(TraceErrors, IoOps) {
  const std::string h = kIoTrace;  // ops start on line 6
  EXPECT_EQ(fail(h + "read 1 nosuch\n"), "6:8: no object 'nosuch' (declare it with an object line first)");
  EXPECT_EQ(fail(h + "read 1 d off=1044480 len=8192\n"),
            "6:26: read: [1044480, +8192) is beyond the end of object 'd' (1048576 bytes)");
  EXPECT_EQ(fail(h + "readv 1 d len=8192 iovecs=2\n"),
            "6:1: readv needs a buffer mapping (buf=MAP): its iovecs are pages of a mapping");
  EXPECT_EQ(fail(h + "readv 1 d len=12288 buf=pool iovecs=2\n"),
            "6:37: readv: 12288 bytes do not split into 2 iovecs of whole pages");
  EXPECT_EQ(fail(h + "read 1 d bufoff=0\n"), "6:10: bufoff= needs buf=");
  EXPECT_EQ(fail(h + "read 1 d len=8192 buf=pool bufoff=1044480\n"),
            "6:35: read: the buffer [1044480, +8192) is beyond the end of its mapping (1048576 bytes)");
  // A stride whose span passes 2^64 (it wrapped, and the run failed with no location).
  EXPECT_EQ(fail(h + "readv 1 d len=8192 buf=pool iovecs=2 stride=0xfffffffffffff000\n"),
            "6:45: readv: 2 iovecs 18446744073709547520 bytes apart reach past 2^64 bytes");
  EXPECT_EQ(fail(h + "fsync 1 d extra\n"), "6:11: fsync takes a pid and an object name only");
  EXPECT_EQ(fail(h + "madvise 1 pool sequential random\n"),
            "6:16: madvise takes one advice: dontneed, hugepage, nohugepage, sequential or random");
}

// The machine line takes what a scenario's [machine] takes (op_rules.h check_machine_count),
// and phase names are unique, as a scenario's are.
TEST(TraceErrors, AsInAScenario) {
  EXPECT_EQ(fail("phase load\nphase run\nphase load\n"), "3:7: duplicate phase name 'load'");
  // Memory too small for the kernel's boot reservation, judged after the overrides.
  EXPECT_EQ(fail("machine memory=1B\nspawn 1\n"),
            "1:16: machine memory of 1 bytes is too small for linux-6.18's mem_map and kernel image");
  EXPECT_EQ(fail("machine cache_line=3\n"),
            "1:20: 'cache_line' of the machine must be a power of two between 16 and 4096, not 3");
  EXPECT_EQ(fail("machine cpus=99999999\n"), "1:14: 'cpus' of the machine must be between 1 and 65536, not 99999999");
  // A size within a page of 2^64 rounds up to 0 pages (it read as "offset 0 is beyond
  // the end of object 'a'" at the first mmap).
  EXPECT_EQ(fail("object a shm size=18446744073709551615\n"),
            "1:19: object 'a': 18446744073709551615 bytes is past the largest size whose pages can be counted "
            "(18446744073709547520 bytes, the last whole 4096-byte page below 2^64)");
}

// mremap of a whole mapping (its new length then bounds the ops on it) and
// remap_file_pages of a range of one (issue 10).
TEST(Trace, MremapAndRemapFilePagesRoundTrip) {
  const op_stream a = parse_ok(std::string(kIoTrace) +
                               "mremap 1 pool len=512KiB\n"
                               "mremap 1 pool len=2MiB maymove\n"
                               "touch 1 pool off=1MiB len=1MiB\n"
                               "mremap 1 pool len=2MiB addr=0x40000000\n"
                               "remap_file_pages 1 pool off=4096 len=8192 file_off=65536\n");
  ASSERT_EQ(a.ops.size(), 7u);
  const op& shrink = a.ops[2];
  EXPECT_EQ(shrink.kind, op_kind::mremap);
  EXPECT_EQ(shrink.len, 512 * KiB);
  EXPECT_FALSE(shrink.maymove);
  EXPECT_FALSE(shrink.fixed);
  EXPECT_TRUE(a.ops[3].maymove);
  EXPECT_FALSE(a.ops[3].fixed);
  const op& fixed = a.ops[5];
  EXPECT_TRUE(fixed.maymove && fixed.fixed);
  EXPECT_EQ(fixed.addr, vaddr{1} << 30);
  const op& rfp = a.ops[6];
  EXPECT_EQ(rfp.kind, op_kind::remap_file_pages);
  EXPECT_EQ(rfp.off, 4096u);
  EXPECT_EQ(rfp.len, 8192u);
  EXPECT_EQ(rfp.obj_off, 65536u);
  const std::string written = write_trace(a);
  EXPECT_NE(written.find("mremap 1 pool len=524288\nmremap 1 pool len=2097152 maymove\n"), std::string::npos) << written;
  EXPECT_NE(written.find("mremap 1 pool len=2097152 addr=0x40000000\n"), std::string::npos) << written;
  EXPECT_NE(written.find("remap_file_pages 1 pool off=4096 len=8192 file_off=65536\n"), std::string::npos) << written;
  expect_same_stream(a, parse_ok(written));
}

TEST(TraceErrors, MremapAndRemapFilePages) {
  const std::string h = kIoTrace;  // ops start on line 6
  EXPECT_EQ(fail(h + "mremap 1 pool\n"), "6:14: mremap needs len= (the new length)");
  EXPECT_EQ(fail(h + "mremap 1 nosuch len=4096\n"), "6:10: pid 1 has no mapping 'nosuch'");
  EXPECT_EQ(fail(h + "mremap 1 pool len=5000\n"), "6:19: len=5000 is not a multiple of 4096");
  EXPECT_EQ(fail(h + "mremap 1 pool len=4096 addr=0x1000\n"),
            "6:29: mremap: the target [0x1000, 0x2000) must start on a page boundary inside the user address space "
            "[0x10000, 0x7ffffffff000)");
  EXPECT_EQ(fail(h + "mremap 1 pool len=4096 fixed\n"), "6:24: unknown key 'fixed' for mremap");
  // After a shrink the mapping is 512 KiB long for the ops that follow.
  EXPECT_EQ(fail(h + "mremap 1 pool len=512KiB\ntouch 1 pool off=512KiB\n"),
            "7:18: off=524288 is beyond the end of mapping 'pool' (524288 bytes)");
  EXPECT_EQ(fail(h + "remap_file_pages 1 pool off=0 len=4096\n"),
            "6:39: remap_file_pages needs file_off= (bytes into the file)");
  EXPECT_EQ(fail(h + "remap_file_pages 1 pool len=4096 file_off=100\n"), "6:43: file_off=100 is not a multiple of 4096");
}

// reclaim (issue 9): kernel-wide, no pid; len= a page multiple, absent for everything.
TEST(Trace, ReclaimRoundTrip) {
  const op_stream a = parse_ok(std::string(kIoTrace) + "reclaim len=16KiB\nreclaim\n");
  ASSERT_EQ(a.ops.size(), 4u);  // spawn, mmap, then the two
  EXPECT_EQ(a.ops[2].kind, op_kind::reclaim);
  EXPECT_EQ(a.ops[2].len, 16 * KiB);
  EXPECT_EQ(a.ops[3].kind, op_kind::reclaim);
  EXPECT_EQ(a.ops[3].len, 0u);
  const std::string written = write_trace(a);
  EXPECT_NE(written.find("reclaim len=16384\nreclaim\n"), std::string::npos) << written;
  expect_same_stream(a, parse_ok(written));
}

TEST(TraceErrors, Reclaim) {
  const std::string h = kIoTrace;  // ops start on line 6
  EXPECT_EQ(fail(h + "reclaim len=0\n"), "6:13: len=0 reclaims nothing; leave len= out to reclaim everything");
  EXPECT_EQ(fail(h + "reclaim len=1000\n"), "6:13: len=1000 is not a multiple of 4096");
  EXPECT_NE(fail(h + "reclaim 1\n").find("6:9: "), std::string::npos);
  EXPECT_NE(fail(h + "reclaim size=4096\n").find("6:9: "), std::string::npos);
}

TEST(Trace, RoundTripsAGeneratedScenario) {
  result<op_stream> g = parse_scenario(R"(
seed = 99
[machine]
memory = "8GiB"
cpus = 2
[kernel.overrides]
pti = false
pt_reclaim = "false"
[[object]]
name = "seg"
size = "64MiB"
[[object]]
name = "dat"
kind = "file"
size = "10001"
[[group]]
name = "db"
count = 3
  [[group.map]]
  name = "seg"
  object = "seg"
  shared = true
  locked = true
  [[group.map]]
  name = "dat"
  object = "dat"
  prot = "r"
  [[group.map]]
  name = "heap"
  object = "anon"
  size = "6MiB"
  align = "2MiB"
  phase = "1MiB"
  [[group.map]]
  name = "fixed"
  object = "anon"
  size = "2MiB"
  addr = "0x200000000000"
  prot = "none"
[[phase]]
name = "warm"
action = "touch"
map = "seg"
pattern = "zipf"
fraction = 0.3
theta = 0.8
[[phase]]
name = "rand"
group = "db"
action = "touch"
map = "heap"
pattern = "uniform"
fraction = 0.5
write = true
[[phase]]
name = "sparse"
action = "touch"
map = "seg"
pattern = "stride"
stride = "2MiB"
[[phase]]
name = "fork"
group = "db"
processes = 2
action = "fork"
into = "kids"
children = 2
[[phase]]
name = "cow"
group = "kids"
action = "touch"
map = "heap"
write = true
length = "2MiB"
[[phase]]
name = "split"
group = "kids"
action = "mprotect"
map = "heap"
offset = "1MiB"
length = "1MiB"
prot = "r"
[[phase]]
name = "zap"
action = "madvise"
map = "seg"
offset = "4KiB"
length = "2MiB"
[[phase]]
name = "hole"
action = "munmap"
map = "heap"
offset = "2MiB"
length = "2MiB"
[[phase]]
name = "bye"
group = "kids"
action = "exit"
)",
                                       "rt.toml");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(g->ops.size(), 63u);
  const std::string text = write_trace(*g);
  result<op_stream> back = parse_trace(text, "rt.trace");
  ASSERT_TRUE(back.ok()) << back.error().to_string() << "\n" << text;
  expect_same_stream(*g, *back);
  const std::string again = write_trace(*back);
  EXPECT_EQ(again.substr(again.find("machine")), text.substr(text.find("machine")));
  // format_op is the line write_trace writes.
  for (const op& o : g->ops) EXPECT_NE(text.find("\n" + format_op(*g, o) + "\n"), std::string::npos) << format_op(*g, o);
}

TEST(Trace, FormatOp) {
  op_stream s = parse_ok(kDocExample);
  EXPECT_EQ(format_op(s, s.ops[1]),
            "mmap 1 buf obj=sga off=0 len=1073741824 prot=rw shared locked addr=0x300000000000");
  EXPECT_EQ(format_op(s, s.ops[6]), "touch 1 buf off=0 len=1073741824 write zipf theta=0.99 count=5000 seed=78");
  EXPECT_EQ(format_op(s, s.ops[12]), "phase load");
}

TEST(TraceErrors, WholeMessagesAndPositions) {
  EXPECT_EQ(fail("spawn 1\njump 1\n"),
            "2:1: unknown op 'jump' (expected machine, override, object, spawn, fork, exit, mmap, munmap, mprotect, "
            "madvise, touch, read, readv, write, fsync, msync, mremap, remap_file_pages, reclaim or phase)");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a len=4096 colour=red\n"), "2:19: unknown key 'colour' for mmap");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a len=4096 len=8192\n"), "2:19: duplicate key 'len'");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a len\n"), "2:10: 'len' needs a value (len=...)");
  EXPECT_EQ(fail("touch 3 a\n"), "1:7: pid 3 is used before spawn or fork");
  EXPECT_EQ(fail("spawn 1\nexit 1\nexit 1\n"), "3:6: pid 1 has exited");
  EXPECT_EQ(fail("spawn 1\nspawn 1\n"), "2:7: pid 1 already exists");
  EXPECT_EQ(fail("spawn 1\nexit 1\nspawn 1\n"), "3:7: pid 1 has exited and pids are not reused");
  EXPECT_EQ(fail("spawn 0\n"), "1:7: '0' is not a pid (an integer >= 1)");
  EXPECT_EQ(fail("spawn 1\nfork 1 2\nmmap 1 a len=4096\ntouch 2 a\n"), "4:9: pid 2 has no mapping 'a'");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a len=4096\nmmap 1 a len=4096\n"), "3:8: pid 1 already has a mapping 'a'");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a obj=sga\nobject sga shm size=4096\n"),
            "2:14: object 'sga' is used before its 'object' line");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a len=4097\n"), "2:14: len=4097 is not a multiple of 4096");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a len=8KiB\ntouch 1 a off=100\n"), "3:15: off=100 is not a multiple of 4096");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a len=8KiB\ntouch 1 a off=4KiB len=8KiB\n"),
            "3:24: off+len (4096+8192) is beyond the end of mapping 'a' (8192 bytes)");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a\n"), "2:9: an anonymous mmap needs len=");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a len=4096 shared\n"), "2:19: shared anonymous mappings: declare a shm object");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a len=1MiB addr=0x1000\n"),
            "2:24: fixed mapping [0x1000, 0x101000) is outside the user address space [0x10000, 0x7ffffffff000)");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a len=8KiB\ntouch 1 a uniform\n"), "3:18: a uniform or zipf touch needs count=");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a len=8KiB\ntouch 1 a uniform count=3\n"),
            "3:25: count=3 is more than the 2 pages in the range");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a len=8KiB\ntouch 1 a zipf count=201\n"),
            "3:22: count=201 is more than 100 accesses per page of the 2 pages in the range");
  // The kernel's pages: 1 MiB is 16 pages of 64 KiB on ppc64.
  EXPECT_EQ(fail("machine profile=linux-6.18-ppc64\nspawn 1\nmmap 1 a len=1MiB\ntouch 1 a uniform count=17\n"),
            "4:25: count=17 is more than the 16 pages in the range");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a len=8KiB\ntouch 1 a stride=3000\n"),
            "3:18: stride must be a power of two >= 4096, not 3000");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a len=8KiB\nmprotect 1 a\n"), "3:13: mprotect needs prot=");
  EXPECT_EQ(fail("spawn 1\nmmap 1 a len=8KiB prot=rwx\n"), "2:24: prot must be r, rw or none, not 'rwx'");
  EXPECT_EQ(fail("machine profile=linux-9\n"),
            "1:17: unknown kernel profile 'linux-9' (known: " + known_profiles() + ")");
  EXPECT_EQ(fail("override pti=maybe\n"), "1:10: kernel override 'pti' must be true or false, not 'maybe'");
  EXPECT_EQ(fail("spawn 1\nmachine cpus=2\n"), "2:1: 'machine' lines must come before the first op");
  EXPECT_EQ(fail("machine cpus=0\n"), "1:14: cpus must be a positive integer, not '0'");
  EXPECT_EQ(fail("object o shm size=-1\n"), "1:19: negative size '-1'");
  EXPECT_EQ(fail("object o disk size=1\n"), "1:10: object kind must be shm, file or hugetlb, not 'disk'");
  EXPECT_EQ(fail("phase a b\n"), "1:9: a phase name is one word; unexpected 'b'");
  EXPECT_EQ(fail("fork 1\n"), "1:7: fork needs a parent pid and a child pid");
}

TEST(TraceErrors, CaretPointsAtTheToken) {
  result<op_stream> r = parse_trace("spawn 1\nmmap 1 a len=3Gb\n", "x.trace");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            "x.trace:2:14: unknown unit 'Gb' in '3Gb'\n"
            "  mmap 1 a len=3Gb\n"
            "               ^");
}

TEST(LoadTrace, MissingFile) {
  result<op_stream> r = load_trace("/nonexistent/x.trace");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "cannot open trace file '/nonexistent/x.trace'");
  EXPECT_EQ(r.error().exit_code(), 2);
}

// A directory opens as a stream and reads as nothing; it used to run as an empty trace.
TEST(LoadTrace, ADirectoryIsNotATrace) {
  const std::string dir = ::testing::TempDir();
  result<op_stream> r = load_trace(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "trace file '" + dir + "' is a directory");
  EXPECT_EQ(r.error().exit_code(), 2);
}

}  // namespace
}  // namespace vmlab
