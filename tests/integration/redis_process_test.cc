// Tests of tests/support's Redis side: RedisProcess lifecycle, binary-safe
// commands, and that fill_all_types really produces every type and encoding
// it promises (a sync test is only as good as its dataset).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/dataset.h"
#include "tests/support/redis_process.h"

namespace rrs::test {
namespace {

TEST(RedisProcessTest, StartsAnswersAndStopsWithItsOwner) {
  uint16_t port;
  std::string dir;
  {
    RedisProcess redis;
    ASSERT_TRUE(redis.started()) << redis.start_error();
    port = redis.port();
    dir = redis.dir().path();
    EXPECT_EQ(text(redis.run({"PING"})), "PONG");
    EXPECT_EQ(redis.keyspace(), Keyspace{});
    EXPECT_EQ(redis.digest(), std::string(40, '0'));
  }
  EXPECT_FALSE(RedisClient::connect(port, "", std::chrono::seconds(1)).ok());
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(RedisProcessTest, TwoInstancesGetDifferentPorts) {
  RedisProcess a, b;
  ASSERT_TRUE(a.started()) << a.start_error();
  ASSERT_TRUE(b.started()) << b.start_error();
  EXPECT_NE(a.port(), b.port());
}

TEST(RedisProcessTest, CommandsAreBinarySafe) {
  RedisProcess redis;
  ASSERT_TRUE(redis.started()) << redis.start_error();
  std::string key("k\0\r\n", 4), value("\0v\r\n\xff", 5);
  redis.run({"SET", key, value});
  EXPECT_EQ(text(redis.run({"GET", key})), value);
}

TEST(RedisProcessTest, PasswordIsRequiredAndUsed) {
  RedisProcess redis(RedisOptions().with_password("s3cret"));
  ASSERT_TRUE(redis.started()) << redis.start_error();
  EXPECT_EQ(text(redis.run({"PING"})), "PONG");
  // Without the password the server refuses the connect's PING.
  auto anonymous = RedisClient::connect(redis.port());
  ASSERT_FALSE(anonymous.ok());
  EXPECT_NE(anonymous.status().message().find("NOAUTH"), std::string::npos)
      << anonymous.status().message();
  EXPECT_FALSE(RedisClient::connect(redis.port(), "wrong").ok());
}

TEST(RedisProcessTest, ExtraArgsReachTheServer) {
  RedisProcess redis(RedisOptions().with_args({"--databases", "32"}));
  ASSERT_TRUE(redis.started()) << redis.start_error();
  redis.client().select(31);
  redis.run({"SET", "k", "v"});
  redis.client().select(0);
  EXPECT_EQ(redis.keyspace(), (Keyspace{{31, DbCounts{1, 0}}}));
}

TEST(RedisProcessTest, BadArgsReportTheServerLog) {
  RedisProcess redis(RedisOptions().with_args({"--no-such-option", "1"}));
  EXPECT_FALSE(redis.started());
  EXPECT_NE(redis.start_error().find("no-such-option"), std::string::npos) << redis.start_error();
}

class FillAllTypesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(redis_.started()) << redis_.start_error();
    fill_all_types(redis_);
    ASSERT_FALSE(HasFailure()) << "fill_all_types failed";
  }
  std::string encoding(const std::string& key) {
    return text(redis_.run({"OBJECT", "ENCODING", key}));
  }
  std::string type(const std::string& key) { return text(redis_.run({"TYPE", key})); }

