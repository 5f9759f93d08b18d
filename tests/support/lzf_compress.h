// A test-only LZF compressor, for tests of what decodes LZF (proto/lzf.h and
// the readers built on it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rrs::test {

// A test-only LZF compressor: greedy, one candidate per 3-byte hash. Not
// liblzf's output byte for byte, but any valid stream must decode, and this
// one uses every item shape (short and long back-references, overlapping
// runs, full 32-byte literal runs, offsets up to 8192).
inline std::string lzf_compress_for_test(std::string_view in) {
  std::string out, lit;
  auto flush = [&] {
    if (lit.empty()) return;
    out += static_cast<char>(lit.size() - 1);
    out += lit;
    lit.clear();
  };
  auto u8 = [&](size_t i) { return static_cast<unsigned char>(in[i]); };
  std::vector<size_t> seen(1 << 14, SIZE_MAX);
  size_t i = 0;
  while (i < in.size()) {
    if (i + 3 <= in.size()) {
      uint32_t h = ((u8(i) << 16 | u8(i + 1) << 8 | u8(i + 2)) * 2654435761u) >> 18;
      size_t cand = seen[h];
      seen[h] = i;
      if (cand != SIZE_MAX && i - cand <= 8192 && in.compare(cand, 3, in.substr(i, 3)) == 0) {
        size_t len = 3;
        while (len < 264 && i + len < in.size() && in[cand + len] == in[i + len]) ++len;
        flush();
        size_t off = i - cand - 1, l = len - 2;
        out += static_cast<char>((l < 7 ? l : 7) << 5 | off >> 8);
        if (l >= 7) out += static_cast<char>(l - 7);
        out += static_cast<char>(off & 0xff);
        i += len;
        continue;
      }
    }
    lit += in[i++];
    if (lit.size() == 32) flush();
  }
  flush();
  return out;
}

}  // namespace rrs::test
