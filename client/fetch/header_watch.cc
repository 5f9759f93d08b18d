#include "client/fetch/header_watch.h"

#include <utility>

#include "proto/byte_order.h"
#include "proto/crc32c.h"

namespace rrs {
namespace {

using table::State;

Status changed(const std::string& what, const std::string& from, const std::string& to) {
  return Status::error("follow the table's header", "its " + what + " changed from " + from +
                                                        " to " + to +
                                                        " while the table was being written")
      .as(ErrorKind::kBadData);
}

Status changed(const std::string& what, uint64_t from, uint64_t to) {
  return changed(what, std::to_string(from), std::to_string(to));
}

const char* state_name(State s) {
  switch (s) {
    case State::kBuilding: return "building";
    case State::kReady: return "ready";
    case State::kBroken: return "broken";
  }
  return "unknown";
}

// Where a state may go: building to anything, ready and broken nowhere.
bool may_follow(State prev, State next) { return prev == State::kBuilding || prev == next; }

}  // namespace

bool header_intact(std::span<const std::byte> bytes) {
  if (bytes.size() < table::kHeaderSize) return false;
  return wire::load_u32(bytes.data() + table::hdr::kHeaderCrc) ==
         crc32c(0, bytes.data(), table::hdr::kHeaderCrc);
}

Status check_continues(const table::Header& prev, const table::Header& next) {
  // What was fixed when the table was published: where things are, and
  // what the payloads are (a load path planned its conversion from it).
  const std::pair<const char*, std::pair<uint64_t, uint64_t>> fixed[] = {
      {"epoch", {prev.epoch, next.epoch}},
      {"creation time", {prev.created_unix_ms, next.created_unix_ms}},
      {"slot size", {prev.slot_size, next.slot_size}},
      {"slot offset", {prev.slots_offset, next.slots_offset}},
      {"slot room", {prev.slot_capacity, next.slot_capacity}},
      {"heap offset", {prev.heap_offset, next.heap_offset}},
      {"scripts offset", {prev.scripts_offset, next.scripts_offset}},
      {"scripts size", {prev.scripts_size, next.scripts_size}},
      {"scripts checksum", {prev.scripts_crc32c, next.scripts_crc32c}},
      {"RDB version", {prev.rdb_version, next.rdb_version}},
      {"engine", {static_cast<uint64_t>(prev.engine), static_cast<uint64_t>(next.engine)}},
      {"source kind",
       {static_cast<uint64_t>(prev.source_kind), static_cast<uint64_t>(next.source_kind)}},
      {"source offset", {prev.source_offset, next.source_offset}},
      {"stream DB", {prev.source_stream_db, next.source_stream_db}},
  };
  for (const auto& [what, values] : fixed)
    if (values.first != values.second) return changed(what, values.first, values.second);
  if (prev.server_version != next.server_version)
    return changed("server version", prev.server_version, next.server_version);
  if (prev.source_replid != next.source_replid)
    return changed("replication ID", prev.source_replid, next.source_replid);
  if (!may_follow(prev.state, next.state))
    return changed("state", state_name(prev.state), state_name(next.state));
  // What is complete stays complete.
  if (next.record_count < prev.record_count)
    return changed("count of complete records", prev.record_count, next.record_count);
  if (next.heap_size < prev.heap_size)
    return changed("count of complete heap bytes", prev.heap_size, next.heap_size);
  if (prev.state == State::kReady &&
      (next.record_count != prev.record_count || next.heap_size != prev.heap_size ||
       next.dbdir_offset != prev.dbdir_offset || next.dbdir_crc32c != prev.dbdir_crc32c))
    return changed("final header", "one table", "another");
  return {};
}

Status broken_off(const table::Header& h) {
  return Status::error("fetch table", "the sidecar's snapshot broke off after " +
                                          std::to_string(h.record_count) +
                                          " records: " + h.broken_reason +
                                          "; run rdma-client again for the next snapshot")
      .as(ErrorKind::kUnavailable);
}

std::string of_table_keys(const table::Header& h) {
  const std::string n = std::to_string(h.record_count);
  return h.state == State::kReady ? "of " + n + " keys" : "of the " + n + " keys written so far";
}

}  // namespace rrs
