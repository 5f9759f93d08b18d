#include "proto/control.h"

#include <algorithm>
#include <cstring>

#include "proto/byte_order.h"

namespace rrs::control {
namespace {

using wire::load_u16;
using wire::load_u32;
using wire::load_u64;

void append_frame_header(std::string& out, MsgType type, uint32_t body_len, uint32_t request_id) {
  std::byte h[kFrameHeaderSize] = {};
  std::memcpy(h, kMagic, sizeof kMagic);
  wire::store_u16(h + 4, static_cast<uint16_t>(type));
  wire::store_u32(h + 8, body_len);
  wire::store_u32(h + 12, request_id);
  out.append(reinterpret_cast<const char*>(h), sizeof h);
}

template <size_t N>
void append_body(std::string& out, const std::byte (&b)[N]) {
  out.append(reinterpret_cast<const char*>(b), N);
}

Status bad(const char* what, const std::string& why) {
  return Status::error(std::string("decode ") + what, why);
}

Status check_size(const char* what, std::span<const std::byte> body, size_t want) {
  if (body.size() != want)
    return bad(what, "body is " + std::to_string(body.size()) + " bytes, expected " +
                         std::to_string(want));
  return {};
}

bool all_zero(std::span<const std::byte> b) {
  for (std::byte x : b)
    if (x != std::byte{0}) return false;
  return true;
}

}  // namespace

const char* error_code_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::kBadMessage: return "bad message";
    case ErrorCode::kUnsupportedVersion: return "unsupported version";
    case ErrorCode::kNotReady: return "not ready";
    case ErrorCode::kEpochGone: return "epoch gone";
    case ErrorCode::kOutOfRange: return "out of range";
    case ErrorCode::kTooLarge: return "too large";
    case ErrorCode::kTooManyInFlight: return "too many reads in flight";
    case ErrorCode::kInternal: return "internal error";
    case ErrorCode::kAuthFailed: return "authentication failed";
    case ErrorCode::kServerFull: return "server full";
    case ErrorCode::kIdle: return "idle too long";
    case ErrorCode::kSnapshotPending: return "snapshot pending";
  }
  return "unknown error";
}

ErrorKind error_kind(ErrorCode c) {
  switch (c) {
    case ErrorCode::kNotReady:
    case ErrorCode::kEpochGone:
    case ErrorCode::kServerFull:
    case ErrorCode::kIdle:
    case ErrorCode::kSnapshotPending: return ErrorKind::kUnavailable;
    case ErrorCode::kAuthFailed: return ErrorKind::kDenied;
    default: return ErrorKind::kBadData;
  }
}

void append_hello(std::string& out, uint32_t request_id, const Hello& m) {
  std::byte b[kHelloSize] = {};
  wire::store_u16(b + 0, m.min_version);
  wire::store_u16(b + 2, m.max_version);
  wire::store_u32(b + 4, m.log_only ? kHelloLogOnly : 0);
  std::memcpy(b + 8, m.client_nonce.data(), kNonceSize);
  append_frame_header(out, MsgType::kHello, kHelloSize, request_id);
  append_body(out, b);
}

void append_hello_ok(std::string& out, uint32_t request_id, const HelloOk& m) {
  std::byte b[kHelloOkSize] = {};
  wire::store_u16(b + 0, m.version);
  wire::store_u16(b + 2, m.auth_required ? kHelloOkAuthRequired : 0);
  wire::store_u32(b + 4, m.max_read_len);
  wire::store_u32(b + 8, m.max_in_flight);
  wire::store_u32(b + 12, m.keepalive_interval_ms);
  std::memcpy(b + 16, m.server_nonce.data(), kNonceSize);
  append_frame_header(out, MsgType::kHelloOk, kHelloOkSize, request_id);
  append_body(out, b);
}

