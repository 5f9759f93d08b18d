// The sidecar's change log: the replication stream appended, as it arrives,
// to a ring in page-aligned memory that the transports serve read-only
// (layout and reader rules: proto/change_log_layout.h). One writer thread
// appends; any number of remote readers copy ranges and check, by the
// seqlock rule, that what they copied was not overwritten meanwhile.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/table/page_buffer.h"
#include "proto/change_log_layout.h"

namespace rrs {

class ChangeLog {
 public:
  // An empty log of `capacity` data bytes (rounded up to whole blocks) whose
  // first byte will be the stream's byte at position `start` (the offset of
  // the table it continues).
  static Result<std::shared_ptr<ChangeLog>> create(uint64_t capacity, uint64_t log_id,
                                                   std::string_view replid, uint64_t start);

  // What the transports register and serve: header, ring and seals.
  std::span<const std::byte> memory() const { return memory_.span(); }
  uint64_t id() const { return id_; }
  // The master's replication ID whose stream this is.
  const std::string& replid() const { return replid_; }
  uint64_t capacity() const { return capacity_; }

  // Writer thread only. Appends the stream bytes at positions [end, end+n)
  // and seals their blocks; the oldest bytes are overwritten once the ring is
  // full.
  void append(std::span<const std::byte> bytes);
  // Test hook (rdma-server's RRS_TEST_CORRUPT_LOG): flip the byte at stream
  // position `position` right after its block is sealed, as a bad DIMM or a
  // stray write would, so readers' checks can be tested end to end.
  void corrupt_after_sealing_for_test(uint64_t position) { corrupt_at_ = position; }
  // No more bytes will come: readers resync from a newer table.
  void mark_superseded();

  // Any thread: the held positions [start(), end()).
  uint64_t start() const { return word(change_log::kStartAt).load(std::memory_order_acquire); }
  uint64_t end() const { return word(change_log::kEndAt).load(std::memory_order_acquire); }

 private:
  ChangeLog(PageBuffer memory, uint64_t capacity, uint64_t id, std::string replid, uint64_t first)
      : memory_(std::move(memory)),
        capacity_(capacity),
        id_(id),
        replid_(std::move(replid)),
        first_(first) {}
  // Writes positions [at, at+n) of one block and updates its seal.
  void write_in_block(uint64_t at, const std::byte* bytes, uint64_t n);
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
  uint64_t first_;
  uint32_t open_block_crc_ = 0;  // CRC-32C of the newest block's bytes so far
  std::optional<uint64_t> corrupt_at_;
};

using ChangeLogPtr = std::shared_ptr<ChangeLog>;

}  // namespace rrs
