#include "proto/rdb_writer.h"

#include <cstdio>

#include "proto/crc64.h"
#include "proto/dump_payload.h"
#include "proto/rdb_format.h"

namespace rrs::rdb {
namespace {

void append_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

RdbWriter::RdbWriter(uint16_t version) : version_(version) {
  char header[kHeaderSize + 1];
  if (is_valkey_numbering(version))
    std::snprintf(header, sizeof header, "VALKEY%03u", static_cast<unsigned>(version % 1000));
  else
    std::snprintf(header, sizeof header, "REDIS%04u", static_cast<unsigned>(version % 10000));
  out_.append(header, kHeaderSize);
}

void RdbWriter::drop_taken() {
  if (taken_ == 0) return;
  out_.erase(0, taken_);
  checksummed_ -= taken_;
  taken_ = 0;
}

void RdbWriter::append_string(std::string_view s) {
  append_length(out_, s.size());
  out_.append(s);
}

void RdbWriter::aux(std::string_view key, std::string_view value) {
  if (version_ < kFirstVersionWithAux) return;
  drop_taken();
  out_.push_back(static_cast<char>(kOpAux));
  append_string(key);
  append_string(value);
}

Status RdbWriter::functions(std::string_view payload) {
  // Empty, or FUNCTION DUMP of a server without libraries: the trailer alone.
  if (payload.empty() || payload.size() == dump::kTrailerSize) return {};
  if (payload.size() < dump::kTrailerSize || static_cast<uint8_t>(payload[0]) != kOpFunction2)
    return Status::error("write the RDB", "the function payload is not a FUNCTION DUMP of "
                                          "FUNCTION2 entries")
        .as(ErrorKind::kBadData);
  if (version_ < kFirstVersionWithFunctions)
    return Status::error("write the RDB",
                         "RDB " + std::to_string(version_) + " has no place for function libraries")
        .as(ErrorKind::kBadData);
  drop_taken();
  out_.append(payload.substr(0, payload.size() - dump::kTrailerSize));
  return {};
}

void RdbWriter::select_db(uint32_t db, uint64_t keys, uint64_t expires) {
  drop_taken();
  out_.push_back(static_cast<char>(kOpSelectDb));
  append_length(out_, db);
  if (version_ < kFirstVersionWithAux || !sized_dbs_.insert(db).second) return;
  out_.push_back(static_cast<char>(kOpResizeDb));
  append_length(out_, keys);
  append_length(out_, expires);
}

Status RdbWriter::key(std::string_view key, std::string_view payload, int64_t expire_at_ms) {
  if (payload.size() < 1 + dump::kTrailerSize)
    return Status::error("write the RDB", "a DUMP payload of " + std::to_string(payload.size()) +
                                              " bytes is too short")
        .as(ErrorKind::kBadData);
  const auto type = static_cast<uint8_t>(payload[0]);
  if (type >= kOpValkeySlotImport || !is_in_format(type, version_))
    return Status::error("write the RDB", "a DUMP payload of type " + std::to_string(type) +
                                              ", not a value type of RDB " +
                                              std::to_string(version_))
        .as(ErrorKind::kBadData);
  if (auto v = dump::rdb_version(payload); !v || !fits_in(*v, version_))
    return Status::error("write the RDB",
                         "a DUMP payload of RDB version " + std::to_string(v.value_or(0)) +
                             " does not fit a stream of RDB " + std::to_string(version_) +
                             " (newer, or the other engine's numbering)")
        .as(ErrorKind::kBadData);
  const bool in_seconds = version_ < kFirstVersionWithExpireMs;
  if (in_seconds && expire_at_ms >= 0 &&
      (expire_at_ms % 1000 != 0 || expire_at_ms / 1000 > INT32_MAX))
    return Status::error("write the RDB", "an expiry at " + std::to_string(expire_at_ms) +
                                              " ms: RDB " + std::to_string(version_) +
                                              " holds whole seconds up to 2^31 - 1")
        .as(ErrorKind::kBadData);
  drop_taken();
  if (expire_at_ms >= 0 && in_seconds) {
    out_.push_back(static_cast<char>(kOpExpireTime));
    append_le(out_, static_cast<uint64_t>(expire_at_ms / 1000), 4);
  } else if (expire_at_ms >= 0) {
    out_.push_back(static_cast<char>(kOpExpireTimeMs));
    append_le(out_, static_cast<uint64_t>(expire_at_ms), 8);
  }
  out_.push_back(payload[0]);
  append_string(key);
  out_.append(payload.substr(1, payload.size() - 1 - dump::kTrailerSize));
  return {};
}

void RdbWriter::checksum_pending() {
  crc_ = crc64(crc_, out_.data() + checksummed_, out_.size() - checksummed_);
  bytes_ += out_.size() - checksummed_;
  checksummed_ = out_.size();
}

void RdbWriter::end() {
  drop_taken();
  out_.push_back(static_cast<char>(kOpEof));
  checksum_pending();
  if (version_ >= kFirstVersionWithChecksum) {
    append_le(out_, crc_, 8);  // not part of its own checksum
    bytes_ += 8;
    checksummed_ = out_.size();
  }
  ended_ = true;
}

std::string_view RdbWriter::take() {
  if (!ended_) checksum_pending();
  std::string_view fresh(out_.data() + taken_, out_.size() - taken_);
  taken_ = out_.size();
  return fresh;
}

}  // namespace rrs::rdb
