// The change log: its header (proto/change_log_layout.h) as a reader checks
// it, where positions sit in the ring, and the writer (common/change_log.h)
// keeping the seqlock rule as it wraps.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "common/change_log.h"
#include "proto/byte_order.h"
#include "proto/change_log_layout.h"

namespace rrs {
namespace {

using namespace change_log;

const std::string kReplid = "8de1cbd5ac4a2a3e4da3c8d6fc9a3b2e9ac16f43";

Header sample_header() {
  Header h;
  h.capacity = 1000;
  h.log_id = 42;
  h.start = h.end = 5000;
  h.replid = kReplid;
  return h;
}

TEST(ChangeLogLayout, HeaderRoundTrips) {
  auto bytes = encode_header(sample_header());
  auto h = decode_header(bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->capacity, 1000u);
  EXPECT_EQ(h->log_id, 42u);
  EXPECT_EQ(h->start, 5000u);
  EXPECT_EQ(h->end, 5000u);
  EXPECT_EQ(h->replid, kReplid);
  EXPECT_FALSE(h->superseded());
  EXPECT_EQ(static_cast<uint8_t>(bytes[kCapacityAt]), 1000 & 0xff);  // little-endian
}

TEST(ChangeLogLayout, RejectsWhatNoWriterProduces) {
  auto good = encode_header(sample_header());
  auto broken = [&](size_t at, uint64_t value) {
    auto b = good;
    wire::store_u64(b.data() + at, value);
    return decode_header(b);
  };
  EXPECT_FALSE(decode_header(std::span(good).first(kHeaderSize - 1)).ok());
  auto b = good;
  b[0] = std::byte{'X'};
  EXPECT_FALSE(decode_header(b).ok());
  b = good;
  wire::store_u16(b.data() + kVersionAt, 2);
  EXPECT_NE(decode_header(b).status().message().find("upgrade"), std::string::npos);
  EXPECT_FALSE(broken(kCapacityAt, 0).ok());
  EXPECT_FALSE(broken(kCapacityAt, kMaxCapacity + 1).ok());
  EXPECT_FALSE(broken(kStartAt, 5001).ok());               // start after end
  EXPECT_FALSE(broken(kEndAt, 5000 + 1001).ok());          // holds more than the ring
  EXPECT_TRUE(broken(kEndAt, 5000 + 1000).ok());           // exactly full
  b = good;
  b[kReplidAt] = std::byte{0x07};
  EXPECT_FALSE(decode_header(b).ok());
}

TEST(ChangeLogLayout, SegmentsWrapAtTheRingsEnd) {
  auto s = segments(1000, 2500, 2700);  // 500..700
  ASSERT_EQ(s.count, 1u);
  EXPECT_EQ(s.parts[0].offset, kHeaderSize + 500);
  EXPECT_EQ(s.parts[0].length, 200u);
  s = segments(1000, 2900, 3150);  // 900..1000, then 0..150
  ASSERT_EQ(s.count, 2u);
  EXPECT_EQ(s.parts[0].offset, kHeaderSize + 900);
  EXPECT_EQ(s.parts[0].length, 100u);
  EXPECT_EQ(s.parts[1].offset, kHeaderSize);
  EXPECT_EQ(s.parts[1].length, 150u);
  s = segments(1000, 3000, 4000);  // exactly one whole ring
  ASSERT_EQ(s.count, 1u);
  EXPECT_EQ(s.parts[0].length, 1000u);
  EXPECT_EQ(segments(1000, 7, 7).count, 0u);
}

TEST(ChangeLogLayout, SeqlockRule) {
  Header before = sample_header(), after = before;
  after.start = 5100;
  EXPECT_TRUE(copy_intact(before, after, 5100));
  EXPECT_FALSE(copy_intact(before, after, 5099));
  after.start = 5000;
  after.log_id = 43;  // a different log under the same address
  EXPECT_FALSE(copy_intact(before, after, 5000));
}

// Reads positions [from, to) out of the writer's memory the way a remote
// reader does.
std::string read_range(const ChangeLog& log, uint64_t from, uint64_t to) {
  std::string out;
  auto parts = segments(log.capacity(), from, to);
  for (size_t i = 0; i < parts.count; ++i)
    out.append(reinterpret_cast<const char*>(log.memory().data()) + parts.parts[i].offset,
               parts.parts[i].length);
  return out;
}

TEST(ChangeLogWriter, KeepsTheNewestBytesInOrderAsItWraps) {
  auto log = ChangeLog::create(1000, 7, kReplid, 100);
  ASSERT_TRUE(log.ok());
  std::mt19937 rng(3);
  std::string stream;
  for (int i = 0; i < 300; ++i) {
    std::string piece(rng() % 300, '\0');
    for (char& c : piece) c = static_cast<char>(rng());
    if (i == 150) piece.assign(2500, 'x');  // one append bigger than the ring
    (*log)->append(std::as_bytes(std::span(piece)));
    stream += piece;
    const uint64_t end = 100 + stream.size();
    ASSERT_EQ((*log)->end(), end);
    ASSERT_EQ((*log)->start(), end > 100 + 1000 ? end - 1000 : 100);
    auto h = decode_header(std::span((*log)->memory().data(), kHeaderSize));
    ASSERT_TRUE(h.ok()) << h.status().message();
    ASSERT_EQ(h->end, end);
    ASSERT_EQ(h->start, (*log)->start());
    ASSERT_EQ(read_range(**log, h->start, h->end), stream.substr(h->start - 100));
  }
}

TEST(ChangeLogWriter, SupersededIsVisibleInTheHeader) {
  auto log = ChangeLog::create(64, 1, kReplid, 0);
  ASSERT_TRUE(log.ok());
  (*log)->mark_superseded();
  auto h = decode_header(std::span((*log)->memory().data(), kHeaderSize));
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->superseded());
  EXPECT_FALSE(ChangeLog::create(0, 1, kReplid, 0).ok());
}

}  // namespace
}  // namespace rrs