void append_auth(std::string& out, uint32_t request_id, MsgType type, const Proof& proof) {
  append_frame_header(out, type, kAuthSize, request_id);
  out.append(reinterpret_cast<const char*>(proof.data()), proof.size());
}

void append_get_descriptor(std::string& out, uint32_t request_id) {
  append_frame_header(out, MsgType::kGetDescriptor, 0, request_id);
}

void append_descriptor(std::string& out, uint32_t request_id, const Descriptor& m) {
  std::byte b[kDescriptorSize] = {};
  wire::store_u64(b + 0, m.epoch);
  wire::store_u64(b + 8, m.table_length);
  wire::store_u64(b + 16, m.remote_addr);
  wire::store_u32(b + 24, m.rkey);
  wire::store_u16(b + 28, m.layout_version);
  wire::store_u16(b + 30, static_cast<uint16_t>(m.transport));
  wire::store_u64(b + 32, m.log_id);
  wire::store_u64(b + 40, m.log_length);
  wire::store_u64(b + 48, m.log_addr);
  wire::store_u32(b + 56, m.log_rkey);
  wire::store_u64(b + 64, m.readable_length);
  append_frame_header(out, MsgType::kDescriptor, kDescriptorSize, request_id);
  append_body(out, b);
}

void append_read(std::string& out, uint32_t request_id, const ReadRequest& m) {
  std::byte b[kReadSize] = {};
  wire::store_u64(b + 0, m.epoch);
  wire::store_u64(b + 8, m.offset);
  wire::store_u32(b + 16, m.length);
  wire::store_u32(b + 20, static_cast<uint32_t>(m.region));
  append_frame_header(out, MsgType::kRead, kReadSize, request_id);
  append_body(out, b);
}

void append_read_data_header(std::string& out, uint32_t request_id, uint32_t length) {
  append_frame_header(out, MsgType::kReadData, length, request_id);
}

void append_error(std::string& out, uint32_t request_id, const ErrorMsg& m) {
  size_t n = std::min<size_t>(m.text.size(), kMaxErrorText);
  std::byte b[kErrorFixedSize] = {};
  wire::store_u32(b + 0, static_cast<uint32_t>(m.code));
  append_frame_header(out, MsgType::kError, static_cast<uint32_t>(kErrorFixedSize + n), request_id);
  append_body(out, b);
  out.append(m.text.data(), n);
}

Result<FrameHeader> decode_frame_header(std::span<const std::byte> bytes, uint32_t max_body) {
  if (bytes.size() != kFrameHeaderSize) return bad("frame header", "wrong size");
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return bad("frame header", "bad magic (not an rdma-server/rdma-client peer?)");
  uint16_t type = load_u16(&bytes[4]);
  if (type < static_cast<uint16_t>(MsgType::kHello) ||
      type > static_cast<uint16_t>(MsgType::kAuthOk))
    return bad("frame header", "unknown message type " + std::to_string(type));
  if (load_u16(&bytes[6]) != 0) return bad("frame header", "reserved flags are set");
  FrameHeader h;
  h.type = static_cast<MsgType>(type);
  h.body_len = load_u32(&bytes[8]);
  h.request_id = load_u32(&bytes[12]);
  if (h.body_len > max_body)
    return bad("frame header", "body of " + std::to_string(h.body_len) +
                                   " bytes exceeds the limit of " + std::to_string(max_body));
  return h;
}

namespace {

// The versions come first in every HELLO ever sent, so an older or newer
// client hears "unsupported version", not "bad message".
Status other_versions(std::span<const std::byte> body) {
  if (body.size() < 4 || body.size() == kHelloSize) return {};
  return negotiate_version(Hello{load_u16(body.data()), load_u16(&body[2]), {}}).status();
}

}  // namespace

