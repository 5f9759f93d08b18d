#include "proto/change_log_layout.h"

#include <algorithm>
#include <cstring>

#include "proto/byte_order.h"

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
                      std::to_string(kLayoutVersion) + ": upgrade rdma-client and rdma-server together");
  if (wire::load_u16(p + kHeaderSizeAt) != kHeaderSize) return bad_header("bad header size");
  Header h;
  h.capacity = wire::load_u64(p + kCapacityAt);
  h.log_id = wire::load_u64(p + kLogIdAt);
  h.start = wire::load_u64(p + kStartAt);
  h.end = wire::load_u64(p + kEndAt);
  h.flags = wire::load_u64(p + kFlagsAt);
  h.end_unix_us = wire::load_u64(p + kEndTimeAt);
  h.replid = wire::load_text(p + kReplidAt, kReplidSize);
  if (h.capacity == 0 || h.capacity > kMaxCapacity)
    return bad_header("capacity " + std::to_string(h.capacity) + " outside 1.." +
                      std::to_string(kMaxCapacity));
  if (h.start > h.end || h.end - h.start > h.capacity)
    return bad_header("held range " + std::to_string(h.start) + ".." + std::to_string(h.end) +
                      " is not within a ring of " + std::to_string(h.capacity) + " bytes");
  if (!wire::is_printable(h.replid)) return bad_header("replid is not printable ASCII");
  return h;
}

Segments segments(uint64_t capacity, uint64_t from, uint64_t to) {
  Segments out;
  if (to <= from) return out;
  uint64_t at = from % capacity;
  uint64_t length = to - from;
  uint64_t first = std::min(length, capacity - at);
  out.parts[out.count++] = {kHeaderSize + at, first};
  if (first < length) out.parts[out.count++] = {kHeaderSize, length - first};
  return out;
}

}  // namespace rrs::change_log
