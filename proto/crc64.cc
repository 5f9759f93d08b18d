#include "proto/crc64.h"

#include <array>
#include <cstring>

#include "proto/crc_tables.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rrs {
namespace {

// Reflected representation throughout: bit i of a uint64_t is the
// coefficient of x^(63-i), so x^0 is the top bit and "times x" is a right shift.
constexpr uint64_t reflect(uint64_t v) {
  uint64_t r = 0;
  for (int i = 0; i < 64; ++i) r |= ((v >> i) & 1) << (63 - i);
  return r;
}
constexpr uint64_t kPoly = reflect(0xad93d23594c935a9);  // Jones, as Redis uses it
constexpr uint64_t kOne = uint64_t{1} << 63;             // x^0

// a * b mod P.
constexpr uint64_t mulmod(uint64_t a, uint64_t b) {
  uint64_t p = 0;
  for (uint64_t m = kOne; m != 0; m >>= 1) {
    if (a & m) p ^= b;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;  // b *= x
  }
  return p;
}

// kX2n[k] = x^(2^k) mod P. 67 entries: crc64_combine needs x^(8 * len) for
// any 64-bit len, i.e. up to x^(2^66).
constexpr std::array<uint64_t, 67> make_x2n() {
  std::array<uint64_t, 67> t{};
  t[0] = kOne >> 1;  // x
  for (size_t k = 1; k < t.size(); ++k) t[k] = mulmod(t[k - 1], t[k - 1]);
  return t;
}
constexpr auto kX2n = make_x2n();

// x^(n * 2^shift) mod P, shift <= 3.
constexpr uint64_t xpow(uint64_t n, unsigned shift = 0) {
  uint64_t r = kOne;
  for (unsigned i = 0; n != 0; ++i, n >>= 1)
    if (n & 1) r = mulmod(r, kX2n[i + shift]);
  return r;
}

constexpr auto kTables = slicing8_tables<uint64_t>(kPoly);

uint64_t crc64_slicing8(uint64_t crc, const unsigned char* p, size_t len) {
  while (len >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    w ^= crc;  // a 64-bit CRC absorbs a whole word: nothing of crc is left over
    crc = kTables[7][w & 0xff] ^ kTables[6][(w >> 8) & 0xff] ^ kTables[5][(w >> 16) & 0xff] ^
          kTables[4][(w >> 24) & 0xff] ^ kTables[3][(w >> 32) & 0xff] ^
          kTables[2][(w >> 40) & 0xff] ^ kTables[1][(w >> 48) & 0xff] ^ kTables[0][w >> 56];
    p += 8;
    len -= 8;
  }
  while (len--) crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xff];
  return crc;
}
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "slicing-by-8 and the PCLMUL loads assume a little-endian host");

#if defined(__x86_64__)
// Folding (Intel, "Fast CRC Computation for Generic Polynomials Using
// PCLMULQDQ"). A 16-byte block X = H*x^64 + L (H = low qword: earlier bytes,
// higher degree) moved D bits further down the message is
//   H*x^(D+64) + L*x^D  (mod P),
// two 64x64 carry-less products. In the reflected representation a product
// comes out one degree short (bit k of it is x^(126-k), the 128-bit block
// wants x^(127-k)), so the constants carry one x less: x^(D+63), x^(D-1).
// The last block and the tail go through the tables, which reduce exactly,
// so no Barrett step is needed.
struct FoldConst {
  uint64_t lo, hi;
};
constexpr FoldConst fold_const(uint64_t bits) { return {xpow(bits + 63), xpow(bits - 1)}; }
constexpr FoldConst kFold128 = fold_const(128);
constexpr FoldConst kFold1024 = fold_const(1024);  // 8 lanes of 16 bytes

__attribute__((target("pclmul,sse4.1"))) inline __m128i fold(__m128i x, __m128i k, __m128i next) {
  __m128i h = _mm_clmulepi64_si128(x, k, 0x00);
  __m128i l = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(h, l), next);
}

__attribute__((target("pclmul,sse4.1"))) uint64_t crc64_pclmul(uint64_t crc, const unsigned char* p,
                                                               size_t len) {
  // Eight independent lanes hide the multiplier's latency; below two rounds
  // of them the tables are as fast.
  if (len < 256) return crc64_slicing8(crc, p, len);
  auto load = [](const unsigned char* q) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  };
  auto konst = [](FoldConst c) {
    return _mm_set_epi64x(static_cast<long long>(c.hi), static_cast<long long>(c.lo));
  };
  __m128i x[8];
  for (size_t i = 0; i < 8; ++i) x[i] = load(p + 16 * i);
  // Continuing from crc == xoring it into the first 8 bytes (init 0, no xorout).
  x[0] = _mm_xor_si128(x[0], _mm_cvtsi64_si128(static_cast<long long>(crc)));
  p += 128;
  len -= 128;
  const __m128i k1024 = konst(kFold1024);
  while (len >= 128) {
#pragma GCC unroll 8  // fully unrolled, the lanes stay in registers even at -O2
    for (size_t i = 0; i < 8; ++i) x[i] = fold(x[i], k1024, load(p + 16 * i));
    p += 128;
    len -= 128;
  }
  const __m128i k128 = konst(kFold128);
  __m128i acc = x[0];
  for (int i = 1; i < 8; ++i) acc = fold(acc, k128, x[i]);
  while (len >= 16) {
    acc = fold(acc, k128, load(p));
    p += 16;
    len -= 16;
  }
  unsigned char last[16];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(last), acc);
  return crc64_slicing8(crc64_slicing8(0, last, 16), p, len);
}

// __builtin_cpu_init first: this runs as a static initializer, possibly
// before libgcc's own constructor has filled in the CPU model.
const bool kHavePclmul = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}();
#endif

}  // namespace

const char* crc64_impl_name(Crc64Impl impl) {
  return impl == Crc64Impl::kPclmul ? "pclmul" : "slicing-by-8";
}

bool crc64_impl_available(Crc64Impl impl) {
#if defined(__x86_64__)
  if (impl == Crc64Impl::kPclmul) return kHavePclmul;
#else
  if (impl == Crc64Impl::kPclmul) return false;
#endif
  return true;
}

uint64_t crc64_using(Crc64Impl impl, uint64_t crc, const void* data, size_t len) {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
  if (impl == Crc64Impl::kPclmul && kHavePclmul) return crc64_pclmul(crc, p, len);
#endif
  (void)impl;
  return crc64_slicing8(crc, p, len);
}

uint64_t crc64(uint64_t crc, const void* data, size_t len) {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
  if (kHavePclmul) return crc64_pclmul(crc, p, len);
#endif
  return crc64_slicing8(crc, p, len);
}

uint64_t crc64_combine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b) {
  // Init 0 and no xorout make the CRC linear: crc(a||b) = crc(a)*x^(8 len_b) + crc(b).
  return mulmod(crc_a, xpow(len_b, 3)) ^ crc_b;
}

}  // namespace rrs
