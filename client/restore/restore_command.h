// What every RESTORE load path shares: the command, and what an error reply
// to it means (RestoreLoader for one target, cluster/ for a cluster's nodes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proto/server_version.h"

namespace rrs {

// Appends RESTORE key ttl payload REPLACE ABSTTL to `out` (RESP); a negative
// expiry is none (0). REPLACE with an absolute TTL makes it idempotent:
// sending it twice leaves the same key.
void append_restore(std::string& out, std::string_view key, int64_t expire_at_ms,
                    std::string_view payload);

// An error every following command would hit too (out of memory, no rights,
// a read-only replica, a loading server): what to tell the user. nullopt: a
// failure of this record alone.
std::optional<std::string> stopping_error(std::string_view err);

// The message kept for a RESTORE the target refused.
std::string restore_failure(std::string_view key, uint64_t index, uint32_t db, std::string_view err,
                            uint16_t table_rdb, const ServerVersion& target);

}  // namespace rrs
