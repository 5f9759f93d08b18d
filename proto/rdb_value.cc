#include "proto/rdb_value.h"

#include <array>
#include <string>

#include "proto/lzf.h"
#include "proto/rdb_format.h"
#include "proto/rdb_value_reader.h"

namespace rrs::rdb {
namespace {

// Where type numbers 22 and up part ways (rdb_format.h): Redis's RDB
// versions stop at kMaxRedisVersion, Valkey's start at kFirstValkeyVersion.
constexpr uint16_t kLastRedisVersion = kMaxRedisVersion;

// ziplist: zlbytes u32, zltail u32, zllen u16, entries, 0xff.
// listpack: total bytes u32, count u16, entries, 0xff. (Little-endian.)
// A count of 0xffff means "too many: walk to count".
constexpr size_t kEmptyZiplistSize = 11;
constexpr size_t kListpackHeader = 6;
constexpr uint16_t kUnknownCount = 0xffff;
constexpr uint8_t kEnd = 0xff;
// Redis's EB_EXPIRE_TIME_INVALID: a hash's minimum field TTL above it is
// corrupt (rdbLoadObject, RDB_TYPE_HASH_METADATA).
constexpr uint64_t kNoMinTtl = uint64_t{1} << 48;

uint64_t le(std::string_view s, size_t at, size_t bytes) {
  uint64_t x = 0;
  for (size_t i = bytes; i-- > 0;) x = (x << 8) | static_cast<uint8_t>(s[at + i]);
  return x;
}

// The only ziplist the loaders accept and find no element in. Every loader
// walks a ziplist in full (ziplistValidateIntegrity with deep = 1, converting
// it entry by entry), so it must be exactly this: zlbytes is the size, zltail
// points inside, the walk meets the end marker at once, and the count agrees
// (0) or is unknown.
bool is_empty_ziplist(std::string_view z) {
  if (z.size() != kEmptyZiplistSize) return false;
  const uint64_t count = le(z, 8, 2);
  return le(z, 0, 4) == kEmptyZiplistSize && le(z, 4, 4) < kEmptyZiplistSize &&
         (count == 0 || count == kUnknownCount) && static_cast<uint8_t>(z[10]) == kEnd;
}

// What a listpack's first bytes say: lpLength() is 0, as the loaders count
// it (hashTypeLength, zsetLength, setTypeSize, the quicklist node check): the
// header's count, or when that is unknown a walk that meets the end marker at
// once. `head` is the first kListpackHeader + 1 bytes, `size` the whole size.
bool listpack_head_says_empty(std::string_view head, uint64_t size) {
  if (head.size() < kListpackHeader + 1 || le(head, 0, 4) != size) return false;
  const uint64_t count = le(head, 4, 2);
  return count == 0 || (count == kUnknownCount && static_cast<uint8_t>(head[6]) == kEnd);
}

// A listpack with no elements, as the loaders see it: the checks
// lpValidateIntegrity always makes (total bytes is the size, the last byte is
// the end marker), then lpLength() == 0. The entry walk that would reject a
// count of 0 over entries runs only with sanitize-dump-payload yes (Redis) or
// in Valkey 9; by default, and in Valkey 8, such a listpack is dropped.
bool is_empty_listpack(std::string_view lp) {
  return listpack_head_says_empty(lp, lp.size()) && static_cast<uint8_t>(lp.back()) == kEnd;
}

// Decodes an LZF stream (the format proto/lzf.h describes) keeping only a
// window of its output: enough for any back-reference (8 KiB), the first
// bytes and the last byte. Accepts exactly what lzf_decompress() accepts,
// without allocating the declared size, and can stop after the first bytes.
class LzfScan {
 public:
  static constexpr size_t kHead = kListpackHeader + 1;

  LzfScan(std::string_view in, uint64_t expected) : in_(in), expected_(expected) {}

  // Decodes until at least kHead bytes are out (or the stream ends); false
  // when the stream is corrupt or gives fewer.
  bool fill_head() {
    while (out_ < kHead && ip_ < in_.size())
      if (!item()) return false;
    return out_ >= kHead;
  }
  // Decodes the rest; true when the whole stream is valid and gives exactly
  // the expected number of bytes.
  bool finish() {
    while (ip_ < in_.size())
      if (!item()) return false;
    return out_ == expected_;
  }
  std::string_view head() const { return {head_.data(), out_ < kHead ? out_ : kHead}; }
  uint8_t last() const { return static_cast<uint8_t>(window_[(out_ - 1) & kMask]); }

