// What the fuzzers check besides what ASan and UBSan catch. A failed check
// prints what broke and aborts, which libFuzzer reports as a crash and saves
// the input for. Unlike assert(), it stays on in every build type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace rrs::fuzz {

// The stream fuzzers' inputs start with 8 bytes (little-endian) that seed
// how the rest is cut into fragments; shorter inputs get seed 0.
inline uint64_t take_seed(const uint8_t*& data, size_t& size) {
  uint64_t seed = 0;
  if (size >= 8) {
    for (int i = 7; i >= 0; --i) seed = (seed << 8) | data[i];
    data += 8, size -= 8;
  }
  return seed;
}

// Fragment sizes from a seed (splitmix64): the same input is cut the same way
// on every run, so a failure replays.
class Fragments {
 public:
  explicit Fragments(uint64_t seed) : state_(seed) {}

  // 1..4096, mostly tiny, so fragments end inside lengths, headers and elements.
  size_t next_size() {
    static constexpr uint64_t kCaps[] = {1, 2, 8, 8, 64, 64, 512, 4096};
    uint64_t r = next();
    return 1 + static_cast<size_t>((r >> 8) % kCaps[r & 7]);
  }
  // Room to ask a parser's writable() for beyond the fragment: usually none,
  // sometimes a recv()-sized buffer that is only partly filled.
  size_t extra_room() {
    uint64_t r = next();
    return (r & 3) == 0 ? static_cast<size_t>((r >> 8) % 8192) : 0;
  }

 private:
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  uint64_t state_;
};

[[noreturn]] inline void check_failed(const char* file, int line, const char* cond,
                                      const std::string& detail) {
  std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n  %s\n", file, line, cond, detail.c_str());
  std::abort();
}

}  // namespace rrs::fuzz

// `detail` (a std::string expression) is evaluated only when the check fails.
#define FUZZ_CHECK(cond, detail)                                                 \
  do {                                                                           \
    if (!(cond)) ::rrs::fuzz::check_failed(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)
