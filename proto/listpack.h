// Listpacks as Redis and Valkey keep them in an RDB (listpack.c; the
// encodings are the same in Redis 7.0 to 8.0 and Valkey 8 to 9.1): the
// payload of the hash, zset and set listpack types, of quicklist 2 nodes and
// of stream nodes.
//
//   <total bytes: u32 LE> <count: u16 LE, 65535: unknown> <entry>... <0xff>
//   entry: <encoding and data> <backlen: the size of encoding and data, 1-5
//          bytes, 7 bits each, read backwards>
//
// An entry is a string (6-bit, 12-bit or 32-bit length) or an integer (7-bit
// unsigned, 13, 16, 24, 32 or 64-bit signed). Redis stores a string that is
// a canonical int64 ("12", not "012") as an integer; lpGet gives back its
// decimal digits.
//
// Untrusted bytes: validate() checks a listpack the way lpValidateIntegrity
// does with deep = 1 (what RESTORE runs with sanitize-dump-payload yes), and
// Reader walks only one that passed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/base/status.h"

namespace rrs::listpack {

inline constexpr size_t kHeaderSize = 6;
inline constexpr uint16_t kUnknownCount = 0xffff;
inline constexpr uint8_t kEnd = 0xff;
// The digits of the longest int64, "-9223372036854775808".
inline constexpr size_t kMaxIntDigits = 20;

struct Entry {
  bool is_int = false;
  int64_t num = 0;       // when is_int
  std::string_view str;  // when !is_int
  std::string_view raw;  // the whole entry: encoding, data and backlen
};

// Whether `lp` is a listpack lpValidateIntegrity(deep = 1) accepts: the
// header's size is the size, every entry's encoding is known and its data and
// backlen lie inside, each backlen matches its entry, the end marker ends it,
// and the header's count is the number of entries or unknown. Returns that
// number, or a kBadData Status naming the first fault and its byte offset.
Result<uint64_t> validate(std::string_view lp);

// Walks a listpack that validate() accepted (no checks of its own).
class Reader {
 public:
  explicit Reader(std::string_view lp) : lp_(lp), pos_(kHeaderSize) {}
  // The next entry, false at the end marker.
  bool next(Entry& e);

 private:
  std::string_view lp_;
  size_t pos_;
};

// An integer entry's value as the decimal digits lpGet gives; returns the
// number of chars written to `buf`.
size_t format_int(int64_t v, char (&buf)[kMaxIntDigits + 1]);
// The integer a string entry holds when lpGetIntegerValue would take it (the
// listpack's own strict rule: canonical decimal, no sign but '-', no
// leading zeros, in int64 range).
bool parse_int(std::string_view s, int64_t& out);

// Builds a listpack entry by entry, as lpAppend encodes them.
class Writer {
 public:
  Writer() { out_.assign(kHeaderSize, '\0'); }

  // As lpAppend: an integer when `s` is a canonical int64, else a string.
  void add(std::string_view s);
  void add_string(std::string_view s);  // always a string entry
  void add_int(int64_t v);
  // An entry of a validated listpack (Entry::raw), copied as it is.
  void add_raw(std::string_view entry) {
    out_.append(entry);
    ++count_;
  }

  uint64_t count() const { return count_; }
  size_t size() const { return out_.size() + 1; }  // with the end marker
  // The listpack: total bytes and count (kUnknownCount from 65535 entries
  // on) in the header, the end marker after the entries. kBadData when it
  // would pass the 4 GiB a listpack's header can hold.
  Result<std::string> finish() &&;

 private:
  void add_backlen(size_t entry_size);

  std::string out_;
  uint64_t count_ = 0;
};

}  // namespace rrs::listpack
