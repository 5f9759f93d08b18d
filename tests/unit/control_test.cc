#include "proto/control.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace rrs::control {
namespace {

std::span<const std::byte> bytes(const std::string& s, size_t from = 0,
                                 size_t n = std::string::npos) {
  return std::as_bytes(std::span(s)).subspan(from, n == std::string::npos ? s.size() - from : n);
}

FrameHeader header_of(const std::string& frame, uint32_t max_body = kMaxReadLength) {
  auto h = decode_frame_header(bytes(frame, 0, kFrameHeaderSize), max_body);
  EXPECT_TRUE(h.ok()) << h.status().message();
  return h.ok() ? *h : FrameHeader{};
}

TEST(Control, MessagesRoundTrip) {
  std::string f;
  append_hello(f, 7, {1, 3, {}});
  FrameHeader h = header_of(f);
  EXPECT_EQ(h.type, MsgType::kHello);
  EXPECT_EQ(h.request_id, 7u);
  auto hello = decode_hello(bytes(f, kFrameHeaderSize));
  ASSERT_TRUE(hello.ok());
  EXPECT_EQ(hello->max_version, 3);
  EXPECT_FALSE(hello->log_only);
  // A follower's HELLO asks for the change log alone; other flags are reserved.
  f.clear();
  append_hello(f, 8, Hello{.log_only = true});
  auto follower = decode_hello(bytes(f, kFrameHeaderSize));
  ASSERT_TRUE(follower.ok()) << follower.status().message();
  EXPECT_TRUE(follower->log_only);
  f[kFrameHeaderSize + 4] = '\x03';
  EXPECT_FALSE(decode_hello(bytes(f, kFrameHeaderSize)).ok());

  f.clear();
  append_descriptor(f, 1,
                    {99, 1 << 20, 0xdeadbeef, 0x1234, 1, TransportKind::kVerbs,
                     0x0102030405060708ull, (1 << 20) + 128, 0xfeedface, 0x5678, 65536});
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
  EXPECT_EQ(d->readable_length, 65536u);
  // More readable than there is table is garbage.
  f.clear();
  append_descriptor(f, 1, {.epoch = 99, .table_length = 4096, .readable_length = 8192});
  EXPECT_FALSE(decode_descriptor(bytes(f, kFrameHeaderSize)).ok());
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
  append_hello_ok(f, 0,
                  {.max_read_len = 1u << 20, .max_in_flight = 8, .keepalive_interval_ms = 2000});
  auto h = decode_hello_ok(bytes(f, kFrameHeaderSize));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->keepalive_interval_ms, 2000u);
}

Nonce nonce(uint8_t first) {
  Nonce n{};
  for (size_t i = 0; i < n.size(); ++i) n[i] = std::byte(first + i);
  return n;
}

TEST(Control, HandshakeCarriesNoncesAndTheAuthFlag) {
  std::string f;
  append_hello(f, 1, {.client_nonce = nonce(10)});
  auto hello = decode_hello(bytes(f, kFrameHeaderSize));
  ASSERT_TRUE(hello.ok()) << hello.status().message();
  EXPECT_EQ(hello->client_nonce, nonce(10));
  EXPECT_EQ(hello->max_version, kProtocolVersion);

  f.clear();
  append_hello_ok(f, 1, {.auth_required = true, .server_nonce = nonce(50), .max_in_flight = 4});
  auto ok = decode_hello_ok(bytes(f, kFrameHeaderSize));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(ok->auth_required);
  EXPECT_EQ(ok->server_nonce, nonce(50));
  std::string bad = f;
  bad[kFrameHeaderSize + 2] = 2;  // an unknown flag
  EXPECT_FALSE(decode_hello_ok(bytes(bad, kFrameHeaderSize)).ok());

  Proof p{};
  p[0] = std::byte{0xab};
  p[31] = std::byte{0xcd};
  f.clear();
  append_auth(f, 9, MsgType::kAuth, p);
  EXPECT_EQ(header_of(f).type, MsgType::kAuth);
  auto got = decode_auth(bytes(f, kFrameHeaderSize));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, p);
  EXPECT_FALSE(decode_auth(bytes(f, kFrameHeaderSize, kAuthSize - 1)).ok());
}

