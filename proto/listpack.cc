#include "proto/listpack.h"

#include <charconv>

namespace rrs::listpack {
namespace {

uint64_t le(std::string_view s, size_t at, size_t bytes) {
  uint64_t x = 0;
  for (size_t i = bytes; i-- > 0;) x = (x << 8) | static_cast<uint8_t>(s[at + i]);
  return x;
}

// The bytes of an entry's encoding byte(s) before its data: what must be in
// bounds before its size can be read (lpCurrentEncodedSizeBytes); 0 for an
// encoding listpack.c does not know (0xf5 to 0xfe).
size_t header_bytes(uint8_t b) {
  if (b < 0xe0) return 1;                // 7-bit uint, 6-bit string, 13-bit int
  if ((b & 0xf0) == 0xe0) return 2;      // 12-bit string
  if (b == 0xf0) return 5;               // 32-bit string
  if (b >= 0xf1 && b <= 0xf4) return 1;  // 16, 24, 32, 64-bit int
  return 0;
}

// Encoding and data of the entry at `p` (lpCurrentEncodedSizeUnsafe), once
// header_bytes(p[0]) bytes are known to be there. 64 bits: a 32-bit string
// length near 4 GiB must not wrap.
uint64_t encoded_size(std::string_view lp, size_t p) {
  const auto b = static_cast<uint8_t>(lp[p]);
  if (b < 0x80) return 1;
  if (b < 0xc0) return 1 + (b & 0x3fu);
  if (b < 0xe0) return 2;
  if (b < 0xf0) return 2 + ((uint64_t{b & 0x0fu} << 8) | static_cast<uint8_t>(lp[p + 1]));
  switch (b) {
    case 0xf0: return 5 + le(lp, p + 1, 4);
    case 0xf1: return 3;
    case 0xf2: return 4;
    case 0xf3: return 5;
    default: return 9;  // 0xf4
  }
}

// lpEncodeBacklenBytes: note the strict bounds past the first.
size_t backlen_bytes(uint64_t l) {
  if (l <= 127) return 1;
  if (l < 16383) return 2;
  if (l < 2097151) return 3;
  if (l < 268435455) return 4;
  return 5;
}

// lpDecodeBacklen of the backlen ending at `last`: 7 bits a byte, the high
// bit set on every byte but the first; more than 5 bytes is invalid. Like
// listpack.c it may read back past the entry's start (never past the
// header: an entry's last byte is at offset 7 or later).
bool decode_backlen(std::string_view lp, size_t last, uint64_t& out) {
  out = 0;
  for (unsigned shift = 0;; shift += 7) {
    const auto b = static_cast<uint8_t>(lp[last]);
    out |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return true;
    if (shift >= 28 || last == 0) return false;
    --last;
  }
}

Status bad(size_t at, const std::string& why) {
  return Status::error("listpack", "at byte " + std::to_string(at) + ": " + why)
      .as(ErrorKind::kBadData);
}

}  // namespace

Result<uint64_t> validate(std::string_view lp) {
  if (lp.size() < kHeaderSize + 1)
    return bad(0, std::to_string(lp.size()) + " bytes, shorter than a header and end marker");
  if (le(lp, 0, 4) != lp.size())
    return bad(0, "the header says " + std::to_string(le(lp, 0, 4)) + " bytes, it has " +
                      std::to_string(lp.size()));
  const size_t last = lp.size() - 1;  // the end marker
  if (static_cast<uint8_t>(lp[last]) != kEnd) return bad(last, "no end marker (0xff) at the end");
  uint64_t count = 0;
  size_t p = kHeaderSize;
  while (static_cast<uint8_t>(lp[p]) != kEnd) {
    const auto b = static_cast<uint8_t>(lp[p]);
    const size_t head = header_bytes(b);
    if (head == 0) return bad(p, "unknown entry encoding " + std::to_string(b));
    if (head > last - p) return bad(p, "an entry header past the end");
    const uint64_t data = encoded_size(lp, p);
    const uint64_t back = backlen_bytes(data);
    if (data + back > last - p)
      return bad(p, "an entry of " + std::to_string(data + back) + " bytes past the end");
    const size_t next = p + static_cast<size_t>(data + back);
    uint64_t told = 0;
    if (!decode_backlen(lp, next - 1, told) || told != data)
      return bad(next - 1, "a backlen that does not give the entry's size " + std::to_string(data));
    p = next;
    ++count;
  }
  if (p != last) return bad(p, "an end marker before the last byte");
  const uint64_t header_count = le(lp, 4, 2);
  if (header_count != kUnknownCount && header_count != count)
    return bad(4, "the header counts " + std::to_string(header_count) + " entries, it has " +
                      std::to_string(count));
  return count;
}

bool Reader::next(Entry& e) {
  const auto b = static_cast<uint8_t>(lp_[pos_]);
  if (b == kEnd) return false;
  const size_t data = static_cast<size_t>(encoded_size(lp_, pos_));
  const size_t size = data + backlen_bytes(data);
  e.raw = lp_.substr(pos_, size);
  e.is_int = true;
  // Integers: the raw bits, then two's complement at their width.
  uint64_t u = 0;
  unsigned bits = 0;
  if (b < 0x80) {
    u = b, bits = 0;  // never negative
  } else if (b < 0xc0) {
    e.is_int = false;
    e.str = lp_.substr(pos_ + 1, b & 0x3fu);
  } else if (b < 0xe0) {
    u = (uint64_t{b & 0x1fu} << 8) | static_cast<uint8_t>(lp_[pos_ + 1]), bits = 13;
  } else if (b < 0xf0) {
    e.is_int = false;
    e.str = lp_.substr(pos_ + 2, data - 2);
  } else if (b == 0xf0) {
    e.is_int = false;
    e.str = lp_.substr(pos_ + 5, data - 5);
  } else {
    bits = static_cast<unsigned>(8 * (data - 1));  // 16, 24, 32, 64
    u = le(lp_, pos_ + 1, data - 1);
  }
  if (e.is_int) {
    if (bits > 0 && bits < 64 && (u >> (bits - 1)) & 1) u |= ~uint64_t{0} << bits;
    e.num = static_cast<int64_t>(u);
  }
  pos_ += size;
  return true;
}

size_t format_int(int64_t v, char (&buf)[kMaxIntDigits + 1]) {
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return static_cast<size_t>(r.ptr - buf);
}

bool parse_int(std::string_view s, int64_t& out) {
  // lpStringToInt64: 1 to 20 chars, "0" alone or an optional '-' then 1-9
  // then digits, in range.
  if (s.empty() || s.size() > kMaxIntDigits) return false;
  if (s == "0") {
    out = 0;
    return true;
  }
  const size_t first = s[0] == '-' ? 1 : 0;
  if (first >= s.size() || s[first] < '1' || s[first] > '9') return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

void Writer::add(std::string_view s) {
  int64_t v = 0;
  if (parse_int(s, v))
    add_int(v);
  else
    add_string(s);
}

void Writer::add_string(std::string_view s) {
  const size_t start = out_.size();
  const size_t n = s.size();
  if (n < 64) {
    out_.push_back(static_cast<char>(0x80 | n));
  } else if (n < 4096) {
    out_.push_back(static_cast<char>(0xe0 | (n >> 8)));
    out_.push_back(static_cast<char>(n & 0xff));
  } else {
    out_.push_back(static_cast<char>(0xf0));
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  }
  out_.append(s);
  add_backlen(out_.size() - start);
  ++count_;
}

void Writer::add_int(int64_t v) {
  const size_t start = out_.size();
  const auto u = static_cast<uint64_t>(v);
  auto bytes = [&](uint8_t encoding, int n) {
    out_.push_back(static_cast<char>(encoding));
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  };
  if (v >= 0 && v <= 127) {
    out_.push_back(static_cast<char>(v));
  } else if (v >= -4096 && v <= 4095) {
    const uint64_t t = u & 0x1fff;  // 13-bit two's complement
    out_.push_back(static_cast<char>(0xc0 | (t >> 8)));
    out_.push_back(static_cast<char>(t & 0xff));
  } else if (v >= INT16_MIN && v <= INT16_MAX) {
    bytes(0xf1, 2);
  } else if (v >= -8388608 && v <= 8388607) {
    bytes(0xf2, 3);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    bytes(0xf3, 4);
  } else {
    bytes(0xf4, 8);
  }
  add_backlen(out_.size() - start);
  ++count_;
}

// lpEncodeBacklen: the most significant 7 bits first, every byte but the
// first with the high bit set (so it reads backwards from the last).
void Writer::add_backlen(size_t entry_size) {
  const size_t n = backlen_bytes(entry_size);
  for (size_t i = n; i-- > 0;) {
    auto b = static_cast<uint8_t>((entry_size >> (7 * i)) & 0x7f);
    if (i != n - 1) b |= 0x80;
    out_.push_back(static_cast<char>(b));
  }
}

Result<std::string> Writer::finish() && {
  const uint64_t total = out_.size() + 1;
  if (total > UINT32_MAX)
    return Status::error("listpack", "a listpack of " + std::to_string(total) +
                                         " bytes, past the 4 GiB its header can say")
        .as(ErrorKind::kBadData);
  const uint64_t count = count_ < kUnknownCount ? count_ : kUnknownCount;
  for (int i = 0; i < 4; ++i) out_[i] = static_cast<char>((total >> (8 * i)) & 0xff);
  for (int i = 0; i < 2; ++i) out_[4 + i] = static_cast<char>((count >> (8 * i)) & 0xff);
  out_.push_back(static_cast<char>(kEnd));
  return std::move(out_);
}

}  // namespace rrs::listpack