 private:
  static constexpr size_t kWindow = 8192;  // the farthest a back-reference reaches
  static constexpr size_t kMask = kWindow - 1;

  void put(char c) {
    if (out_ < kHead) head_[out_] = c;
    window_[out_ & kMask] = c;
    ++out_;
  }

  // One literal run or back-reference, checked as lzf_decompress() checks it.
  bool item() {
    const auto ctrl = static_cast<uint8_t>(in_[ip_++]);
    if (ctrl < 32) {
      const size_t n = ctrl + 1u;
      if (n > in_.size() - ip_ || n > expected_ - out_) return false;
      for (size_t i = 0; i < n; ++i) put(in_[ip_ + i]);
      ip_ += n;
      return true;
    }
    size_t n = ctrl >> 5;
    if (n == 7) {
      if (ip_ >= in_.size()) return false;
      n += static_cast<uint8_t>(in_[ip_++]);
    }
    if (ip_ >= in_.size()) return false;
    const size_t offset = ((ctrl & 0x1fu) << 8) + static_cast<uint8_t>(in_[ip_++]) + 1;
    n += 2;
    if (offset > out_ || n > expected_ - out_) return false;
    for (size_t i = 0; i < n; ++i) put(window_[(out_ - offset) & kMask]);
    return true;
  }

  std::string_view in_;
  size_t ip_ = 0;
  uint64_t expected_;
  uint64_t out_ = 0;
  std::array<char, kHead> head_{};
  // Not cleared (8 KiB per call): a back-reference reads only what put() wrote.
  std::array<char, kWindow> window_;
};

// Reads RDB encodings from the front of a value. Every read checks bounds and
// says whether it succeeded; callers stop at the first failure (and answer
// "not empty").
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  bool at_end() const { return in_.empty(); }

  bool fixed_le(size_t bytes, uint64_t& out) {
    if (bytes > in_.size()) return false;
    out = le(in_, 0, bytes);
    in_.remove_prefix(bytes);
    return true;
  }

  // A plain RDB length (big-endian after a 32/64-bit prefix). A string
  // encoding byte (0xc0-0xff) is malformed here, as rdb::RdbParser has it,
  // though Redis's rdbLoadLen(rdb, NULL) reads it as its low six bits.
  bool length(uint64_t& out) {
    if (in_.empty()) return false;
    const auto b = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    switch (b >> 6) {
      case kLen6Bit: out = b & 0x3f; return true;
      case kLen14Bit:
        if (in_.empty()) return false;
        out = (uint64_t{b & 0x3fu} << 8) | static_cast<uint8_t>(in_[0]);
        in_.remove_prefix(1);
        return true;
      case kLenEncoded: return false;
      default: break;
    }
    const size_t bytes = b == kLen32Bit ? 4 : b == kLen64Bit ? 8 : 0;
    if (bytes == 0 || bytes > in_.size()) return false;
    out = 0;
    for (size_t i = 0; i < bytes; ++i) out = (out << 8) | static_cast<uint8_t>(in_[i]);
    in_.remove_prefix(bytes);
    return true;
  }

  // An RDB string holding an empty ziplist (plain or LZF). An integer
  // encoding decodes to decimal digits, never a ziplist. An LZF string is
  // decompressed only when it declares the 11 bytes of an empty ziplist.
  bool empty_ziplist() {
    bool lzf = false;
    uint64_t size = 0, compressed = 0;
    if (!string_header(lzf, size, compressed) || size != kEmptyZiplistSize) return false;
    if (!lzf) return take_is(size, is_empty_ziplist);
    auto plain = lzf_decompress(in_.substr(0, compressed), kEmptyZiplistSize);
    in_.remove_prefix(compressed);
    return plain.ok() && is_empty_ziplist(*plain);
  }

