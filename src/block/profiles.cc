#include "block/profiles.h"

#include "block/raid0.h"

namespace vmlab::block {
namespace {

device_profile deskstar_75gxp() {
  device_profile p;
  p.name = "ibm-dtla-307075";
  p.description = "IBM Deskstar 75GXP DTLA-307075, 76.8 GB, 7200 RPM, Ultra ATA/100 (late 2000)";
  disk_datasheet& d = p.disk;
  d.model = "IBM Deskstar 75GXP DTLA-307075";
  d.rpm = 7200;
  d.seek = {1.2, 8.5, 14.7, 0};  // read, typical: single track, average, full stroke
  d.heads = 10;                  // 5 platters
  d.head_switch_ms = 1.2;
  d.capacity_bytes = 150'136'560ull * 512;  // 76.8 GB, LBA count of the DTLA-307075
  // Figure 13 (section 4.4.6.1, page 28 of the manualshive copy): 16,777,216 bytes read in
  // 128 commands take 0.48 s in zone 0 and 0.95 s in zone 14, typical = 105% of
  // T = A + B + C + 16,777,216 / D + 512 / E (A 0.5 ms, B 8.5 ms, C 4.17 ms, E 100 MB/s):
  // D = 37.8 MB/s outermost, 18.8 MB/s innermost, zones 0 to 14.
  d.sustained_outer_mb_s = 37.8;
  d.sustained_inner_mb_s = 18.8;
  d.zones = 15;
  d.command_overhead_ms = 0.5;
  d.buffer_bytes = 2048 * 1024;
  d.interface_mb_s = 100;  // Ultra ATA/100
  p.source =
      "IBM, \"Deskstar 40GV & 75GXP hard disk drive specifications\" (DTLA-305xxx/DTLA-307xxx), section 4.4 "
      "(https://www.manualowl.com/m/IBM/DTLA-307075/Manual/335212?page=25): full-stroke seek 14.7 ms read typical and "
      "head switch 1.2 ms were read there, and on page 28 "
      "(https://manualshive.com/ru/manual/ibm/dtla-305040-deskstar-41-1-gb-hard-drive/3758033?page=28) the "
      "sequential-access times of figure 13 (zones 0 to 14: 15 zones; 0.48 and 0.95 s typical for 16 MiB, so 37.8 "
      "and 18.8 MB/s sustained outermost and innermost); 7200 RPM, 8.5 ms average read "
      "seek, 1.2 ms single-track seek, 2 MB buffer and 0.5 ms command overhead are the same specification's "
      "performance summary as quoted, not re-read here (figure 14 on page 28, 55 s typical for 4096 random reads, "
      "implies about 0.1 ms of command overhead with the 8.5 ms seek and 4.17 ms latency; the 0.5 ms is kept)";
  return p;
}

device_profile cheetah_36lp() {
  device_profile p;
  p.name = "seagate-st336704";
  p.description = "Seagate Cheetah 36LP ST336704LC, 36.7 GB, 10,000 RPM, Ultra160 SCSI (2000)";
  disk_datasheet& d = p.disk;
  d.model = "Seagate Cheetah 36LP ST336704LC";
  d.rpm = 10000;
  d.seek = {0.6, 5.2, 12.0, 0};
  d.heads = 8;  // 4 discs
  d.head_switch_ms = 0.6;
  d.capacity_bytes = 71'687'372ull * 512;
  d.sustained_outer_mb_s = 51.0;
  d.sustained_inner_mb_s = 33.0;
  d.zones = 16;
  d.command_overhead_ms = 0.2;
  d.buffer_bytes = 4 * 1024 * 1024;
  d.interface_mb_s = 160;  // Ultra160
  p.source =
      "Seagate, \"Cheetah 36LP Family: ST336704LW/LWV/LC/LCV Product Manual, Volume 1\", publication 83329476 Rev. E, "
      "January 2001 (https://manualmachine.com/seagate/st336704lcv/10765548-product-manual): the manual was found but "
      "its performance pages were not retrieved; 10,000 RPM, 4 MB buffer, 5.2 ms average and 0.6 ms single-track read "
      "seek, 12 ms full stroke, 33-51 MB/s sustained are the family's published summary figures as quoted, and the "
      "0.2 ms controller overhead and head switch are estimates; verify against section 4 before relying on them";
  return p;
}

device_profile pm9a3() {
  device_profile p;
  p.name = "samsung-pm9a3";
  p.kind = device_kind::nvme;
  p.description = "Samsung PM9A3 U.2 3.84 TB, PCIe 4.0 x4 NVMe (2020)";
  nvme_datasheet& d = p.nvme;
  d.model = "Samsung PM9A3 MZQL23T8HCLS (U.2, 3.84 TB)";
  d.capacity_bytes = 3'840'000'000'000ull;
  d.read_mb_s = 6500;
  d.write_mb_s = 3500;
  d.read_iops = 900'000;
  d.write_iops = 200'000;
  d.read_latency_us = 80;
  d.write_latency_us = 20;
  p.source =
      "Samsung PM9A3 announcement and datasheet summary (ComputerBase, "
      "https://www.computerbase.de/2020-05/samsung-pm9a3-e1.s-pcie-4.0-ssd/; heise, https://heise.de/-4720224): U.2 "
      "sequential read 6,500 MB/s, write 3,500 MB/s, random 4 KiB read 900,000 IOPS, write 200,000 IOPS; the QD1 "
      "latencies (read 80 us: TLC tR plus controller and PCIe; write 20 us: acknowledged from the power-loss-protected "
      "DRAM buffer) are estimates, not from the brief";
  return p;
}

}  // namespace

const std::vector<device_profile>& device_profiles() {
  static const std::vector<device_profile> all = {deskstar_75gxp(), cheetah_36lp(), pm9a3()};
  return all;
}

const device_profile* find_device_profile(const std::string& name) {
  for (const auto& p : device_profiles())
    if (p.name == name) return &p;
  return nullptr;
}

std::unique_ptr<block_device> make_device(const device_profile& p, std::string* error) {
  if (p.kind == device_kind::nvme) return std::make_unique<nvme_device>(p.nvme);
  return rotating_disk::create(p.disk, error);
}

std::unique_ptr<block_device> make_striped(const device_profile& p, uint32_t disks, uint32_t chunk_bytes,
                                           std::string* error) {
  if (disks == 0 || chunk_bytes < kSectorBytes || chunk_bytes % kSectorBytes) {
    if (error) *error = "RAID-0 needs at least one disk and a chunk of whole sectors";
    return nullptr;
  }
  std::vector<std::unique_ptr<block_device>> m;
  for (uint32_t i = 0; i < disks; ++i) {
    auto d = make_device(p, error);
    if (!d) return nullptr;
    m.push_back(std::move(d));
  }
  return std::make_unique<raid0>(std::move(m), chunk_bytes / kSectorBytes);
}

}  // namespace vmlab::block
