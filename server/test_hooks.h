// Test hooks: environment variables the tests set to reach states that are
// hard to cause from outside (a flipped byte, a device without memory
// windows). Each is loud when set, and never meant for production. Program
// policy, so they live here with rdma-server and nowhere below it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "common/table/table.h"

namespace rrs::test_hooks {

// $RRS_TEST_NO_MEMORY_WINDOWS=1: the verbs server acts as if its device had
// no type-2 memory windows, so the fallback (a protection domain per client)
// can be tested on rxe, which has them.
bool no_memory_windows();

// $RRS_TEST_PD_REGISTRATION_DELAY_MS=N: under that fallback, each client's
// registration in its own protection domain takes N ms longer, as pinning a
// table of many GiB would. Honoured where the registration runs (the verbs
// server's registration worker), so tests can show the loop is not stalled.
std::chrono::milliseconds pd_registration_delay();

// $RRS_TEST_GROW_STEP_KB=N: an epoch served over verbs while it is written
// is registered in prefixes at least N KiB ahead of the writer (not 64 MiB),
// so a small table grows its registration many times.
std::optional<uint64_t> grow_step();

// $RRS_TEST_CORRUPT_SLOT=N: flips one payload byte of slot N after its CRC
// was taken, as a bad DIMM or a stray DMA would.
void corrupt_slot(Table& t);

// $RRS_TEST_CORRUPT_LOG=N: the stream byte N bytes into every new change log
// is flipped once it is sealed.
std::optional<uint64_t> corrupt_log();

// $RRS_TEST_FAIL_REPUBLISH=1: every table after the first is published on
// both transports and then reported as failed, as when a verbs registration
// (ibv_reg_mr at the memlock limit) fails after the TCP publish.
bool fail_republish();

// $RRS_TEST_NEW_HISTORY_VALUE_LIMIT=N: a new history's RDB (a full resync
// after the first table) is parsed with values limited to N bytes, so a
// big value in it makes that RDB one the sidecar cannot parse.
std::optional<uint64_t> new_history_value_limit();

}  // namespace rrs::test_hooks
