// TLS streams (common/tls) between two ends on loopback, with certificates
// made for the test (tests/support/test_pki.h): a good session both ways,
// and each way it is refused, with what the error must tell the operator.
#include "common/tls/tls_stream.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <future>
#include <string>
#include <thread>

#include "tests/support/temp_dir.h"
#include "tests/support/test_pki.h"

namespace rrs {
namespace {

using namespace std::chrono_literals;
using test::CertSpec;

class TlsStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pki_.make_ca("ca");
    pki_.make_ca("other-ca");
    pki_.make_localhost_cert("server", "ca");
    pki_.make_client_cert("client", "ca");
    listener_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ASSERT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), len), 0);
    ASSERT_EQ(::listen(listener_.get(), 4), 0);
    ASSERT_EQ(::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
    port_ = ntohs(a.sin_port);
  }

  TlsOptions server_options(const std::string& cert = "server") const {
    TlsOptions o;
    o.enabled = true;
    o.cert_file = pki_.crt(cert);
    o.key_file = pki_.key(cert);
    return o;
  }
  TlsOptions client_options() const {
    TlsOptions o;
    o.enabled = true;
    o.ca_file = pki_.crt("ca");
    return o;
  }
  static TlsContext context(const TlsOptions& o, TlsRole role) {
    auto ctx = TlsContext::make(o, role, TlsWire::kTransport);
    EXPECT_TRUE(ctx.ok()) << ctx.status().message();
    return std::move(*ctx);
  }

  UniqueFd dial() {
    auto fd = tcp_connect(Endpoint{"127.0.0.1", port_}, 5s);
    EXPECT_TRUE(fd.ok()) << fd.status().message();
    return fd.ok() ? std::move(*fd) : UniqueFd();
  }
  UniqueFd take() { return UniqueFd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC)); }

  // The server's accept() on a thread of its own: its result.
  std::future<Result<std::unique_ptr<TlsStream>>> serve(const TlsOptions& o) {
    return std::async(std::launch::async, [this, o] {
      TlsContext ctx = context(o, TlsRole::kServer);
      return TlsStream::accept(take(), ctx, "client", Clock::now() + 5s);
    });
  }
  Result<std::unique_ptr<TlsStream>> connect(const TlsOptions& o, const std::string& host) {
    TlsContext ctx = context(o, TlsRole::kClient);
    return TlsStream::connect(dial(), ctx, host, "the server", Clock::now() + 5s);
  }

  // Why a server refused this client: with TLS 1.3 the client's handshake
  // ends before the server has checked its certificate, so the refusal may
  // come with the first read.
  static std::string refusal(Result<std::unique_ptr<TlsStream>>& client) {
    if (!client.ok()) return client.status().message();
    std::vector<char> buf(64);
    auto n = read_by(**client, buf, Clock::now() + 5s, "read");
    EXPECT_FALSE(n.ok()) << "the server took the client";
    return n.ok() ? "" : n.status().message();
  }

  test::TempDir dir_{"tls"};
  test::TestPki pki_{dir_.path()};
  UniqueFd listener_;
  uint16_t port_ = 0;
};

TEST_F(TlsStreamTest, CarriesBytesBothWaysOverTls13) {
  auto server = serve(server_options());
  auto client = connect(client_options(), "localhost");
  ASSERT_TRUE(client.ok()) << client.status().message();
  auto accepted = server.get();
  ASSERT_TRUE(accepted.ok()) << accepted.status().message();
  EXPECT_EQ((*client)->security().rfind("TLSv1.3 ", 0), 0u) << (*client)->security();

  // More than the socket buffers hold: writes go partial and wait.
  std::string big(8 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + i / 4096);
  std::thread writer([&] { EXPECT_TRUE(write_all(**client, big, 5s, "write").ok()); });
  std::string got;
  std::vector<char> buf(64 << 10);
  while (got.size() < big.size()) {
    auto n = read_by(**accepted, buf, Clock::now() + 5s, "read");
    ASSERT_TRUE(n.ok()) << n.status().message();
    got.append(buf.data(), *n);
  }
  writer.join();
  EXPECT_TRUE(got == big);

  ASSERT_TRUE(write_all(**accepted, "+PONG\r\n", 5s, "write").ok());
  auto n = read_by(**client, buf, Clock::now() + 5s, "read");
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(std::string(buf.data(), *n), "+PONG\r\n");

  accepted->reset();  // the server goes: the client reads the end
  auto end = (*client)->read_some(buf);
  for (auto deadline = Clock::now() + 5s; end.ok() && !end->closed && Clock::now() < deadline;) {
    ASSERT_TRUE(wait_for(**client, deadline, "read").ok());
    end = (*client)->read_some(buf);
  }
  ASSERT_TRUE(end.ok()) << end.status().message();
  EXPECT_TRUE(end->closed);
}

