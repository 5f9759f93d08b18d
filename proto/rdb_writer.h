// Writes an RDB stream, as a master sends one to a replica, from records
// that already hold their values in DUMP form: the client's replica mode
// turns the mapping table into the RDB a target Redis loads at its native
// ingest speed. No I/O: the writer appends to a buffer the caller drains.
//
//   "REDIS" + 4 version digits (or "VALKEY" + 3 from RDB 80), AUX fields, FUNCTION2 entries (the
//   libraries), then SELECTDB db (RESIZEDB keys expires after a DB's first), and per key
//   [EXPIRETIME_MS ms] <type> <key> <value>; EOF, then the CRC-64 of every
//   byte before it (little-endian).
//
// The stream has only what its version's format has (rdb_format.h): below
// RDB 7 no AUX fields and no RESIZEDB (aux() and the sizes are left out),
// below RDB 3 expiries in whole seconds (EXPIRETIME), below RDB 5 nothing
// after EOF (a loader of such an RDB reads no checksum, and over a diskless
// link it would take one for the start of what follows).
//
// The caller guarantees each key appears once per DB (a replica's loader
// panics on a duplicate) and that the target has the DBs selected.
//
// A DUMP payload is <type> <value> <2-byte RDB version> <CRC-64>, so a key's
// RDB entry is its payload's type byte, the key, and the payload's value
// bytes: no value is decoded or re-encoded.
//
//   RdbWriter w(10);                       // the payloads' RDB version
//   w.aux("redis-ver", "7.0.15");
//   w.functions(function_dump_payload);
//   for (record : records) w.key(db, key, payload, expire_at_ms);
//   w.end();
//   send(w.take());                        // whenever it has grown enough
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "common/base/status.h"

namespace rrs::rdb {

class RdbWriter {
 public:
  // Starts the stream with the header for RDB `version`: the version the
  // payloads were dumped with (a target refuses a newer one than it knows).
  explicit RdbWriter(uint16_t version);

  // An AUX field; nothing below RDB 7, which has none.
  void aux(std::string_view key, std::string_view value);
  // The libraries of a FUNCTION DUMP payload (FUNCTION2 entries, as the RDB
  // carries them): the payload without its version and CRC-64 trailer.
  // Call before the first key, as Redis writes them. kBadData for libraries
  // below RDB 10, which has no place for them.
  Status functions(std::string_view function_dump_payload);
  // Switches to DB `db`. Keys may come in any order, so a DB may be selected
  // more than once; the first time, its sizes follow (RESIZEDB: a hint the
  // loader presizes its tables with; from RDB 7).
  void select_db(uint32_t db, uint64_t keys, uint64_t expires);
  // One key of the selected DB, from its DUMP payload; expire_at_ms < 0: none.
  // kBadData for a payload of a type the stream's version does not have, of
  // an RDB version that does not fit the stream's (rdb::fits_in), or below
  // RDB 3 an expiry that is not a whole second of a signed 32-bit count.
  Status key(std::string_view key, std::string_view dump_payload, int64_t expire_at_ms);
  // The EOF opcode and (from RDB 5) the checksum. Nothing may follow.
  void end();

  // The bytes written since the last take(), valid until the next call on
  // the writer. They enter the checksum here.
  std::string_view take();
  size_t pending() const { return out_.size() - taken_; }
  // Bytes of the stream up to the last take() (or end()).
  uint64_t bytes() const { return bytes_; }
  bool ended() const { return ended_; }

 private:
  void append_string(std::string_view s);
  // Forgets what take() handed out, before appending more.
  void drop_taken();
  void checksum_pending();

  uint16_t version_;
  std::string out_;
  size_t taken_ = 0;        // out_[0, taken_) was handed out by take()
  size_t checksummed_ = 0;  // out_[0, checksummed_) is in crc_ and bytes_
  uint64_t crc_ = 0;
  uint64_t bytes_ = 0;
  std::set<uint32_t> sized_dbs_;
  bool ended_ = false;
};

}  // namespace rrs::rdb
