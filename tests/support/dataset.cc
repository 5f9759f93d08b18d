#include "tests/support/dataset.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace rrs::test {
namespace {

using Argv = std::vector<std::string>;

// Well past any test's run time, so these keys never expire under a test.
const std::string kFarTtlMs = std::to_string(30LL * 24 * 3600 * 1000);

// Past every small-encoding limit of Redis 7 (128 entries for hashes and
// sorted sets, 512 for intsets and listpack sets) and long enough for a list
// to span several quicklist nodes.
constexpr int kLarge = 1000;

std::string bin(const char* s, size_t n) { return std::string(s, n); }

// Appends "<prefix><i>" (and, with `values`, a value after each) i in [0, n).
Argv& append_items(Argv& argv, const std::string& prefix, int n, bool values,
                   const std::string& value_prefix = "v") {
  for (int i = 0; i < n; ++i) {
    argv.push_back(prefix + std::to_string(i));
    if (values) argv.push_back(value_prefix + std::to_string(i));
  }
  return argv;
}

void strings(RedisClient& c) {
  c.run({"SET", "str:plain", "hello"});
  c.run({"SET", bin("bin\0key\r\n\xff", 10), bin("va\0l\r\nue\x00\xfe", 10)});
  c.run({"SET", "", "value of the empty key"});
  c.run({"SET", "str:empty", ""});
  c.run({"SET", "str:crlf", "line1\r\nline2\r\n"});
  c.run({"SET", "str:utf8", "\xe2\x82\xac \xf0\x9f\x98\x80"});
  c.run({"SET", "int:small", "42"});
  c.run({"SET", "int:min", "-9223372036854775808"});
  c.run({"SET", "int:max", "9223372036854775807"});
  c.run({"INCRBY", "int:counter", "1000"});
  c.run({"INCRBYFLOAT", "float:pi", "3.14159"});
  c.run({"SET", "str:embstr", std::string(40, 'e')});
  c.run({"APPEND", "str:appended", "grown by "});
  c.run({"APPEND", "str:appended", "APPEND"});
  // Records larger than any slot: several ~100 KiB, one > 8 MiB.
  for (int i = 0; i < 5; ++i)
    c.run({"SET", "str:100k:" + std::to_string(i),
           random_bytes(size_t{100} * 1024 + static_cast<size_t>(i) * 7,
                        100 + static_cast<uint64_t>(i))});
  c.run({"SET", "str:9m", random_bytes(9u << 20, 9)});
}

void hashes(RedisClient& c) {
  c.run({"HSET", "hash:small", "f1", "v1", "f2", "", bin("f\0\r\n", 4), bin("v\0\r\n", 4)});
  Argv large = {"HSET", "hash:large"};
  c.run(append_items(large, "field:", kLarge, true));
  // One value longer than hash-max-listpack-value (64) forces a hashtable.
  c.run({"HSET", "hash:longval", "f", std::string(200, 'x')});
}

void lists(RedisClient& c) {
  c.run({"RPUSH", "list:small", "a", "b", "", bin("c\0\r\n", 4), "123"});
  Argv large = {"RPUSH", "list:large"};
  c.run(append_items(large, "item:", kLarge, false));
  // Big elements end up in their own quicklist nodes.
  c.run({"RPUSH", "list:bigitems", random_bytes(size_t{100} * 1024, 21), "small",
         random_bytes(size_t{70} * 1024, 22)});
}

void sets(RedisClient& c) {
  Argv ints = {"SADD", "set:intset"};
  for (int i = -50; i < 50; ++i) ints.push_back(std::to_string(i * 1000));
  c.run(ints);
  c.run({"SADD", "set:small", "a", "b", "c", "", bin("d\0", 2)});
  Argv large = {"SADD", "set:large"};
  c.run(append_items(large, "member:", kLarge, false));
  Argv bigint = {"SADD", "set:manyints"};
  for (int i = 0; i < kLarge; ++i) bigint.push_back(std::to_string(i));
  c.run(bigint);  // more than set-max-intset-entries (512): a hashtable
}

void sorted_sets(RedisClient& c) {
  c.run({"ZADD", "zset:small", "1", "one", "2.5", "two.five", "-3", "minus", "+inf", "top", "-inf",
         "bottom", "0", ""});
  Argv large = {"ZADD", "zset:large", "+inf", "plus-inf", "-inf", "minus-inf"};
  for (int i = 0; i < kLarge; ++i) {
    large.push_back(std::to_string(i) + ".25");
    large.push_back("member:" + std::to_string(i));
  }
  c.run(large);
  c.run({"ZADD", "zset:longmember", "1", std::string(100, 'm')});
}

void streams(RedisClient& c) {
  // Explicit IDs (not "*", which is the clock) keep the dataset repeatable.
  for (int i = 1; i <= 20; ++i)
    c.run({"XADD", "stream:plain", "1700000000000-" + std::to_string(i), "n", std::to_string(i),
           "payload", bin("a\0b", 3)});

  // Consumer groups with pending entries: consumers read without XACK.
  for (int i = 1; i <= 50; ++i)
    c.run({"XADD", "stream:groups", std::to_string(1700000000000 + i) + "-0", "n",
           std::to_string(i)});
  c.run({"XGROUP", "CREATE", "stream:groups", "g1", "0"});
  c.run({"XGROUP", "CREATE", "stream:groups", "g2", "$"});
  Reply alice = c.run(
      {"XREADGROUP", "GROUP", "g1", "alice", "COUNT", "10", "STREAMS", "stream:groups", ">"});
  c.run({"XREADGROUP", "GROUP", "g1", "bob", "COUNT", "5", "STREAMS", "stream:groups", ">"});
  c.run({"XGROUP", "CREATECONSUMER", "stream:groups", "g2", "dave"});
  // alice's first two entries: one acknowledged, one claimed by carol.
  // Reply shape: [[stream, [[id, [fields...]], ...]]].
  if (alice && alice->type == REDIS_REPLY_ARRAY && alice->elements == 1 &&
      alice->element[0]->elements == 2 && alice->element[0]->element[1]->elements >= 2) {
    redisReply* entries = alice->element[0]->element[1];
    std::string first(entries->element[0]->element[0]->str, entries->element[0]->element[0]->len);
    std::string second(entries->element[1]->element[0]->str, entries->element[1]->element[0]->len);
    c.run({"XACK", "stream:groups", "g1", first});
    c.run({"XCLAIM", "stream:groups", "g1", "carol", "0", second});
  } else {
    ADD_FAILURE() << "unexpected XREADGROUP reply: " << to_string(alice);
  }

  // A stream whose entries were all trimmed away still exists, with its group.
  c.run({"XADD", "stream:empty", "MAXLEN", "0", "5-5", "f", "v"});
  c.run({"XGROUP", "CREATE", "stream:empty", "g", "$"});
  // Deleted entries leave tombstones inside the listpack.
  c.run({"XADD", "stream:deleted", "1-1", "f", "1"});
  c.run({"XADD", "stream:deleted", "2-1", "f", "2"});
  c.run({"XADD", "stream:deleted", "3-1", "f", "3"});
  c.run({"XDEL", "stream:deleted", "2-1"});
}

void probabilistic_and_bits(RedisClient& c) {
  c.run({"PFADD", "hll:sparse", "a", "b", "c"});
  Argv dense = {"PFADD", "hll:dense"};
  c.run(append_items(dense, "e", 5000, false));  // past hll-sparse-max-bytes: dense
  c.run({"SETBIT", "bitmap", "0", "1"});
  c.run({"SETBIT", "bitmap", "7", "1"});
  c.run({"SETBIT", "bitmap", "1000000", "1"});
  c.run({"GEOADD", "geo", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania",
         "-122.27652", "37.805186", "Oakland"});
}

void with_ttls(RedisClient& c) {
  c.run({"SET", "ttl:string", "expires later"});
  c.run({"HSET", "ttl:hash", "f", "v"});
  c.run({"XADD", "ttl:stream", "1-1", "f", "v"});
  c.run({"SET", "ttl:100k", random_bytes(size_t{100} * 1024, 31)});
  for (const char* key : {"ttl:string", "ttl:hash", "ttl:stream", "ttl:100k", "zset:large"})
    c.run({"PEXPIRE", key, kFarTtlMs});
}

void other_dbs(RedisClient& c) {
  c.select(1);
  c.run({"SET", "db1:string", "one"});
  c.run({"HSET", "db1:hash", "a", "1", "b", "2"});
  c.run({"PEXPIRE", "db1:hash", kFarTtlMs});

  c.select(5);
  c.run({"SET", "str:plain", "same name as in DB 0, other value"});
  c.run({"RPUSH", "db5:list", "x", "y"});
  c.run({"SADD", "db5:set", "1", "2", "3"});
  c.run({"ZADD", "db5:zset", "-inf", "low", "+inf", "high"});

  c.select(15);
  c.run({"SET", bin("\0", 1), bin("\0\0", 2)});
  c.run({"SET", "db15:ttl", "v"});
  c.run({"PEXPIRE", "db15:ttl", kFarTtlMs});
  c.run({"XADD", "db15:stream", "15-15", "f", "v"});
  c.select(0);
}

// Two function libraries (Redis 7.0+): keyspace-independent state that a
// full sync must carry too. lib2 uses the table form for flags and a description.
void functions(RedisClient& c) {
  c.run({"FUNCTION", "LOAD",
         "#!lua name=lib1\n"
         "redis.register_function('f1', function(keys, args) return 1 end)\n"});
  c.run({"FUNCTION", "LOAD",
         "#!lua name=lib2\n"
         "redis.register_function{function_name='f2', description='echoes its argument',\n"
         "  flags={'no-writes'}, callback=function(keys, args) return args[1] end}\n"
         "redis.register_function('f3',\n"
         "  function(keys, args) return redis.call('GET', keys[1]) end)\n"});
}

}  // namespace

std::string lua_library(const std::string& name, const std::string& function, int returns) {
  return "#!lua name=" + name + "\nredis.register_function('" + function +
         "', function(keys, args) return " + std::to_string(returns) + " end)\n";
}

std::string random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = gen();
    for (size_t j = 0; j < 8 && i + j < n; ++j) s[i + j] = static_cast<char>(v >> (8 * j));
  }
  return s;
}

void fill_strings(RedisProcess& redis, int db, const std::string& prefix, size_t count,
                  size_t value_size) {
  RedisClient& c = redis.client();
  c.select(db);
  for (size_t i = 0; i < count; ++i)
    c.run({"SET", prefix + std::to_string(i),
           random_bytes(value_size, static_cast<uint64_t>(db) * 1000003 + i)});
  c.select(0);
}

void fill_all_types(RedisProcess& redis) {
  RedisClient& c = redis.client();
  c.select(0);
  strings(c);
  hashes(c);
  lists(c);
  sets(c);
  sorted_sets(c);
  streams(c);
  probabilistic_and_bits(c);
  with_ttls(c);
  other_dbs(c);
  functions(c);
}

}  // namespace rrs::test