Result<Hello> decode_hello(std::span<const std::byte> body) {
  RRS_RETURN_IF_ERROR(other_versions(body));
  RRS_RETURN_IF_ERROR(check_size("HELLO", body, kHelloSize));
  const uint32_t flags = load_u32(&body[4]);
  if ((flags & ~kHelloLogOnly) != 0) return bad("HELLO", "reserved flags are set");
  Hello m;
  m.min_version = load_u16(body.data());
  m.max_version = load_u16(&body[2]);
  m.log_only = (flags & kHelloLogOnly) != 0;
  std::memcpy(m.client_nonce.data(), &body[8], kNonceSize);
  if (m.min_version > m.max_version) return bad("HELLO", "min_version > max_version");
  return m;
}

ErrorCode hello_refusal(std::span<const std::byte> body) {
  return other_versions(body).ok() ? ErrorCode::kBadMessage : ErrorCode::kUnsupportedVersion;
}

Result<HelloOk> decode_hello_ok(std::span<const std::byte> body) {
  if (body.size() >= 2 && load_u16(body.data()) != kProtocolVersion)
    return bad("HELLO_OK", "rdma-server speaks protocol version " +
                               std::to_string(load_u16(body.data())) + ", this client " +
                               std::to_string(kProtocolVersion) + ": upgrade them together");
  RRS_RETURN_IF_ERROR(check_size("HELLO_OK", body, kHelloOkSize));
  HelloOk m;
  m.version = load_u16(body.data());
  const uint16_t flags = load_u16(&body[2]);
  if (flags & ~kHelloOkAuthRequired) return bad("HELLO_OK", "unknown flags are set");
  m.auth_required = flags & kHelloOkAuthRequired;
  std::memcpy(m.server_nonce.data(), &body[16], kNonceSize);
  m.max_read_len = load_u32(&body[4]);
  m.max_in_flight = load_u32(&body[8]);
  m.keepalive_interval_ms = load_u32(&body[12]);
  if (m.max_read_len == 0 || m.max_in_flight == 0)
    return bad("HELLO_OK", "server allows no reads (max_read_len or max_in_flight is 0)");
  return m;
}

Result<Proof> decode_auth(std::span<const std::byte> body) {
  RRS_RETURN_IF_ERROR(check_size("AUTH", body, kAuthSize));
  Proof p;
  std::memcpy(p.data(), body.data(), p.size());
  return p;
}

Result<Descriptor> decode_descriptor(std::span<const std::byte> body) {
  RRS_RETURN_IF_ERROR(check_size("DESCRIPTOR", body, kDescriptorSize));
  if (!all_zero(body.subspan(60, 4))) return bad("DESCRIPTOR", "reserved bytes are set");
  Descriptor m;
  m.epoch = load_u64(body.data());
  m.table_length = load_u64(&body[8]);
  m.remote_addr = load_u64(&body[16]);
  m.rkey = load_u32(&body[24]);
  m.layout_version = load_u16(&body[28]);
  uint16_t t = load_u16(&body[30]);
  if (t != static_cast<uint16_t>(TransportKind::kTcp) &&
      t != static_cast<uint16_t>(TransportKind::kVerbs))
    return bad("DESCRIPTOR", "unknown transport " + std::to_string(t));
  m.transport = static_cast<TransportKind>(t);
  m.log_id = load_u64(&body[32]);
  m.log_length = load_u64(&body[40]);
  m.log_addr = load_u64(&body[48]);
  m.log_rkey = load_u32(&body[56]);
  m.readable_length = load_u64(&body[64]);
  if (m.readable_length > m.table_length)
    return bad("DESCRIPTOR", "readable length " + std::to_string(m.readable_length) +
                                 " is past the table's " + std::to_string(m.table_length));
  if (m.log_id == 0 && (m.log_length || m.log_addr || m.log_rkey))
    return bad("DESCRIPTOR", "change log fields set without a log id");
  return m;
}

