// Passwords: taken from the environment or a file (never argv), and a
// refused AUTH is "unavailable" (exit 3) with a message that says so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include "common/exit_codes.h"
#include "tests/support/dataset.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/temp_dir.h"

namespace rrs::test {
namespace {

constexpr auto kFailFast = std::chrono::seconds(30);

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

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
  for (const std::string& out : {server.process().stdout_text(), server.process().stderr_text(),
                                 run.out, run.err}) {
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
      << "the password must not be echoed\n" << server.describe();
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

}  // namespace
}  // namespace rrs::test
