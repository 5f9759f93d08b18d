// TLS for a test's own transport endpoints (--tls): a CA made for the test,
// a server context with a certificate for localhost and 127.0.0.1 it signed,
// and a client context that trusts that CA.
#pragma once

#include <memory>

#include "common/tls/tls_context.h"
#include "tests/support/temp_dir.h"

namespace rrs::test {

struct LocalhostTls {
  LocalhostTls();

  TempDir dir{"localhost-tls"};  // ca.crt, server.crt and their keys
  std::shared_ptr<const TlsContext> server;
  std::shared_ptr<const TlsContext> client;
};

}  // namespace rrs::test
