#include "proto/server_version.h"

#include <gtest/gtest.h>

namespace rrs {
namespace {

ServerVersion of(Engine e, const char* v) { return *ServerVersion::parse(e, v); }

TEST(ServerVersion, ReadsTheEngineFromInfoServer) {
  auto redis = ServerVersion::from_info(
      "# Server\r\nredis_version:8.0.6\r\nredis_mode:standalone\r\n");
  ASSERT_TRUE(redis);
  EXPECT_EQ(redis->to_string(), "Redis 8.0.6");
  // Valkey keeps redis_version at 7.2.4 for old clients: valkey_version decides.
  auto valkey = ServerVersion::from_info(
      "redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n");
  ASSERT_TRUE(valkey);
  EXPECT_EQ(valkey->to_string(), "Valkey 9.1.2");
  EXPECT_FALSE(ServerVersion::from_info("role:master\r\n"));
  EXPECT_FALSE(ServerVersion::parse(Engine::kRedis, "garbage"));
  EXPECT_EQ(of(Engine::kRedis, "7.0").number(), "7.0.0");
}

TEST(ServerVersion, NewestRdbByEngineAndVersion) {
  EXPECT_EQ(of(Engine::kRedis, "6.2.14").newest_rdb(), 9);
  EXPECT_EQ(of(Engine::kRedis, "7.0.15").newest_rdb(), 10);
  EXPECT_EQ(of(Engine::kRedis, "7.2.4").newest_rdb(), 11);
  EXPECT_EQ(of(Engine::kRedis, "7.4.1").newest_rdb(), 12);
  EXPECT_EQ(of(Engine::kRedis, "8.0.6").newest_rdb(), 12);
  EXPECT_EQ(of(Engine::kValkey, "8.0.1").newest_rdb(), 11);
  EXPECT_EQ(of(Engine::kValkey, "9.1.2").newest_rdb(), 80);
}

// Valkey refuses Redis's RDB 12 (its "foreign" range) and Redis knows no 80;
// both load what came before the split.
TEST(ServerVersion, LoadsOnlyItsOwnNumberingPastRdb11) {
  const ServerVersion redis8 = of(Engine::kRedis, "8.0.6"), redis70 = of(Engine::kRedis, "7.0.15");
  const ServerVersion valkey8 = of(Engine::kValkey, "8.0.1"),
                      valkey9 = of(Engine::kValkey, "9.1.2");
  EXPECT_TRUE(redis8.loads_rdb(12));
  EXPECT_TRUE(redis8.loads_rdb(11));
  EXPECT_FALSE(redis8.loads_rdb(80));
  EXPECT_FALSE(redis70.loads_rdb(11));
  EXPECT_TRUE(valkey9.loads_rdb(80));
  EXPECT_TRUE(valkey9.loads_rdb(11));
  EXPECT_FALSE(valkey9.loads_rdb(12));
  EXPECT_FALSE(valkey8.loads_rdb(80));
  EXPECT_TRUE(valkey8.loads_rdb(10));
  EXPECT_EQ(first_servers_for_rdb(12), "Redis 7.4 or later");
  EXPECT_EQ(first_servers_for_rdb(80), "Valkey 9.0 or later");
  EXPECT_TRUE(valkey8.has_functions());
  EXPECT_FALSE(of(Engine::kRedis, "6.2.14").has_functions());
}

}  // namespace
}  // namespace rrs
