// The process image (workload/image.h): a group's `image` becomes mappings touched at
// spawn, and VmPTE becomes the whole process's. The expected VmPTE is recounted here from
// the image's mappings and the paging format: one table per span an entry needs, at each
// level VmPTE counts.
#include <gtest/gtest.h>

#include <set>

#include "engine/engine.h"
#include "model/profile.h"
#include "report/report.h"
#include "workload/image.h"
#include "workload/scenario.h"

namespace vmlab {
namespace {

// VmPTE of a process whose touched ranges are those of `maps`, recounted from scratch.
bytes recount_vmpte(const kernel_profile& p, const std::vector<image_map>& maps) {
  const paging_format& f = p.paging;
  bytes total = 0;
  for (int i = 1; i < f.nr_levels; ++i) {
    if (!p.counts_in_vmpte(f.at(i).lvl)) continue;
    std::set<vaddr> tables;
    const bytes span = f.at(i).table_span();
    for (const image_map& m : maps)
      for (vaddr a = (m.addr + m.touch_off) & ~(span - 1); a < m.addr + m.touch_off + m.touch_len; a += span)
        tables.insert(a);
    total += tables.size() * f.at(i).table_bytes();
  }
  return total;
}

run_result run(const std::string& text) {
  auto ops = parse_scenario(text, "t.toml");
  EXPECT_TRUE(ops.ok()) << ops.error().to_string();
  auto r = run_sim(ops.value());
  EXPECT_TRUE(r.ok());
  return r.value();
}

class ImageByProfile : public ::testing::TestWithParam<const char*> {};

TEST_P(ImageByProfile, TypicalImageAloneGivesTheRecountedVmpte) {
  const kernel_profile p = find_profile(GetParam()).value();
  const run_result r = run(std::string("[kernel]\nprofile = \"") + GetParam() +
                           "\"\n[[group]]\nname = \"g\"\ncount = 2\nimage = \"typical\"\n");
  EXPECT_TRUE(r.process_image);
  const bytes want = recount_vmpte(p, image_maps(image_spec{}, p.paging));
  ASSERT_EQ(r.samples.back().procs.size(), 2u);
  for (const proc_sample& s : r.samples.back().procs) EXPECT_EQ(s.vmpte, want);
  EXPECT_GT(want, 0u);
}

INSTANTIATE_TEST_SUITE_P(Profiles, ImageByProfile,
                         ::testing::Values("linux-6.18", "linux-2.6.15-x86_64", "linux-2.6.15", "linux-2.5.43-mm2",
                                           "linux-2.6.15-ppc64", "linux-6.18-ppc64"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n)
                             if (c == '-' || c == '.') c = '_';
                           return n;
                         });

TEST(Image, SizesFromATableAndTheDefaultIsWorkloadOnly) {
  const kernel_profile p = find_profile("linux-6.18").value();
  image_spec big;
  big.heap = 64 << 20;
  big.libraries = 16 << 20;
  const run_result r = run("[[group]]\nname = \"g\"\nimage = { heap = \"64MiB\", libraries = \"16MiB\" }\n");
  EXPECT_EQ(r.samples.back().procs.at(0).vmpte, recount_vmpte(p, image_maps(big, p.paging)));
  EXPECT_FALSE(run("[[group]]\nname = \"g\"\n").process_image);
  EXPECT_FALSE(run("[[group]]\nname = \"g\"\nimage = \"none\"\n").process_image);
}

// ppc64: the executable at 0x10000000, the stack at the top of the format's user space
// and the libraries under mmap_base, 128 MiB below it; everything inside TASK_SIZE.
TEST(Image, Ppc64AddressesLieInItsUserSpace) {
  for (const char* name : {"ppc64-4k", "ppc64-hash-64k"}) {
    SCOPED_TRACE(name);
    const paging_format& f = *find_paging_format(name);
    const auto maps = image_maps(image_spec{}, f);
    ASSERT_EQ(maps.size(), 5u);
    EXPECT_EQ(maps[0].addr, 0x10000000u);
    for (const image_map& m : maps) {
      EXPECT_LE(m.addr + m.size, f.task_size) << m.name;
      EXPECT_EQ(m.addr % f.page_size(), 0u) << m.name;
    }
    EXPECT_EQ(maps[3].addr + maps[3].size, f.task_size - (128 << 20));  // the libraries end at mmap_base
    EXPECT_EQ(maps[4].addr + maps[4].size, f.task_size);                // the stack VMA ends at the top
  }
}

// On 64 KiB pages the image's written anonymous memory is 128 KiB of data, 512 KiB of
// heap and the stack's one 64 KiB page: 11 pages, which the report prints in 64 KiB
// pages (the Rss figures count the kernel's base pages, run_result::page_size).
TEST(Image, RssOfA64KiBPageImageIsInItsPages) {
  const run_result r = run("[kernel]\nprofile = \"linux-6.18-ppc64\"\n[[group]]\nname = \"g\"\nimage = \"typical\"\n");
  EXPECT_EQ(r.page_size, 64 * KiB);
  const image_spec img;
  const uint64_t anon = (img.data + img.heap) / (64 * KiB) + 1;
  EXPECT_EQ(anon, 11u);
  EXPECT_EQ(r.samples.back().procs.at(0).rss_anon, anon);
  EXPECT_NE(format_table(r).find(" 704.0 KiB "), std::string::npos) << format_table(r);
}

TEST(Image, Errors) {
  auto err = [](const std::string& text) {
    auto r = parse_scenario(text, "t.toml");
    return r.ok() ? std::string("(parsed)") : r.error().to_string().substr(0, r.error().to_string().find('\n'));
  };
  EXPECT_EQ(err("[[group]]\nname = \"g\"\nimage = \"big\"\n"),
            "t.toml:3:9: 'image' in [[group]] must be \"typical\", \"inspected\", \"none\" or a table of sizes (text, "
            "data, heap, libraries, stack), not 'big'");
  EXPECT_EQ(err("[[group]]\nname = \"g\"\nimage = { code = \"1MiB\" }\n"),
            "t.toml:3:11: unknown key 'code' in the image of group 'g'");
  EXPECT_EQ(err("[[group]]\nname = \"g\"\nimage = 3\n"),
            "t.toml:3:9: 'image' in [[group]] must be \"typical\", \"inspected\", \"none\" or a table of sizes, not an "
            "integer");
  EXPECT_EQ(err("[[group]]\nname = \"g\"\n  [[group.map]]\n  name = \"image.heap\"\n  object = \"anon\"\n  size = 4096\n"),
            "t.toml:4:10: mapping names starting with 'image.' are the process image's (a group's 'image')");
  // i386: 1 TiB of libraries from TASK_UNMAPPED_BASE end far above the 3 GiB user space.
  EXPECT_EQ(err("[kernel]\nprofile = \"linux-2.6.15\"\n[[group]]\nname = \"g\"\nimage = { libraries = \"1TiB\" }\n"),
            "t.toml:5:9: the process image's image.libs [0x40000000, 0x10040000000) lies outside the user address "
            "space of the i386-pae format (TASK_SIZE 0xc0000000): make it smaller");
  // i386: a 3 GiB heap after the executable runs into the libraries at 0x40000000.
  EXPECT_EQ(err("[kernel]\nprofile = \"linux-2.6.15\"\n[[group]]\nname = \"g\"\nimage = { heap = \"1GiB\" }\n"),
            "t.toml:5:9: the process image's image.heap [0x8168000, 0x48168000) runs into its image.libs at 0x40000000: "
            "make it smaller");
}

}  // namespace
}  // namespace vmlab
