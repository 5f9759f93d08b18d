#include "tests/support/localhost_tls.h"

#include <gtest/gtest.h>

#include "tests/support/test_pki.h"

namespace rrs::test {
namespace {

std::shared_ptr<const TlsContext> make(const TlsOptions& o, TlsRole role) {
  auto ctx = TlsContext::make(o, role, TlsWire::kTransport);
  EXPECT_TRUE(ctx.ok()) << ctx.status().message();
  return ctx.ok() ? std::make_shared<const TlsContext>(std::move(*ctx)) : nullptr;
}

}  // namespace

LocalhostTls::LocalhostTls() {
  TestPki pki(dir.path());
  pki.make_ca("ca");
  pki.make_localhost_cert("server", "ca");
  TlsOptions serving;
  serving.enabled = true;
  serving.cert_file = pki.crt("server");
  serving.key_file = pki.key("server");
  server = make(serving, TlsRole::kServer);
  TlsOptions trusting;
  trusting.enabled = true;
  trusting.ca_file = pki.crt("ca");
  client = make(trusting, TlsRole::kClient);
}

}  // namespace rrs::test