// A client of protocol 2 sent a 16-byte HELLO: it hears which versions we
// speak, under "unsupported version", not "bad message"; a protocol-2 server's 16-byte HELLO_OK
// says so too.
TEST(Control, OlderPeersHearTheVersion) {
  std::string old(16, '\0');
  old[0] = 2, old[2] = 2;
  auto hello = decode_hello(bytes(old));
  ASSERT_FALSE(hello.ok());
  EXPECT_NE(hello.status().reason().find("speaks versions 2..2"), std::string::npos)
      << hello.status().message();
  EXPECT_EQ(hello_refusal(bytes(old)), ErrorCode::kUnsupportedVersion);
  std::string overlapping(16, '\0');  // versions 1..5 include ours: just the wrong size
  overlapping[0] = 1, overlapping[2] = 5;
  EXPECT_EQ(hello_refusal(bytes(overlapping)), ErrorCode::kBadMessage);
  EXPECT_EQ(hello_refusal(bytes(std::string(2, '\0'))), ErrorCode::kBadMessage);
  // Over verbs the same body arrives framed as connect private data.
  std::string framed = encode_connect(Hello{kProtocolVersion, kProtocolVersion, {}})
                           .substr(0, kFrameHeaderSize);
  framed[8] = static_cast<char>(old.size());  // body_len, little-endian u32
  EXPECT_EQ(connect_refusal(bytes(framed + old)), ErrorCode::kUnsupportedVersion);
  EXPECT_EQ(connect_refusal(bytes(encode_connect(Hello{kProtocolVersion, kProtocolVersion, {}}))),
            ErrorCode::kBadMessage);  // decodes; a server would not ask
  EXPECT_EQ(connect_refusal(bytes(std::string(40, 'x'))), ErrorCode::kBadMessage);
  auto ok = decode_hello_ok(bytes(old));
  ASSERT_FALSE(ok.ok());
  EXPECT_NE(ok.status().reason().find("protocol version 2"), std::string::npos)
      << ok.status().message();
}

TEST(Control, VerbsAuthMessages) {
  // Without AUTH the accept carries the descriptor; with it, only HELLO_OK.
  Accept open{{.max_in_flight = 16},
              Descriptor{.epoch = 5, .rkey = 7, .transport = TransportKind::kVerbs}};
  auto a = decode_accept(bytes(encode_accept(open)));
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(a->descriptor.has_value());
  EXPECT_EQ(a->descriptor->rkey, 7u);
  Accept gated{{.auth_required = true, .server_nonce = nonce(1), .max_in_flight = 16},
               std::nullopt};
  std::string data = encode_accept(gated);
  EXPECT_EQ(data.size(), kFrameHeaderSize + kHelloOkSize);  // no rkey in sight
  a = decode_accept(bytes(data));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_FALSE(a->descriptor.has_value());
  EXPECT_EQ(a->hello.server_nonce, nonce(1));
  // A server that says "no AUTH" must send the descriptor.
  EXPECT_FALSE(decode_accept(bytes(encode_accept({{.max_in_flight = 16}, std::nullopt}))).ok());

  Proof p{};
  p[3] = std::byte{3};
  std::string m;
  append_auth(m, 0, MsgType::kAuth, p);
  EXPECT_EQ(*message_type(bytes(m)), MsgType::kAuth);
  auto got = decode_auth_message(bytes(m));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, p);
  EXPECT_FALSE(decode_auth_message(bytes(m + '\0')).ok());  // one frame, nothing after

  std::string granted = encode_auth_granted(
      {p, Descriptor{.epoch = 9, .rkey = 11, .transport = TransportKind::kVerbs}});
  EXPECT_LE(granted.size(), kMaxVerbsMessage);
  auto g = decode_auth_granted(bytes(granted));
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->server_proof, p);
  EXPECT_EQ(g->descriptor.rkey, 11u);
  EXPECT_FALSE(decode_auth_granted(bytes(granted, 0, granted.size() - 1)).ok());
  EXPECT_FALSE(decode_auth_granted(bytes(m)).ok());

  std::string err = encode_error_message({ErrorCode::kAuthFailed, std::string(2000, 'x')});
  EXPECT_LE(err.size(), kMaxVerbsMessage);
  EXPECT_EQ(*message_type(bytes(err)), MsgType::kError);
  auto e = decode_reject(bytes(err));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->code, ErrorCode::kAuthFailed);
  EXPECT_EQ(error_kind(e->code), ErrorKind::kDenied);
  EXPECT_EQ(error_kind(ErrorCode::kServerFull), ErrorKind::kUnavailable);
}

// Random bytes into every decoder: never crash, never accept a wrong size.
TEST(Control, SurvivesRandomInput) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 20000; ++i) {
    std::string s(rng() % 160, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    if (s.size() >= 4 && (i & 1)) s.replace(0, 4, "RSC1");
    auto b = bytes(s);
    if (b.size() >= kFrameHeaderSize)
      (void)decode_frame_header(b.first(kFrameHeaderSize), kMaxRequestBody);
    (void)decode_hello(b);
    (void)decode_hello_ok(b);
    EXPECT_EQ(decode_descriptor(b).ok() && b.size() != kDescriptorSize, false);
    EXPECT_EQ(decode_read(b).ok() && b.size() != kReadSize, false);
    (void)decode_error(b);
    (void)decode_accept(b);
    (void)message_type(b);
    EXPECT_EQ(decode_auth(b).ok() && b.size() != kAuthSize, false);
    (void)decode_auth_message(b);
    (void)decode_auth_granted(b);
    EXPECT_EQ(decode_keepalive(b, MsgType::kKeepalive).ok() && b.size() != kKeepaliveMessageSize,
              false);
  }
}

}  // namespace
}  // namespace rrs::control
