// One published epoch of the mapping table: its bytes (immutable once ready),
// the header they start with, and the change log that continues it. Shared
// by every transport and client that reads it; freed when the last reader
// lets go.
#pragma once

#include <memory>

#include "common/table/change_log.h"
#include "common/table/page_buffer.h"
#include "proto/table_layout.h"

namespace rrs {

struct Table {
  table::Header header;
  PageBuffer bytes;  // header.total_size bytes, page aligned
  // The change log that continues this table from header.source_offset, or
  // null (scan source: there is no stream). Epochs built from one unbroken
  // stream share it.
  ChangeLogPtr log;
  uint64_t epoch() const { return header.epoch; }
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
