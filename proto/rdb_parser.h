// A streaming RDB parser: feed it bytes as they arrive from the master, take
// events out. It does no I/O and decodes no values: it walks each value's
// length structure to find where the value ends, so a record can carry the
// value's raw bytes (a DUMP payload is those bytes plus a trailer).
//
//   RdbParser p;
//   while (!p.done()) {
//     auto room = p.writable(1 << 20);
//     size_t n = recv(fd, room.data(), room.size(), 0);   // (handle errors)
//     p.commit(n);
//     while (true) {
//       auto ev = p.next();            // error: corrupt or unsupported input
//       if (!ev.ok()) ...;
//       if (!*ev) break;               // needs more bytes
//       handle(**ev);                  // views valid until the next call
//     }
//   }
//   p.rest();                          // bytes after the RDB (EOF mark, stream)
//
// Every byte is untrusted. Memory grows only with bytes actually received
// (never with a declared length), bounded by Limits. A value split across
// feeds resumes at its last complete element, so parsing stays linear.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/base/status.h"

namespace rrs::rdb {

struct Limits {
  // One RDB string (a key, an element, an AUX value, a function's code).
  uint64_t max_string_bytes = 1ull << 32;
  // One key's encoded value (becomes one table record).
  uint64_t max_value_bytes = 1ull << 32;
};

enum class EventKind {
  kAux,         // aux_key, aux_value ("redis-ver", "valkey-ver", and "lua" from Redis < 7.0)
  kSelectDb,    // db
  kResizeDb,    // db_size, expires_size
  kRecord,      // db, key, type, value, expire_at_ms
  kFunction,    // function_code: one library's source (FUNCTION2, or translated pre-GA)
  kModuleAux,   // module_id: data for a module, not a key; cannot be carried
  kSlotImport,  // aux_value (the job's name), slot_ranges: Valkey was importing these slots
  kEnd,         // the EOF opcode; checksum verified (or 0: the master does not write one)
};

struct Event {
  EventKind kind = EventKind::kEnd;
  std::string_view aux_key, aux_value;
  uint32_t db = 0;
  uint64_t db_size = 0, expires_size = 0;
  std::string_view key;
  uint8_t type = 0;
  std::string_view value;  // raw RDB encoding of the value, without the type byte
  int64_t expire_at_ms = -1;
  std::string_view function_code;
  uint64_t module_id = 0;
  uint64_t slot_ranges = 0;
  uint64_t checksum = 0;
};

class RdbParser {
 public:
  explicit RdbParser(Limits limits = {}) : limits_(limits) {}

  // Room for at least `min` more bytes at the end of the buffer (may move
  // buffered bytes: views from earlier events become invalid).
  std::span<char> writable(size_t min);
  void commit(size_t n);
  void feed(std::string_view bytes);  // writable + copy + commit

  // The next event, nullopt when more bytes are needed (or after kEnd), or
  // an error naming what was not understood and its byte offset in the RDB.
  // Once an error is returned, every later call returns it again. The
  // event's views are valid until the next call to next(), writable() or feed().
  Result<std::optional<Event>> next();

  bool done() const { return done_; }
  uint16_t version() const { return version_; }
  // RDB bytes consumed so far (complete items).
  uint64_t consumed() const { return consumed_; }
  // Bytes received and not yet consumed: after done(), whatever followed the RDB.
  std::string_view rest() const { return {buf_.get() + begin_, end_ - begin_}; }

 private:
  enum class Step { kEvent, kConsumed, kNeedMore };
  Result<Step> parse_header();
  Result<Step> parse_item(Event& ev);
  Result<Step> walk(Event& ev);
  void finish_item(size_t len);

  Limits limits_;
  std::unique_ptr<char[]> buf_;
  size_t capacity_ = 0;
  size_t begin_ = 0, end_ = 0;  // unconsumed bytes: buf_[begin_, end_)
  size_t need_ = 1;             // bytes from begin_ the current item needs at least
  uint64_t consumed_ = 0;
  uint64_t crc_ = 0;
  uint16_t version_ = 0;
  bool done_ = false;
  std::optional<Status> error_;

  // Per database / per key state carried between items.
  uint32_t db_ = 0;
  int64_t pending_expire_ = -1;

  // A value split across feeds: where its walk stopped (see rdb_parser_walk.cc).
  struct ValueProgress {
    bool active = false;
    uint8_t type = 0;
    size_t value_start = 0;              // item-relative
    size_t pos = 0;                      // item-relative, after the last complete element
    uint64_t remaining = 0;              // elements still to walk in the current phase
    uint64_t groups = 0, consumers = 0;  // streams: left in the value / in the group
    uint64_t module_id = 0;              // MODULE_AUX
    int phase = 0;
  };
  ValueProgress progress_;
  std::string key_, aux_key_, aux_value_, function_code_;
};

}  // namespace rrs::rdb
