// CRC-64 throughput of each implementation available on this CPU, over a
// 256 MiB buffer (larger than any cache, as a table build's records are).
//   crc64_speed [rounds]   (default 5; the best round is reported)
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "proto/crc64.h"

int main(int argc, char** argv) {
  using rrs::Crc64Impl;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const size_t size = size_t{256} << 20;
  std::vector<unsigned char> buf(size);
  std::mt19937_64 rng(1);
  for (size_t i = 0; i < size; i += 8) {
    uint64_t w = rng();
    for (size_t k = 0; k < 8; ++k) buf[i + k] = static_cast<unsigned char>(w >> (8 * k));
  }

  uint64_t want = 0;
  for (Crc64Impl impl : {Crc64Impl::kSlicing8, Crc64Impl::kPclmul}) {
    if (!rrs::crc64_impl_available(impl)) {
      std::printf("%-14s not available on this CPU\n", rrs::crc64_impl_name(impl));
      continue;
    }
    double best = 0;
    uint64_t crc = 0;
    for (int r = 0; r < rounds; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      crc = rrs::crc64_using(impl, 0, buf.data(), buf.size());
      std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
      best = std::max(best, static_cast<double>(size) / dt.count() / 1e9);
    }
    if (want == 0) want = crc;
    std::printf("%-14s %6.2f GB/s  crc %016" PRIx64 "%s\n", rrs::crc64_impl_name(impl), best, crc,
                crc == want ? "" : "  MISMATCH");
    if (crc != want) return 1;
  }
  return 0;
}
