#include "proto/rdb_parser.h"

#include <cstring>

#include "proto/crc64.h"
#include "proto/lzf.h"
#include "proto/rdb_format.h"

namespace rrs::rdb {
namespace {

std::string hex_byte(uint8_t b) {
  static const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// Reads the bytes of one item. A read past the end makes the cursor short
// (need(): how many item bytes it takes at least); a malformed field makes it
// bad. Both are sticky: later reads return zeros and move nothing, so a walk
// can check ok() once per element instead of after every read.
class Cursor {
 public:
  Cursor(const char* data, size_t size, size_t pos, const Limits& limits)
      : data_(data), size_(size), pos_(pos), limits_(limits) {}

  bool ok() const { return state_ == kOk; }
  bool is_short() const { return state_ == kShort; }
  size_t pos() const { return pos_; }
  uint64_t need() const { return need_; }
  const std::string& error() const { return error_; }

  uint8_t u8() {
    if (!want(1)) return 0;
    return static_cast<uint8_t>(data_[pos_++]);
  }
  std::string_view take(uint64_t n) {
    if (!want(n)) return {};
    std::string_view v(data_ + pos_, n);
    pos_ += n;
    return v;
  }
  void skip(uint64_t n) { take(n); }
  uint64_t le(int bytes) {
    std::string_view v = take(bytes);
    uint64_t x = 0;
    for (size_t i = v.size(); i-- > 0;) x = (x << 8) | static_cast<uint8_t>(v[i]);
    return x;
  }

  // An RDB length. `encoded` is set (and the special encoding returned) for a
  // string's special encodings; where only a plain length may appear, pass
  // nullptr and an encoding is an error.
  uint64_t length(bool* encoded = nullptr) {
    if (encoded) *encoded = false;
    uint8_t b = u8();
    if (!ok()) return 0;
    switch (b >> 6) {
      case kLen6Bit: return b & 0x3f;
      case kLen14Bit: return (static_cast<uint64_t>(b & 0x3f) << 8) | u8();
      case kLenEncoded:
        if (!encoded) return bad("a string encoding (" + hex_byte(b) + ") where a length belongs");
        *encoded = true;
        return b & 0x3f;
      default: break;
    }
    int bytes = b == kLen32Bit ? 4 : b == kLen64Bit ? 8 : 0;
    if (bytes == 0) return bad("length prefix " + hex_byte(b));
    std::string_view v = take(bytes);
    uint64_t x = 0;
    for (char c : v) x = (x << 8) | static_cast<uint8_t>(c);
    return x;
  }

  void skip_string() { string_extent(nullptr); }
  // Decodes a string (integer and LZF encodings included) into `out`.
  void read_string(std::string& out) { string_extent(&out); }

  // A score of the original zset type: a length byte, or 253/254/255 for
  // nan/+inf/-inf with no digits following.
  void skip_double_string() {
    uint8_t len = u8();
    if (ok() && len < 253) skip(len);
  }

  // Module opcodes up to and including the module EOF. Returns true when the
  // EOF was read; false after one other opcode (call again) or on failure.
  bool module_opcode() {
    uint64_t op = length();
    if (!ok()) return false;
    switch (op) {
      case kModuleEof: return true;
      case kModuleSint:
      case kModuleUint: length(); return false;
      case kModuleFloat: skip(4); return false;
      case kModuleDouble: skip(8); return false;
      case kModuleString: skip_string(); return false;
      default: bad("module value opcode " + std::to_string(op)); return false;
    }
  }

  uint64_t bad(std::string why) {
    if (ok()) {
      state_ = kBad;
      error_ = std::move(why);
    }
    return 0;
  }

 private:
  enum State { kOk, kShort, kBad };

  bool want(uint64_t n) {
    if (!ok()) return false;
    if (n <= size_ - pos_) return true;
    state_ = kShort;
    need_ = n > UINT64_MAX - pos_ ? UINT64_MAX : pos_ + n;
    return false;
  }

  void string_extent(std::string* out) {
    bool encoded = false;
    uint64_t len = length(&encoded);
    if (!ok()) return;
    if (!encoded) {
      if (len > limits_.max_string_bytes) {
        bad("a string of " + std::to_string(len) + " bytes, above the limit of " +
            std::to_string(limits_.max_string_bytes) + " (rdb::Limits::max_string_bytes)");
        return;
      }
      std::string_view v = take(len);
      if (out && ok()) out->assign(v);
      return;
    }
    switch (len) {
      case kEncInt8: return integer(1, out);
      case kEncInt16: return integer(2, out);
      case kEncInt32: return integer(4, out);
      case kEncLzf: return lzf(out);
      default: bad("string encoding " + std::to_string(len));
    }
  }

  void integer(int bytes, std::string* out) {
    uint64_t raw = le(bytes);
    if (!out || !ok()) return;
    int shift = 64 - 8 * bytes;  // sign-extend
    *out = std::to_string(static_cast<int64_t>(raw << shift) >> shift);
  }

  void lzf(std::string* out) {
    uint64_t clen = length();
    uint64_t ulen = length();
    if (!ok()) return;
    if (clen > limits_.max_string_bytes || ulen > limits_.max_string_bytes) {
      bad("an LZF string of " + std::to_string(ulen) + " bytes, above the limit of " +
          std::to_string(limits_.max_string_bytes) + " (rdb::Limits::max_string_bytes)");
      return;
    }
    // Checked before decompressing, so a lying header cannot make us allocate.
    if (ulen == 0 || ulen > clen * kLzfMaxExpansion) {
      bad("an LZF string claiming " + std::to_string(ulen) + " bytes from " + std::to_string(clen));
      return;
    }
    std::string_view in = take(clen);
    if (!out || !ok()) return;
    auto plain = lzf_decompress(in, ulen);
    if (!plain.ok()) {
      bad(plain.status().message());
      return;
    }
    *out = std::move(*plain);
  }

  const char* data_;
  size_t size_;
  size_t pos_;
  const Limits& limits_;
  State state_ = kOk;
  uint64_t need_ = 0;
  std::string error_;
};

// A value that is one RDB string (a ziplist, listpack, intset or zipmap).
bool is_blob_type(uint8_t t, uint16_t version) {
  if (t == kHashListpackExPreGa) return !is_valkey_numbering(version);
  switch (t) {
    case kHashZipmap:
    case kListZiplist:
    case kSetIntset:
    case kZsetZiplist:
    case kHashZiplist:
    case kHashListpack:
    case kZsetListpack:
    case kSetListpack: return true;
    default: return false;
  }
}

bool is_stream_type(uint8_t t) {
  return t == kStreamListpacks || t == kStreamListpacks2 || t == kStreamListpacks3;
}

// A pseudo type for MODULE_AUX data, walked like a module value.
constexpr uint8_t kModuleAuxWalk = kOpModuleAux;
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

// Walks the value from the checkpoint in progress_, moving the checkpoint
// after every complete element, so bytes that arrive later resume there.
// The type switch, one branch per value encoding, all sharing the cursor,
// the checkpoint and the two lambdas at its top: exempt from the 80-line
// limit like parse_item().
// NOLINTNEXTLINE(readability-function-size): the parser's type switch
Result<RdbParser::Step> RdbParser::walk(Event& ev) {
  ValueProgress& p = progress_;
  const char* item = buf_.get() + begin_;
  Cursor c(item, end_ - begin_, p.pos, limits_);
  const uint8_t t = p.type;

  // One element per call; the checkpoint moves only after a complete one.
  auto elements = [&](auto&& element) {
    while (p.remaining > 0) {
      element();
      if (!c.ok()) return;
      --p.remaining;
      p.pos = c.pos();
    }
  };
  // Phase 0 to 1: read the element count (after `prefix_bytes` fixed bytes).
  auto start = [&](uint64_t prefix_bytes) {
    if (p.phase != 0) return;
    c.skip(prefix_bytes);
    uint64_t n = c.length();
    if (!c.ok()) return;
    p.remaining = n;
    p.phase = 1;
    p.pos = c.pos();
  };

  const bool valkey = is_valkey_numbering(version_);
  if (t == kString || is_blob_type(t, version_)) {
    c.skip_string();
  } else if (t == kHashListpackEx) {
    c.skip(8);  // the smallest field TTL
    c.skip_string();
  } else if (t == kList || t == kSet || t == kListQuicklist) {
    start(0);
    elements([&] { c.skip_string(); });
  } else if (t == kHash) {
    start(0);
    elements([&] {
      c.skip_string();
      c.skip_string();
    });
  } else if (t == kZset) {
    start(0);
    elements([&] {
      c.skip_string();
      c.skip_double_string();
    });
  } else if (t == kZset2) {
    start(0);
    elements([&] {
      c.skip_string();
      c.skip(8);  // binary double score
    });
  } else if (t == kListQuicklist2) {
    start(0);
    elements([&] {
      uint64_t container = c.length();
      if (c.ok() && container != kQuicklistPlain && container != kQuicklistPacked)
        c.bad("quicklist node container " + std::to_string(container));
      c.skip_string();
    });
  } else if (valkey && t == kValkeyHash2) {
    start(0);
    elements([&] {
      c.skip_string();  // field
      c.skip_string();  // value
      c.skip(8);        // its expiry, ms (-1: none)
    });
  } else if (t == kHashMetadata || t == kHashMetadataPreGa) {
    start(t == kHashMetadata ? 8 : 0);  // GA: the smallest field TTL first
    elements([&] {
      c.length();  // field TTL (0: none)
      c.skip_string();
      c.skip_string();
    });
  } else if (t == kModule2 || t == kModuleAuxWalk) {
    if (p.phase == 0) {
      c.length();  // module id
      if (c.ok()) p.phase = 1, p.pos = c.pos();
    }
    while (c.ok() && !c.module_opcode()) {
      if (c.ok()) p.pos = c.pos();
    }
  } else if (is_stream_type(t)) {
    const bool v2 = t != kStreamListpacks, v3 = t == kStreamListpacks3;
    // Phases: 1 listpacks, 2 metadata, 3 group header, 4 group PEL,
    // 5 consumer header, 6 consumer PEL.
    start(0);
    while (c.ok()) {
      if (p.phase == 1) {
        elements([&] {
          c.skip_string();  // master ID
          c.skip_string();  // listpack
        });
        if (!c.ok()) break;
        p.phase = 2;
      } else if (p.phase == 2) {
        for (int i = 0; i < (v2 ? 8 : 3); ++i) c.length();  // length, IDs, entries added
        uint64_t groups = c.length();
        if (!c.ok()) break;
        p.groups = groups, p.phase = 3, p.pos = c.pos();
      } else if (p.phase == 3) {
        if (p.groups == 0) break;
        c.skip_string();     // group name
        c.length();          // last delivered ID: ms
        c.length();          //   and sequence
        if (v2) c.length();  // entries read
        uint64_t pel = c.length();
        if (!c.ok()) break;
        p.remaining = pel, p.phase = 4, p.pos = c.pos();
      } else if (p.phase == 4) {
        elements([&] {
          c.skip(16 + 8);  // entry ID, delivery time
          c.length();      // delivery count
        });
        uint64_t consumers = c.length();
        if (!c.ok()) break;
        p.consumers = consumers, p.phase = 5, p.pos = c.pos();
      } else if (p.phase == 5) {
        if (p.consumers == 0) {
          --p.groups, p.phase = 3;
          continue;
        }
        c.skip_string();      // consumer name
        c.skip(v3 ? 16 : 8);  // seen time (and active time, v3)
        uint64_t pel = c.length();
        if (!c.ok()) break;
        p.remaining = pel, p.phase = 6, p.pos = c.pos();
      } else {
        elements([&] { c.skip(16); });
        if (!c.ok()) break;
        --p.consumers, p.phase = 5;
      }
    }
  } else {
    return Status::error("RDB at byte " + std::to_string(consumed_ + p.value_start),
                         std::string("no walker for ") + type_name(t, version_));
  }

  // Checked while the value is still arriving, so it is never all buffered.
  uint64_t value_bytes_at_least = (c.is_short() ? c.need() : c.pos()) - p.value_start;
  if (value_bytes_at_least > limits_.max_value_bytes)
    return Status::error("RDB at byte " + std::to_string(consumed_),
                         "the value of key '" + key_.substr(0, 64) + "' is larger than " +
                             std::to_string(limits_.max_value_bytes) +
                             " bytes (rdb::Limits::max_value_bytes)");
  if (c.is_short()) {
    need_ = c.need();
    return Step::kNeedMore;
  }
  if (!c.ok())
    return Status::error("RDB at byte " + std::to_string(consumed_ + c.pos()),
                         std::string(t == kModuleAuxWalk ? "module aux data"
                                                         : type_name(t, version_)) +
                             ": " + c.error());

  size_t end = c.pos();
  p.active = false;
  if (t == kModuleAuxWalk) {
    ev.kind = EventKind::kModuleAux;
    ev.module_id = p.module_id;
  } else {
    ev.kind = EventKind::kRecord;
    ev.db = db_;
    ev.key = key_;
    ev.type = t;
    ev.value = std::string_view(item + p.value_start, end - p.value_start);
    ev.expire_at_ms = pending_expire_;
    pending_expire_ = -1;
  }
  finish_item(end);
  return Step::kEvent;
}

}  // namespace rrs::rdb
