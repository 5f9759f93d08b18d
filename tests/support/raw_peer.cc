#include "tests/support/raw_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <span>

#include "common/auth/auth.h"
#include "common/net/socket.h"
#include "common/tls/tls_stream.h"
#include "tests/support/process.h"

namespace rrs::test {
namespace {

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace

const char* to_string(RawPeer::Got g) {
  switch (g) {
    case RawPeer::Got::kFrame: return "a frame";
    case RawPeer::Got::kClosed: return "connection closed";
    case RawPeer::Got::kTimeout: return "timeout";
    case RawPeer::Got::kGarbage: return "bytes that are not a frame";
  }
  return "?";
}

Result<RawPeer> RawPeer::connect(uint16_t port, const char* from, const TlsContext* tls) {
  std::string step = "connect to 127.0.0.1:" + std::to_string(port) + " from " + from;
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return Status::from_errno(step);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  if (::inet_pton(AF_INET, from, &src.sin_addr) != 1 ||
      ::bind(fd.get(), reinterpret_cast<sockaddr*>(&src), sizeof src) != 0)
    return Status::from_errno(step + ": bind");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return Status::from_errno(step);
  if (tls == nullptr) return RawPeer(std::make_unique<SocketStream>(std::move(fd)));
  auto secured = TlsStream::connect(std::move(fd), *tls, "127.0.0.1", "rdma-server",
                                    Clock::now() + std::chrono::seconds(5));
  if (!secured.ok()) return secured.status().wrap(step);
  return RawPeer(std::move(*secured));
}

bool RawPeer::send(std::string_view bytes) {
  // False on any failure: a server that hung up (a close-on-garbage server
  // may do so before we finish) or one that stopped reading for 5 s.
  return write_all(*stream_, bytes, std::chrono::seconds(5), "send").ok();
}

RawPeer::Io RawPeer::read_some(std::string& buf, size_t most, Clock::time_point deadline) {
  std::string chunk(std::min<size_t>(most, 65536), '\0');
  for (;;) {
    auto got = stream_->read_some(chunk);
    if (!got.ok() || got->closed) return Io::kClosed;  // EOF, reset, a TLS alert
    if (got->bytes > 0) {
      buf.append(chunk.data(), got->bytes);
      return Io::kOk;
    }
    if (!wait_for(*stream_, deadline, "read").ok()) return Io::kTimeout;
  }
}

RawPeer::Io RawPeer::read_exact(std::string& buf, size_t n, Clock::time_point deadline) {
  buf.clear();
  while (buf.size() < n)
    if (Io io = read_some(buf, n - buf.size(), deadline); io != Io::kOk) return io;
  return Io::kOk;
}

RawPeer::Got RawPeer::read_frame(Frame& out, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string header;
  switch (read_exact(header, control::kFrameHeaderSize, deadline)) {
    case Io::kOk: break;
    case Io::kClosed: return Got::kClosed;
    case Io::kTimeout: return Got::kTimeout;
  }
  auto h = control::decode_frame_header(as_bytes(header), control::kMaxReadLength);
  if (!h.ok()) return Got::kGarbage;
  out.header = *h;
  switch (read_exact(out.body, out.header.body_len, deadline)) {
    case Io::kOk: return Got::kFrame;
    case Io::kClosed: return Got::kClosed;
    case Io::kTimeout: return Got::kTimeout;
  }
  return Got::kTimeout;
}

bool RawPeer::wait_closed(std::chrono::milliseconds timeout, std::string* received) {
  const auto deadline = Clock::now() + timeout;
  std::string got;
  for (;;) {
    switch (read_some(got, 4096, deadline)) {
      case Io::kOk: continue;
      case Io::kClosed:
        if (received) received->append(got);
        return true;
      case Io::kTimeout:
        if (received) received->append(got);
        return false;
    }
  }
}

Result<control::Descriptor> RawPeer::handshake(std::chrono::milliseconds timeout) {
  // One request at a time, as rdma-client does: no pipelining assumed.
  auto exchange = [&](const std::string& request, control::MsgType want,
                      const char* name) -> Result<std::string> {
    if (!send(request))
      return Status::error(std::string("send before ") + name, "connection closed");
    Frame f;
    Got g = read_frame(f, timeout);
    if (g != Got::kFrame) return Status::error(std::string("read ") + name, to_string(g));
    if (f.header.type != want)
      return Status::error(std::string("read ") + name,
                           "got message type " + std::to_string(static_cast<int>(f.header.type)));
    return f.body;
  };
  control::Hello hello_msg;
  hello_msg.client_nonce = *auth::random_nonce();
  std::string hello, get;
  control::append_hello(hello, 1, hello_msg);
  control::append_get_descriptor(get, 2);
  auto ok = exchange(hello, control::MsgType::kHelloOk, "HELLO_OK");
  if (!ok.ok()) return ok.status();
  auto h = control::decode_hello_ok(as_bytes(*ok));
  if (!h.ok()) return h.status();
  if (h->auth_required) {  // the suite's shared secret (process.h)
    std::string auth;
    control::append_auth(auth, 3, control::MsgType::kAuth,
                         auth::client_proof(kTestSidecarSecret, hello_msg.client_nonce,
                                            h->server_nonce));
    if (auto a = exchange(auth, control::MsgType::kAuthOk, "AUTH_OK"); !a.ok()) return a.status();
  }
  auto d = exchange(get, control::MsgType::kDescriptor, "DESCRIPTOR");
  if (!d.ok()) return d.status();
  return control::decode_descriptor(as_bytes(*d));
}

}  // namespace rrs::test
