#include "proto/crc64.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace rrs {
namespace {

// Bit at a time, straight from the definition: the reference the fast paths
// are checked against.
uint64_t crc64_bitwise(uint64_t crc, const void* data, size_t len) {
  constexpr uint64_t kPolyReflected = 0x95ac9329ac4bc9b5;  // 0xad93d23594c935a9 bit-reversed
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < len; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ kPolyReflected : crc >> 1;
  }
  return crc;
}

std::vector<unsigned char> random_bytes(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

std::vector<Crc64Impl> available_impls() {
  std::vector<Crc64Impl> v;
  for (Crc64Impl i : {Crc64Impl::kSlicing8, Crc64Impl::kPclmul})
    if (crc64_impl_available(i)) v.push_back(i);
  return v;
}

TEST(Crc64, KnownVectors) {
  // The check value of CRC-64/Jones as Redis uses it (src/crc64.c's own test).
  EXPECT_EQ(crc64_bitwise(0, "123456789", 9), 0xe9c6d914c4b8d9caull);
  EXPECT_EQ(crc64(0, "123456789", 9), 0xe9c6d914c4b8d9caull);
  // Redis's src/crc64.c self-test: 446 bytes (the C array's NUL included),
  // long enough to go through the folding path too.
  const char li[] = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed "
                    "do eiusmod tempor incididunt ut labore et dolore magna "
                    "aliqua. Ut enim ad minim veniam, quis nostrud exercitation "
                    "ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis "
                    "aute irure dolor in reprehenderit in voluptate velit esse "
                    "cillum dolore eu fugiat nulla pariatur. Excepteur sint "
                    "occaecat cupidatat non proident, sunt in culpa qui officia "
                    "deserunt mollit anim id est laborum.";
  static_assert(sizeof(li) == 446);
  EXPECT_EQ(crc64_bitwise(0, li, sizeof(li)), 0xc7794709e69683b3ull);
  for (Crc64Impl impl : available_impls())
    EXPECT_EQ(crc64_using(impl, 0, li, sizeof(li)), 0xc7794709e69683b3ull) << crc64_impl_name(impl);
  EXPECT_EQ(crc64(0, "", 0), 0u);
  EXPECT_EQ(crc64(12345, "", 0), 12345u);
}

TEST(Crc64, EveryImplMatchesTheReferenceOnRandomLengthsAndAlignments) {
  std::vector<unsigned char> buf = random_bytes(5000 + 64, 1);
  std::mt19937 rng(2);
  for (Crc64Impl impl : available_impls()) {
    SCOPED_TRACE(crc64_impl_name(impl));
    for (size_t len = 0; len <= 5000; len += (len < 600 ? 1 : 1 + rng() % 97)) {
      size_t start = rng() % 64;  // misaligned starts
      uint64_t seed_crc = (len % 3 == 0) ? 0 : (uint64_t{rng()} << 32 | rng());
      const unsigned char* p = buf.data() + start;
      ASSERT_EQ(crc64_using(impl, seed_crc, p, len), crc64_bitwise(seed_crc, p, len))
          << "len " << len << " start " << start;
    }
  }
}

TEST(Crc64, ImplsAgreeOnALargeBuffer) {
  std::vector<unsigned char> buf = random_bytes((1 << 20) + 13, 3);
  uint64_t want = crc64_bitwise(0, buf.data(), buf.size());
  for (Crc64Impl impl : available_impls())
    EXPECT_EQ(crc64_using(impl, 0, buf.data(), buf.size()), want) << crc64_impl_name(impl);
  EXPECT_EQ(crc64(0, buf.data(), buf.size()), want);
}

TEST(Crc64, ExtendsAcrossSplits) {
  std::vector<unsigned char> s = random_bytes(3000, 4);
  uint64_t whole = crc64(0, s.data(), s.size());
  for (size_t cut : {0, 1, 7, 8, 9, 127, 128, 255, 256, 257, 1500, 2999, 3000})
    EXPECT_EQ(crc64(crc64(0, s.data(), cut), s.data() + cut, s.size() - cut), whole) << cut;
}

TEST(Crc64, CombineJoinsPieces) {
  std::vector<unsigned char> s = random_bytes(4096, 5);
  uint64_t whole = crc64(0, s.data(), s.size());
  for (size_t cut : {0, 1, 8, 100, 2048, 4095, 4096}) {
    uint64_t a = crc64(0, s.data(), cut);
    uint64_t b = crc64(0, s.data() + cut, s.size() - cut);
    EXPECT_EQ(crc64_combine(a, b, s.size() - cut), whole) << cut;
  }
  EXPECT_EQ(crc64_combine(0x1234, 0, 0), 0x1234u);
}

TEST(Crc64, CombineHandlesHugeLengths) {
  // Zeros leave a CRC unchanged only if it is 0, so a run of N zeros after A is
  // crc(A) * x^(8N): doubling the run twice must equal combining twice.
  uint64_t a = crc64(0, "redis", 5);
  for (uint64_t n : {uint64_t{1} << 40, uint64_t{1} << 61, ~uint64_t{0}}) {
    uint64_t once = crc64_combine(crc64_combine(a, 0, n), 0, n);
    uint64_t half = crc64_combine(a, 0, n / 2);
    half = crc64_combine(half, 0, n / 2);
    half = crc64_combine(half, 0, n / 2);
    half = crc64_combine(half, 0, n / 2);
    half = crc64_combine(half, 0, (n % 2) * 2);
    EXPECT_EQ(once, half) << n;
  }
  // And against real zeros for a size we can afford.
  std::vector<unsigned char> zeros(100000, 0);
  EXPECT_EQ(crc64_combine(a, 0, zeros.size()), crc64(a, zeros.data(), zeros.size()));
}

}  // namespace
}  // namespace rrs
