#include "server/test_hooks.h"

#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/base/log.h"

namespace rrs::test_hooks {
namespace {

// The variable's value as a whole decimal number; unset or not a number
// (said in a warning) is nullopt.
std::optional<uint64_t> env_u64(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  const std::string_view text(v);
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size()) {
    log::warn(std::string(name) + "=" + std::string(text) + " is not a whole number: ignored");
    return std::nullopt;
  }
  return n;
}

}  // namespace

bool no_memory_windows() {
  const char* v = std::getenv("RRS_TEST_NO_MEMORY_WINDOWS");
  if (v == nullptr || std::string_view(v) != "1") return false;
  log::warn("RRS_TEST_NO_MEMORY_WINDOWS: acting as if the RDMA device had no type-2 memory "
            "windows (a test hook; unset it)");
  return true;
}

std::chrono::milliseconds pd_registration_delay() {
  const auto ms = env_u64("RRS_TEST_PD_REGISTRATION_DELAY_MS");
  if (!ms || *ms == 0) return std::chrono::milliseconds(0);
  log::warn("RRS_TEST_PD_REGISTRATION_DELAY_MS: each client's registration in a protection "
            "domain of its own takes " +
            std::to_string(*ms) + " ms longer (a test hook; unset it)");
  return std::chrono::milliseconds(*ms);
}

std::optional<uint64_t> grow_step() {
  const auto kb = env_u64("RRS_TEST_GROW_STEP_KB");
  if (!kb || *kb == 0) return std::nullopt;
  log::warn("RRS_TEST_GROW_STEP_KB: an epoch being written is registered over verbs " +
            std::to_string(*kb) + " KiB at a time (a test hook; unset it)");
  return *kb << 10;
}

void corrupt_slot(Table& t) {
  const auto slot = env_u64("RRS_TEST_CORRUPT_SLOT");
  const table::Header& h = t.final_header();
  if (!slot || *slot >= h.slot_count) return;
  t.bytes.data()[h.slot_offset(*slot) + table::kSlotHeaderSize] ^= std::byte{0x40};
  log::warn("RRS_TEST_CORRUPT_SLOT: flipped a byte of slot " + std::to_string(*slot) +
            " (a test hook; unset it)");
}

bool fail_republish() {
  const char* v = std::getenv("RRS_TEST_FAIL_REPUBLISH");
  if (v == nullptr || std::string_view(v) != "1") return false;
  log::warn("RRS_TEST_FAIL_REPUBLISH: reporting the new table's publish as failed (a test "
            "hook; unset it)");
  return true;
}

std::optional<uint64_t> corrupt_log() { return env_u64("RRS_TEST_CORRUPT_LOG"); }

std::optional<uint64_t> new_history_value_limit() {
  auto limit = env_u64("RRS_TEST_NEW_HISTORY_VALUE_LIMIT");
  if (limit)
    log::warn("RRS_TEST_NEW_HISTORY_VALUE_LIMIT: a new history's values are limited to " +
              std::to_string(*limit) + " bytes (a test hook; unset it)");
  return limit;
}

}  // namespace rrs::test_hooks
