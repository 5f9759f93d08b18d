// The TCP transport with TLS (--tls), beyond what the conformance suite runs
// over it: mutual TLS refuses a client without a certificate the server's CA
// signed, the shared secret is still asked for inside TLS (a client with a
// good certificate and the wrong secret gets nothing), and each mismatch
// between the ends is a clear error. Certificates are made at test time.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "common/tls/tls_context.h"
#include "common/transport/tcp/table_reader.h"
#include "common/transport/tcp/table_server.h"
#include "server/table_builder.h"
#include "tests/support/fake_payload.h"
#include "tests/support/server_loop.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_pki.h"

namespace rrs {
namespace {

constexpr auto kIo = std::chrono::milliseconds(5000);

std::shared_ptr<Table> small_table() {
  TableBuilder b;
  b.set_source({{Engine::kRedis, 7, 0, 15}, table::SourceKind::kScan, 0, {}});
  for (int i = 0; i < 10; ++i)
    b.add(0, "key:" + std::to_string(i), test::fake_payload(100, 'v'), -1);
  auto t = b.build(7);
  EXPECT_TRUE(t.ok());
  return *t;
}

std::shared_ptr<const TlsContext> context(const TlsOptions& o, TlsRole role) {
  auto ctx = TlsContext::make(o, role, TlsWire::kTransport);
  EXPECT_TRUE(ctx.ok()) << ctx.status().message();
  if (!ctx.ok()) return nullptr;
  return std::make_shared<const TlsContext>(std::move(*ctx));
}

class TcpTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pki_.make_ca("ca");
    pki_.make_ca("other-ca");
    pki_.make_localhost_cert("server", "ca");
    pki_.make_client_cert("client", "ca");
    pki_.make_client_cert("stranger", "other-ca");
  }

  // A server with the certificate `cert`; `mutual`: clients need one "ca" signed.
  void serve(const std::string& cert = "server", bool mutual = false,
             std::optional<std::string> secret = std::nullopt) {
    TlsOptions o;
    o.enabled = true;
    o.cert_file = pki_.crt(cert);
    o.key_file = pki_.key(cert);
    if (mutual) o.ca_file = pki_.crt("ca");
    TcpServerLimits limits;
    limits.tls = context(o, TlsRole::kServer);
    limits.access.secret = std::move(secret);
    ASSERT_TRUE(loop_
                    .start([&](event_base* base) {
                      return TcpTableServer::listen(base, {"127.0.0.1", 0}, limits);
                    })
                    .ok());
    loop_.publish(small_table());
  }
  void serve_plain() {
    ASSERT_TRUE(loop_
                    .start([&](event_base* base) {
                      return TcpTableServer::listen(base, {"127.0.0.1", 0}, {});
                    })
                    .ok());
    loop_.publish(small_table());
  }

  // Connects a reader trusting "ca", showing `cert` if given.
  Status connect(const std::string& cert = "", std::optional<std::string> secret = std::nullopt,
                 const std::string& sni = "", bool tls = true) {
    TlsOptions o;
    o.enabled = true;
    o.ca_file = pki_.crt("ca");
    o.sni = sni;
    if (!cert.empty()) {
      o.cert_file = pki_.crt(cert);
      o.key_file = pki_.key(cert);
    }
    TcpTableReader reader({"127.0.0.1", loop_.port()}, kIo, std::move(secret),
                          tls ? context(o, TlsRole::kClient) : nullptr);
    Status s = reader.connect(Clock::now() + std::chrono::seconds(3));
    if (s.ok()) epoch_ = reader.descriptor().epoch;
    return s;
  }

  test::TempDir dir_{"tcp-tls"};
  test::TestPki pki_{dir_.path()};
  test::ServerLoop loop_;
  uint64_t epoch_ = 0;  // the descriptor's, once one was read
};

TEST_F(TcpTlsTest, ServesTheDescriptorOverTls) {
  serve();
  Status s = connect();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(epoch_, 7u);
}

TEST_F(TcpTlsTest, MutualTlsRefusesAClientWithoutACertificate) {
  serve("server", true);
  Status s = connect();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kDenied) << s.message();
  EXPECT_NE(s.message().find("--tls-cert"), std::string::npos) << s.message();
}

TEST_F(TcpTlsTest, MutualTlsRefusesACertificateFromAnotherCa) {
  serve("server", true);
  Status s = connect("stranger");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kDenied) << s.message();
  EXPECT_NE(s.message().find("refused our certificate"), std::string::npos) << s.message();
  Status good = connect("client");
  EXPECT_TRUE(good.ok()) << good.message();
}

// A leaked certificate alone gets no table: the secret is still asked for.
TEST_F(TcpTlsTest, AGoodCertificateWithTheWrongSecretIsRefused) {
  serve("server", true, std::string(32, 's'));
  Status s = connect("client", std::string(32, 'x'));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kDenied) << s.message();
  EXPECT_EQ(epoch_, 0u) << "no descriptor before the secret";
  Status good = connect("client", std::string(32, 's'));
  EXPECT_TRUE(good.ok()) << good.message();
}

TEST_F(TcpTlsTest, AServerCertificateForAnotherNameIsRefusedUnlessSniNamesIt) {
  pki_.make_cert("elsewhere", "ca", test::CertSpec{"table.example", {"table.example"}, {}, -1, 30});
  serve("elsewhere");
  Status s = connect();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kDenied) << s.message();
  EXPECT_NE(s.message().find("--tls-sni"), std::string::npos) << s.message();
  Status named = connect("", std::nullopt, "table.example");
  EXPECT_TRUE(named.ok()) << named.message();
}

TEST_F(TcpTlsTest, APlainClientGetsNothingFromATlsServer) {
  serve();
  Status s = connect("", std::nullopt, "", false);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kUnavailable) << s.message();
}

TEST_F(TcpTlsTest, ATlsClientOfAPlainServerIsToldSo) {
  serve_plain();
  Status s = connect();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("drop --tls"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace rrs
