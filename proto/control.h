// The control protocol between rdma-client and rdma-server: version
// negotiation, authentication, the table descriptor, and (over TCP) reads of
// table ranges. Every message is a 16-byte frame header followed by its body.
//
// Frame header (little-endian):
//    0 4 magic 'R','S','C','1'
//    4 2 type (MsgType)
//    6 2 flags (0; reserved)
//    8 4 body_len
//   12 4 request_id (chosen by the client; echoed in the answer)
//
// Bodies:
//   HELLO        c->s 24 B: min_version u16, max_version u16, flags u32 (bit 0:
//                           log only), client_nonce [16]
//   HELLO_OK     s->c 32 B: version u16, flags u16 (bit 0: AUTH required),
//                           max_read_len u32, max_in_flight u32,
//                           keepalive_interval_ms u32 (0: none), server_nonce [16]
//   AUTH         c->s 32 B: HMAC-SHA256 proof of the shared secret (common/auth/auth.h)
//   AUTH_OK      s->c 32 B: the server's own proof, so the client knows it
//                           talks to a sidecar that holds the secret too
//   GET_DESCRIPTOR c->s 0 B
//   DESCRIPTOR   s->c 72 B: epoch u64, table_length u64 (0: no table, only to a
//                           log-only client), remote_addr u64 (verbs;
//                           0 over TCP), rkey u32 (verbs; 0 over TCP),
//                           layout_version u16, transport u16,
//                           log_id u64 (0: no change log), log_length u64,
//                           log_addr u64 (verbs; 0 over TCP), log_rkey u32
//                           (verbs; 0 over TCP), reserved u32,
//                           readable_length u64: the bytes from 0 that rkey
//                           covers (<= table_length; = it over TCP and for a
//                           complete table). Over verbs an epoch still being
//                           written is registered in growing prefixes: the
//                           server SENDs the same epoch's DESCRIPTOR again,
//                           unasked, each time its prefix grows.
//   READ         c->s 24 B: epoch u64 (region 1: the log id), offset u64,
//                           length u32, region u32 (0 table, 1 change log)
//   READ_DATA    s->c `length` bytes of the region at `offset`
//   ERROR        s->c 8+n B: code u32 (ErrorCode), reserved u32, n bytes of text
//                           (n <= kMaxErrorText); the server closes after it
//                           unless the code is kEpochGone
//   KEEPALIVE    c->s  8 B: seq u64        } verbs only, as SEND/RECV messages
//   KEEPALIVE_ACK s->c 8 B: seq u64 (echo) } (TCP has the kernel's keepalive)
//
// A real `struct ibv_mr` never crosses the wire: only the fields a reader
// needs, in a fixed layout.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "common/base/status.h"

