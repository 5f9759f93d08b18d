// The shared secret that gates the table, and the challenge-response built on
// it (HMAC-SHA256, OpenSSL's libcrypto). Both sides send a fresh random nonce
// in the handshake (HELLO / HELLO_OK); the client proves it holds the secret
// with
//     client proof = HMAC(secret, "rrs-auth-v3 client" || client_nonce || server_nonce)
// and the server answers with its own proof ("... server" ...), so neither a
// recorded exchange nor a reflected proof gets anyone in, and a client that
// was given a secret never loads from a sidecar that does not hold it.
#pragma once

#include <optional>
#include <string>

#include "common/base/status.h"
#include "proto/control.h"

namespace rrs::auth {

// Where a secret may come from besides --auth-file (never argv).
inline constexpr const char* kSecretEnv = "RDMA_SIDECAR_SECRET";
// Shorter secrets are refused: they could be guessed from one recorded exchange.
inline constexpr size_t kMinSecretLength = 16;

// The secret from `file` (its first line), or if `file` is empty
// from $RDMA_SIDECAR_SECRET; nullopt when neither is given. Warns when the
// file is readable by group or others. A secret that cannot be read or is
// too short is kUsage.
Result<std::optional<std::string>> load_secret(const std::string& file);

// 32 random bytes for a challenge; an error when libcrypto has none (a
// handshake must not go on with a nonce that could repeat).
Result<control::Nonce> random_nonce();
control::Proof client_proof(const std::string& secret, const control::Nonce& client_nonce,
                            const control::Nonce& server_nonce);
control::Proof server_proof(const std::string& secret, const control::Nonce& client_nonce,
                            const control::Nonce& server_nonce);
// Constant time, so a guesser learns nothing from how long a "no" takes.
bool proofs_equal(const control::Proof& a, const control::Proof& b);

// Client side, after HELLO_OK: the proof to send, or nullopt when the server
// asks for none. Fails (ErrorKind::kDenied) when only one side has a secret.
Result<std::optional<control::Proof>> answer_challenge(const std::optional<std::string>& secret,
                                                       const control::HelloOk& hello,
                                                       const control::Nonce& client_nonce);
// Client side, after AUTH_OK: is the server's proof right?
Status check_server(const std::string& secret, const control::Nonce& client_nonce,
                    const control::HelloOk& hello, const control::Proof& proof);

}  // namespace rrs::auth
