// The change log: the master's replication stream, as the sidecar received
// it, in a ring of registered memory that replicas read with one-sided READs
// (or the same READ requests over TCP). A byte's address is its position in
// the stream, which is the master's replication offset: the byte that takes
// the offset from p to p+1 has position p, so a table taken at offset X is
// continued by the bytes from position X on.
//
// Memory: a 128-byte header, then `capacity` data bytes; position p lives at
// kHeaderSize + p % capacity. All integers little-endian.
//
//    0  4 magic 'R','S','L','1'
//    4  2 layout version (1)
//    6  2 header size (128)
//    8  8 capacity: data bytes in the ring
//   16  8 log id: the epoch of the table the log began with; a new log (new
//         id, new memory) starts whenever the stream is not a continuation
//   24  8 start: position of the first byte still held            } written
//   32  8 end: position after the last byte written (published     } while
//         last, with release ordering)                             } the
//   40  8 flags: bit 0 superseded (no more bytes will come; a new  } log
//         log continues a new table: resync from it)               } runs
//   48  8 end_unix_us: when `end` last advanced (sidecar's clock)  }
//   56 40 replid: the master's replication ID the log follows (ASCII)
//   96 32 reserved (0)
//
// Seqlock rule. The writer, to append n bytes at `end`, first raises `start`
// past the positions it is about to overwrite, then writes the bytes, then
// publishes the new `end`. A reader copies positions [from, to) with
// to <= the `end` it read, then reads the header again: the copy is good only
// if the second header still has the same log id and start <= from (no byte
// of the copy can have been overwritten before the writer raised start).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/status.h"

namespace rrs::change_log {

inline constexpr uint8_t kMagic[4] = {'R', 'S', 'L', '1'};
inline constexpr uint16_t kLayoutVersion = 1;
inline constexpr size_t kHeaderSize = 128;
inline constexpr size_t kReplidSize = 40;

// Field offsets; the writer updates the running fields in place, as aligned
// 64-bit atomics.
inline constexpr size_t kMagicAt = 0, kVersionAt = 4, kHeaderSizeAt = 6, kCapacityAt = 8,
                        kLogIdAt = 16, kStartAt = 24, kEndAt = 32, kFlagsAt = 40,
                        kEndTimeAt = 48, kReplidAt = 56, kReservedAt = 96;
static_assert(kReplidAt + kReplidSize == kReservedAt && kReservedAt + 32 == kHeaderSize);
static_assert(kStartAt % 8 == 0 && kEndAt % 8 == 0 && kFlagsAt % 8 == 0 && kEndTimeAt % 8 == 0);

inline constexpr uint64_t kFlagSuperseded = 1;
// Largest ring a reader accepts: bounds what a header read from the network
// can make it believe.
inline constexpr uint64_t kMaxCapacity = uint64_t{1} << 40;

struct Header {
  uint64_t capacity = 0;
  uint64_t log_id = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t flags = 0;
  uint64_t end_unix_us = 0;
  std::string replid;
  bool superseded() const { return flags & kFlagSuperseded; }
};

// The header of a new, empty log (start == end).
std::array<std::byte, kHeaderSize> encode_header(const Header& h);

// Checks and decodes a header read from a peer: magic, version, size,
// capacity in 1..kMaxCapacity, start <= end, end - start <= capacity,
// printable replid. No I/O; every byte untrusted.
Result<Header> decode_header(std::span<const std::byte> bytes);

// The total memory of a log with `capacity` data bytes.
inline uint64_t memory_size(uint64_t capacity) { return kHeaderSize + capacity; }

// Where positions [from, to) sit in the log's memory: one range, or two when
// they wrap. Requires to - from <= capacity.
struct Segment {
  uint64_t offset = 0;  // into the log's memory (header included)
  uint64_t length = 0;
};
struct Segments {
  std::array<Segment, 2> parts;
  size_t count = 0;
};
Segments segments(uint64_t capacity, uint64_t from, uint64_t to);

// The seqlock rule: was a copy of positions from `from` on, taken while
// `before` was current, left intact, judging by the header read after it?
inline bool copy_intact(const Header& before, const Header& after, uint64_t from) {
  return after.log_id == before.log_id && after.start <= from;
}

}  // namespace rrs::change_log