  RedisProcess redis_;
};

TEST_F(FillAllTypesTest, WritesEveryDbWithExpires) {
  Keyspace ks = redis_.keyspace();
  for (int db : {0, 1, 5, 15}) EXPECT_TRUE(ks.contains(db)) << ks;
  EXPECT_EQ(ks.size(), 4u) << ks;
  EXPECT_GE(ks[0].keys, 40u) << ks;
  EXPECT_GE(ks[0].expires, 5u) << ks;
  EXPECT_GE(ks[1].expires, 1u) << ks;
  EXPECT_GE(ks[15].expires, 1u) << ks;
}

TEST_F(FillAllTypesTest, CoversEveryTypeAndEncoding) {
  EXPECT_EQ(type("hash:small"), "hash");
  EXPECT_EQ(encoding("hash:small"), "listpack");
  EXPECT_EQ(encoding("hash:large"), "hashtable");
  EXPECT_EQ(encoding("hash:longval"), "hashtable");
  EXPECT_EQ(encoding("list:small"), "quicklist");
  EXPECT_EQ(encoding("set:intset"), "intset");
  EXPECT_EQ(encoding("set:large"), "hashtable");
  EXPECT_EQ(encoding("set:manyints"), "hashtable");
  EXPECT_EQ(encoding("zset:small"), "listpack");
  EXPECT_EQ(encoding("zset:large"), "skiplist");
  EXPECT_EQ(encoding("zset:longmember"), "skiplist");
  EXPECT_EQ(encoding("int:small"), "int");
  EXPECT_EQ(type("stream:groups"), "stream");
  EXPECT_EQ(type("hll:dense"), "string");
  EXPECT_EQ(type("geo"), "zset");
  EXPECT_EQ(type(""), "string");
  EXPECT_EQ(type(std::string("bin\0key\r\n\xff", 10)), "string");

  EXPECT_EQ(redis_.run({"ZSCORE", "zset:small", "top"})->str, std::string("inf"));
  EXPECT_EQ(redis_.run({"ZSCORE", "zset:small", "bottom"})->str, std::string("-inf"));
  EXPECT_EQ(redis_.run({"STRLEN", "str:9m"})->integer, 9 << 20);
  EXPECT_EQ(redis_.run({"STRLEN", "str:empty"})->integer, 0);
  EXPECT_EQ(redis_.run({"LLEN", "list:large"})->integer, 1000);
  EXPECT_EQ(redis_.run({"XLEN", "stream:empty"})->integer, 0);

  auto libraries = redis_.client().functions();
  EXPECT_EQ(libraries.size(), 2u);
  EXPECT_TRUE(libraries.contains("lib1") && libraries.contains("lib2"));
  EXPECT_NE(libraries["lib2"].find("no-writes"), std::string::npos) << libraries["lib2"];
  EXPECT_EQ(redis_.run({"FCALL", "f1", "0"})->integer, 1);
  EXPECT_EQ(text(redis_.run({"FCALL_RO", "f2", "0", "hi"})), "hi");
}

TEST_F(FillAllTypesTest, StreamsHavePendingEntries) {
  Reply pending = redis_.run({"XPENDING", "stream:groups", "g1"});
  ASSERT_TRUE(pending && pending->type == REDIS_REPLY_ARRAY) << to_string(pending);
  EXPECT_EQ(pending->element[0]->integer, 14) << to_string(pending);  // 10 + 5 - 1 acked
  Reply consumers = redis_.run({"XINFO", "CONSUMERS", "stream:groups", "g1"});
  ASSERT_TRUE(consumers && consumers->type == REDIS_REPLY_ARRAY);
  EXPECT_EQ(consumers->elements, 3u) << to_string(consumers);  // alice, bob, carol
}

TEST_F(FillAllTypesTest, IsDeterministic) {
  RedisProcess other;
  ASSERT_TRUE(other.started()) << other.start_error();
  fill_all_types(other);
  EXPECT_EQ(other.digest(), redis_.digest());
  EXPECT_EQ(other.keyspace(), redis_.keyspace());
}

TEST_F(FillAllTypesTest, SurvivesDumpAndRestoreIntoAnotherServer) {
  // What the sidecar does, by hand: proves the digest comparison the sync
  // tests rely on holds for a faithful copy.
  RedisProcess copy;
  ASSERT_TRUE(copy.started()) << copy.start_error();
  for (int db : {0, 1, 5, 15}) {
    redis_.client().select(db);
    copy.client().select(db);
    Reply keys = redis_.run({"KEYS", "*"});
    ASSERT_TRUE(keys && keys->type == REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < keys->elements; ++i) {
      std::string key(keys->element[i]->str, keys->element[i]->len);
      Reply dump = redis_.run({"DUMP", key});
      Reply at = redis_.run({"PEXPIRETIME", key});
      ASSERT_TRUE(dump && dump->type == REDIS_REPLY_STRING && at);
      std::string ttl = at->integer > 0 ? std::to_string(at->integer) : "0";
      copy.run({"RESTORE", key, ttl, std::string(dump->str, dump->len), "REPLACE", "ABSTTL"});
    }
  }
  redis_.client().select(0);
  copy.client().select(0);
  Reply functions = redis_.run({"FUNCTION", "DUMP"});
  ASSERT_TRUE(functions && functions->type == REDIS_REPLY_STRING);
  copy.run({"FUNCTION", "RESTORE", std::string(functions->str, functions->len)});
  EXPECT_EQ(copy.digest(), redis_.digest());
  EXPECT_EQ(copy.keyspace(), redis_.keyspace());
  EXPECT_EQ(copy.client().state_outside_digest(), redis_.client().state_outside_digest());
}

TEST_F(FillAllTypesTest, StateOutsideDigestSeesGroupsAndExactTtls) {
  auto before = redis_.client().state_outside_digest();
  EXPECT_TRUE(before.contains("db0:stream:groups xinfo"));
  EXPECT_TRUE(before.contains("db15:db15:ttl pexpiretime"));
  EXPECT_TRUE(before.contains("function library lib1"));
  std::string digest = redis_.digest();
  redis_.run({"XGROUP", "CREATECONSUMER", "stream:groups", "g2", "erin"});
  redis_.run({"PEXPIRE", "ttl:string", "99999999"});
  redis_.run({"FUNCTION", "LOAD", "REPLACE",
              "#!lua name=lib1\nredis.register_function('f1', function() return 2 end)"});
  redis_.run(
      {"FUNCTION", "LOAD", "#!lua name=lib3\nredis.register_function('f4', function() end)"});
  EXPECT_EQ(redis_.digest(), digest) << "the digest covers none; if it now does, simplify";
  auto after = redis_.client().state_outside_digest();
  EXPECT_NE(after["db0:stream:groups xinfo"], before["db0:stream:groups xinfo"]);
  EXPECT_NE(after["db0:ttl:string pexpiretime"], before["db0:ttl:string pexpiretime"]);
  EXPECT_NE(after["function library lib1"], before["function library lib1"]);
  EXPECT_TRUE(after.contains("function library lib3"));
}

}  // namespace
}  // namespace rrs::test
