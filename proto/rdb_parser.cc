#include "proto/rdb_parser.h"

#include <cstring>

#include "proto/crc64.h"
#include "proto/rdb_cursor.h"
#include "proto/rdb_format.h"

namespace rrs::rdb {
namespace {

using detail::Cursor;
using detail::hex_byte;
using detail::kModuleAuxWalk;

constexpr uint64_t kClusterSlots = 16384;

}  // namespace

std::span<char> RdbParser::writable(size_t min) {
  if (capacity_ - end_ < min) {
    size_t live = end_ - begin_;
    if (begin_ > 0) {
      std::memmove(buf_.get(), buf_.get() + begin_, live);
      begin_ = 0;
      end_ = live;
    }
    if (capacity_ - end_ < min) {
      size_t cap = std::max(capacity_ * 2, end_ + min);
      auto bigger = std::make_unique_for_overwrite<char[]>(cap);
      if (live) std::memcpy(bigger.get(), buf_.get(), live);
      buf_ = std::move(bigger);
      capacity_ = cap;
    }
  }
  return {buf_.get() + end_, capacity_ - end_};
}

void RdbParser::commit(size_t n) { end_ += n; }

void RdbParser::feed(std::string_view bytes) {
  if (bytes.empty()) return;  // memcpy from a null pointer is undefined even for 0 bytes
  std::memcpy(writable(bytes.size()).data(), bytes.data(), bytes.size());
  commit(bytes.size());
}

void RdbParser::finish_item(size_t len) {
  crc_ = crc64(crc_, buf_.get() + begin_, len);
  consumed_ += len;
  begin_ += len;
  need_ = 1;
}

Result<std::optional<Event>> RdbParser::next() {
  while (!error_ && !done_ && end_ - begin_ >= need_) {
    Event ev;
    auto step = version_ == 0 ? parse_header() : parse_item(ev);
    if (!step.ok()) {
      error_ = step.status().as(ErrorKind::kBadData);
      break;
    }
    if (*step == Step::kEvent) return std::optional<Event>(std::move(ev));
    if (*step == Step::kNeedMore) return std::optional<Event>();
  }
  if (error_) return *error_;
  return std::optional<Event>();
}

// "REDIS" and 4 digits, or "VALKEY" and 3: which one also says whose
// numbering the types and opcodes follow (rdb_format.h).
Result<RdbParser::Step> RdbParser::parse_header() {
  if (end_ - begin_ < kHeaderSize) {
    need_ = kHeaderSize;
    return Step::kNeedMore;
  }
  std::string_view h(buf_.get() + begin_, kHeaderSize);
  const bool valkey = h.starts_with(kValkeyMagic);
  const std::string_view magic = valkey ? kValkeyMagic : kMagic;
  uint16_t v = 0;
  bool digits = true;
  for (char c : h.substr(magic.size())) {
    digits = digits && c >= '0' && c <= '9';
    v = static_cast<uint16_t>(v * 10 + (c - '0'));
  }
  if (!h.starts_with(magic) || !digits)
    return Status::error("RDB header", "does not start with REDIS and 4 digits or VALKEY and 3");
  if (valkey != is_valkey_numbering(v))
    return Status::error("RDB header", "RDB version " + std::to_string(v) + " under the " +
                                           std::string(magic) +
                                           " magic: neither engine writes that");
  if (!is_known_version(v))
    return Status::error("RDB header",
                         "RDB version " + std::to_string(v) + " (" + std::string(magic) +
                             ") is not one this sidecar reads: it reads Redis's " +
                             std::to_string(kMinVersion) + " to " +
                             std::to_string(kMaxRedisVersion) + " (Redis 8.0) and Valkey's " +
                             std::to_string(kMaxValkeyVersion) + " (Valkey 9.1)");
  version_ = v;
  finish_item(kHeaderSize);
  return Step::kConsumed;
}

// The opcode switch, one case per RDB opcode, reads as the format's table;
// split into functions it would scatter the format, so it is exempt from
// the 80-line limit (.clang-tidy).
// NOLINTNEXTLINE(readability-function-size): the parser's type switch
Result<RdbParser::Step> RdbParser::parse_item(Event& ev) {
  if (progress_.active) return walk(ev);
  const char* item = buf_.get() + begin_;
  Cursor c(item, end_ - begin_, 0, limits_);
  auto error_at = [&](const std::string& what) {
    return Status::error("RDB at byte " + std::to_string(consumed_ + c.pos()), what);
  };
  auto short_or_bad = [&]() -> Result<Step> {
    if (c.is_short()) {
      need_ = c.need();
      return Step::kNeedMore;
    }
    return error_at(c.error());
  };

  uint8_t op = c.u8();
  if (!c.ok()) return short_or_bad();
  // Decided by the header alone: a value type that came in a later RDB
  // version is not a type of this one; an opcode is read in any version
  // whose numbering has it, as the servers' loaders read it (is_loadable).
  if (!is_loadable(op, version_)) {
    const char* name = type_name(op, version_);
    const std::string in = " in RDB version " + std::to_string(version_);
    return Status::error("RDB at byte " + std::to_string(consumed_),
                         name ? std::string(name) + " (" + hex_byte(op) + ")" + in +
                                    ": it came with RDB " +
                                    std::to_string(first_version(op, version_))
                              : "unknown type or opcode " + hex_byte(op) + in);
  }
  switch (op) {
    case kOpEof: {
      uint64_t want = version_ >= kFirstVersionWithChecksum ? c.le(8) : 0;
      if (!c.ok()) return short_or_bad();
      uint64_t got = crc64(crc_, item, 1);
      if (want != 0 && want != got)
        return error_at("checksum mismatch: the RDB says " + std::to_string(want) +
                        ", its bytes give " + std::to_string(got) + " (corrupt in transit)");
      finish_item(c.pos());
      done_ = true;
      ev.kind = EventKind::kEnd;
      ev.checksum = want;
      return Step::kEvent;
    }
    case kOpSelectDb: {
      uint64_t db = c.length();
      if (!c.ok()) return short_or_bad();
      if (db > INT32_MAX) return error_at("SELECTDB " + std::to_string(db));
      db_ = static_cast<uint32_t>(db);
      finish_item(c.pos());
      ev.kind = EventKind::kSelectDb;
      ev.db = db_;
      return Step::kEvent;
    }
    case kOpResizeDb: {
      ev.db_size = c.length();
      ev.expires_size = c.length();
      if (!c.ok()) return short_or_bad();
      finish_item(c.pos());
      ev.kind = EventKind::kResizeDb;
      ev.db = db_;
      return Step::kEvent;
    }
    case kOpExpireTimeMs:
    case kOpExpireTime: {
      uint64_t t = c.le(op == kOpExpireTimeMs ? 8 : 4);
      if (!c.ok()) return short_or_bad();
      pending_expire_ = op == kOpExpireTimeMs
                            ? static_cast<int64_t>(t)
                            : static_cast<int64_t>(static_cast<int32_t>(t)) * 1000;
      finish_item(c.pos());
      return Step::kConsumed;
    }
    case kOpIdle:
    case kOpFreq:
      // LRU/LFU hints: a replica rebuilds its own.
      if (op == kOpIdle)
        c.length();
      else
        c.u8();
      if (!c.ok()) return short_or_bad();
      finish_item(c.pos());
      return Step::kConsumed;
    case kOpValkeySlotImport: {  // Valkey's numbering only (is_loadable)
      // Slots this node was importing when it forked: the job's 40-byte
      // name, then inclusive slot ranges. Their keys are in the RDB but
      // not yet the node's: the caller decides.
      c.read_string(aux_value_);
      const uint64_t ranges = c.length();
      if (!c.ok()) return short_or_bad();
      if (ranges == 0 || ranges > kClusterSlots)
        return error_at("SLOT_IMPORT with " + std::to_string(ranges) + " slot ranges");
      for (uint64_t i = 0; i < ranges; ++i) {
        const uint64_t first = c.length(), last = c.length();
        if (!c.ok()) return short_or_bad();
        if (first > last || last >= kClusterSlots)
          return error_at("SLOT_IMPORT range " + std::to_string(first) + "-" +
                          std::to_string(last));
      }
      finish_item(c.pos());
      ev.kind = EventKind::kSlotImport;
      ev.aux_value = aux_value_;
      ev.slot_ranges = ranges;
      return Step::kEvent;
    }
    case kOpSlotInfo:
      // Cluster sizing hints (slot, keys, expires): nothing to carry.
      for (int i = 0; i < 3; ++i) c.length();
      if (!c.ok()) return short_or_bad();
      finish_item(c.pos());
      return Step::kConsumed;
    case kOpAux: {
      c.read_string(aux_key_);
      c.read_string(aux_value_);
      if (!c.ok()) return short_or_bad();
      finish_item(c.pos());
      ev.kind = EventKind::kAux;
      ev.aux_key = aux_key_;
      ev.aux_value = aux_value_;
      return Step::kEvent;
    }
    case kOpFunction2: {
      c.read_string(function_code_);
      if (!c.ok()) return short_or_bad();
      finish_item(c.pos());
      ev.kind = EventKind::kFunction;
      ev.function_code = function_code_;
      return Step::kEvent;
    }
    case kOpFunctionPreGa: {
      // 7.0 RC: name, engine, optional description, code. Redis 7.0 GA
      // translates it to the shebang form; so do we.
      std::string name, engine, code;
      c.read_string(name);
      c.read_string(engine);
      if (c.length()) c.skip_string();
      c.read_string(code);
      if (!c.ok()) return short_or_bad();
      function_code_ = "#!" + engine + " name=" + name + "\n" + code;
      finish_item(c.pos());
      ev.kind = EventKind::kFunction;
      ev.function_code = function_code_;
      return Step::kEvent;
    }
    case kOpModuleAux: {
      uint64_t module_id = c.length();
      uint64_t when_opcode = c.length();
      c.length();  // when: before or after the keys
      if (!c.ok()) return short_or_bad();
      if (when_opcode != kModuleUint)
        return error_at("MODULE_AUX with 'when' opcode " + std::to_string(when_opcode));
      progress_ = {};
      progress_.active = true;
      progress_.type = kModuleAuxWalk;
      progress_.value_start = progress_.pos = c.pos();
      progress_.phase = 1;
      progress_.module_id = module_id;
      return walk(ev);
    }
    default: break;
  }

  auto type_error = [&](const std::string& what) {
    return Status::error("RDB at byte " + std::to_string(consumed_), what);  // the type byte
  };
  if (op == kModulePreGa)
    return type_error("a module value in the Redis 4.0 release-candidate format (type 6), "
                      "which is not self-describing; resave the data with a GA Redis");
  c.read_string(key_);
  if (!c.ok()) return short_or_bad();
  progress_ = {};
  progress_.active = true;
  progress_.type = op;
  progress_.value_start = progress_.pos = c.pos();
  return walk(ev);
}

}  // namespace rrs::rdb
