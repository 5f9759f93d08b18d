// Whether table memory (PageBuffer) asks for transparent huge pages. On a
// host it should: a 2 MiB page's first touch costs less than 512 small ones'
// (0.13 s against 0.33 s per GB on this project's VM when the host already
// backs the memory) and a registered table needs fewer NIC translation
// entries. In a VM whose balloon reports free memory to its host (virtio
// free page reporting), the free 2 MiB blocks are exactly what was handed
// back, and a huge page's first touch then costs the host a fault per small
// page behind it: 0.9-2.3 s per GB there, which was most of rdma-server's CPU
// for a 1 GB table. `auto` decides by that: off under a reporting balloon.
#pragma once

#include <string>
#include <string_view>

#include "common/base/status.h"

namespace rrs {

enum class HugePages { kAuto, kOn, kOff };

// "auto", "on" or "off" (--huge-pages); kUsage otherwise.
Result<HugePages> parse_huge_pages(std::string_view text);

// True when a virtio balloon under `sysfs` reports free pages to its host
// (feature bit VIRTIO_BALLOON_F_REPORTING in its features file).
bool balloon_reports_free_pages(const std::string& sysfs = "/sys");

// Sets the process-wide choice, auto resolved here (call once, before any
// table memory is allocated); returns a sentence for the log saying which
// and why. Until called, huge pages are on.
std::string set_huge_pages(HugePages choice, const std::string& sysfs = "/sys");
bool huge_pages_on();

}  // namespace rrs
