#include "proto/control.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace rrs::control {
namespace {

std::span<const std::byte> bytes(const std::string& s, size_t from = 0, size_t n = std::string::npos) {
  return std::as_bytes(std::span(s)).subspan(from, n == std::string::npos ? s.size() - from : n);
}

FrameHeader header_of(const std::string& frame, uint32_t max_body = kMaxReadLength) {
  auto h = decode_frame_header(bytes(frame, 0, kFrameHeaderSize), max_body);
  EXPECT_TRUE(h.ok()) << h.status().message();
  return h.ok() ? *h : FrameHeader{};
}

TEST(Control, MessagesRoundTrip) {
  std::string f;
  append_hello(f, 7, {1, 3});
  FrameHeader h = header_of(f);
  EXPECT_EQ(h.type, MsgType::kHello);
  EXPECT_EQ(h.request_id, 7u);
  auto hello = decode_hello(bytes(f, kFrameHeaderSize));
  ASSERT_TRUE(hello.ok());
  EXPECT_EQ(hello->max_version, 3);

  f.clear();
  append_descriptor(f, 1, {99, 1 << 20, 0xdeadbeef, 0x1234, 1, TransportKind::kVerbs,
                           0x0102030405060708ull, (1 << 20) + 128, 0xfeedface, 0x5678});
  auto d = decode_descriptor(bytes(f, kFrameHeaderSize));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->epoch, 99u);
  EXPECT_EQ(d->remote_addr, 0xdeadbeefu);
  EXPECT_EQ(d->rkey, 0x1234u);
  EXPECT_EQ(d->transport, TransportKind::kVerbs);
  EXPECT_EQ(d->log_id, 0x0102030405060708ull);
  EXPECT_EQ(d->log_length, (1u << 20) + 128);
  EXPECT_EQ(d->log_addr, 0xfeedfaceu);
  EXPECT_EQ(d->log_rkey, 0x5678u);
  // Change log fields without a log id are garbage.
  f.clear();
  append_descriptor(f, 1, {99, 1 << 20, 0, 0, 1, TransportKind::kTcp, 0, 4096});
  EXPECT_FALSE(decode_descriptor(bytes(f, kFrameHeaderSize)).ok());

  f.clear();
  append_read(f, 2, {5, 4096, 65536});
  auto r = decode_read(bytes(f, kFrameHeaderSize));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->offset, 4096u);
  EXPECT_EQ(r->length, 65536u);
  EXPECT_EQ(r->region, Region::kTable);
  f.clear();
  append_read(f, 2, {7, 128, 64, Region::kChangeLog});
  r = decode_read(bytes(f, kFrameHeaderSize));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->region, Region::kChangeLog);
  EXPECT_EQ(r->epoch, 7u);

  f.clear();
  append_error(f, 3, {ErrorCode::kOutOfRange, std::string("bad\x01range")});
  auto e = decode_error(bytes(f, kFrameHeaderSize));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->code, ErrorCode::kOutOfRange);
  EXPECT_EQ(e->text, "bad?range");  // control bytes from a peer are not echoed raw
}

TEST(Control, ByteOrderIsLittleEndian) {
  std::string f;
  append_read(f, 0x01020304, {0, 0x1122334455667788ull, 0});
  EXPECT_EQ(static_cast<unsigned char>(f[12]), 0x04);
  EXPECT_EQ(static_cast<unsigned char>(f[kFrameHeaderSize + 8]), 0x88);
}