Result<ReadRequest> decode_read(std::span<const std::byte> body) {
  RRS_RETURN_IF_ERROR(check_size("READ", body, kReadSize));
  ReadRequest m;
  m.epoch = load_u64(body.data());
  m.offset = load_u64(&body[8]);
  m.length = load_u32(&body[16]);
  uint32_t region = load_u32(&body[20]);
  if (region > static_cast<uint32_t>(Region::kChangeLog))
    return bad("READ", "unknown region " + std::to_string(region));
  m.region = static_cast<Region>(region);
  return m;
}

Result<ErrorMsg> decode_error(std::span<const std::byte> body) {
  if (body.size() < kErrorFixedSize || body.size() > kErrorFixedSize + kMaxErrorText)
    return bad("ERROR", "body of " + std::to_string(body.size()) + " bytes");
  ErrorMsg m;
  m.code = static_cast<ErrorCode>(load_u32(body.data()));
  m.text.assign(reinterpret_cast<const char*>(body.data()) + kErrorFixedSize,
                body.size() - kErrorFixedSize);
  for (char& c : m.text)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return m;
}

std::string encode_keepalive(MsgType type, uint64_t seq) {
  std::byte b[kKeepaliveSize] = {};
  wire::store_u64(b, seq);
  std::string out;
  append_frame_header(out, type, kKeepaliveSize, 0);
  append_body(out, b);
  return out;
}

Result<uint64_t> decode_keepalive(std::span<const std::byte> message, MsgType want) {
  const char* what = want == MsgType::kKeepalive ? "KEEPALIVE" : "KEEPALIVE_ACK";
  if (message.size() != kKeepaliveMessageSize)
    return bad(what, "message is " + std::to_string(message.size()) + " bytes, expected " +
                         std::to_string(kKeepaliveMessageSize));
  auto h = decode_frame_header(message.first(kFrameHeaderSize), kKeepaliveSize);
  if (!h.ok()) return h.status();
  if (h->type != want || h->body_len != kKeepaliveSize)
    return bad(what, "unexpected message type " + std::to_string(static_cast<int>(h->type)));
  return load_u64(&message[kFrameHeaderSize]);
}

Result<uint16_t> negotiate_version(const Hello& m) {
  if (m.min_version > kProtocolVersion || m.max_version < kProtocolVersion)
    return Status::error("negotiate protocol version",
                         "client speaks versions " + std::to_string(m.min_version) + ".." +
                             std::to_string(m.max_version) + ", server speaks " +
                             std::to_string(kProtocolVersion));
  return kProtocolVersion;
}

namespace {

// The frame of type `want` at the start of `bytes`; its body is returned and
// `bytes` advanced past it.
Result<std::span<const std::byte>> take_frame(std::span<const std::byte>& bytes, MsgType want,
                                              uint32_t max_body, const char* what) {
  if (bytes.size() < kFrameHeaderSize) return bad(what, "private data too short");
  auto h = decode_frame_header(bytes.first(kFrameHeaderSize), max_body);
  if (!h.ok()) return h.status();
  if (h->type != want)
    return bad(what, "unexpected message type " + std::to_string(static_cast<int>(h->type)));
  if (bytes.size() - kFrameHeaderSize < h->body_len) return bad(what, "private data too short");
  auto body = bytes.subspan(kFrameHeaderSize, h->body_len);
  bytes = bytes.subspan(kFrameHeaderSize + h->body_len);
  return body;
}

}  // namespace

std::string encode_connect(const Hello& m) {
  std::string out;
  append_hello(out, 0, m);
  return out;
}

std::string encode_accept(const Accept& m) {
  std::string out;
  append_hello_ok(out, 0, m.hello);
  if (m.descriptor) append_descriptor(out, 0, *m.descriptor);
  return out;
}

std::string encode_reject(const ErrorMsg& m) {
  ErrorMsg cut = m;
  cut.text.resize(
      std::min(cut.text.size(), kRejectPrivateDataMax - kFrameHeaderSize - kErrorFixedSize));
  std::string out;
  append_error(out, 0, cut);
  return out;
}