TEST_F(TlsStreamTest, ChecksTheAddressWhenTheHostIsOne) {
  auto server = serve(server_options());
  auto client = connect(client_options(), "127.0.0.1");
  ASSERT_TRUE(client.ok()) << client.status().message();
  EXPECT_TRUE(server.get().ok());
}

TEST_F(TlsStreamTest, RefusesAServerSignedByAnotherCa) {
  pki_.make_localhost_cert("stranger", "other-ca");
  auto server = serve(server_options("stranger"));
  auto client = connect(client_options(), "localhost");
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().kind(), ErrorKind::kDenied);
  EXPECT_NE(client.status().message().find("the server"), std::string::npos)
      << client.status().message();
  EXPECT_NE(client.status().message().find("not signed by a CA in --tls-cacert " + pki_.crt("ca")),
            std::string::npos)
      << client.status().message();
  EXPECT_FALSE(server.get().ok());
}

TEST_F(TlsStreamTest, InsecureSkipsTheCheck) {
  pki_.make_localhost_cert("stranger", "other-ca");
  auto server = serve(server_options("stranger"));
  TlsOptions o = client_options();
  o.ca_file.clear();
  o.insecure = true;
  auto client = connect(o, "somewhere.else");
  ASSERT_TRUE(client.ok()) << client.status().message();
  EXPECT_TRUE(server.get().ok());
}

TEST_F(TlsStreamTest, RefusesAnExpiredCertificate) {
  pki_.make_cert("expired", "ca", CertSpec{"localhost", {"localhost"}, {}, -30, -1});
  auto server = serve(server_options("expired"));
  auto client = connect(client_options(), "localhost");
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().kind(), ErrorKind::kDenied);
  EXPECT_NE(client.status().message().find("certificate expired (valid from"), std::string::npos)
      << client.status().message();
  EXPECT_FALSE(server.get().ok());
}

TEST_F(TlsStreamTest, RefusesACertificateForAnotherName) {
  auto server = serve(server_options());
  auto client = connect(client_options(), "redis.example");
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().kind(), ErrorKind::kDenied);
  EXPECT_NE(client.status().message().find("not for redis.example"), std::string::npos)
      << client.status().message();
  EXPECT_NE(client.status().message().find("--tls-sni"), std::string::npos)
      << client.status().message();
  EXPECT_FALSE(server.get().ok());
}

TEST_F(TlsStreamTest, SniNamesTheCertificateToCheck) {
  auto server = serve(server_options());
  TlsOptions o = client_options();
  o.sni = "localhost";
  auto client = connect(o, "127.0.0.2");  // no such name in the certificate
  ASSERT_TRUE(client.ok()) << client.status().message();
  EXPECT_TRUE(server.get().ok());
}

TEST_F(TlsStreamTest, TlsToAPlainPortSaysSo) {
  // A plain Redis port answers a ClientHello as a bad command, then closes.
  std::thread plain([this] {
    UniqueFd fd = take();
    char buf[512];
    (void)::recv(fd.get(), buf, sizeof buf, 0);
    const std::string reply = "-ERR unknown command\r\n";
    (void)::send(fd.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
  });
  auto client = connect(client_options(), "localhost");
  plain.join();
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.status().message().find("does not speak TLS"), std::string::npos)
      << client.status().message();
  EXPECT_NE(client.status().message().find("drop --tls"), std::string::npos)
      << client.status().message();
}

