#include "common/tls/tls_context.h"

#include <openssl/err.h>
#include <openssl/x509.h>

#include <fstream>

namespace rrs {

std::string take_tls_errors(const std::string& otherwise) {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    // "error:0A000086:SSL routines::certificate verify failed": the last
    // field is what a reader needs.
    std::string line = buf;
    if (size_t at = line.rfind(':'); at != std::string::npos && at + 1 < line.size())
      line = line.substr(at + 1);
    if (out.find(line) != std::string::npos) continue;
    out += (out.empty() ? "" : "; ") + line;
  }
  return out.empty() ? otherwise : out;
}

namespace {

Status usage(const std::string& step, const std::string& why) {
  return Status::error(step, why).as(ErrorKind::kUsage);
}

// A file named by a flag: readable, or a usage error that names the flag.
Status check_readable(const std::string& path, const std::string& flag) {
  if (std::ifstream(path).good()) return {};
  return Status::from_errno(flag + " " + path).as(ErrorKind::kUsage);
}

}  // namespace

Result<TlsContext> TlsContext::make(const TlsOptions& o, TlsRole role, TlsWire wire) {
  const std::string& f = o.flag;
  const std::string step = "set up TLS (" + f + ")";
  if (role == TlsRole::kServer && (o.cert_file.empty() || o.key_file.empty()))
    return usage(step, "a TLS server needs a certificate and its key: give " + f + "-cert and " +
                           f + "-key");
  if (o.cert_file.empty() != o.key_file.empty())
    return usage(step,
                 "give " + f + "-cert and " + f + "-key together (a certificate and its key)");
  for (const auto& [path, flag] :
       {std::pair{o.ca_file, f + "-cacert"}, std::pair{o.cert_file, f + "-cert"},
        std::pair{o.key_file, f + "-key"}})
    if (!path.empty()) RRS_RETURN_IF_ERROR(check_readable(path, flag));

  ERR_clear_error();
  SSL_CTX* raw = SSL_CTX_new(role == TlsRole::kClient ? TLS_client_method() : TLS_server_method());
  if (raw == nullptr) return Status::error(step, take_tls_errors("out of memory"));
  TlsContext ctx(raw, role, o);

  const bool ours = wire == TlsWire::kTransport;
  SSL_CTX_set_min_proto_version(raw, ours ? TLS1_3_VERSION : TLS1_2_VERSION);
  // Writes may be partial and may resume from a buffer that moved: the
  // callers' output buffers grow while a write waits.
  SSL_CTX_set_mode(raw, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // A peer that closes without a close_notify has closed (Redis does): every
  // message on these wires carries its own length, so nothing goes unnoticed.
  SSL_CTX_set_options(raw, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF |
                               (ours ? SSL_OP_ENABLE_KTLS : 0));

  if (!o.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(raw, o.cert_file.c_str()) != 1)
      return usage(step,
                   f + "-cert " + o.cert_file + ": " + take_tls_errors("not a PEM certificate"));
    const bool key_loaded = SSL_CTX_use_PrivateKey_file(raw, o.key_file.c_str(),
                                                        SSL_FILETYPE_PEM) == 1;
    const bool mismatch = ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH;
    if (!key_loaded && !mismatch)
      return usage(step,
                   f + "-key " + o.key_file + ": " + take_tls_errors("not a PEM private key"));
    if (mismatch || SSL_CTX_check_private_key(raw) != 1)
      return usage(step,
                   f + "-key " + o.key_file + " is not the key of " + f + "-cert " + o.cert_file);
  }
  if (!o.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(raw, o.ca_file.c_str(), nullptr) != 1)
      return usage(step, f + "-cacert " + o.ca_file + ": " +
                             take_tls_errors("no PEM certificates in it"));
  } else if (role == TlsRole::kClient && !o.insecure) {
    SSL_CTX_set_default_verify_paths(raw);
  }
  if (role == TlsRole::kClient) {
    SSL_CTX_set_verify(raw, o.insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, nullptr);
  } else if (!o.ca_file.empty()) {
    // Mutual TLS: a client must show a certificate the CA signed.
    SSL_CTX_set_verify(raw, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return ctx;
}

}  // namespace rrs
