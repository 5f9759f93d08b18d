// The change log: the master's replication stream, as the sidecar received
// it, in a ring of registered memory that replicas read with one-sided READs
// (or the same READ requests over TCP). A byte's address is its position in
// the stream, which is the master's replication offset: the byte that takes
// the offset from p to p+1 has position p, so a table taken at offset X is
// continued by the bytes from position X on.
//
// Memory: a 128-byte header, then `capacity` data bytes, then one 8-byte
// seal per block of the ring. Positions are counted from `first`, the log's
// first byte: position p lives at kHeaderSize + (p - first) % capacity.
// All integers little-endian.
//
//    0  4 magic 'R','S','L','1'
//    4  2 layout version (2)
//    6  2 header size (128)
//    8  8 capacity: data bytes in the ring, a multiple of kBlockSize
//   16  8 log id: the epoch of the table the log began with; a new log (new
//         id, new memory) starts whenever the stream is not a continuation
//   24  8 start: position of the first byte still held            } written
//   32  8 end: position after the last byte written (published     } while
//         last, with release ordering)                             } the
//   40  8 flags: bit 0 superseded (no more bytes will come; a new  } log
//         log continues a new table: resync from it)               } runs
//   48  8 end_unix_us: when `end` last advanced (sidecar's clock)  }
//   56 40 replid: the master's replication ID the log follows (ASCII)
//   96  8 first: position of the log's first byte (the table offset it
//         continues); blocks are counted from it
//  104 24 reserved (0)
//
// Blocks and seals. The stream is cut into kBlockSize blocks from `first`:
// block k holds positions [first + k*B, first + (k+1)*B) and lives in ring
// slot k % (capacity / B). Its seal, at kHeaderSize + capacity + 8 * slot,
// is one 64-bit word: bits 0-31 `fill`, how many of the block's bytes are
// written (1..B), bits 32-63 the CRC-32C of exactly those bytes. The writer
// updates a block's seal after its bytes and before it publishes `end`.
//
// Seqlock rule. The writer, to append n bytes at `end`, first raises `start`
// past the positions it is about to overwrite, then writes the bytes, then
// their block's seal (release), then publishes the new `end`. A reader of
// positions [from, to), to <= the `end` it read, copies the whole blocks
// that hold them (from block_begin(from) to the end of to's block) and their
// seals, then reads the header again. The copy is intact only if the second
// header still has the same log id and start <= block_begin(from): no byte
// or seal of the copy can have been reused before the writer raised start.
// An intact copy's blocks are then checked against their seals (verify());
// a last block may be sealed past `to` (the writer appended meanwhile), and
// bytes a seal vouches for are whole even before `end` covers them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/base/status.h"

