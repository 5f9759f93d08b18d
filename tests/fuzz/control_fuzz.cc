// libFuzzer target: the control-protocol decoders (proto/control.h), over
// the two ways their bytes arrive:
//   - a byte stream (TCP): frame headers, each followed by its body, decoded
//     by type, as either side of the connection would;
//   - one blob (rdmacm private data, a verbs SEND): decode_connect,
//     decode_accept, decode_reject, decode_keepalive, and the verbs AUTH
//     messages (decode_auth_message, decode_auth_granted) over the whole input.
// Whatever decodes must survive a round trip through its encoder: encoding
// the decoded message and decoding that again gives the same message, and
// for bodies without free bytes (HELLO, DESCRIPTOR, READ) the same bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "proto/control.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace rrs::control;

using Bytes = std::span<const std::byte>;

Bytes as_bytes(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }
// The body of a single encoded frame.
Bytes body_of(const std::string& frame) { return as_bytes(frame).subspan(kFrameHeaderSize); }
bool same(Bytes a, Bytes b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }

bool operator==(const Hello& a, const Hello& b) {
  return a.min_version == b.min_version && a.max_version == b.max_version &&
         a.log_only == b.log_only && a.client_nonce == b.client_nonce;
}
bool operator==(const HelloOk& a, const HelloOk& b) {
  return a.version == b.version && a.auth_required == b.auth_required &&
         a.server_nonce == b.server_nonce && a.max_read_len == b.max_read_len &&
         a.max_in_flight == b.max_in_flight && a.keepalive_interval_ms == b.keepalive_interval_ms;
}
bool operator==(const Descriptor& a, const Descriptor& b) {
  return a.epoch == b.epoch && a.table_length == b.table_length && a.remote_addr == b.remote_addr &&
         a.rkey == b.rkey && a.layout_version == b.layout_version && a.transport == b.transport &&
         a.log_id == b.log_id && a.log_length == b.log_length && a.log_addr == b.log_addr &&
         a.log_rkey == b.log_rkey && a.readable_length == b.readable_length;
}
bool operator==(const ErrorMsg& a, const ErrorMsg& b) {
  return a.code == b.code && a.text == b.text;
}

void check_hello(Bytes body) {
  auto m = decode_hello(body);
  if (!m.ok()) return;
  (void)negotiate_version(*m);
  std::string again;
  append_hello(again, 0, *m);
  FUZZ_CHECK(same(body_of(again), body), "HELLO does not re-encode to the same bytes");
}

void check_hello_ok(Bytes body) {
  auto m = decode_hello_ok(body);
  if (!m.ok()) return;
  std::string again;
  append_hello_ok(again, 0, *m);
  auto m2 = decode_hello_ok(body_of(again));
  FUZZ_CHECK(m2.ok() && *m2 == *m, "HELLO_OK does not survive a round trip");
}

void check_descriptor(Bytes body) {
  auto m = decode_descriptor(body);
  if (!m.ok()) return;
  std::string again;
  append_descriptor(again, 0, *m);
  FUZZ_CHECK(same(body_of(again), body), "DESCRIPTOR does not re-encode to the same bytes");
}

void check_read(Bytes body) {
  auto m = decode_read(body);
  if (!m.ok()) return;
  std::string again;
  append_read(again, 0, *m);
  FUZZ_CHECK(same(body_of(again), body), "READ does not re-encode to the same bytes");
}

void check_auth(Bytes body) {
  auto m = decode_auth(body);
  if (!m.ok()) return;
  std::string again;
  append_auth(again, 0, MsgType::kAuth, *m);
  FUZZ_CHECK(same(body_of(again), body), "AUTH does not re-encode to the same bytes");
}

void check_error(Bytes body) {
  auto m = decode_error(body);
  if (!m.ok()) return;
  FUZZ_CHECK(m->text.size() <= kMaxErrorText, "ERROR text of " + std::to_string(m->text.size()));
  (void)error_code_name(m->code);
  std::string again;
  append_error(again, 0, *m);
  auto m2 = decode_error(body_of(again));
  FUZZ_CHECK(m2.ok() && *m2 == *m, "ERROR does not survive a round trip");
}