TEST(Control, RejectsMalformedFrames) {
  std::string f;
  append_read(f, 1, {});
  std::string bad = f;
  bad[0] = 'X';
  EXPECT_FALSE(decode_frame_header(bytes(bad, 0, 16), kMaxRequestBody).ok());
  bad = f;
  bad[4] = 99;  // type
  EXPECT_FALSE(decode_frame_header(bytes(bad, 0, 16), kMaxRequestBody).ok());
  bad = f;
  bad[6] = 1;  // flags
  EXPECT_FALSE(decode_frame_header(bytes(bad, 0, 16), kMaxRequestBody).ok());
  bad = f;
  bad[11] = 0x7f;  // huge body
  auto h = decode_frame_header(bytes(bad, 0, 16), kMaxRequestBody);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("exceeds"), std::string::npos);
  EXPECT_FALSE(decode_frame_header(bytes(f, 0, 15), kMaxRequestBody).ok());
  EXPECT_FALSE(decode_read(bytes(f, kFrameHeaderSize, 23)).ok());
  bad = f;
  bad[kFrameHeaderSize + 20] = 2;  // no such region
  EXPECT_FALSE(decode_read(bytes(bad, kFrameHeaderSize)).ok());
  EXPECT_FALSE(decode_hello(bytes(std::string(16, '\0'), 0)).ok() &&
               false);  // all-zero hello is min=max=0: decodes, negotiation refuses
  EXPECT_FALSE(negotiate_version({0, 0}).ok());
  EXPECT_FALSE(negotiate_version({kProtocolVersion + 1, 5}).ok());
  EXPECT_FALSE(negotiate_version({1, 1}).ok());  // before the change log
  EXPECT_TRUE(negotiate_version({1, 5}).ok());
  EXPECT_FALSE(decode_hello_ok(bytes(std::string(16, '\0'))).ok());
  EXPECT_FALSE(decode_error(bytes(std::string(4, '\0'))).ok());
}

TEST(Control, KeepaliveIsOneWholeMessage) {
  std::string ka = encode_keepalive(MsgType::kKeepalive, 0x0102030405060708ull);
  ASSERT_EQ(ka.size(), kKeepaliveMessageSize);
  auto seq = decode_keepalive(bytes(ka), MsgType::kKeepalive);
  ASSERT_TRUE(seq.ok()) << seq.status().message();
  EXPECT_EQ(*seq, 0x0102030405060708ull);
  EXPECT_EQ(static_cast<uint8_t>(ka[kFrameHeaderSize]), 0x08);  // little-endian on the wire
  // The answer is not a request, a short or padded message is refused.
  EXPECT_FALSE(decode_keepalive(bytes(ka), MsgType::kKeepaliveAck).ok());
  EXPECT_FALSE(decode_keepalive(bytes(ka, 0, kKeepaliveMessageSize - 1), MsgType::kKeepalive).ok());
  EXPECT_FALSE(decode_keepalive(bytes(ka + '\0'), MsgType::kKeepalive).ok());
  std::string other;
  append_read(other, 1, {1, 2, 3});
  EXPECT_FALSE(decode_keepalive(bytes(other, 0, kKeepaliveMessageSize), MsgType::kKeepalive).ok());

  std::string f;
  append_hello_ok(f, 0, {kProtocolVersion, 1u << 20, 8, 2000});
  auto h = decode_hello_ok(bytes(f, kFrameHeaderSize));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->keepalive_interval_ms, 2000u);
}

// Random bytes into every decoder: never crash, never accept a wrong size.
TEST(Control, SurvivesRandomInput) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 20000; ++i) {
    std::string s(rng() % 80, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    if (s.size() >= 4 && (i & 1)) s.replace(0, 4, "RSC1");
    auto b = bytes(s);
    if (b.size() >= kFrameHeaderSize) (void)decode_frame_header(b.first(kFrameHeaderSize), kMaxRequestBody);
    (void)decode_hello(b);
    (void)decode_hello_ok(b);
    EXPECT_EQ(decode_descriptor(b).ok() && b.size() != kDescriptorSize, false);
    EXPECT_EQ(decode_read(b).ok() && b.size() != kReadSize, false);
    (void)decode_error(b);
    EXPECT_EQ(decode_keepalive(b, MsgType::kKeepalive).ok() && b.size() != kKeepaliveMessageSize,
              false);
  }
}

}  // namespace
}  // namespace rrs::control
