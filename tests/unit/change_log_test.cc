// The change log: its header (proto/change_log_layout.h) as a reader checks
// it, where positions and seals sit in the ring, the writer
// (common/table/change_log.h) keeping the seqlock rule and sealing blocks as it
// wraps, and verify() catching a flipped byte.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/table/change_log.h"
#include "proto/byte_order.h"
#include "proto/change_log_layout.h"

namespace rrs {
namespace {

using namespace change_log;

const std::string kReplid = "8de1cbd5ac4a2a3e4da3c8d6fc9a3b2e9ac16f43";
constexpr uint64_t B = kBlockSize;

Header sample_header() {
  Header h;
  h.capacity = 4 * B;
  h.log_id = 42;
  h.first = 4900;
  h.start = h.end = 5000;
  h.replid = kReplid;
  return h;
}

TEST(ChangeLogLayout, HeaderRoundTrips) {
  auto bytes = encode_header(sample_header());
  auto h = decode_header(bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->capacity, 4 * B);
  EXPECT_EQ(h->log_id, 42u);
  EXPECT_EQ(h->first, 4900u);
  EXPECT_EQ(h->start, 5000u);
  EXPECT_EQ(h->end, 5000u);
  EXPECT_EQ(h->replid, kReplid);
  EXPECT_FALSE(h->superseded());
  EXPECT_EQ(static_cast<uint8_t>(bytes[kFirstAt]), 4900 & 0xff);  // little-endian
  EXPECT_EQ(memory_size(4 * B), kHeaderSize + 4 * B + 4 * kSealSize);
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
  wire::store_u16(b.data() + kVersionAt, 1);  // a log without seals
  EXPECT_NE(decode_header(b).status().message().find("upgrade"), std::string::npos);
  EXPECT_FALSE(broken(kCapacityAt, 0).ok());
  EXPECT_FALSE(broken(kCapacityAt, kMaxCapacity + B).ok());
  EXPECT_FALSE(broken(kCapacityAt, 4 * B + 1).ok());    // not whole blocks
  EXPECT_FALSE(broken(kStartAt, 5001).ok());            // start after end
  EXPECT_FALSE(broken(kFirstAt, 5001).ok());            // first after start
  EXPECT_FALSE(broken(kEndAt, 5000 + 4 * B + 1).ok());  // holds more than the ring
  EXPECT_TRUE(broken(kEndAt, 5000 + 4 * B).ok());       // exactly full
  EXPECT_FALSE(broken(kEndAt, kMaxPosition).ok());      // no replication offset
  b = good;
  b[kReplidAt] = std::byte{0x07};
  EXPECT_FALSE(decode_header(b).ok());
}

TEST(ChangeLogLayout, SegmentsCountFromTheFirstByteAndWrap) {
  Header h = sample_header();  // first 4900, a ring of 4 blocks
  auto s = segments(h, 4900 + 500, 4900 + 700);
  ASSERT_EQ(s.count, 1u);
  EXPECT_EQ(s.parts[0].offset, kHeaderSize + 500);
  EXPECT_EQ(s.parts[0].length, 200u);
  s = segments(h, 4900 + 4 * B - 100, 4900 + 4 * B + 150);  // the ring's last 100, then 150
  ASSERT_EQ(s.count, 2u);
  EXPECT_EQ(s.parts[0].offset, kHeaderSize + 4 * B - 100);
  EXPECT_EQ(s.parts[0].length, 100u);
  EXPECT_EQ(s.parts[1].offset, kHeaderSize);
  EXPECT_EQ(s.parts[1].length, 150u);
  s = segments(h, 4900 + 4 * B, 4900 + 8 * B);  // exactly one whole ring
  ASSERT_EQ(s.count, 1u);
  EXPECT_EQ(s.parts[0].length, 4 * B);
  EXPECT_EQ(segments(h, 7000, 7000).count, 0u);
}

TEST(ChangeLogLayout, SealsOfTheBlocksARangeTouchesWrapToo) {
  Header h = sample_header();
  // Blocks 1..2 (a range from inside block 1 to inside block 2).
  auto s = seal_segments(h, 4900 + B + 10, 4900 + 2 * B + 1);
  ASSERT_EQ(s.count, 1u);
  EXPECT_EQ(s.parts[0].offset, seals_offset(h.capacity) + kSealSize);
  EXPECT_EQ(s.parts[0].length, 2 * kSealSize);
  // Blocks 3..4: slot 3, then slot 0.
  s = seal_segments(h, 4900 + 3 * B, 4900 + 4 * B + 1);
  ASSERT_EQ(s.count, 2u);
  EXPECT_EQ(s.parts[0].offset, seals_offset(h.capacity) + 3 * kSealSize);
  EXPECT_EQ(s.parts[1].offset, seals_offset(h.capacity));
  EXPECT_EQ(s.parts[1].length, kSealSize);
}

TEST(ChangeLogLayout, SeqlockRuleCoversTheWholeFirstBlock) {
  Header before = sample_header(), after = before;
  after.start = 4900 + B;
  EXPECT_TRUE(copy_intact(before, after, 4900 + B + 500));  // its block begins at start
  EXPECT_FALSE(copy_intact(before, after, 4900 + B - 1));
  after.start = 4900 + B + 1;  // the block's first byte is being reused
  EXPECT_FALSE(copy_intact(before, after, 4900 + B + 500));
  EXPECT_FALSE(holds(after, 4900 + B + 500));
  EXPECT_TRUE(holds(after, 4900 + 2 * B));
  EXPECT_FALSE(holds(after, 4000));  // before the log's first byte
  after.start = 4900;
  after.log_id = 43;  // a different log under the same address
  EXPECT_FALSE(copy_intact(before, after, 5000));
}

// A reader's copy of the whole blocks that hold [from, to), and their seals,
// out of the writer's memory.
struct BlockCopy {
  std::vector<std::byte> blocks, seals;
};
BlockCopy copy_blocks(const ChangeLog& log, const Header& h, uint64_t from, uint64_t to) {
  BlockCopy c;
  auto take = [&](const Segments& parts, std::vector<std::byte>& out) {
    for (size_t i = 0; i < parts.count; ++i)
      out.insert(out.end(), log.memory().begin() + static_cast<long>(parts.parts[i].offset),
                 log.memory().begin() +
                     static_cast<long>(parts.parts[i].offset + parts.parts[i].length));
  };
  take(segments(h, block_begin(h, from), blocks_end(h, to)), c.blocks);
  take(seal_segments(h, block_begin(h, from), blocks_end(h, to)), c.seals);
  return c;
}

Header current(const ChangeLog& log) {
  auto h = decode_header(std::span(log.memory().data(), kHeaderSize));
  EXPECT_TRUE(h.ok()) << h.status().message();
  return h.ok() ? *h : Header{};
}

TEST(ChangeLogWriter, KeepsTheNewestBytesInOrderSealedAsItWraps) {
  auto log = ChangeLog::create(4 * B, 7, kReplid, 100);
  ASSERT_TRUE(log.ok());
  std::mt19937 rng(3);
  std::string stream;
  for (int i = 0; i < 300; ++i) {
    std::string piece(rng() % 700, '\0');
    for (char& c : piece) c = static_cast<char>(rng());
    if (i == 150) piece.assign(4 * B + 500, 'x');  // one append bigger than the ring
    (*log)->append(std::as_bytes(std::span(piece)));
    stream += piece;
    const uint64_t end = 100 + stream.size();
    ASSERT_EQ((*log)->end(), end);
    ASSERT_EQ((*log)->start(), end > 100 + 4 * B ? end - 4 * B : 100);
    Header h = current(**log);
    ASSERT_EQ(h.end, end);
    ASSERT_EQ(h.start, (*log)->start());
    // Every byte from the oldest whole block held on reads back and checks
    // out against its seal.
    uint64_t from = block_begin(h, h.start);
    if (from < h.start) from += B;
    if (from >= end) continue;
    BlockCopy c = copy_blocks(**log, h, from, end);
    auto verified = verify(h, from, end, c.blocks, c.seals);
    ASSERT_TRUE(verified.ok()) << verified.status().message();
    ASSERT_EQ(*verified, end);
    ASSERT_EQ(std::string(reinterpret_cast<const char*>(c.blocks.data()), end - from),
              stream.substr(from - 100));
  }
}

TEST(ChangeLogWriter, CapacityIsRoundedUpToWholeBlocks) {
  auto log = ChangeLog::create(1000, 1, kReplid, 0);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->capacity(), B);
  EXPECT_EQ((*log)->memory().size(), memory_size(B));
}

TEST(ChangeLogVerify, AFlippedByteIsCaughtAndNamed) {
  auto log = ChangeLog::create(4 * B, 7, kReplid, 100);
  ASSERT_TRUE(log.ok());
  (*log)->corrupt_after_sealing_for_test(100 + B + 17);  // in block 1
  std::string stream(3 * B, 's');
  (*log)->append(std::as_bytes(std::span(stream)));
  Header h = current(**log);
  BlockCopy c = copy_blocks(**log, h, 100, h.end);
  auto verified = verify(h, 100, h.end, c.blocks, c.seals);
  ASSERT_FALSE(verified.ok());
  EXPECT_EQ(verified.status().kind(), ErrorKind::kBadData);
  EXPECT_NE(verified.status().message().find("offsets " + std::to_string(100 + B) + ".." +
                                             std::to_string(100 + 2 * B)),
            std::string::npos)
      << verified.status().message();
  // The blocks either side of it are fine.
  c = copy_blocks(**log, h, 100, 100 + B);
  EXPECT_TRUE(verify(h, 100, 100 + B, c.blocks, c.seals).ok());
  c = copy_blocks(**log, h, 100 + 2 * B, h.end);
  EXPECT_TRUE(verify(h, 100 + 2 * B, h.end, c.blocks, c.seals).ok());
}

TEST(ChangeLogVerify, ABlockSealedPastTheCopysEndVouchesForTheNewBytes) {
  auto log = ChangeLog::create(4 * B, 7, kReplid, 0);
  ASSERT_TRUE(log.ok());
  std::string stream(B + 300, 'a');
  (*log)->append(std::as_bytes(std::span(stream)));
  Header before = current(**log);
  (*log)->append(std::as_bytes(std::span(stream).first(50)));  // the open block grows
  // Copied after the append: the seal covers 350 bytes of the open block and
  // the copy holds them, although only 300 were published when it began.
  BlockCopy now = copy_blocks(**log, before, 0, before.end);
  auto verified = verify(before, 0, before.end, now.blocks, now.seals);
  ASSERT_TRUE(verified.ok()) << verified.status().message();
  EXPECT_EQ(*verified, B + 350);
  // Bytes copied before the append with the seal from after it (the writer
  // got there between the two): that block is read again next round.
  BlockCopy old = copy_blocks(**log, before, 0, before.end);
  std::memset(old.blocks.data() + B + 300, 0, 50);
  verified = verify(before, 0, before.end, old.blocks, now.seals);
  ASSERT_TRUE(verified.ok()) << verified.status().message();
  EXPECT_EQ(*verified, B);
  verified = verify(before, B + 10, before.end, std::span(old.blocks).subspan(B),
                    std::span(now.seals).subspan(kSealSize));
  ASSERT_TRUE(verified.ok());
  EXPECT_EQ(*verified, B);  // nothing new verified: the caller hands over no bytes
  // Seals that do not match the copy's length are refused, never read past.
  EXPECT_FALSE(verify(before, 0, before.end, now.blocks, std::span(now.seals).first(8)).ok());
  EXPECT_FALSE(verify(before, 0, before.end, std::span(now.blocks).first(B), now.seals).ok());
}

TEST(ChangeLogVerify, SealsNoWriterCouldHaveLeftAreRefused) {
  auto log = ChangeLog::create(4 * B, 7, kReplid, 0);
  ASSERT_TRUE(log.ok());
  std::string stream(2 * B + 300, 'a');
  (*log)->append(std::as_bytes(std::span(stream)));
  Header h = current(**log);
  BlockCopy c = copy_blocks(**log, h, 0, h.end);
  auto with_seal = [&](size_t block, uint64_t word) {
    std::vector<std::byte> seals = c.seals;
    wire::store_u64(seals.data() + block * kSealSize, word);
    return verify(h, 0, h.end, c.blocks, seals);
  };
  const uint32_t crc = static_cast<uint32_t>(wire::load_u64(c.seals.data()) >> 32);
  EXPECT_TRUE(with_seal(0, seal_word(B, crc)).ok());
  EXPECT_FALSE(with_seal(0, seal_word(B - 1, crc)).ok());  // a whole block, sealed short
  EXPECT_FALSE(with_seal(1, seal_word(B + 1, crc)).ok());  // more than a block
  EXPECT_FALSE(with_seal(2, seal_word(B + 1, crc)).ok());  // the open block, past a block
  EXPECT_FALSE(with_seal(2, seal_word(299, crc)).ok());    // less than was published
  const uint32_t open_crc = static_cast<uint32_t>(wire::load_u64(c.seals.data() + 16) >> 32);
  EXPECT_FALSE(with_seal(2, seal_word(300, open_crc ^ 1)).ok());
  EXPECT_TRUE(with_seal(2, seal_word(300, open_crc)).ok());
}

TEST(ChangeLogWriter, SupersededIsVisibleInTheHeader) {
  auto log = ChangeLog::create(64, 1, kReplid, 0);
  ASSERT_TRUE(log.ok());
  (*log)->mark_superseded();
  EXPECT_TRUE(current(**log).superseded());
  EXPECT_FALSE(ChangeLog::create(0, 1, kReplid, 0).ok());
}

}  // namespace
}  // namespace rrs
