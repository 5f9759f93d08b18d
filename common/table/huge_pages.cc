#include "common/table/huge_pages.h"

#include <atomic>
#include <filesystem>
#include <fstream>

namespace rrs {
namespace {

constexpr size_t kBalloonReportingBit = 5;  // VIRTIO_BALLOON_F_REPORTING
std::atomic<bool> g_huge_pages{true};

}  // namespace

Result<HugePages> parse_huge_pages(std::string_view text) {
  if (text == "auto") return HugePages::kAuto;
  if (text == "on") return HugePages::kOn;
  if (text == "off") return HugePages::kOff;
  return Status::error("--huge-pages", "expected auto, on or off, got '" + std::string(text) + "'")
      .as(ErrorKind::kUsage);
}

bool balloon_reports_free_pages(const std::string& sysfs) {
  std::error_code ec;
  const std::filesystem::path drivers = sysfs + "/bus/virtio/drivers/virtio_balloon";
  // increment(ec), not a range-for: a sysfs read error must not throw.
  for (std::filesystem::directory_iterator it(drivers, ec), end; !ec && it != end;
       it.increment(ec)) {
    // Each bound device is a link named virtioN; its features file is one
    // '0'/'1' character per feature bit, bit 0 first.
    if (it->path().filename().string().rfind("virtio", 0) != 0) continue;
    std::ifstream in(it->path() / "features");
    std::string bits;
    if (in >> bits && bits.size() > kBalloonReportingBit && bits[kBalloonReportingBit] == '1')
      return true;
  }
  return false;
}

std::string set_huge_pages(HugePages choice, const std::string& sysfs) {
  std::string why;
  bool on = choice == HugePages::kOn;
  if (choice == HugePages::kAuto) {
    on = !balloon_reports_free_pages(sysfs);
    why = on ? " (auto)"
             : " (auto: this VM's balloon reports free memory to its host, where a huge "
               "page's first touch costs several times what small pages' do)";
  }
  g_huge_pages = on;
  return std::string("table memory: transparent huge pages ") + (on ? "on" : "off") + why;
}

bool huge_pages_on() { return g_huge_pages; }

}  // namespace rrs