TEST_F(TlsStreamTest, PlainToATlsPortIsRefusedByTheServer) {
  auto server = serve(server_options());
  UniqueFd fd = dial();
  const std::string ping = "*1\r\n$4\r\nPING\r\n";
  ASSERT_EQ(::send(fd.get(), ping.data(), ping.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(ping.size()));
  auto accepted = server.get();
  ASSERT_FALSE(accepted.ok());
  EXPECT_NE(accepted.status().message().find("does not speak TLS"), std::string::npos)
      << accepted.status().message();
  EXPECT_NE(accepted.status().message().find("started without TLS"), std::string::npos)
      << accepted.status().message();
}

TEST_F(TlsStreamTest, MutualTlsWantsAClientCertificate) {
  TlsOptions so = server_options();
  so.ca_file = pki_.crt("ca");
  auto server = serve(so);
  auto client = connect(client_options(), "localhost");
  const std::string why = refusal(client);
  EXPECT_NE(why.find("wants a client certificate: give --tls-cert and --tls-key"),
            std::string::npos)
      << why;
  auto accepted = server.get();
  ASSERT_FALSE(accepted.ok());
  EXPECT_EQ(accepted.status().kind(), ErrorKind::kDenied);
  EXPECT_NE(accepted.status().message().find("sent no certificate"), std::string::npos)
      << accepted.status().message();
}

TEST_F(TlsStreamTest, MutualTlsTakesACertificateTheCaSigned) {
  TlsOptions so = server_options();
  so.ca_file = pki_.crt("ca");
  auto server = serve(so);
  TlsOptions co = client_options();
  co.cert_file = pki_.crt("client");
  co.key_file = pki_.key("client");
  auto client = connect(co, "localhost");
  ASSERT_TRUE(client.ok()) << client.status().message();
  EXPECT_TRUE(server.get().ok());
}

TEST_F(TlsStreamTest, MutualTlsRefusesAClientOfAnotherCa) {
  pki_.make_client_cert("stranger", "other-ca");
  TlsOptions so = server_options();
  so.ca_file = pki_.crt("ca");
  auto server = serve(so);
  TlsOptions co = client_options();
  co.cert_file = pki_.crt("stranger");
  co.key_file = pki_.key("stranger");
  auto client = connect(co, "localhost");
  const std::string why = refusal(client);
  EXPECT_NE(why.find("the peer refused our certificate"), std::string::npos) << why;
  auto accepted = server.get();
  ASSERT_FALSE(accepted.ok());
  EXPECT_NE(accepted.status().message().find("the client's certificate is not signed by a CA in "
                                             "--tls-cacert"),
            std::string::npos)
      << accepted.status().message();
}

TEST(TlsContextTest, FileErrorsNameTheFlag) {
  test::TempDir dir("tls-files");
  test::TestPki pki(dir.path());
  pki.make_ca("ca");
  pki.make_localhost_cert("a", "ca");
  pki.make_localhost_cert("b", "ca");
  TlsOptions o;
  o.flag = "--redis-tls";
  o.ca_file = dir.file("missing.crt");
  auto missing = TlsContext::make(o, TlsRole::kClient, TlsWire::kRedis);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().kind(), ErrorKind::kUsage);
  EXPECT_NE(missing.status().message().find("--redis-tls-cacert " + dir.file("missing.crt")),
            std::string::npos)
      << missing.status().message();

  o.ca_file = pki.crt("ca");
  o.cert_file = pki.crt("a");
  o.key_file = pki.key("b");
  auto mismatch = TlsContext::make(o, TlsRole::kClient, TlsWire::kRedis);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("is not the key of --redis-tls-cert"),
            std::string::npos)
      << mismatch.status().message();

  o.key_file.clear();
  auto half = TlsContext::make(o, TlsRole::kClient, TlsWire::kRedis);
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("together"), std::string::npos) << half.status().message();

  TlsOptions no_cert;
  auto server = TlsContext::make(no_cert, TlsRole::kServer, TlsWire::kTransport);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("needs a certificate"), std::string::npos)
      << server.status().message();
}

}  // namespace
}  // namespace rrs
