// The RDB writer against a real redis-server: every key of a source server,
// taken with DUMP (and PTTL), and its FUNCTION DUMP are written as an RDB,
// which a second redis-server loads at startup. The two must then hold the
// same data (DEBUG DIGEST), the same functions, the same stream groups and
// the same expiries (to the few milliseconds PTTL's relative time costs).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "proto/dump_payload.h"
#include "proto/rdb_writer.h"
#include "tests/support/redis_process.h"
#include "tests/support/temp_dir.h"

namespace rrs::test {
namespace {

using Argv = std::vector<std::string>;

constexpr int kDbs[] = {0, 3, 9};
constexpr int64_t kTtlMs = 3'600'000;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// `cmd` followed by `n` items "<prefix><i>", with `paired` each after "<i>" (a score, a field).
Argv with_items(Argv cmd, const std::string& prefix, int n, bool paired = false) {
  for (int i = 0; i < n; ++i) {
    if (paired) cmd.push_back(std::to_string(i));
    cmd.push_back(prefix + std::to_string(i));
  }
  return cmd;
}

// One key of every type and encoding in the selected DB; `tag` makes the values
// differ between DBs.
void fill_db(RedisClient& c, const std::string& tag) {
  c.run({"SET", "str:embstr", "short " + tag});
  c.run({"SET", "str:raw", std::string(100, 'r') + tag});
  c.run({"SET", "str:int", "123456"});
  c.run({"SET", "str:lzf", std::string(5000, 'x') + tag});
  c.run(with_items({"RPUSH", "list:small"}, tag + ":", 5));
  // Far past list-max-listpack-size (8 KiB per node): a quicklist of many nodes.
  c.run(with_items({"RPUSH", "list:big"}, tag + ":element-padding-padding-", 3000));
  c.run({"SADD", "set:intset", "1", "2", "3", "-40000", "5000000000"});
  c.run(with_items({"SADD", "set:small"}, tag + ":m", 5));
  c.run(with_items({"SADD", "set:hashtable"}, tag + ":member", 600));
  c.run({"ZADD", "zset:small", "1.5", "a", "-inf", "low", "+inf", "high"});
  c.run(with_items({"ZADD", "zset:big"}, tag + ":z", 300, true));
  c.run({"HSET", "hash:small", "f1", "v1", "f2", "2"});
  c.run(with_items({"HSET", "hash:big"}, tag + ":field", 600, true));  // > 512: a hashtable
  for (int i = 1; i <= 20; ++i)
    c.run({"XADD", "stream", "1700000000000-" + std::to_string(i), "n", std::to_string(i), "tag",
           tag});
  c.run({"XGROUP", "CREATE", "stream", "g1", "0"});
  c.run({"XREADGROUP", "GROUP", "g1", "alice", "COUNT", "5", "STREAMS", "stream", ">"});
  c.run({"XGROUP", "CREATECONSUMER", "stream", "g1", "bob"});
  c.run({"SET", "ttl:string", "expires " + tag, "PX", std::to_string(kTtlMs)});
  c.run({"HSET", "ttl:hash", "f", tag});
  c.run({"PEXPIRE", "ttl:hash", std::to_string(kTtlMs * 2)});
  c.run({"SET", std::string("bin\0\xff\r\nkey", 10), std::string("v\0\x01", 3) + tag});
  c.run({"SET", std::string(20000, 'K') + tag, "a key longer than 16383 bytes"});
}

struct Key {
  std::string name, payload;
  int64_t expire_at_ms = -1;
};

// DUMP and PTTL (as an absolute time) of every key in the selected DB.
std::vector<Key> dump_db(RedisClient& c) {
  std::vector<Key> keys;
  Reply names = c.run({"KEYS", "*"});
  if (!names || names->type != REDIS_REPLY_ARRAY) return keys;
  for (size_t i = 0; i < names->elements; ++i) {
    Key k{std::string(names->element[i]->str, names->element[i]->len), {}, -1};
    k.payload = text(c.run({"DUMP", k.name}));
    Reply pttl = c.run({"PTTL", k.name});
    EXPECT_TRUE(pttl && pttl->type == REDIS_REPLY_INTEGER);
    if (pttl && pttl->type == REDIS_REPLY_INTEGER && pttl->integer >= 0)
      k.expire_at_ms = now_ms() + pttl->integer;
    keys.push_back(std::move(k));
  }
  return keys;
}

// The source's data: every DB of kDbs filled, two function libraries; and
// a check that the dataset has the encodings it is meant to cover.
void fill_source(RedisClient& src) {
  for (int db : kDbs) {
    src.select(db);
    fill_db(src, "db" + std::to_string(db));
  }
  src.run({"FUNCTION", "LOAD",
           "#!lua name=wlib\n"
           "redis.register_function('w1', function(keys, args) return 1 end)\n"
           "redis.register_function{function_name='w2', description='echo',\n"
           "  flags={'no-writes'}, callback=function(keys, args) return args[1] end}\n"});
  src.run({"FUNCTION", "LOAD",
           "#!lua name=wlib2\nredis.register_function('w3', function() return 3 end)\n"});
  ASSERT_FALSE(::testing::Test::HasFailure());
  // The encodings the dataset is meant to cover (list:small and set:small are
  // listpacks from 7.2 on; before, a quicklist and a hashtable).
  const std::map<std::string, std::string> encodings = {
      {"str:embstr", "embstr"},   {"str:raw", "raw"},       {"str:int", "int"},
      {"list:big", "quicklist"},  {"set:intset", "intset"}, {"set:hashtable", "hashtable"},
      {"zset:small", "listpack"}, {"zset:big", "skiplist"}, {"hash:small", "listpack"},
      {"hash:big", "hashtable"},  {"stream", "stream"}};
  for (const auto& [key, encoding] : encodings)
    EXPECT_EQ(text(src.run({"OBJECT", "ENCODING", key})), encoding) << key;
}

// The source's keys (DUMP, PTTL) and functions written as an RDB into
// `rdb`, ending with DB 0 selected a second time.
void write_rdb(RedisClient& src, std::string& rdb) {
  std::map<int, std::vector<Key>> dbs;
  for (int db : kDbs) {
    src.select(db);
    dbs[db] = dump_db(src);
    ASSERT_FALSE(dbs[db].empty());
  }
  std::string functions = text(src.run({"FUNCTION", "DUMP"}));
  auto version = dump::rdb_version(dbs[0].front().payload);
  ASSERT_TRUE(version.has_value());

  // Written in small takes, as a stream would be sent.
  rdb::RdbWriter w(*version);
  w.aux("redis-ver", src.info_field("server", "redis_version"));
  w.aux("redis-bits", "64");
  w.aux("ctime", std::to_string(now_ms() / 1000));
  w.aux("rrs-unknown-field", "a loader skips AUX fields it does not know");
  ASSERT_TRUE(w.functions(functions).ok());
  rdb += w.take();
  for (auto& [db, keys] : dbs) {
    uint64_t expires = 0;
    for (const Key& k : keys) expires += k.expire_at_ms >= 0;
    w.select_db(static_cast<uint32_t>(db), keys.size(), expires);
    for (const Key& k : keys) {
      Status s = w.key(k.name, k.payload, k.expire_at_ms);
      ASSERT_TRUE(s.ok()) << s.message();
      if (w.pending() > 4096) rdb += w.take();
    }
  }
  // DB 0 once more, with a key of its own: a DB may come back.
  src.select(0);
  src.run({"SET", "late", "selected twice"});
  std::vector<Key> late = {{"late", text(src.run({"DUMP", "late"})), -1}};
  w.select_db(0, 1, 0);
  ASSERT_TRUE(w.key(late[0].name, late[0].payload, -1).ok());
  w.end();
  rdb += w.take();
  EXPECT_EQ(w.bytes(), rdb.size());
}

// Stream groups, consumers and PELs exactly; expiries to PTTL's precision.
void expect_same_state_outside_digest(RedisClient& src, RedisClient& dst) {
  auto want = src.state_outside_digest();
  auto got = dst.state_outside_digest();
  auto expiries = [](std::map<std::string, std::string>& state) {
    std::map<std::string, int64_t> out;
    for (auto it = state.begin(); it != state.end();) {
      if (it->first.ends_with(" pexpiretime")) {
        out[it->first] = std::stoll(it->second);
        it = state.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  };
  auto want_expiries = expiries(want), got_expiries = expiries(got);
  EXPECT_EQ(got, want);
  EXPECT_EQ(want_expiries.size(), 2u * std::size(kDbs));
  ASSERT_EQ(got_expiries.size(), want_expiries.size());
  for (const auto& [name, at] : want_expiries) {
    ASSERT_TRUE(got_expiries.count(name)) << name;
    EXPECT_LT(std::llabs(got_expiries[name] - at), 1000) << name;
  }
}

TEST(RdbWriterRedis, RedisLoadsTheWrittenRdb) {
  RedisProcess source;
  ASSERT_TRUE(source.started()) << source.start_error();
  RedisClient& src = source.client();
  ASSERT_NO_FATAL_FAILURE(fill_source(src));
  std::string rdb;
  ASSERT_NO_FATAL_FAILURE(write_rdb(src, rdb));

  TempDir dir("rdb-writer");
  dir.write_file("dump.rdb", rdb);
  RedisProcess target(RedisOptions().with_args({"--dir", dir.path(), "--dbfilename", "dump.rdb"}));
  ASSERT_TRUE(target.started()) << target.start_error();

  EXPECT_EQ(target.keyspace(), source.keyspace());
  std::string digest = source.digest();
  EXPECT_NE(digest, std::string(40, '0'));
  EXPECT_EQ(target.digest(), digest);
  EXPECT_EQ(target.client().functions(), source.client().functions());
  EXPECT_EQ(target.client().functions().size(), 2u);

  ASSERT_NO_FATAL_FAILURE(expect_same_state_outside_digest(source.client(), target.client()));

  // The TTL key still counts down on the target.
  target.client().select(3);
  Reply pttl = target.client().run({"PTTL", "ttl:string"});
  ASSERT_TRUE(pttl && pttl->type == REDIS_REPLY_INTEGER);
  EXPECT_GT(pttl->integer, kTtlMs - 60'000);
  EXPECT_LE(pttl->integer, kTtlMs);
  Reply value = target.client().run({"GET", "ttl:string"});
  EXPECT_EQ(text(value), "expires db3");
  target.client().select(0);
  EXPECT_EQ(text(target.client().run({"GET", "late"})), "selected twice");
}

}  // namespace
}  // namespace rrs::test
