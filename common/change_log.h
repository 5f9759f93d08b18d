// The sidecar's change log: the replication stream appended, as it arrives,
// to a ring in page-aligned memory that the transports serve read-only
// (layout and reader rules: proto/change_log_layout.h). One writer thread
// appends; any number of remote readers copy ranges and check, by the
// seqlock rule, that what they copied was not overwritten meanwhile.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/page_buffer.h"
#include "proto/change_log_layout.h"

namespace rrs {

class ChangeLog {
 public:
  // An empty log of `capacity` data bytes whose first byte will be the
  // stream's byte at position `start` (the offset of the table it continues).
  static Result<std::shared_ptr<ChangeLog>> create(uint64_t capacity, uint64_t log_id,
                                                   std::string_view replid, uint64_t start);

  // What the transports register and serve: header and ring.
  std::span<const std::byte> memory() const { return memory_.span(); }
  uint64_t id() const { return id_; }
  // The master's replication ID whose stream this is.
  const std::string& replid() const { return replid_; }
  uint64_t capacity() const { return capacity_; }

  // Writer thread only. Appends the stream bytes at positions [end, end+n);
  // the oldest bytes are overwritten once the ring is full.
  void append(std::span<const std::byte> bytes);
  // No more bytes will come: readers resync from a newer table.
  void mark_superseded();

  // Any thread: the held positions [start(), end()).
  uint64_t start() const { return word(change_log::kStartAt).load(std::memory_order_acquire); }
  uint64_t end() const { return word(change_log::kEndAt).load(std::memory_order_acquire); }

 private:
  ChangeLog(PageBuffer memory, uint64_t capacity, uint64_t id, std::string replid)
      : memory_(std::move(memory)), capacity_(capacity), id_(id), replid_(std::move(replid)) {}
  // The header's running fields are aligned 64-bit words, updated in place;
  // stored natively, which is the layout's little-endian on every host this
  // builds for (static_assert in the .cc).
  std::atomic_ref<uint64_t> word(size_t at) const {
    return std::atomic_ref<uint64_t>(
        *reinterpret_cast<uint64_t*>(const_cast<std::byte*>(memory_.data()) + at));
  }

  PageBuffer memory_;
  uint64_t capacity_;
  uint64_t id_;
  std::string replid_;
};

using ChangeLogPtr = std::shared_ptr<ChangeLog>;

}  // namespace rrs
