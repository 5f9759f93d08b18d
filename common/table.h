// One published epoch of the mapping table: its bytes (immutable once ready)
// and the header they start with. Shared by every transport and client that
// reads it; freed when the last reader lets go.
#pragma once

#include <memory>

#include "common/page_buffer.h"
#include "proto/table_layout.h"

namespace rrs {

struct Table {
  table::Header header;
  PageBuffer bytes;  // header.total_size bytes, page aligned
  uint64_t epoch() const { return header.epoch; }
};

using TablePtr = std::shared_ptr<const Table>;

}  // namespace rrs
