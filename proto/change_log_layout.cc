#include "proto/change_log_layout.h"

#include <algorithm>
#include <cstring>

#include "proto/byte_order.h"
#include "proto/crc32c.h"

namespace rrs::change_log {
namespace {

Status bad_header(const std::string& why) {
  return Status::error("change log header", why).as(ErrorKind::kBadData);
}

}  // namespace

std::array<std::byte, kHeaderSize> encode_header(const Header& h) {
  std::array<std::byte, kHeaderSize> out{};
  std::byte* p = out.data();
  std::memcpy(p + kMagicAt, kMagic, sizeof kMagic);
  wire::store_u16(p + kVersionAt, kLayoutVersion);
  wire::store_u16(p + kHeaderSizeAt, kHeaderSize);
  wire::store_u64(p + kCapacityAt, h.capacity);
  wire::store_u64(p + kLogIdAt, h.log_id);
  wire::store_u64(p + kStartAt, h.start);
  wire::store_u64(p + kEndAt, h.end);
  wire::store_u64(p + kFlagsAt, h.flags);
  wire::store_u64(p + kEndTimeAt, h.end_unix_us);
  wire::store_text(p + kReplidAt, kReplidSize, h.replid.data(), h.replid.size());
  wire::store_u64(p + kFirstAt, h.first);
  return out;
}

Result<Header> decode_header(std::span<const std::byte> bytes) {
  if (bytes.size() < kHeaderSize)
    return bad_header("only " + std::to_string(bytes.size()) + " of " +
                      std::to_string(kHeaderSize) + " bytes");
  const std::byte* p = bytes.data();
  if (std::memcmp(p + kMagicAt, kMagic, sizeof kMagic) != 0)
    return bad_header("bad magic: this is not a change log");
  if (uint16_t v = wire::load_u16(p + kVersionAt); v != kLayoutVersion)
    return bad_header("layout version " + std::to_string(v) + ", this build reads " +
                      std::to_string(kLayoutVersion) +
                      ": upgrade rdma-client and rdma-server together");
  if (wire::load_u16(p + kHeaderSizeAt) != kHeaderSize) return bad_header("bad header size");
  Header h;
  h.capacity = wire::load_u64(p + kCapacityAt);
  h.log_id = wire::load_u64(p + kLogIdAt);
  h.start = wire::load_u64(p + kStartAt);
  h.end = wire::load_u64(p + kEndAt);
  h.flags = wire::load_u64(p + kFlagsAt);
  h.end_unix_us = wire::load_u64(p + kEndTimeAt);
  h.replid = wire::load_text(p + kReplidAt, kReplidSize);
  h.first = wire::load_u64(p + kFirstAt);
  if (h.capacity == 0 || h.capacity > kMaxCapacity || h.capacity % kBlockSize != 0)
    return bad_header("capacity " + std::to_string(h.capacity) + " is not a multiple of " +
                      std::to_string(kBlockSize) + " in 1.." + std::to_string(kMaxCapacity));
  if (h.end >= kMaxPosition)
    return bad_header("end " + std::to_string(h.end) + " is beyond any replication offset");
  if (h.first > h.start || h.start > h.end || h.end - h.start > h.capacity)
    return bad_header("held range " + std::to_string(h.start) + ".." + std::to_string(h.end) +
                      " is not within a ring of " + std::to_string(h.capacity) +
                      " bytes from position " + std::to_string(h.first));
  if (!wire::is_printable(h.replid)) return bad_header("replid is not printable ASCII");
  return h;
}

namespace {

// Where units [from, to) of a ring of `size` units, `unit` bytes each,
// starting at `base` in memory, sit (unit i lives in slot i % size).
Segments ring_parts(uint64_t base, uint64_t size, uint64_t unit, uint64_t from, uint64_t to) {
  Segments out;
  if (to <= from) return out;
  uint64_t at = from % size;
  uint64_t length = to - from;
  uint64_t first = std::min(length, size - at);
  out.parts[out.count++] = {base + at * unit, first * unit};
  if (first < length) out.parts[out.count++] = {base, (length - first) * unit};
  return out;
}

}  // namespace

Segments segments(const Header& h, uint64_t from, uint64_t to) {
  return ring_parts(kHeaderSize, h.capacity, 1, from - h.first, to - h.first);
}

Segments seal_segments(const Header& h, uint64_t from, uint64_t to) {
  if (to <= from) return {};
  const uint64_t first_block = (from - h.first) / kBlockSize;
  const uint64_t end_block = (to - h.first + kBlockSize - 1) / kBlockSize;
  return ring_parts(seals_offset(h.capacity), block_count(h.capacity), kSealSize, first_block,
                    end_block);
}

Result<uint64_t> verify(const Header& h, uint64_t from, uint64_t to,
                        std::span<const std::byte> blocks, std::span<const std::byte> seals) {
  if (from < h.first || to <= from || to >= kMaxPosition)
    return Status::error("check the change log",
                         "bad range " + std::to_string(from) + ".." + std::to_string(to));
  const uint64_t begin = block_begin(h, from);
  const uint64_t block_total = (blocks_end(h, to) - begin) / kBlockSize;
  if (blocks.size() != block_total * kBlockSize || seals.size() != block_total * kSealSize)
    return Status::error("check the change log", "the copy does not match its range");
  uint64_t verified = begin;
  for (uint64_t i = 0; i < block_total; ++i) {
    const uint64_t block_at = begin + i * kBlockSize;
    const uint64_t published = std::min(to, block_at + kBlockSize) - block_at;
    const uint64_t seal = wire::load_u64(seals.data() + i * kSealSize);
    const uint64_t fill = seal & 0xffffffffu;
    const uint32_t crc = static_cast<uint32_t>(seal >> 32);
    auto bad = [&](const std::string& why) {
      return Status::error("check the change log", "the stream bytes at offsets " +
                                                       std::to_string(block_at) + ".." +
                                                       std::to_string(block_at + published) + why)
          .as(ErrorKind::kBadData);
    };
    if (fill < published || fill > kBlockSize)
      return bad(": their checksum covers " + std::to_string(fill) + " bytes");
    if (crc32c(0, blocks.data() + i * kBlockSize, fill) == crc) {
      verified = block_at + fill;
      continue;
    }
    // Sealed past what was published: the copy may predate the writer's
    // latest bytes (only ever the last block).
    if (fill > published) return block_at;
    return bad(" do not match their checksum");
  }
  return verified;
}

}  // namespace rrs::change_log
