// Passwords: taken from the environment or a file (never argv), and a
// refused AUTH is "unavailable" (exit 3) with a message that says so. The
// sidecar's shared secret: both sides from a file or the environment, a
// wrong or missing one refused (and logged by the server with the peer), no
// secret only on loopback.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include "common/cli/exit_codes.h"
#include "tests/support/dataset.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"

namespace rrs::test {
namespace {

constexpr auto kFailFast = std::chrono::seconds(30);

bool mentions_auth(const std::string& text) {
  return lower(text).find("auth") != std::string::npos;
}

class AuthTest : public SidecarTest {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(master_.started()) << master_.start_error();
    ASSERT_TRUE(replica_.started()) << replica_.start_error();
    fill_strings(master_, 0, "k:", 100);
    fill_strings(master_, 4, "k4:", 10);
    ASSERT_FALSE(HasFailure());
  }

  RedisProcess master_{RedisOptions().with_password("master-pw")};
  RedisProcess replica_{RedisOptions().with_password("replica-pw")};
  TempDir dir_{"auth"};
};

TEST_F(AuthTest, PasswordsFromEnvironment) {
  SidecarServer server(master_.address(), {}, {{"RDMA_SERVER_REDIS_AUTH", "master-pw"}});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = sync_to(server.port(), replica_, {}, {{"RDMA_CLIENT_REDIS_AUTH", "replica-pw"}});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(replica_.digest(), master_.digest());
  EXPECT_EQ(replica_.keyspace(), master_.keyspace());
  // Secrets stay out of what the programs print.
  for (const std::string& out :
       {server.process().stdout_text(), server.process().stderr_text(), run.out, run.err}) {
    EXPECT_EQ(out.find("master-pw"), std::string::npos) << out;
    EXPECT_EQ(out.find("replica-pw"), std::string::npos) << out;
  }
}

TEST_F(AuthTest, AclUserAndPasswordFromFiles) {
  master_.run({"ACL", "SETUSER", "syncer", "on", ">syncer-pw", "~*", "&*", "+@all"});
  replica_.run({"ACL", "SETUSER", "loader", "on", ">loader-pw", "~*", "&*", "+@all"});
  std::string server_file = dir_.write_file("server-auth", "syncer syncer-pw\n");
  std::string client_file = dir_.write_file("client-auth", "loader loader-pw\n");

  SidecarServer server(master_.address(), {"--redis-auth-file", server_file});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = sync_to(server.port(), replica_, {"--redis-auth-file", client_file});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(replica_.digest(), master_.digest());
}

TEST_F(AuthTest, WrongMasterPasswordExitsUnavailable) {
  SidecarServer server(master_.address(), {}, {{"RDMA_SERVER_REDIS_AUTH", "not-it"}});
  int code = server.process().wait(kFailFast);
  EXPECT_EQ(code, exit_code::kUnavailable) << server.describe();
  EXPECT_TRUE(mentions_auth(server.process().stderr_text())) << server.describe();
  EXPECT_EQ(server.process().stderr_text().find("not-it"), std::string::npos)
      << "the password must not be echoed\n"
      << server.describe();
}

TEST_F(AuthTest, MissingMasterPasswordExitsUnavailable) {
  SidecarServer server(master_.address());
  int code = server.process().wait(kFailFast);
  EXPECT_EQ(code, exit_code::kUnavailable) << server.describe();
  EXPECT_TRUE(mentions_auth(server.process().stderr_text())) << server.describe();
}

TEST_F(AuthTest, WrongTargetPasswordExitsUnavailable) {
  SidecarServer server(master_.address(), {}, {{"RDMA_SERVER_REDIS_AUTH", "master-pw"}});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = sync_to(server.port(), replica_, {}, {{"RDMA_CLIENT_REDIS_AUTH", "not-it"}},
                          kFailFast);
  EXPECT_EQ(run.exit_code, exit_code::kUnavailable) << run.describe();
  EXPECT_TRUE(mentions_auth(run.err)) << run.describe();
  EXPECT_EQ(replica_.keyspace(), Keyspace{});
}

// --- The sidecar's shared secret --------------------------------------------

class SidecarSecretTest : public MasterTest {
 protected:
  void SetUp() override {
    MasterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(replica_.started()) << replica_.start_error();
    fill_strings(master_, 0, "k:", 200);
    secret_file_ = dir_.write_file("secret", "7b6f0c1e9d2a4b5c8e3f1a2b3c4d5e6f\n");
  }
  // No secret from the suite's environment: only what the test gives.
  static inline const Process::Env kNoEnvSecret = {{kSidecarSecretEnv, ""}};

