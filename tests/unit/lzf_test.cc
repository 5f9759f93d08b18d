#include "proto/lzf.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/support/lzf_compress.h"

namespace rrs {
namespace {

using test::lzf_compress_for_test;

std::string bytes(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s += static_cast<char>(b);
  return s;
}

void expect_error(std::string_view in, size_t expected_len, const std::string& problem,
                  size_t offset) {
  auto r = lzf_decompress(in, expected_len);
  ASSERT_FALSE(r.ok()) << "decoded " << r->size() << " bytes";
  EXPECT_EQ(r.status().kind(), ErrorKind::kBadData);
  const std::string m = r.status().message();
  EXPECT_NE(m.find(problem), std::string::npos) << m;
  EXPECT_NE(m.find("at input offset " + std::to_string(offset) + ":"), std::string::npos) << m;
  // lzf_check finds the same fault, writing nothing.
  Status check = lzf_check(in, expected_len);
  EXPECT_EQ(check.message(), m);
  EXPECT_EQ(check.kind(), ErrorKind::kBadData);
}

TEST(Lzf, HandWrittenStreams) {
  // Literal "abc".
  EXPECT_EQ(*lzf_decompress(bytes({2, 'a', 'b', 'c'}), 3), "abc");
  // 'a', then a long back-reference (L=7, extra 0: 9 bytes) 1 back: a run of 10.
  EXPECT_EQ(*lzf_decompress(bytes({0, 'a', 0xe0, 0, 0}), 10), std::string(10, 'a'));
  // "abcd", then 5 bytes from 4 back (L=3, overlapping): "abcdabcda".
  EXPECT_EQ(*lzf_decompress(bytes({3, 'a', 'b', 'c', 'd', 0x60, 3}), 9), "abcdabcda");
  // Longest reference: L = 7 + 255, 264 bytes from one 3-byte item.
  EXPECT_EQ(*lzf_decompress(bytes({0, 'z', 0xe0, 255, 0}), 265), std::string(265, 'z'));
  // Offset with its high bits set: "x", 256 bytes of "y"-run filler, then 3 bytes from 257 back.
  std::string s = bytes({0, 'x', 0, 'y', 0xe0, 246, 0, 0x21, 0});
  std::string want = "x" + std::string(256, 'y') + "xyy";
  EXPECT_EQ(*lzf_decompress(s, want.size()), want);
  // Nothing in, nothing out.
  EXPECT_EQ(*lzf_decompress("", 0), "");
  EXPECT_TRUE(lzf_check("", 0).ok());
}

TEST(Lzf, RoundTrips) {
  std::mt19937 rng(7);
  std::vector<std::string> inputs = {"a", "ab", "abc", std::string(100000, 'q'),
                                     "hello hello hello hello world world world"};
  std::string text;
  while (text.size() < 200000) text += "key:" + std::to_string(rng() % 5000) + " value ";
  inputs.push_back(text);
  std::string mixed;  // compressible and incompressible stretches, some longer than 8192
  while (mixed.size() < 300000) {
    std::string chunk(rng() % 9000, '\0');
    for (char& c : chunk) c = static_cast<char>(rng() % (rng() % 2 ? 4 : 256));
    mixed += chunk;
  }
  inputs.push_back(mixed);
  for (const std::string& in : inputs) {
    std::string z = lzf_compress_for_test(in);
    auto r = lzf_decompress(z, in.size());
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(*r == in) << "size " << in.size();
    EXPECT_TRUE(lzf_check(z, in.size()).ok());
  }
  // A long run compresses close to the 88x bound, and within kLzfMaxExpansion.
  std::string runs = lzf_compress_for_test(std::string(100000, 'q'));
  EXPECT_LE(runs.size(), 100000u / 88 + 8);
  EXPECT_LE(100000u, runs.size() * kLzfMaxExpansion);
}

TEST(Lzf, BadStreams) {
  // Back-reference with nothing before it / further back than the output.
  expect_error(bytes({0x20, 0}), 3, "before the start of the output", 0);
  expect_error(bytes({1, 'a', 'b', 0x20, 2}), 5, "3 bytes back, before the start", 3);
  // Literal run longer than the input left.
  expect_error(bytes({4, 'a', 'b'}), 5, "only 2 bytes of input left", 0);
  // Truncated back-references.
  expect_error(bytes({0, 'a', 0x20}), 4, "truncated before its offset byte", 2);
  expect_error(bytes({0, 'a', 0xe0}), 11, "truncated before its length byte", 2);
  expect_error(bytes({0, 'a', 0xe0, 0}), 11, "truncated before its offset byte", 2);
  // Output too long: by a literal, by a reference.
  expect_error(bytes({2, 'a', 'b', 'c'}), 2, "overruns the expected 2 bytes", 0);
  expect_error(bytes({0, 'a', 0x20, 0}), 3, "back-reference of 3 bytes after 1 byte", 2);
  // Output too short.
  expect_error(bytes({2, 'a', 'b', 'c'}), 4, "ends after 3 bytes of output, expected 4", 4);
  expect_error(bytes({0, 'a', 0x20, 0}), 5, "ends after 4 bytes of output, expected 5", 4);
  // A declared length no honest stream of this size could produce.
  expect_error("", 1, "declared length 1 is more than 89x the 0 bytes of input", 0);
  expect_error(bytes({0, 'a', 0xe0, 255, 0}), 5 * kLzfMaxExpansion + 1, "declared length", 0);
}

TEST(Lzf, CorruptedStreamsNeverCrash) {
  // Flip bytes of a valid stream: each result is an error or a string of the
  // expected length (ASan/UBSan builds check the rest).
  std::string in;
  for (int i = 0; i < 3000; ++i) in += static_cast<char>("abcab"[i % 5] + i / 700);
  std::string z = lzf_compress_for_test(in);
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20000; ++trial) {
    std::string c = z;
    for (int k = 0; k < 1 + trial % 3; ++k) c[rng() % c.size()] = static_cast<char>(rng());
    if (trial % 5 == 0) c.resize(rng() % c.size());
    auto r = lzf_decompress(c, in.size());
    if (r.ok()) {
      ASSERT_EQ(r->size(), in.size());
    }
    // lzf_check accepts exactly what decompresses, and says the same otherwise.
    ASSERT_EQ(lzf_check(c, in.size()).message(), r.status().message());
  }
}

}  // namespace
}  // namespace rrs
