#include "tests/support/raw_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <span>

#include "common/auth/auth.h"
#include "tests/support/process.h"

namespace rrs::test {
namespace {

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

int remaining_ms(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
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

Result<RawPeer> RawPeer::connect(uint16_t port, const char* from) {
  std::string step = "connect to 127.0.0.1:" + std::to_string(port) + " from " + from;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::from_errno(step);
  RawPeer peer(fd);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  if (::inet_pton(AF_INET, from, &src.sin_addr) != 1 ||
      ::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0)
    return Status::from_errno(step + ": bind");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return Status::from_errno(step);
  return peer;
}

RawPeer::~RawPeer() {
  if (fd_ >= 0) ::close(fd_);
}

RawPeer::RawPeer(RawPeer&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

RawPeer& RawPeer::operator=(RawPeer&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

bool RawPeer::send(std::string_view bytes) {
  while (!bytes.empty()) {
    // MSG_NOSIGNAL: a server that hung up must not kill the test with SIGPIPE.
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

RawPeer::Io RawPeer::read_exact(std::string& buf, size_t n,
                                std::chrono::steady_clock::time_point deadline) {
  buf.clear();
  std::string chunk(65536, '\0');
  while (buf.size() < n) {
    pollfd p{fd_, POLLIN, 0};
    int rc = ::poll(&p, 1, remaining_ms(deadline));
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) return Io::kTimeout;
    ssize_t got = ::recv(fd_, chunk.data(), std::min(chunk.size(), n - buf.size()), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return Io::kClosed;  // EOF or reset
    buf.append(chunk.data(), static_cast<size_t>(got));
  }
  return Io::kOk;
}

RawPeer::Got RawPeer::read_frame(Frame& out, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
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
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    int rc = ::poll(&p, 1, remaining_ms(deadline));
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) return false;
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    if (received) received->append(buf, static_cast<size_t>(n));
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