  RedisProcess replica_;
  TempDir dir_{"sidecar-secret"};
  std::string secret_file_;
};

TEST_F(SidecarSecretTest, SecretFromFilesOnBothSides) {
  SidecarServer server(master_.address(), {"--auth-file", secret_file_}, kNoEnvSecret);
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = sync_to(server.port(), replica_, {"--auth-file", secret_file_}, kNoEnvSecret);
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(replica_.digest(), master_.digest());
  EXPECT_NE(server.process().stderr_text().find("authenticated"), std::string::npos)
      << server.describe();
  for (const std::string& out :
       {server.process().stdout_text(), server.process().stderr_text(), run.out, run.err})
    EXPECT_EQ(out.find("7b6f0c1e9d2a"), std::string::npos) << "the secret must not be echoed\n"
                                                           << out;
}

// On a device without type-2 memory windows each client gets a protection
// domain of its own; rxe has windows, so rdma-server's test hook forces the
// fallback (transport/verbs_protection_test covers it in detail). The
// client's registration runs off the event loop, stretched here by a second
// with the other hook (transport/verbs_registration_test shows the loop
// serving others meanwhile).
TEST_F(SidecarSecretTest, ProtectionDomainPerClientWhenThereAreNoMemoryWindows) {
  if (test_transport() != "verbs") GTEST_SKIP() << "verbs only: TCP has no rkeys";
  SidecarServer server(master_.address(), {"--auth-file", secret_file_},
                       {{kSidecarSecretEnv, ""},
                        {"RRS_TEST_NO_MEMORY_WINDOWS", "1"},
                        {"RRS_TEST_PD_REGISTRATION_DELAY_MS", "1000"}});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = sync_to(server.port(), replica_, {"--auth-file", secret_file_}, kNoEnvSecret);
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(replica_.digest(), master_.digest());
  const std::string log = server.process().stderr_text();
  EXPECT_NE(log.find("RRS_TEST_NO_MEMORY_WINDOWS"), std::string::npos) << server.describe();
  EXPECT_NE(log.find("a protection domain of its own"), std::string::npos) << server.describe();
  EXPECT_NE(log.find("RRS_TEST_PD_REGISTRATION_DELAY_MS"), std::string::npos) << server.describe();
  EXPECT_NE(log.find("off the event loop"), std::string::npos) << server.describe();
}

TEST_F(SidecarSecretTest, WrongSecretIsRefusedAndTheServerLogsThePeer) {
  SidecarServer server(master_.address(), {"--auth-file", secret_file_}, kNoEnvSecret);
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = sync_to(server.port(), replica_, {},
                          {{kSidecarSecretEnv, "a-different-secret-of-some-length"}}, kFailFast);
  EXPECT_EQ(run.exit_code, exit_code::kUnavailable) << run.describe();
  EXPECT_NE(run.err.find("wrong shared secret"), std::string::npos) << run.describe();
  EXPECT_EQ(replica_.keyspace(), Keyspace{});
  // The refusal reaches the client before the server writes its log line.
  const auto line = server.process().wait_for_line("authentication failed", 10s,
                                                   Process::Stream::kStderr);
  ASSERT_TRUE(line) << server.describe();
  EXPECT_NE(line->find(sidecar_host()), std::string::npos) << "the peer is named\n" << *line;
}

TEST_F(SidecarSecretTest, ClientWithoutTheSecretIsToldHowToGiveIt) {
  SidecarServer server(master_.address(), {"--auth-file", secret_file_}, kNoEnvSecret);
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = sync_to(server.port(), replica_, {}, kNoEnvSecret, kFailFast);
  EXPECT_EQ(run.exit_code, exit_code::kUnavailable) << run.describe();
  EXPECT_NE(run.err.find("--auth-file"), std::string::npos) << run.describe();
  EXPECT_NE(run.err.find("RDMA_SIDECAR_SECRET"), std::string::npos) << run.describe();
  EXPECT_EQ(replica_.keyspace(), Keyspace{});
}

TEST_F(SidecarSecretTest, WithoutASecretTheServerServesLoopbackOnly) {
  SidecarServer open(master_.address(), {"--listen", "0.0.0.0"}, kNoEnvSecret);
  EXPECT_EQ(open.process().wait(kFailFast), exit_code::kUsage) << open.describe();
  EXPECT_NE(open.process().stderr_text().find("loopback only"), std::string::npos)
      << open.describe();

  std::string short_file = dir_.write_file("short", "tooshort\n");
  SidecarServer weak(master_.address(), {"--auth-file", short_file}, kNoEnvSecret);
  EXPECT_EQ(weak.process().wait(kFailFast), exit_code::kUsage) << weak.describe();
  EXPECT_NE(weak.process().stderr_text().find("at least 16"), std::string::npos) << weak.describe();

  if (test_transport() != "tcp") return;  // verbs has no loopback device
  SidecarServer local(master_.address(), {}, kNoEnvSecret);
  ASSERT_TRUE(local.wait_ready()) << local.describe();
  EXPECT_NE(local.process().stderr_text().find("serving loopback only"), std::string::npos)
      << local.describe();
  ClientRun run = sync_to(local.port(), replica_, {}, kNoEnvSecret);
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(replica_.digest(), master_.digest());
  // A client that holds a secret does not load from a sidecar that asks for none.
  ClientRun doubtful = sync_to(local.port(), replica_, {"--flush", "--auth-file", secret_file_},
                               kNoEnvSecret, kFailFast);
  EXPECT_EQ(doubtful.exit_code, exit_code::kUnavailable) << doubtful.describe();
  EXPECT_NE(doubtful.err.find("does not ask for the shared secret"), std::string::npos)
      << doubtful.describe();
}

}  // namespace
}  // namespace rrs::test
