#include "common/auth/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "common/base/log.h"

namespace rrs::auth {
namespace {

control::Proof hmac(const std::string& secret, std::string_view role,
                    const control::Nonce& client_nonce, const control::Nonce& server_nonce) {
  std::string msg = "rrs-auth-v3 ";
  msg += role;
  msg.append(reinterpret_cast<const char*>(client_nonce.data()), client_nonce.size());
  msg.append(reinterpret_cast<const char*>(server_nonce.data()), server_nonce.size());
  control::Proof out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(),
       reinterpret_cast<unsigned char*>(out.data()), &len);
  return out;
}

const std::string kHowToGive = std::string("give --auth-file FILE or set ") + kSecretEnv;

}  // namespace

namespace {

// Others may not read the secret; its group may when it is one of ours (a
// Kubernetes Secret mounted with fsGroup is 0440, that group's).
bool readable_by_others(const struct stat& st) {
  if ((st.st_mode & 007) != 0) return true;
  if ((st.st_mode & 070) == 0 || st.st_gid == getegid()) return false;
  std::vector<gid_t> groups(static_cast<size_t>(std::max(getgroups(0, nullptr), 0)));
  groups.resize(
      static_cast<size_t>(std::max(getgroups(static_cast<int>(groups.size()), groups.data()), 0)));
  return std::find(groups.begin(), groups.end(), st.st_gid) == groups.end();
}

}  // namespace

Result<std::optional<std::string>> load_secret(const std::string& file) {
  std::string secret;
  std::string from;
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return Status::from_errno("read the shared secret from " + file).as(ErrorKind::kUsage);
    std::getline(in, secret);  // the first line
    if (!secret.empty() && secret.back() == '\r') secret.pop_back();
    from = file;
    struct stat st {};
    if (stat(file.c_str(), &st) == 0 && readable_by_others(st))
      log::warn("the shared secret file " + file + " is readable by others; chmod 600 it");
  } else if (const char* env = std::getenv(kSecretEnv); env != nullptr) {
    secret = env;
    from = std::string("$") + kSecretEnv;
  } else {
    return std::optional<std::string>();
  }
  if (secret.size() < kMinSecretLength)
    return Status::error("shared secret from " + from, "is " + std::to_string(secret.size()) +
                                                           " bytes; use at least " +
                                                           std::to_string(kMinSecretLength) +
                                                           " (e.g. `openssl rand -hex 32 > FILE`)")
        .as(ErrorKind::kUsage);
  return std::optional<std::string>(std::move(secret));
}

Result<control::Nonce> random_nonce() {
  control::Nonce n{};
  // Without randomness a challenge could repeat: no handshake goes on.
  if (RAND_bytes(reinterpret_cast<unsigned char*>(n.data()), static_cast<int>(n.size())) != 1)
    return Status::error("make a challenge nonce", "libcrypto has no random bytes (RAND_bytes)");
  return n;
}

control::Proof client_proof(const std::string& secret, const control::Nonce& client_nonce,
                            const control::Nonce& server_nonce) {
  return hmac(secret, "client", client_nonce, server_nonce);
}

control::Proof server_proof(const std::string& secret, const control::Nonce& client_nonce,
                            const control::Nonce& server_nonce) {
  return hmac(secret, "server", client_nonce, server_nonce);
}

bool proofs_equal(const control::Proof& a, const control::Proof& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Result<std::optional<control::Proof>> answer_challenge(const std::optional<std::string>& secret,
                                                       const control::HelloOk& hello,
                                                       const control::Nonce& client_nonce) {
  if (hello.auth_required && !secret)
    return Status::error("authenticate to rdma-server",
                         "it requires the shared secret (its --auth-file): " + kHowToGive)
        .as(ErrorKind::kDenied);
  if (!hello.auth_required && secret)
    return Status::error("authenticate to rdma-server",
                         "it does not ask for the shared secret, so it cannot prove it is the "
                         "sidecar you meant (is it started without --auth-file?); refusing to "
                         "load from it")
        .as(ErrorKind::kDenied);
  if (!secret) return std::optional<control::Proof>();
  return std::optional<control::Proof>(client_proof(*secret, client_nonce, hello.server_nonce));
}

Status check_server(const std::string& secret, const control::Nonce& client_nonce,
                    const control::HelloOk& hello, const control::Proof& proof) {
  if (proofs_equal(proof, server_proof(secret, client_nonce, hello.server_nonce))) return {};
  return Status::error("authenticate rdma-server",
                       "its proof of the shared secret is wrong (not the sidecar you meant?)")
      .as(ErrorKind::kDenied);
}

}  // namespace rrs::auth
