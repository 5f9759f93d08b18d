// Reads the sidecar's change log (proto/change_log_layout.h) through a
// TableReader, the way follow mode tails it: the header with one small READ,
// then, in one round trip, the seals and whole blocks of the new bytes at
// computed offsets (one READ each, two when they wrap) and the header again
// behind a fence, which checks the copy by the seqlock rule and says what came
// in meanwhile. The blocks are then checked against their seals; a mismatch is
// read again, and reported if it persists. One thread; it owns the reader
// while it runs.
#pragma once

#include <chrono>
#include <vector>

#include "common/transport/transport.h"
#include "proto/change_log_layout.h"

namespace rrs {

class LogTail {
 public:
  // `max_chunk`: the most stream bytes one read() copies.
  LogTail(TableReader& reader, std::chrono::milliseconds io_timeout, uint32_t max_chunk);
  // Unregisters its buffers from the reader, which must still exist.
  ~LogTail();
  LogTail(const LogTail&) = delete;
  LogTail& operator=(const LogTail&) = delete;

  // Checks that the descriptor offers a change log and, the first time,
  // registers the buffers (a reader re-registers them when it reconnects).
  // Call again after a reconnect: the new descriptor may differ.
  Status attach();

  // The header as it is now, checked against the descriptor.
  Result<change_log::Header> read_header();

  struct Copy {
    // Verified stream bytes from `from` on: usually [from, to) and whatever
    // else the last block's seal and after.end vouch for; fewer when that
    // block was being written as it was read (read it again next round).
    // Valid until the next read().
    std::span<const std::byte> bytes;
    change_log::Header after;  // the header read after the copy
    bool intact = false;       // false: the writer overwrote part of it
  };
  // Copies stream positions [from, to): change_log::holds(before, from),
  // to <= before.end, to - from <= max_chunk(). `before` is the header the
  // range was chosen from. Bytes that still fail their seal after
  // kCorruptReads reads are kBadData, naming their offsets.
  Result<Copy> read(const change_log::Header& before, uint64_t from, uint64_t to);
  static constexpr int kCorruptReads = 3;

  uint32_t max_chunk() const { return max_chunk_; }
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  Status read_ranges(std::span<const TableRead> reads);
  // Decodes a header and checks it against the descriptor.
  Result<change_log::Header> decode_checked(std::span<const std::byte> bytes) const;

  TableReader& reader_;
  std::chrono::milliseconds io_timeout_;
  uint32_t max_chunk_;
  std::vector<std::byte> header_buf_;
  std::vector<std::byte> data_buf_;  // whole blocks: max_chunk + a block at each end
  std::vector<std::byte> seal_buf_;
  uint64_t bytes_read_ = 0;
};

}  // namespace rrs
