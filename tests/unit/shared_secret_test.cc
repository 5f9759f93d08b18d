// common/auth: where the secret comes from, and the proofs built on it.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "common/auth/auth.h"

namespace rrs::auth {
namespace {

std::string write_temp(const std::string& contents) {
  char path[] = "/tmp/rrs-secret-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

TEST(SharedSecret, FromTheFilesFirstLineElseTheEnvironment) {
  std::string file = write_temp("0123456789abcdef0123\nsecond line\n");
  auto s = load_secret(file);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(**s, "0123456789abcdef0123");
  std::remove(file.c_str());

  ::setenv(kSecretEnv, "from-the-environment-0001", 1);
  s = load_secret("");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(**s, "from-the-environment-0001");
  ::unsetenv(kSecretEnv);
  s = load_secret("");
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->has_value());  // none given: no secret, not an error
}

TEST(SharedSecret, ShortOrMissingIsRefused) {
  std::string file = write_temp("short\n");
  auto s = load_secret(file);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("at least 16"), std::string::npos) << s.status().message();
  std::remove(file.c_str());
  EXPECT_FALSE(load_secret("/nonexistent/rrs-secret").ok());
}

TEST(SharedSecret, ProofsDependOnSecretNoncesAndRole) {
  const std::string secret = "the-shared-secret-0123";
  const control::Nonce c = *random_nonce(), s = *random_nonce();
  EXPECT_NE(c, s);  // 128 random bits each
  const control::Proof p = client_proof(secret, c, s);
  EXPECT_TRUE(proofs_equal(p, client_proof(secret, c, s)));
  EXPECT_FALSE(proofs_equal(p, server_proof(secret, c, s)));  // not reflectable
  EXPECT_FALSE(proofs_equal(p, client_proof(secret + "x", c, s)));
  EXPECT_FALSE(proofs_equal(p, client_proof(secret, s, c)));
  EXPECT_FALSE(proofs_equal(p, client_proof(secret, c, *random_nonce())));  // no replay
}

TEST(SharedSecret, ClientAndServerMustAgreeOnUsingOne) {
  control::HelloOk asks{.auth_required = true, .server_nonce = *random_nonce()};
  control::HelloOk open{};
  const control::Nonce c = *random_nonce();
  auto none = answer_challenge(std::nullopt, asks, c);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().kind(), ErrorKind::kDenied);
  auto doubt = answer_challenge(std::string("a-client-side-secret"), open, c);
  ASSERT_FALSE(doubt.ok());
  EXPECT_EQ(doubt.status().kind(), ErrorKind::kDenied);
  auto neither = answer_challenge(std::nullopt, open, c);
  ASSERT_TRUE(neither.ok());
  EXPECT_FALSE(neither->has_value());
  auto both = answer_challenge(std::string("a-client-side-secret"), asks, c);
  ASSERT_TRUE(both.ok());
  ASSERT_TRUE(both->has_value());
  EXPECT_TRUE(check_server("a-client-side-secret", c, asks,
                           server_proof("a-client-side-secret", c, asks.server_nonce))
                  .ok());
  EXPECT_EQ(check_server("a-client-side-secret", c, asks, **both).kind(), ErrorKind::kDenied);
}

}  // namespace
}  // namespace rrs::auth