  // An RDB string holding a listpack with no elements (plain or LZF). An LZF
  // one is decoded only as far as its header unless that says empty, and
  // never into a buffer of its declared size.
  bool empty_listpack() {
    bool lzf = false;
    uint64_t size = 0, compressed = 0;
    if (!string_header(lzf, size, compressed)) return false;
    if (!lzf) return take_is(size, is_empty_listpack);
    LzfScan scan(in_.substr(0, compressed), size);
    in_.remove_prefix(compressed);
    return scan.fill_head() && listpack_head_says_empty(scan.head(), size) && scan.finish() &&
           scan.last() == kEnd;
  }

 private:
  // An RDB string's length prefix: a plain string of `size` bytes, or (lzf)
  // an LZF one of `size` bytes compressed into the next `compressed`. False
  // for integer encodings, unknown ones, and bytes the value does not hold.
  bool string_header(bool& lzf, uint64_t& size, uint64_t& compressed) {
    if (in_.empty()) return false;
    const auto b = static_cast<uint8_t>(in_[0]);
    if (b >> 6 != kLenEncoded) {
      lzf = false;
      return length(size) && size <= in_.size();
    }
    in_.remove_prefix(1);
    lzf = true;
    return (b & 0x3f) == kEncLzf && length(compressed) && length(size) && size != 0 &&
           compressed <= in_.size();
  }

  bool take_is(uint64_t size, bool (*check)(std::string_view)) {
    std::string_view bytes = in_.substr(0, size);
    in_.remove_prefix(size);
    return check(bytes);
  }

  std::string_view in_;
};

// An element count of 0, and nothing after it.
bool zero_count(Reader& r) {
  uint64_t n = 0;
  return r.length(n) && n == 0 && r.at_end();
}

// rdbLoadObject, RDB_TYPE_LIST_QUICKLIST(_2): a node that is an empty ziplist
// (14) or packed listpack (18) is skipped, and a list left with no node is an
// empty key. A plain node (18) is one element. Stops at the first node that
// is not empty: only a run of empty nodes is walked.
bool empty_quicklist(Reader& r, bool v2) {
  uint64_t nodes = 0;
  if (!r.length(nodes)) return false;
  for (; nodes > 0; --nodes) {  // every node takes >= 2 bytes: bounded by the value
    if (v2) {
      uint64_t container = 0;
      if (!r.length(container) || container != kQuicklistPacked) return false;
    }
    if (!(v2 ? r.empty_listpack() : r.empty_ziplist())) return false;
  }
  return r.at_end();
}

// A hash's minimum field TTL (RDB_TYPE_HASH_METADATA, HASH_LISTPACK_EX).
bool min_ttl(Reader& r, bool checked) {
  uint64_t ttl = 0;
  return r.fixed_le(8, ttl) && (!checked || ttl <= kNoMinTtl);
}

}  // namespace

bool is_empty_collection(uint8_t type, std::string_view value, uint16_t rdb_version) {
  Reader r(value);
  switch (type) {
    case kList:
    case kSet:
    case kZset:
    case kHash:
    case kZset2: return zero_count(r);
    case kListQuicklist: return empty_quicklist(r, false);
    case kListQuicklist2: return empty_quicklist(r, true);
    case kListZiplist:
    case kZsetZiplist:
    case kHashZiplist: return r.empty_ziplist() && r.at_end();
    case kHashListpack:
    case kZsetListpack:
    case kSetListpack: return r.empty_listpack() && r.at_end();
    default: break;
  }
  if (rdb_version <= kLastRedisVersion) {
    switch (type) {
      case kHashMetadataPreGa: return zero_count(r);
      case kHashListpackExPreGa: return r.empty_listpack() && r.at_end();
      case kHashMetadata: return min_ttl(r, true) && zero_count(r);
      // Read but unused there (rdbLoadObject: UNUSED(minExpire)): not checked.
      case kHashListpackEx: return min_ttl(r, false) && r.empty_listpack() && r.at_end();
      default: return false;
    }
  }
  if (rdb_version >= kFirstValkeyVersion && type == kValkeyHash2) return zero_count(r);
  // Strings, streams, modules, zipmaps, intsets, unknown types.
  return false;
}

std::optional<std::string_view> string_value(std::string_view value, std::string& scratch,
                                             uint64_t max_bytes) {
  ValueReader in(value, max_bytes);
  std::string_view content;
  if (!in.string(nullptr, &content, scratch, "string") || !in.at_end("string")) return std::nullopt;
  if (content.size() > max_bytes) return std::nullopt;
  return content;
}

}  // namespace rrs::rdb