Result<Hello> decode_connect(std::span<const std::byte> private_data) {
  auto body = take_frame(private_data, MsgType::kHello, kHelloSize, "connect private data");
  if (!body.ok()) return body.status();
  return decode_hello(*body);
}

ErrorCode connect_refusal(std::span<const std::byte> private_data) {
  auto body = take_frame(private_data, MsgType::kHello, kHelloSize, "connect private data");
  return body.ok() ? hello_refusal(*body) : ErrorCode::kBadMessage;
}

Result<Accept> decode_accept(std::span<const std::byte> private_data) {
  auto hello = take_frame(private_data, MsgType::kHelloOk, kHelloOkSize, "accept private data");
  if (!hello.ok()) return hello.status();
  auto h = decode_hello_ok(*hello);
  if (!h.ok()) return h.status();
  if (h->auth_required) return Accept{*h, std::nullopt};  // the descriptor comes after AUTH
  auto desc = take_frame(private_data, MsgType::kDescriptor, kDescriptorSize,
                         "accept private data");
  if (!desc.ok()) return desc.status();
  auto d = decode_descriptor(*desc);
  if (!d.ok()) return d.status();
  return Accept{*h, *d};
}

Result<ErrorMsg> decode_reject(std::span<const std::byte> private_data) {
  auto body = take_frame(private_data, MsgType::kError, kErrorFixedSize + kMaxErrorText,
                         "reject private data");
  if (!body.ok()) return body.status();
  return decode_error(*body);
}

std::string encode_auth_granted(const AuthGranted& m) {
  std::string out;
  append_auth(out, 0, MsgType::kAuthOk, m.server_proof);
  append_descriptor(out, 0, m.descriptor);
  return out;
}

std::string encode_error_message(const ErrorMsg& m) {
  ErrorMsg cut = m;
  cut.text.resize(std::min(cut.text.size(), kMaxVerbsMessage - kFrameHeaderSize - kErrorFixedSize));
  std::string out;
  append_error(out, 0, cut);
  return out;
}

Result<MsgType> message_type(std::span<const std::byte> message) {
  if (message.size() < kFrameHeaderSize) return bad("message", "shorter than a frame header");
  auto h = decode_frame_header(message.first(kFrameHeaderSize),
                               static_cast<uint32_t>(kMaxVerbsMessage));
  if (!h.ok()) return h.status();
  return h->type;
}

Result<Proof> decode_auth_message(std::span<const std::byte> message) {
  auto body = take_frame(message, MsgType::kAuth, kAuthSize, "AUTH message");
  if (!body.ok()) return body.status();
  if (!message.empty()) return bad("AUTH message", "bytes after the frame");
  return decode_auth(*body);
}

Result<AuthGranted> decode_auth_granted(std::span<const std::byte> message) {
  auto proof = take_frame(message, MsgType::kAuthOk, kAuthSize, "AUTH_OK message");
  if (!proof.ok()) return proof.status();
  auto desc = take_frame(message, MsgType::kDescriptor, kDescriptorSize, "AUTH_OK message");
  if (!desc.ok()) return desc.status();
  if (!message.empty()) return bad("AUTH_OK message", "bytes after the frames");
  auto p = decode_auth(*proof);
  if (!p.ok()) return p.status();
  auto d = decode_descriptor(*desc);
  if (!d.ok()) return d.status();
  return AuthGranted{*p, *d};
}

std::string encode_descriptor_message(const Descriptor& m) {
  std::string out;
  append_descriptor(out, 0, m);
  return out;
}

Result<Descriptor> decode_descriptor_message(std::span<const std::byte> message) {
  auto body = take_frame(message, MsgType::kDescriptor, kDescriptorSize, "DESCRIPTOR message");
  if (!body.ok()) return body.status();
  if (!message.empty()) return bad("DESCRIPTOR message", "bytes after the frame");
  return decode_descriptor(*body);
}

}  // namespace rrs::control
