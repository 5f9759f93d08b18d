// Following the header of a table that is still being written
// (proto/table_layout.h, layout 6). The server rewrites the header in place
// as records complete, so a copy may be torn: its CRC fails, and the reader
// reads it again. A copy that verifies must continue the one before it: the
// same table (epoch, geometry, source), counts that only grow, a state that
// only moves forward. Pure checks on decoded headers; the fetcher reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/base/status.h"
#include "proto/table_layout.h"

namespace rrs {

// Consecutive torn copies of the header tolerated before it is called
// corrupt: a rewrite takes well under a microsecond, a read far longer.
inline constexpr uint32_t kMaxTornHeaderReads = 1000;

// Whether a copy of the header's 512 bytes carries a CRC that verifies.
bool header_intact(std::span<const std::byte> bytes);

// kBadData unless `next` (read later from the same epoch) continues `prev`.
Status check_continues(const table::Header& prev, const table::Header& next);

// The failure a table in state kBroken ends a sync with (kUnavailable: the
// sidecar takes another snapshot).
Status broken_off(const table::Header& h);

// "of 100 keys", or "of the 100 keys written so far" while the table is
// being written, for messages that count what was loaded.
std::string of_table_keys(const table::Header& h);

}  // namespace rrs
