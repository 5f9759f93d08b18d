// TLS settings made once per program and peer kind (OpenSSL's SSL_CTX):
// which CA to trust, which certificate to show, which TLS versions. Files
// are read and checked when the context is made, so a wrong path or a key
// that does not match its certificate is a usage error at start-up, not a
// failed connection later.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "common/base/status.h"

namespace rrs {

struct TlsOptions {
  bool enabled = false;
  std::string ca_file;    // CAs to verify the peer with; empty: the system's store
  std::string cert_file;  // our certificate (a client's for mutual TLS)
  std::string key_file;   // its private key
  std::string sni;        // the name to ask for and check; empty: the host connected to
  bool insecure = false;  // no verification of the server (as redis-cli --insecure)
  // How the flags that set these are spelled, for errors ("--redis-tls").
  std::string flag = "--tls";
};

enum class TlsRole { kClient, kServer };

// Whose wire: Redis and Valkey take TLS 1.2 and 1.3 (their own default); the
// sidecar's transport, where both ends are ours, only 1.3, with kernel TLS
// where the kernel has it (the table's bytes then go out without a copy
// through OpenSSL's buffers).
enum class TlsWire { kRedis, kTransport };

class TlsContext {
 public:
  // A client's context verifies the server unless `insecure`; a server's
  // verifies client certificates when ca_file is given (mutual TLS), and
  // then requires one.
  static Result<TlsContext> make(const TlsOptions& options, TlsRole role, TlsWire wire);

  SSL_CTX* get() const { return ctx_.get(); }
  TlsRole role() const { return role_; }
  const TlsOptions& options() const { return options_; }

 private:
  struct Free {
    void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
  };
  TlsContext(SSL_CTX* ctx, TlsRole role, TlsOptions options)
      : ctx_(ctx), role_(role), options_(std::move(options)) {}

  std::unique_ptr<SSL_CTX, Free> ctx_;
  TlsRole role_;
  TlsOptions options_;
};

// The OpenSSL error queue as one line (emptied), or `otherwise` if empty.
std::string take_tls_errors(const std::string& otherwise = "");

}  // namespace rrs
