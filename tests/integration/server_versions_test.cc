// Every Redis/Valkey server version the tests run against (tests/servers.sh
// list, or RRS_SERVERS_FILE) starts through RedisProcess on a free port and
// is the engine and version its list line says. Under CI=true a server
// missing from the list fails; elsewhere that skips, saying which.
#include <gtest/gtest.h>

#include <iostream>
#include <set>
#include <string>

#include "tests/support/redis_process.h"

namespace rrs::test {
namespace {

// engine-major.minor of `version`: "redis-8.0" for ("redis", "8.0.6").
std::string name_of(const std::string& engine, const std::string& version) {
  return engine + "-" + version.substr(0, version.find('.', version.find('.') + 1));
}

TEST(ServerVersionsTest, NoServerIsMissing) {
  const ServerList& list = server_versions();
  if (list.problems.empty()) return;
  if (servers_required()) FAIL() << "CI=true and servers are missing:\n" << list.problems;
  GTEST_SKIP() << "servers are missing (bash tests/servers.sh install):\n" << list.problems;
}

TEST(ServerVersionsTest, EachListedServerIsTheEngineAndVersionItsNameSays) {
  const ServerList& list = server_versions();
  if (list.servers.empty()) GTEST_SKIP() << "no server listed:\n" << list.problems;
  std::set<std::string> names;
  for (const TestServer& server : list.servers) {
    SCOPED_TRACE(server.name + " " + server.binary);
    std::cout << "checking " << server.name << " " << server.version << " (" << server.binary
              << ")\n";
    EXPECT_TRUE(names.insert(server.name).second) << "listed twice";
    ASSERT_TRUE(server.engine() == "redis" || server.engine() == "valkey");
    RedisProcess redis(RedisOptions().with_server(server));
    ASSERT_TRUE(redis.started()) << redis.start_error();
    EXPECT_EQ(text(redis.run({"PING"})), "PONG");
    if (server.engine() == "valkey") {
      // Valkey reports its own version in valkey_version, and a fixed
      // redis_version (7.2.4) for clients that check that one.
      EXPECT_EQ(redis.info_field("server", "valkey_version"), server.version);
      EXPECT_EQ(redis.info_field("server", "server_name"), "valkey");
    } else {
      EXPECT_EQ(redis.info_field("server", "redis_version"), server.version);
      EXPECT_EQ(redis.info_field("server", "valkey_version"), "");
    }
    EXPECT_EQ(name_of(server.engine(), server.version), server.name);
    // DEBUG DIGEST works on every version (the sync tests compare with it).
    redis.run({"SET", "k", "v"});
    EXPECT_EQ(redis.digest().size(), 40u);
  }
}

TEST(ServerVersionsTest, NamedServerStarts) {
  // The API a test that needs one version uses (redis-8.0: trixie keeps an
  // 8.0.x, so CI always has it).
  TestServer server;
  RRS_NEED_SERVER(server, "redis-8.0");
  RedisProcess redis(RedisOptions().with_server(server).with_password("pw"));
  ASSERT_TRUE(redis.started()) << redis.start_error();
  EXPECT_EQ(redis.info_field("server", "redis_version"), server.version);
}

TEST(ServerVersionsTest, ABinaryThatIsNotThereIsAStartError) {
  TestServer nowhere{"redis-0.0", "/nonexistent/redis-server", "0.0.0"};
  RedisProcess redis(RedisOptions().with_server(nowhere));
  EXPECT_FALSE(redis.started());
  EXPECT_NE(redis.start_error().find("/nonexistent/redis-server"), std::string::npos)
      << redis.start_error();
}

}  // namespace
}  // namespace rrs::test
