// TLS over a connected TCP socket (OpenSSL, non-blocking). The handshake runs
// either to a deadline (connect(), accept()) or a step at a time for an event
// loop (start(), then handshake() whenever wants() is ready). Its failures
// say what the operator should check: the CA, the name, the certificate's
// dates, or a peer that does not speak TLS at all.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "common/base/clock.h"
#include "common/base/status.h"
#include "common/net/socket.h"
#include "common/net/stream.h"
#include "common/tls/tls_context.h"

namespace rrs {

// "TLSv1.3 TLS_AES_256_GCM_SHA384; kernel TLS send receive": the session's
// protocol and cipher, and which directions the kernel encrypts ("kernel TLS
// off": OpenSSL does, in user space, with a copy more per byte).
std::string tls_session_summary(SSL* ssl);

class TlsStream final : public Stream {
 public:
  // A handshake begun over `fd`, not yet run. A client checks the server's
  // certificate names `host` (or the context's sni, which it also asks
  // for). `peer` names the other end in errors ("Redis at 10.0.0.1:6379").
  static Result<std::unique_ptr<TlsStream>> start(UniqueFd fd, const TlsContext& ctx,
                                                  const std::string& host, std::string peer);
  // The same, run to its end by `deadline`.
  static Result<std::unique_ptr<TlsStream>> connect(UniqueFd fd, const TlsContext& ctx,
                                                    const std::string& host, std::string peer,
                                                    Clock::time_point deadline);
  static Result<std::unique_ptr<TlsStream>> accept(UniqueFd fd, const TlsContext& ctx,
                                                   std::string peer, Clock::time_point deadline);
  ~TlsStream() override;
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // One step of the handshake: true once it is done; false to wait for
  // wants().
  Result<bool> handshake();

  Result<ReadProgress> read_some(std::span<char> dst) override;
  Result<size_t> write_some(std::string_view src) override;
  short wants() const override { return wants_; }
  bool buffered() const override;
  int fd() const override { return fd_.get(); }
  std::string security() const override;
  // The protocol and cipher, and what the kernel does (tls_session_summary).
  std::string summary() const;

 private:
  TlsStream(UniqueFd fd, SSL* ssl, std::string peer, const TlsContext& ctx);
  // What an OpenSSL call that returned `ret` means: 0 to wait for wants(),
  // else a Status for `step`.
  Status failure(int ret, const std::string& step);

  UniqueFd fd_;
  SSL* ssl_;
  std::string peer_;
  std::string name_;  // a client's: the name the server's certificate must hold
  TlsOptions options_;
  TlsRole role_;
  short wants_ = POLLIN;
  std::string failed_dates_;  // of a certificate verification refused
};

}  // namespace rrs
