#include "common/tls/tls_stream.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <cerrno>

namespace rrs {
namespace {

bool is_ip_address(const std::string& host) {
  in6_addr a6{};
  in_addr a4{};
  return inet_pton(AF_INET, host.c_str(), &a4) == 1 || inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

std::string asn1_time_text(const ASN1_TIME* t) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return "?";
  ASN1_TIME_print(bio, t);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string text(data, static_cast<size_t>(n > 0 ? n : 0));
  BIO_free(bio);
  return text;
}

// The validity of the certificate verification stopped at, kept for the
// error message: OpenSSL keeps no peer certificate of a failed handshake.
int note_failed_certificate(int ok, X509_STORE_CTX* store) {
  if (ok) return ok;
  auto* ssl = static_cast<SSL*>(
      X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  auto* dates = ssl ? static_cast<std::string*>(SSL_get_app_data(ssl)) : nullptr;
  X509* cert = X509_STORE_CTX_get_current_cert(store);
  if (dates && cert && dates->empty())
    *dates = "valid from " + asn1_time_text(X509_get0_notBefore(cert)) + " to " +
             asn1_time_text(X509_get0_notAfter(cert));
  return ok;
}

// Why the peer's certificate was not trusted, and what to check.
// What to check when a TLS client gets no TLS back.
std::string plain_port_hint(const std::string& flag) {
  return "is it a plain, non-TLS port? drop " + flag + " or use the TLS port";
}

std::string verify_failure(long result, const std::string& dates, const std::string& name,
                           const TlsOptions& o, TlsRole role) {
  const std::string whose = role == TlsRole::kClient ? "the server's" : "the client's";
  const std::string ca = o.ca_file.empty() ? "the system's CA store (give " + o.flag + "-cacert)"
                                           : o.flag + "-cacert " + o.ca_file;
  const std::string when = dates.empty() ? "" : " (" + dates + ")";
  switch (result) {
    case X509_V_ERR_CERT_HAS_EXPIRED: return whose + " certificate expired" + when + "; renew it";
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return whose + " certificate is not valid yet" + when + "; check both hosts' clocks";
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return whose + " certificate is not for " + name + " (give " + o.flag +
             "-sni with a name it holds, or connect by that name)";
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
      return whose + " certificate is not signed by a CA in " + ca + " (" +
             X509_verify_cert_error_string(result) + ")";
    default:
      return whose + " certificate was not trusted: " + X509_verify_cert_error_string(result);
  }
}

}  // namespace

TlsStream::TlsStream(UniqueFd fd, SSL* ssl, std::string peer, const TlsContext& ctx)
    : fd_(std::move(fd)),
      ssl_(ssl),
      peer_(std::move(peer)),
      options_(ctx.options()),
      role_(ctx.role()) {}

TlsStream::~TlsStream() {
  // A close_notify if it goes out at once; never wait for the peer's.
  if (SSL_is_init_finished(ssl_)) SSL_shutdown(ssl_);
  SSL_free(ssl_);
}

Result<std::unique_ptr<TlsStream>> TlsStream::start(UniqueFd fd, const TlsContext& ctx,
                                                    const std::string& host, std::string peer) {
  const std::string step = "TLS with " + peer;
  set_nonblocking(fd.get());
  ERR_clear_error();
  SSL* ssl = SSL_new(ctx.get());
  if (ssl == nullptr) return Status::error(step, take_tls_errors("out of memory"));
  std::unique_ptr<TlsStream> s(new TlsStream(std::move(fd), ssl, std::move(peer), ctx));
  if (SSL_set_fd(ssl, s->fd_.get()) != 1) return Status::error(step, take_tls_errors());
  SSL_set_app_data(ssl, &s->failed_dates_);
  SSL_set_verify(ssl, SSL_get_verify_mode(ssl), note_failed_certificate);
  if (ctx.role() == TlsRole::kClient) {
    SSL_set_connect_state(ssl);
    s->name_ = ctx.options().sni.empty() ? host : ctx.options().sni;
    const std::string& name = s->name_;
    // SNI carries names only; an address is checked against the
    // certificate's IP entries instead.
    if (!is_ip_address(name)) SSL_set_tlsext_host_name(ssl, name.c_str());
    if (!ctx.options().insecure) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      const int ok = is_ip_address(name) ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                                         : X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
      if (ok != 1) return Status::error(step, "cannot check the name '" + name + "'");
    }
  } else {
    SSL_set_accept_state(ssl);
  }
  return s;
}

Result<std::unique_ptr<TlsStream>> TlsStream::connect(UniqueFd fd, const TlsContext& ctx,
                                                      const std::string& host, std::string peer,
                                                      Clock::time_point deadline) {
  auto s = start(std::move(fd), ctx, host, std::move(peer));
  if (!s.ok()) return s.status();
  for (;;) {
    auto done = (*s)->handshake();
    if (!done.ok()) return done.status();
    if (*done) return s;
    Status waited = wait_for(**s, deadline, "TLS handshake with " + (*s)->peer_);
    // A plain Redis waits for a command's end that a TLS hello never sends.
    if (!waited.ok() && ctx.role() == TlsRole::kClient)
      return Status::error("TLS handshake with " + (*s)->peer_,
                           "no answer in time (" + plain_port_hint(ctx.options().flag) +
                               "; or is the server stalled?)",
                           waited.sys_errno())
          .as(waited.kind());
    RRS_RETURN_IF_ERROR(waited);
  }
}

Result<std::unique_ptr<TlsStream>> TlsStream::accept(UniqueFd fd, const TlsContext& ctx,
                                                     std::string peer, Clock::time_point deadline) {
  return connect(std::move(fd), ctx, "", std::move(peer), deadline);
}

Result<bool> TlsStream::handshake() {
  ERR_clear_error();
  const int ret = SSL_do_handshake(ssl_);
  if (ret == 1) return true;
  RRS_RETURN_IF_ERROR(failure(ret, "TLS handshake with " + peer_));
  return false;
}

Status TlsStream::failure(int ret, const std::string& step) {
  const int code = SSL_get_error(ssl_, ret);
  const int sys_errno = errno;
  switch (code) {
    case SSL_ERROR_WANT_READ: wants_ = POLLIN; return {};
    case SSL_ERROR_WANT_WRITE: wants_ = POLLOUT; return {};
    case SSL_ERROR_ZERO_RETURN:
      // Mid-handshake, an end of stream (an unexpected EOF is taken as one):
      // a plain server that hung up on a hello it could not parse.
      return Status::error(step, SSL_is_init_finished(ssl_) || role_ != TlsRole::kClient
                                     ? "the peer closed the TLS session"
                                     : "the peer closed the connection in the TLS handshake (" +
                                           plain_port_hint(options_.flag) + ")")
          .as(ErrorKind::kUnavailable);
    case SSL_ERROR_SYSCALL:
      ERR_clear_error();
      if (sys_errno != 0 && ret < 0)
        return Status::from_errno(step, sys_errno).as(ErrorKind::kUnavailable);
      return Status::error(step, SSL_is_init_finished(ssl_)
                                     ? "the peer closed the connection"
                                     : "the peer closed the connection in the TLS handshake (is "
                                       "it a TLS port? does it want a client certificate, " +
                                           options_.flag + "-cert and " + options_.flag + "-key?)")
          .as(ErrorKind::kUnavailable);
    default: break;
  }
  const long verify = SSL_get_verify_result(ssl_);
  const unsigned long first = ERR_peek_error();
  const std::string errors = take_tls_errors("TLS error " + std::to_string(code));
  if (verify != X509_V_OK)
    return Status::error(step, verify_failure(verify, failed_dates_, name_, options_, role_))
        .as(ErrorKind::kDenied);
  switch (ERR_GET_REASON(first)) {
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
    case SSL_R_HTTP_REQUEST:
      return Status::error(step, "the peer does not speak TLS (" + errors + "): " +
                                     (role_ == TlsRole::kClient ? plain_port_hint(options_.flag)
                                                                : "was it started without TLS?"))
          .as(ErrorKind::kUnavailable);
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
      return Status::error(step, "the peer wants a client certificate: give " + options_.flag +
                                     "-cert and " + options_.flag + "-key")
          .as(ErrorKind::kDenied);
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_TLSV1_ALERT_DECRYPT_ERROR:
      return Status::error(step, "the peer refused our certificate (" + errors + "): is " +
                                     options_.flag +
                                     "-cert signed by the CA the peer trusts, and current?")
          .as(ErrorKind::kDenied);
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
      return Status::error(step, "the peer sent no certificate, and mutual TLS wants one")
          .as(ErrorKind::kDenied);
    default: break;
  }
  return Status::error(step, errors).as(ErrorKind::kUnavailable);
}

Result<ReadProgress> TlsStream::read_some(std::span<char> dst) {
  ERR_clear_error();
  size_t got = 0;
  const int ret = SSL_read_ex(ssl_, dst.data(), dst.size(), &got);
  if (ret == 1) return ReadProgress{got, false};
  if (SSL_get_error(ssl_, ret) == SSL_ERROR_ZERO_RETURN) return ReadProgress{0, true};
  RRS_RETURN_IF_ERROR(failure(ret, "read from " + peer_));
  return ReadProgress{};
}

Result<size_t> TlsStream::write_some(std::string_view src) {
  if (src.empty()) return size_t{0};
  ERR_clear_error();
  size_t put = 0;
  const int ret = SSL_write_ex(ssl_, src.data(), src.size(), &put);
  if (ret == 1) return put;
  Status failed = failure(ret, "write to " + peer_);
  if (failed.ok()) return size_t{0};
  // A TLS 1.3 server checks our certificate after our side of the handshake
  // is done: its refusal is an alert waiting to be read, and the reason.
  char byte = 0;
  size_t peeked = 0;
  ERR_clear_error();
  const int peek = SSL_peek_ex(ssl_, &byte, 1, &peeked);
  if (peek != 1) {
    Status alert = failure(peek, "write to " + peer_);
    if (alert.kind() == ErrorKind::kDenied) return alert;
  }
  return failed;
}

bool TlsStream::buffered() const { return SSL_pending(ssl_) > 0; }

std::string TlsStream::security() const {
  return std::string(SSL_get_version(ssl_)) + " " + SSL_get_cipher_name(ssl_);
}

std::string TlsStream::summary() const { return tls_session_summary(ssl_); }

std::string tls_session_summary(SSL* ssl) {
  const std::string kernel = std::string(BIO_get_ktls_send(SSL_get_wbio(ssl)) ? " send" : "") +
                             (BIO_get_ktls_recv(SSL_get_rbio(ssl)) ? " receive" : "");
  return std::string(SSL_get_version(ssl)) + " " + SSL_get_cipher_name(ssl) + "; kernel TLS" +
         (kernel.empty() ? " off" : kernel);
}

}  // namespace rrs
