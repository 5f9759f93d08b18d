// The RESTORE loader against a real redis-server: version checks before any
// write, per-key failures that name the key and carry on, and failures that
// stop the load at once with the reason.
#include "client/restore/restore_loader.h"

#include <gtest/gtest.h>

#include <string>

#include "common/base/clock.h"
#include "tests/support/redis_process.h"

namespace rrs {
namespace {

using test::RedisOptions;
using test::RedisProcess;

class RestoreLoaderTest : public ::testing::Test {
 protected:
  // A real DUMP payload of a string value, from the target itself.
  std::string dump_of(RedisProcess& redis, const std::string& value) {
    redis.run({"SET", "tmp", value});
    test::Reply r = redis.run({"DUMP", "tmp"});
    redis.run({"DEL", "tmp"});
    return std::string(r->str, r->len);
  }

  Result<RestoreLoader> connect(RedisProcess& redis) {
    return RestoreLoader::connect({"127.0.0.1", redis.port()}, {}, std::chrono::seconds(10));
  }

  TableInfo info_for(uint32_t rdb_version, std::string redis_version = "7.0.15") {
    TableInfo info;
    info.header.rdb_version = rdb_version;
    info.header.engine = Engine::kRedis;
    info.header.server_version = std::move(redis_version);
    return info;
  }
};

TEST_F(RestoreLoaderTest, RefusesPayloadsNewerThanTheTarget) {
  RedisProcess target;
  ASSERT_TRUE(target.started()) << target.start_error();
  auto loader = connect(target);
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  Status s = loader->prepare(info_for(12, "7.4.1"), TargetPolicy::kRequireEmpty);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kRefused);
  EXPECT_NE(s.message().find("RDB version 12"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("7.0.15"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("upgrade the target to Redis 7.4"), std::string::npos) << s.message();
}

TEST_F(RestoreLoaderTest, ABadPayloadNamesItsKeyAndTheRestStillLoads) {
  RedisProcess target;
  ASSERT_TRUE(target.started()) << target.start_error();
  std::string good = dump_of(target, "value");
  std::string bad = good;
  bad.back() ^= 0x01;  // break the CRC64
  auto loader = connect(target);
  ASSERT_TRUE(loader.ok());
  ASSERT_TRUE(loader->prepare(info_for(10), TargetPolicy::kRequireEmpty).ok());
  RecordBatch batch;
  batch.records = {{0, 0, -1, "k1", good},
                   {1, 0, -1, std::string_view("k\r\n2", 4), bad},
                   {2, 3, unix_ms() + 600000, "k3", good},
                   {3, 3, unix_ms() - 1000, "expired", good}};
  ASSERT_TRUE(loader->load(batch).ok());
  ASSERT_TRUE(loader->finish().ok());
  const LoadStats& st = loader->stats();
  EXPECT_EQ(st.keys, 2u);
  EXPECT_EQ(st.failed, 1u);
  EXPECT_EQ(st.skipped_expired, 1u);
  ASSERT_EQ(st.errors.size(), 1u);
  EXPECT_NE(st.errors[0].find("k\\x0d\\x0a2"), std::string::npos) << st.errors[0];
  EXPECT_NE(st.errors[0].find("checksum"), std::string::npos) << st.errors[0];
  EXPECT_EQ(st.per_db.at(0), 1u);
  EXPECT_EQ(st.per_db.at(3), 1u);
  target.client().select(3);
  test::Reply ttl = target.run({"PTTL", "k3"});
  EXPECT_GT(ttl->integer, 590000);
}

TEST_F(RestoreLoaderTest, LoadsLuaScriptsAndNamesOneThatFails) {
  RedisProcess target;
  ASSERT_TRUE(target.started()) << target.start_error();
  auto loader = connect(target);
  ASSERT_TRUE(loader.ok());
  TableInfo info = info_for(9, "6.2.14");
  info.scripts.lua_scripts = {"return 1", "this is not lua (", "return redis.call('GET', KEYS[1])"};
  ASSERT_TRUE(loader->prepare(info, TargetPolicy::kRequireEmpty).ok());
  ASSERT_TRUE(loader->finish().ok());
  const LoadStats& st = loader->stats();
  EXPECT_EQ(st.scripts, 2u);
  EXPECT_EQ(st.failed, 1u);
  EXPECT_EQ(st.function_libraries, 0u);
  ASSERT_EQ(st.errors.size(), 1u);
  EXPECT_NE(st.errors[0].find("SCRIPT LOAD failed: Lua script 2 of 3 ('this is not lua (')"),
            std::string::npos)
      << st.errors[0];
  // SHA1s of the two good bodies.
  test::Reply exists = target.run({"SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db",
                                   "d3c21d0c2b9ca22f82737626a27bcaf5d288f99f"});
  ASSERT_TRUE(exists && exists->elements == 2) << test::to_string(exists);
  EXPECT_EQ(exists->element[0]->integer, 1);
  EXPECT_EQ(exists->element[1]->integer, 1);
}

TEST_F(RestoreLoaderTest, ABrokenFunctionPayloadFailsBeforeAnyKey) {
  RedisProcess source, target;
  ASSERT_TRUE(source.started() && target.started());
  source.run({"FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() end)"});
  test::Reply dump = source.run({"FUNCTION", "DUMP"});
  ASSERT_TRUE(dump && dump->type == REDIS_REPLY_STRING);
  TableInfo info = info_for(10);
  info.scripts.function_payload = std::string(dump->str, dump->len);
  info.scripts.function_payload.back() ^= 0x01;  // break the CRC64
  info.scripts.function_libraries = 1;
  auto loader = connect(target);
  ASSERT_TRUE(loader.ok());
  Status s = loader->prepare(info, TargetPolicy::kFlush);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.kind(), ErrorKind::kRefused);
  EXPECT_NE(s.message().find("FUNCTION RESTORE FLUSH of 1 libraries failed"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("checksum"), std::string::npos) << s.message();
}

TEST_F(RestoreLoaderTest, TargetOutOfMemoryStopsTheLoadWithTheReason) {
  RedisProcess target(RedisOptions().with_args({"--maxmemory", "2mb"}));
  ASSERT_TRUE(target.started()) << target.start_error();
  std::string payload = dump_of(target, std::string(10000, 'x'));
  auto loader = connect(target);
  ASSERT_TRUE(loader.ok());
  ASSERT_TRUE(loader->prepare(info_for(10), TargetPolicy::kRequireEmpty).ok());
  std::vector<std::string> keys;
  keys.reserve(2000);
  for (int i = 0; i < 2000; ++i) keys.push_back("key" + std::to_string(i));
  RecordBatch batch;
  for (uint64_t i = 0; i < keys.size(); ++i) batch.records.push_back({i, 0, -1, keys[i], payload});
  Status s = loader->load(batch);
  if (s.ok()) s = loader->finish();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("out of memory"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("maxmemory"), std::string::npos) << s.message();
}

TEST_F(RestoreLoaderTest, ReadOnlyReplicaTargetIsNamed) {
  RedisProcess master, target;
  ASSERT_TRUE(master.started() && target.started());
  std::string payload = dump_of(target, "v");
  target.run({"REPLICAOF", "127.0.0.1", std::to_string(master.port())});
  auto loader = connect(target);
  ASSERT_TRUE(loader.ok());
  ASSERT_TRUE(loader->prepare(info_for(10), TargetPolicy::kMerge).ok());
  RecordBatch batch;
  batch.records = {{0, 0, -1, "k", payload}};
  Status s = loader->load(batch);
  if (s.ok()) s = loader->finish();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("REPLICAOF NO ONE"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace rrs
