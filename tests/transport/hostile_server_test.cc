// A server that lies: a hand-scripted TCP peer answers TcpTableReader with
// malformed frames. Each answer must be refused as bad data (or a timeout),
// never trusted, never allocated for, never hung on. Every case runs over
// plain TCP and over TLS (--tls): the frames inside TLS are as untrusted.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "common/net/socket.h"
#include "common/net/stream.h"
#include "common/tls/tls_stream.h"
#include "common/transport/tcp/table_reader.h"
#include "proto/byte_order.h"
#include "proto/control.h"
#include "tests/support/localhost_tls.h"

namespace rrs {
namespace {

using control::MsgType;
using Script = std::function<void(Stream&)>;
constexpr auto kIo = std::chrono::seconds(5);

// Listens on a loopback port; serves one connection with `script` on a
// thread, over TLS when `tls` (a server context) is given.
class ScriptedServer {
 public:
  ScriptedServer(Script script, std::shared_ptr<const TlsContext> tls) {
    listen_fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(listen_fd_.get(), 1), 0);
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this, script = std::move(script), tls = std::move(tls)] {
      UniqueFd c(::accept(listen_fd_.get(), nullptr, nullptr));
      if (c.get() < 0) return;
      if (!tls) {
        SocketStream plain(std::move(c));
        return script(plain);
      }
      auto secured = TlsStream::accept(std::move(c), *tls, "the test's client", Clock::now() + kIo);
      if (secured.ok()) script(**secured);
    });
  }
  ~ScriptedServer() {
    ::shutdown(listen_fd_.get(), SHUT_RDWR);
    thread_.join();
  }
  uint16_t port() const { return port_; }

 private:
  UniqueFd listen_fd_;
  uint16_t port_ = 0;
  std::thread thread_;
};

// Reads one whole request frame (header + body) from the client.
void read_request(Stream& s) {
  std::byte h[control::kFrameHeaderSize];
  if (!read_all(s, h, WaitLimit{kIo, std::nullopt}, "read a request").ok()) return;
  uint32_t body = wire::load_u32(h + 8);
  std::string skip(std::min<uint32_t>(body, control::kMaxRequestBody), '\0');
  (void)read_all(s, std::as_writable_bytes(std::span(skip)), WaitLimit{kIo, std::nullopt},
                 "read a request");
}

void send(Stream& s, const std::string& bytes) { (void)write_all(s, bytes, kIo, "answer"); }

// HELLO answered properly (no AUTH), then `after` for GET_DESCRIPTOR.
Script hello_then(std::string after) {
  return [after = std::move(after)](Stream& s) {
    read_request(s);
    std::string ok;
    control::append_hello_ok(ok, 0, {.max_in_flight = 16});
    send(s, ok);
    read_request(s);
    send(s, after);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the client read it
  };
}

// Each case over "tcp" and "tls".
class HostileServer : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "tls") tls_.emplace();
  }
  std::shared_ptr<const TlsContext> server_tls() const { return tls_ ? tls_->server : nullptr; }
  std::shared_ptr<const TlsContext> client_tls() const { return tls_ ? tls_->client : nullptr; }

  ScriptedServer serve(Script script) const { return {std::move(script), server_tls()}; }
  TcpTableReader reader(uint16_t port, std::chrono::milliseconds io = kIo,
                        std::optional<std::string> secret = std::nullopt) const {
    return TcpTableReader({"127.0.0.1", port}, io, std::move(secret), client_tls());
  }
  Status connect_to(uint16_t port, std::chrono::milliseconds io = kIo,
                    std::chrono::milliseconds connect_for = kIo) const {
    return reader(port, io).connect(Clock::now() + connect_for);
  }

  std::optional<test::LocalhostTls> tls_;
};

TEST_P(HostileServer, MalformedDescriptorIsRefused) {
  std::string d;
  control::append_descriptor(d, 0, {.epoch = 1, .table_length = 4096});
  d[control::kFrameHeaderSize + 30] = 7;  // transport 7: no such thing
  ScriptedServer server = serve(hello_then(d));
  Status s = connect_to(server.port());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kBadData) << s.message();
  EXPECT_NE(s.message().find("DESCRIPTOR"), std::string::npos) << s.message();
}

TEST_P(HostileServer, DescriptorOfTheWrongSizeIsRefused) {
  std::string d;
  control::append_descriptor(d, 0, {.epoch = 1, .table_length = 4096});
  d[8] = static_cast<char>(control::kDescriptorSize + 8);  // body_len claims more
  d.append(8, '\0');
  ScriptedServer server = serve(hello_then(d));
  Status s = connect_to(server.port());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kBadData) << s.message();
}

TEST_P(HostileServer, GarbageInsteadOfHelloOkIsRefused) {
  ScriptedServer server = serve([](Stream& s) {
    read_request(s);
    send(s, std::string(64, 'G'));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  });
  Status s = connect_to(server.port());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kBadData) << s.message();
  EXPECT_NE(s.message().find("magic"), std::string::npos) << s.message();
}

// A frame claiming a body far beyond any READ: refused from the header alone,
// before anything is allocated for it.
TEST_P(HostileServer, HugeBodyLengthIsRefusedUnread) {
  std::string huge;
  control::append_read_data_header(huge, 0, 0xfffffff0u);
  ScriptedServer server = serve(hello_then(huge));
  Status s = connect_to(server.port());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kBadData) << s.message();
  EXPECT_NE(s.message().find("exceeds"), std::string::npos) << s.message();
}

TEST_P(HostileServer, ServerThatNeverAnswersTimesOut) {
  ScriptedServer server = serve([](Stream& s) {
    read_request(s);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  });
  // Each try waits at most the I/O timeout; a stalled server is retried
  // like an absent one until the connect deadline.
  const auto t0 = Clock::now();
  Status s = connect_to(server.port(), std::chrono::milliseconds(1000),
                        std::chrono::milliseconds(1500));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kUnavailable) << s.message();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
}

// A server that asks for no secret cannot feed a client that holds one.
TEST_P(HostileServer, UnauthenticatedServerIsRefusedByAClientWithASecret) {
  ScriptedServer server = serve(hello_then(""));
  TcpTableReader r = reader(server.port(), kIo, std::string("the-client-holds-this-secret"));
  Status s = r.connect(Clock::now() + kIo);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kDenied) << s.message();
}

// A server that sends a byte now and then never lets a wait time out; the
// handshake must still end by the connect deadline, not one io_timeout per wait.
TEST_P(HostileServer, TricklingServerCannotHoldTheHandshakePastTheDeadline) {
  std::atomic<bool> stop{false};
  ScriptedServer server = serve([&](Stream& s) {
    read_request(s);
    std::string ok;
    control::append_hello_ok(ok, 0, {.max_in_flight = 16});
    for (size_t i = 0; !stop; i = (i + 1) % ok.size()) {
      send(s, ok.substr(i, 1));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  TcpTableReader r = reader(server.port(), std::chrono::seconds(30));
  const auto t0 = Clock::now();
  Status s = r.connect(t0 + std::chrono::milliseconds(1500));
  const auto took = Clock::now() - t0;
  stop = true;
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kUnavailable) << s.message();
  EXPECT_LT(took, std::chrono::milliseconds(2500)) << s.message();
  EXPECT_NE(s.message().find("--connect-timeout"), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(Wires, HostileServer, ::testing::Values("tcp", "tls"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace rrs