namespace rrs::control {

inline constexpr uint8_t kMagic[4] = {'R', 'S', 'C', '1'};
// 2: the change log; 3: nonces in HELLO/HELLO_OK, AUTH and AUTH_OK; 4: the
// HELLO flag "log only", descriptors without a table, "snapshot pending";
// 5: readable_length in DESCRIPTOR, sent again over verbs as it grows.
inline constexpr uint16_t kProtocolVersion = 5;
// HELLO flags.
inline constexpr uint32_t kHelloLogOnly = 1;
inline constexpr size_t kFrameHeaderSize = 16;
inline constexpr size_t kNonceSize = 16, kProofSize = 32;
inline constexpr size_t kHelloSize = 24, kHelloOkSize = 32, kAuthSize = kProofSize,
                        kDescriptorSize = 72, kReadSize = 24, kErrorFixedSize = 8,
                        kKeepaliveSize = 8;
using Nonce = std::array<std::byte, kNonceSize>;
using Proof = std::array<std::byte, kProofSize>;
inline constexpr uint16_t kHelloOkAuthRequired = 1;
// A keepalive travels as one whole frame in one SEND.
inline constexpr size_t kKeepaliveMessageSize = kFrameHeaderSize + kKeepaliveSize;
inline constexpr uint32_t kMaxErrorText = 1024;
// Largest body a client may send; anything bigger is garbage.
inline constexpr uint32_t kMaxRequestBody = 64;
// Largest single READ: bounds the memory a request can pin on either side.
inline constexpr uint32_t kMaxReadLength = 16u << 20;
static_assert(kHelloSize <= kMaxRequestBody && kReadSize <= kMaxRequestBody &&
              kAuthSize <= kMaxRequestBody);

enum class MsgType : uint16_t {
  kHello = 1,
  kHelloOk = 2,
  kGetDescriptor = 3,
  kDescriptor = 4,
  kRead = 5,
  kReadData = 6,
  kError = 7,
  kKeepalive = 8,
  kKeepaliveAck = 9,
  kAuth = 10,
  kAuthOk = 11,
};

enum class ErrorCode : uint32_t {
  kBadMessage = 1,          // malformed frame or body
  kUnsupportedVersion = 2,  // no common protocol version
  kNotReady = 3,            // no table published yet
  kEpochGone = 4,           // the epoch asked for was replaced; fetch the descriptor again
  kOutOfRange = 5,          // offset/length outside the table
  kTooLarge = 6,            // length above max_read_len
  kTooManyInFlight = 7,     // more reads outstanding than max_in_flight
  kInternal = 8,
  kAuthFailed = 9,   // no AUTH, or a wrong proof: the secrets differ
  kServerFull = 10,  // --max-clients reached; try again later
  kIdle = 11,        // no request for --idle-timeout, or no AUTH in time
  // No table fits this client yet: the server is taking a snapshot for it
  // (or gathering replicas for one). Alive and working: wait, ask again.
  kSnapshotPending = 12,
};
const char* error_code_name(ErrorCode c);
// How a client should take an ERROR: kUnavailable when trying again later
// may work (not ready, epoch gone, server full, idle, snapshot pending), kDenied for a failed
// authentication, kBadData for the rest.
ErrorKind error_kind(ErrorCode c);

enum class TransportKind : uint16_t { kTcp = 1, kVerbs = 2 };

struct FrameHeader {
  MsgType type{};
  uint32_t body_len = 0;
  uint32_t request_id = 0;
};

struct Hello {
  uint16_t min_version = kProtocolVersion;
  uint16_t max_version = kProtocolVersion;
  // The client follows the change log and needs no table (it has loaded
  // one): a descriptor without one will do, and its connection does not
  // keep the table from being given back.
  bool log_only = false;
  Nonce client_nonce{};
};

struct HelloOk {
  uint16_t version = kProtocolVersion;
  // The client must AUTH before it gets the descriptor.
  bool auth_required = false;
  Nonce server_nonce{};
  uint32_t max_read_len = kMaxReadLength;
  uint32_t max_in_flight = 0;
  // How often the client must send KEEPALIVE (verbs); the server drops a
  // client it has not heard from for kKeepaliveMisses intervals.
  uint32_t keepalive_interval_ms = 0;
};
inline constexpr uint32_t kKeepaliveMisses = 5;

struct Descriptor {
  uint64_t epoch = 0;
  uint64_t table_length = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint16_t layout_version = 0;
  TransportKind transport = TransportKind::kTcp;
  // The change log continuing this epoch (proto/change_log_layout.h); id 0
  // when there is none (a scan-sourced table).
  uint64_t log_id = 0;
  uint64_t log_length = 0;
  uint64_t log_addr = 0;
  uint32_t log_rkey = 0;
  // What rkey covers now, from 0 (verbs: a streamed epoch's registered
  // prefix, which grows); table_length otherwise.
  uint64_t readable_length = 0;
};

// What a READ reads: the epoch's table or its change log.
enum class Region : uint32_t { kTable = 0, kChangeLog = 1 };

struct ReadRequest {
  uint64_t epoch = 0;  // the table's epoch, or the log's id for kChangeLog
  uint64_t offset = 0;
  uint32_t length = 0;
  Region region = Region::kTable;
};

struct ErrorMsg {
  ErrorCode code = ErrorCode::kInternal;
  std::string text;
};

// Encoders append a whole frame (header + body) to `out`.
void append_hello(std::string& out, uint32_t request_id, const Hello& m);
void append_hello_ok(std::string& out, uint32_t request_id, const HelloOk& m);
void append_auth(std::string& out, uint32_t request_id, MsgType type, const Proof& proof);
void append_get_descriptor(std::string& out, uint32_t request_id);
void append_descriptor(std::string& out, uint32_t request_id, const Descriptor& m);
void append_read(std::string& out, uint32_t request_id, const ReadRequest& m);
// READ_DATA's body is the table bytes themselves; only the header is built here.
void append_read_data_header(std::string& out, uint32_t request_id, uint32_t length);
void append_error(std::string& out, uint32_t request_id, const ErrorMsg& m);

// Decoders take exactly the bytes of one header or body. No I/O; all input untrusted.
// `max_body` is the largest body the receiver accepts for any type.
Result<FrameHeader> decode_frame_header(std::span<const std::byte> bytes, uint32_t max_body);
Result<Hello> decode_hello(std::span<const std::byte> body);
// How a server refuses a HELLO body that did not decode: `unsupported
// version` when its versions (the first 4 bytes of every HELLO ever sent)
// leave none in common with ours, else `bad message`.
ErrorCode hello_refusal(std::span<const std::byte> body);
Result<HelloOk> decode_hello_ok(std::span<const std::byte> body);
Result<Proof> decode_auth(std::span<const std::byte> body);  // AUTH or AUTH_OK
Result<Descriptor> decode_descriptor(std::span<const std::byte> body);
Result<ReadRequest> decode_read(std::span<const std::byte> body);
Result<ErrorMsg> decode_error(std::span<const std::byte> body);

// KEEPALIVE / KEEPALIVE_ACK as one whole message (header + body), the unit a
// verbs SEND carries. The decoder accepts exactly one message of type `want`.
std::string encode_keepalive(MsgType type, uint64_t seq);
Result<uint64_t> decode_keepalive(std::span<const std::byte> message, MsgType want);

// Picks the protocol version both sides speak.
Result<uint16_t> negotiate_version(const Hello& m);

// --- The same frames over verbs: rdmacm private data, then SEND/RECV ---------
// CONNECT_REQUEST carries a HELLO frame; the accept carries HELLO_OK, then
// DESCRIPTOR unless the server requires AUTH; a reject carries an ERROR
// frame. With AUTH, the client SENDs an AUTH frame on the new connection and
// the server SENDs back AUTH_OK + DESCRIPTOR, or an ERROR and disconnects:
// the rkey never travels before the proof is checked. rdma_cm may pad
// private data with zeros, so decoders ignore bytes after the frames they
// expect.
inline constexpr size_t kConnectPrivateDataMax = 56;  // IB CM REQ, less rdma_cm's header
inline constexpr size_t kAcceptPrivateDataMax = 196;  // IB CM REP
inline constexpr size_t kRejectPrivateDataMax = 148;  // IB CM REJ
// Largest verbs SEND either side makes, and the size of every receive buffer.
inline constexpr size_t kMaxVerbsMessage = 256;
static_assert(kFrameHeaderSize + kHelloSize <= kConnectPrivateDataMax);
static_assert(2 * kFrameHeaderSize + kHelloOkSize + kDescriptorSize <= kAcceptPrivateDataMax);
static_assert(2 * kFrameHeaderSize + kAuthSize + kDescriptorSize <= kMaxVerbsMessage);

struct Accept {
  HelloOk hello;
  std::optional<Descriptor> descriptor;  // none when AUTH is required
};
std::string encode_connect(const Hello& m);
std::string encode_accept(const Accept& m);
std::string encode_reject(const ErrorMsg& m);  // text cut to fit
Result<Hello> decode_connect(std::span<const std::byte> private_data);
ErrorCode connect_refusal(std::span<const std::byte> private_data);  // as hello_refusal
Result<Accept> decode_accept(std::span<const std::byte> private_data);
// An ERROR frame at the start of `bytes` (reject private data, or a message).
Result<ErrorMsg> decode_reject(std::span<const std::byte> private_data);

// Verbs messages after the accept. The server's answer to AUTH:
struct AuthGranted {
  Proof server_proof;
  Descriptor descriptor;
};
std::string encode_auth_granted(const AuthGranted& m);
std::string encode_error_message(const ErrorMsg& m);  // text cut to kMaxVerbsMessage
// The type of the one frame a message starts with (checked header), so the
// receiver can pick the decoder.
Result<MsgType> message_type(std::span<const std::byte> message);
Result<Proof> decode_auth_message(std::span<const std::byte> message);
Result<AuthGranted> decode_auth_granted(std::span<const std::byte> message);
// The same epoch's descriptor again, its readable_length grown (server to
// client, unasked, while the epoch is written).
std::string encode_descriptor_message(const Descriptor& m);
Result<Descriptor> decode_descriptor_message(std::span<const std::byte> message);

}  // namespace rrs::control
