// One published epoch of the mapping table: its bytes (immutable once ready),
// the header they start with, and the change log that continues it. Shared
// by every transport and client that reads it; freed when the last reader
// lets go.
//
// A streamed epoch is published while its records are still being written
// (proto/table_layout.h): `header` is then the header it was published with
// (state building, total_size the end of its room), the header in `bytes`
// says how far it has got, and completed_size is set once the last byte is
// written. Only the TCP transport serves it before then.
#pragma once

#include <atomic>
#include <memory>

#include "common/table/change_log.h"
#include "common/table/page_buffer.h"
#include "proto/table_layout.h"

namespace rrs {

struct Table {
  table::Header header;
  PageBuffer bytes;  // at least header.total_size bytes, page aligned
  // The change log that continues this table from header.source_offset, or
  // null (scan source: there is no stream). Epochs built from one unbroken
  // stream share it.
  ChangeLogPtr log;
  // A streamed epoch's final header, written before completed_size is set
  // (read it only once complete(): final_header()).
  table::Header completed_header;
  // A streamed epoch's final total_size, once complete; 0 until then, and
  // for a table published complete.
  std::atomic<uint64_t> completed_size{0};
  // A streamed epoch's bytes from 0 that its header covers (header page,
  // scripts, the slots' room, the heap so far; the whole table once ready),
  // stored before each header that counts them: what verbs must have
  // registered for its readers.
  std::atomic<uint64_t> written{0};

  uint64_t epoch() const { return header.epoch; }
  // Published while still being written.
  bool streamed() const { return header.state == table::State::kBuilding; }
  // Every byte written: a table published complete, or a streamed one done.
  bool complete() const {
    return !streamed() || completed_size.load(std::memory_order_acquire) != 0;
  }
  // The header as it is once complete (call only when complete()).
  const table::Header& final_header() const { return streamed() ? completed_header : header; }
  // The bytes a reader may ask for: the whole room of a streamed epoch still
  // being written (it reads only what its header says is complete), else
  // the table.
  uint64_t length() const {
    const uint64_t done = completed_size.load(std::memory_order_acquire);
    return done != 0 ? done : header.total_size;
  }
  // No bytes: a table not taken yet, or given back while its change log
  // goes on. Served to log-only clients (followers) alone.
  bool empty() const { return header.total_size == 0; }
};

// An epoch without a table (Table::empty), continued by `log` (may be null).
inline std::shared_ptr<Table> table_without_bytes(uint64_t epoch, ChangeLogPtr log) {
  auto t = std::make_shared<Table>();
  t->header.epoch = epoch;
  t->header.state = table::State::kReady;
  t->header.total_size = 0;
  t->log = std::move(log);
  return t;
}

using TablePtr = std::shared_ptr<const Table>;

}  // namespace rrs