namespace rrs::change_log {

inline constexpr uint8_t kMagic[4] = {'R', 'S', 'L', '1'};
inline constexpr uint16_t kLayoutVersion = 2;
inline constexpr size_t kHeaderSize = 128;
inline constexpr size_t kReplidSize = 40;
// Small enough that a follower re-reading the open block from its beginning
// each round costs little; large enough that the seals are under 1% of the ring.
inline constexpr uint64_t kBlockSize = 1024;
inline constexpr size_t kSealSize = 8;

// Field offsets; the writer updates the running fields in place, as aligned
// 64-bit atomics.
inline constexpr size_t kMagicAt = 0, kVersionAt = 4, kHeaderSizeAt = 6, kCapacityAt = 8,
                        kLogIdAt = 16, kStartAt = 24, kEndAt = 32, kFlagsAt = 40, kEndTimeAt = 48,
                        kReplidAt = 56, kFirstAt = 96, kReservedAt = 104;
static_assert(kReplidAt + kReplidSize == kFirstAt && kFirstAt + 8 == kReservedAt &&
              kReservedAt + 24 == kHeaderSize);
static_assert(kStartAt % 8 == 0 && kEndAt % 8 == 0 && kFlagsAt % 8 == 0 && kEndTimeAt % 8 == 0);
static_assert(kHeaderSize % kSealSize == 0 && kBlockSize % kSealSize == 0,
              "seals are aligned 64-bit words");
static_assert(kBlockSize < (uint64_t{1} << 32), "a seal's fill is 32 bits");

inline constexpr uint64_t kFlagSuperseded = 1;
// Largest ring a reader accepts: bounds what a header read from the network
// can make it believe.
inline constexpr uint64_t kMaxCapacity = uint64_t{1} << 40;
static_assert(kMaxCapacity % kBlockSize == 0);
// Positions are replication offsets, which Redis keeps as signed 64 bits; a
// header claiming more is refused, so position arithmetic cannot wrap.
inline constexpr uint64_t kMaxPosition = uint64_t{1} << 63;

struct Header {
  uint64_t capacity = 0;
  uint64_t log_id = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t flags = 0;
  uint64_t end_unix_us = 0;
  std::string replid;
  uint64_t first = 0;
  bool superseded() const { return flags & kFlagSuperseded; }
};

// The header of a new, empty log (start == end == first).
std::array<std::byte, kHeaderSize> encode_header(const Header& h);

// Checks and decodes a header read from a peer: magic, version, size,
// capacity a multiple of kBlockSize in 1..kMaxCapacity, first <= start <=
// end < kMaxPosition, end - start <= capacity, printable replid. No I/O; every byte untrusted.
Result<Header> decode_header(std::span<const std::byte> bytes);

inline uint64_t block_count(uint64_t capacity) { return capacity / kBlockSize; }
// The total memory of a log with `capacity` data bytes: header, ring, seals.
inline uint64_t memory_size(uint64_t capacity) {
  return kHeaderSize + capacity + block_count(capacity) * kSealSize;
}
// Where the seals begin in the log's memory.
inline uint64_t seals_offset(uint64_t capacity) { return kHeaderSize + capacity; }

// The first position of the block holding position p (p >= h.first).
inline uint64_t block_begin(const Header& h, uint64_t p) {
  return h.first + (p - h.first) / kBlockSize * kBlockSize;
}
// Can a reader still copy from position `from`: is its whole block held?
// (Readers copy from block_begin(from), to check the block's seal.)
inline bool holds(const Header& h, uint64_t from) {
  return from >= h.first && h.start <= block_begin(h, from);
}

// Where a range sits in the log's memory: one part, or two when it wraps.
struct Segment {
  uint64_t offset = 0;  // into the log's memory (header included)
  uint64_t length = 0;
};
struct Segments {
  std::array<Segment, 2> parts;
  size_t count = 0;
};
// The ring bytes of positions [from, to). Requires first <= from, to - from <= capacity.
Segments segments(const Header& h, uint64_t from, uint64_t to);
// The seals of the blocks that hold positions [from, to), in block order.
Segments seal_segments(const Header& h, uint64_t from, uint64_t to);

// A block's seal, as the writer stores it (a native 64-bit word, which is the
// layout's little-endian on every host this builds for).
inline uint64_t seal_word(uint32_t fill, uint32_t crc) { return fill | (uint64_t{crc} << 32); }

// The seqlock rule: was a copy of the blocks from block_begin(from) on, taken
// while `before` was current, left intact, judging by the header read after it?
inline bool copy_intact(const Header& before, const Header& after, uint64_t from) {
  return after.log_id == before.log_id && after.start <= block_begin(before, from);
}

// The end of the block holding position p - 1: a copy up to `to` reads whole
// blocks up to here (to > h.first).
inline uint64_t blocks_end(const Header& h, uint64_t to) {
  return block_begin(h, to - 1) + kBlockSize;
}

// Checks an intact copy of the blocks holding positions [from, to) (the
// bytes [block_begin(from), blocks_end(to)), `blocks`) against the seals read
// with it (`seals`: one per block, in block order); `to` was published when
// the copy began. Returns the position up to which the copy is verified:
// the last block's sealed end (at least `to`), or, when that block was sealed
// past `to` but the copy does not match (it may hold the bytes from before
// the writer got there), the beginning of that block: read it again next
// round. Any other disagreement is kBadData, naming the block's positions.
// No I/O; every byte untrusted.
Result<uint64_t> verify(const Header& h, uint64_t from, uint64_t to,
                        std::span<const std::byte> blocks, std::span<const std::byte> seals);

}  // namespace rrs::change_log
