// Storage device profiles: a datasheet each, as values, with where every figure comes from.
//
// The seed-003 machine (Linux 2.4.1, January 2001) does not name its disk; the IDE profile
// is the common 7200 RPM ATA-100 desktop disk of late 2000, IBM's Deskstar 75GXP
// (docs/decisions.md, "Issue 9: storage models and tiobench", says why). Figures are
// never fitted to a benchmark result.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "block/disk.h"
#include "block/elevator.h"
#include "block/nvme.h"

namespace vmlab::block {

enum class device_kind { disk, nvme };

struct device_profile {
  std::string name;         // e.g. "ibm-dtla-307075"
  std::string description;  // one line
  device_kind kind = device_kind::disk;
  disk_datasheet disk;      // kind == disk
  nvme_datasheet nvme;      // kind == nvme
  // The source: title, model number and URL; and which figures were read from it here
  // and which are the product summary's as quoted elsewhere (docs/decisions.md).
  std::string source;
};

const std::vector<device_profile>& device_profiles();
// nullptr when no profile has that name.
const device_profile* find_device_profile(const std::string& name);
// The device a profile describes; nullptr and *error when its figures are inconsistent.
std::unique_ptr<block_device> make_device(const device_profile& p, std::string* error);
// RAID-0 over `disks` copies of the profile's device.
std::unique_ptr<block_device> make_striped(const device_profile& p, uint32_t disks, uint32_t chunk_bytes,
                                           std::string* error);

}  // namespace vmlab::block