// A TCP byte stream, frame after frame, as the receiving side decodes it.
void stream(Bytes in) {
  while (in.size() >= kFrameHeaderSize) {
    // The server accepts small requests only; the client also takes READ_DATA.
    (void)decode_frame_header(in.first(kFrameHeaderSize), kMaxRequestBody);
    auto h = decode_frame_header(in.first(kFrameHeaderSize), kMaxReadLength);
    if (!h.ok()) return;
    FUZZ_CHECK(h->body_len <= kMaxReadLength, "body_len " + std::to_string(h->body_len));
    in = in.subspan(kFrameHeaderSize);
    if (in.size() < h->body_len) return;
    Bytes body = in.first(h->body_len);
    in = in.subspan(h->body_len);
    switch (h->type) {
      case MsgType::kHello: check_hello(body); break;
      case MsgType::kHelloOk: check_hello_ok(body); break;
      case MsgType::kDescriptor: check_descriptor(body); break;
      case MsgType::kRead: check_read(body); break;
      case MsgType::kError: check_error(body); break;
      case MsgType::kAuth:
      case MsgType::kAuthOk: check_auth(body); break;
      case MsgType::kGetDescriptor:
      case MsgType::kReadData:
      case MsgType::kKeepalive:
      case MsgType::kKeepaliveAck: break;
    }
  }
}

// One blob: rdmacm private data or a verbs SEND.
void blob(Bytes in) {
  if (auto m = decode_connect(in); m.ok()) {
    auto m2 = decode_connect(as_bytes(encode_connect(*m)));
    FUZZ_CHECK(m2.ok() && *m2 == *m, "connect data does not survive a round trip");
  }
  if (auto m = decode_accept(in); m.ok()) {
    std::string again = encode_accept(*m);
    FUZZ_CHECK(again.size() <= kAcceptPrivateDataMax, "accept data too big");
    auto m2 = decode_accept(as_bytes(again));
    FUZZ_CHECK(m2.ok() && m2->hello == m->hello &&
                   m2->descriptor.has_value() == m->descriptor.has_value() &&
                   (!m->descriptor || *m2->descriptor == *m->descriptor),
               "accept data does not survive a round trip");
  }
  (void)message_type(in);
  if (auto m = decode_auth_message(in); m.ok()) {
    std::string again;
    append_auth(again, 0, MsgType::kAuth, *m);
    // The request id is the sender's to choose; the body must match.
    FUZZ_CHECK(same(body_of(again), in.subspan(kFrameHeaderSize)),
               "AUTH message does not re-encode to the same body");
  }
  if (auto m = decode_auth_granted(in); m.ok()) {
    std::string again = encode_auth_granted(*m);
    FUZZ_CHECK(again.size() <= kMaxVerbsMessage, "AUTH_OK message too big");
    auto m2 = decode_auth_granted(as_bytes(again));
    FUZZ_CHECK(m2.ok() && m2->server_proof == m->server_proof && m2->descriptor == m->descriptor,
               "AUTH_OK message does not survive a round trip");
  }
  if (auto m = decode_reject(in); m.ok()) {
    std::string again = encode_reject(*m);
    FUZZ_CHECK(again.size() <= kRejectPrivateDataMax, "reject data too big");
    auto m2 = decode_reject(as_bytes(again));
    // encode_reject cuts the text to fit; what is left must match.
    FUZZ_CHECK(m2.ok() && m2->code == m->code && m->text.starts_with(m2->text),
               "reject data does not survive a round trip");
  }
  for (MsgType t : {MsgType::kKeepalive, MsgType::kKeepaliveAck}) {
    if (auto seq = decode_keepalive(in, t); seq.ok()) {
      auto seq2 = decode_keepalive(as_bytes(encode_keepalive(t, *seq)), t);
      FUZZ_CHECK(seq2.ok() && *seq2 == *seq, "keepalive does not survive a round trip");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(reinterpret_cast<const std::byte*>(data), size);
  stream(in);
  blob(in);
  return 0;
}
