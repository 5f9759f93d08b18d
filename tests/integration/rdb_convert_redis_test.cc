// rdb::convert_value against real servers: for every ordered pair of the test
// server versions (Redis 7.0 / RDB 10, Valkey 8.0 / RDB 11, Redis 8.0 / RDB
// 12, Valkey 9.1 / RDB 80), values of every type and encoding are written on
// the source, DUMPed, converted to the target's RDB version, RESTOREd into
// the target running with sanitize-dump-payload yes (so every listpack is
// walked entry by entry; Valkey 9 always does that), and compared through commands: HGETALL and
// HPEXPIRETIME, SMEMBERS, ZRANGE WITHSCORES, LRANGE, XRANGE, XINFO STREAM /
// GROUPS / CONSUMERS and XPENDING, on what the target can hold. What a
// conversion reports lost must be exactly what the target cannot hold.
//
// A pair whose server is not installed (bash tests/servers.sh install) is
// skipped, saying which; under CI=true it fails. Each pair prints a line
// saying it ran and which types it converted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "proto/dump_payload.h"
#include "proto/rdb_convert.h"
#include "proto/rdb_format.h"
#include "tests/support/redis_process.h"

namespace rrs::test {
namespace {

struct Server {
  const char* name;  // in the server list (tests/servers.sh)
  uint16_t rdb;      // the newest RDB version it writes and loads
  bool field_ttls;   // HEXPIRE and friends
  // Valkey 9 always walks every entry (lpValidateIntegrity has no `deep`
  // there) and has dropped the sanitize-dump-payload setting.
  bool always_sanitizes;
};

const Server kServers[] = {
    {"redis-7.0", 10, false, false},
    {"valkey-8.0", 11, false, false},
    {"redis-8.0", 12, true, false},
    {"valkey-9.1", 80, true, true},
};

// A key the source holds, and what converting it may lose.
struct Key {
  std::string name;
  bool field_ttls = false;  // a hash with at least one field TTL
  bool consumers = false;   // a stream with at least one consumer
};

// An absolute field expiry far ahead (2100-01-01 + `i` ms), the same on every run.
std::string far_ms(int i) { return std::to_string(4102444800000LL + i); }

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

// Writes keys on the source and records what converting each may lose.
class Filler {
 public:
  explicit Filler(RedisProcess& redis) : redis_(redis) {}

  void run(const std::vector<std::string>& argv) { redis_.run(argv); }
  void add(const std::string& name, bool field_ttls = false, bool consumers = false) {
    keys_.push_back({name, field_ttls, consumers});
  }
  std::vector<Key> take() && { return std::move(keys_); }

 private:
  RedisProcess& redis_;
  std::vector<Key> keys_;
};

// Strings (an integer, an LZF-compressible one), lists (one listpack node,
// many nodes), sets (intset, listpack with integers and strings, an LZF-
// compressed listpack, hash tables), zsets (listpack, skiplist with
// infinities), hashes (listpack, hash table).
void fill_plain(Filler& f) {
  f.run({"SET", "str:small", "v"});
  f.run({"SET", "str:int", "12345"});
  f.run({"SET", "str:lzf", repeat("abcdefgh", 500)});
  f.add("str:small"), f.add("str:int"), f.add("str:lzf");

  f.run({"RPUSH", "list:small", "a", "b", "1", "-2"});
  std::vector<std::string> big_list = {"RPUSH", "list:big"};
  for (int i = 0; i < 3000; ++i) big_list.push_back("element-" + std::to_string(i));
  f.run(big_list);
  f.add("list:small"), f.add("list:big");

  f.run({"SADD", "set:intset", "1", "2", "3", "-5"});
  f.run({"SADD", "set:listpack", "a", "b", "1", "-1", "300", "70000", "5000000000",
         "-9223372036854775808", "9223372036854775807", "0123"});
  std::vector<std::string> lzf_set = {"SADD", "set:listpack-lzf"};
  for (int i = 0; i < 100; ++i) lzf_set.push_back("member-member-" + std::to_string(1000 + i));
  f.run(lzf_set);
  std::vector<std::string> big_set = {"SADD", "set:hashtable"};
  std::vector<std::string> big_ints = {"SADD", "set:hashtable-ints"};
  for (int i = 0; i < 1000; ++i) {
    big_set.push_back("m" + std::to_string(i));
    big_ints.push_back(std::to_string(i * 7919 - 100000));
  }
  f.run(big_set);
  f.run(big_ints);
  f.add("set:intset"), f.add("set:listpack"), f.add("set:listpack-lzf");
  f.add("set:hashtable"), f.add("set:hashtable-ints");

  f.run({"ZADD", "zset:small", "1", "a", "2.5", "b", "-inf", "c"});
  std::vector<std::string> big_zset = {"ZADD", "zset:big"};
  for (int i = 0; i < 300; ++i) {
    big_zset.push_back(std::to_string(i * 0.5));
    big_zset.push_back("member-" + std::to_string(i));
  }
  big_zset.insert(big_zset.end(), {"+inf", "top", "-inf", "bottom"});
  f.run(big_zset);
  f.add("zset:small"), f.add("zset:big");

  f.run({"HSET", "hash:small", "f", "v", "n", "12", "7", "-7"});
  std::vector<std::string> big_hash = {"HSET", "hash:big"};
  for (int i = 0; i < 1000; ++i) {
    big_hash.push_back("field-" + std::to_string(i));
    big_hash.push_back("value-" + std::to_string(i));
  }
  f.run(big_hash);
  f.run({"HSET", "hash:long-value", "f", std::string(200, 'x')});
  f.add("hash:small"), f.add("hash:big"), f.add("hash:long-value");
}

// Hashes with field TTLs (Redis 8, Valkey 9): listpack-sized (Redis:
// HASH_LISTPACK_EX; Valkey: always a hash table, HASH_2) with some and with
// all fields expiring, the listpack LZF-compressed; hash-table-sized (Redis:
// HASH_METADATA) with LZF-compressed values; TTLs all persisted again.
void fill_field_ttls(Filler& f) {
  f.run({"HSET", "ttl:small", "a", "1", "b", "two", "c", "3", "d", "four"});
  f.run({"HPEXPIREAT", "ttl:small", far_ms(1), "FIELDS", "2", "a", "c"});
  f.run({"HPEXPIREAT", "ttl:small", far_ms(5), "FIELDS", "1", "d"});
  std::vector<std::string> lzf = {"HSET", "ttl:small-lzf"};
  std::vector<std::string> all = {"HPEXPIREAT", "ttl:small-lzf", far_ms(100), "FIELDS", "40"};
  for (int i = 0; i < 40; ++i) {
    lzf.insert(lzf.end(), {"field-" + std::to_string(i), repeat("value-", 5)});
    all.push_back("field-" + std::to_string(i));
  }
  f.run(lzf);
  f.run(all);
  std::vector<std::string> big = {"HSET", "ttl:big"};
  for (int i = 0; i < 600; ++i)
    big.insert(big.end(), {"field-" + std::to_string(i), repeat("v" + std::to_string(i), 12)});
  f.run(big);
  for (int i = 0; i < 600; i += 7)
    f.run({"HPEXPIREAT", "ttl:big", far_ms(1000 + i), "FIELDS", "1", "field-" + std::to_string(i)});
  // Redis keeps a listpack with field TTLs (all 0), Valkey a plain hash.
  f.run({"HSET", "ttl:persisted", "a", "1", "b", "2"});
  f.run({"HPEXPIREAT", "ttl:persisted", far_ms(7), "FIELDS", "2", "a", "b"});
  f.run({"HPERSIST", "ttl:persisted", "FIELDS", "2", "a", "b"});
  f.add("ttl:small", true), f.add("ttl:small-lzf", true), f.add("ttl:big", true);
  f.add("ttl:persisted");
}

// Streams: plain, many nodes, consumer groups with consumers, PELs, acks, a
// deleted entry, a consumer with nothing pending, a group with no consumer.
void fill_streams(Filler& f) {
  for (int i = 1; i <= 50; ++i)
    f.run({"XADD", "stream:plain", "1000-" + std::to_string(i), "f", std::to_string(i)});
  for (int i = 1; i <= 2000; ++i)
    f.run({"XADD", "stream:big", std::to_string(5000 + i) + "-0", "field", repeat("data", 20), "n",
           std::to_string(i)});
  for (int i = 1; i <= 100; ++i)
    f.run({"XADD", "stream:groups", "2000-" + std::to_string(i), "f", "v" + std::to_string(i)});
  f.run({"XDEL", "stream:groups", "2000-50"});
  f.run({"XGROUP", "CREATE", "stream:groups", "g1", "0"});
  f.run({"XREADGROUP", "GROUP", "g1", "alice", "COUNT", "10", "STREAMS", "stream:groups", ">"});
  f.run({"XREADGROUP", "GROUP", "g1", "bob", "COUNT", "5", "STREAMS", "stream:groups", ">"});
  f.run({"XACK", "stream:groups", "g1", "2000-1", "2000-2", "2000-12"});
  f.run({"XGROUP", "CREATE", "stream:groups", "g2", "$"});
  f.run({"XGROUP", "CREATECONSUMER", "stream:groups", "g2", "carol"});
  f.run({"XGROUP", "CREATE", "stream:groups", "g3", "2000-40"});
  f.run({"XGROUP", "CREATE", "stream:group-no-consumer", "g", "$", "MKSTREAM"});
  f.add("stream:plain"), f.add("stream:big"), f.add("stream:groups", false, true);
  f.add("stream:group-no-consumer");
}

// Values of every type and encoding `server` has, small and large.
std::vector<Key> fill(RedisProcess& redis, const Server& server) {
  Filler f(redis);
  fill_plain(f);
  if (server.field_ttls) fill_field_ttls(f);
  fill_streams(f);
  return std::move(f).take();
}

// --- replies --------------------------------------------------------------------

// A reply as one string (nested arrays bracketed), for comparing.
std::string flat(const redisReply* r) {
  if (!r) return "(none)";
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR: return std::string(r->str, r->len);
    case REDIS_REPLY_INTEGER: return std::to_string(r->integer);
    case REDIS_REPLY_NIL: return "(nil)";
    case REDIS_REPLY_ARRAY: {
      std::string s = "[";
      for (size_t i = 0; i < r->elements; ++i) s += (i ? " " : "") + flat(r->element[i]);
      return s + "]";
    }
    default: return to_string(r);
  }
}

// The elements of an array reply, each flattened.
std::vector<std::string> items(const Reply& r) {
  std::vector<std::string> out;
  if (r && r->type == REDIS_REPLY_ARRAY)
    for (size_t i = 0; i < r->elements; ++i) out.push_back(flat(r->element[i]));
  return out;
}

// A flat key/value array (XINFO's RESP2 maps) as a map.
std::map<std::string, std::string> fields_of(const redisReply* r) {
  std::map<std::string, std::string> m;
  if (r && r->type == REDIS_REPLY_ARRAY)
    for (size_t i = 0; i + 1 < r->elements; i += 2)
      m[flat(r->element[i])] = flat(r->element[i + 1]);
  return m;
}

// Those of `names` that `a` has, and the same from `b`.
void expect_same_fields(const std::map<std::string, std::string>& a,
                        const std::map<std::string, std::string>& b,
                        const std::vector<std::string>& names, const std::string& what) {
  for (const std::string& n : names) {
    if (!a.count(n) && !b.count(n)) continue;
    EXPECT_EQ(a.count(n) ? a.at(n) : "(absent)", b.count(n) ? b.at(n) : "(absent)")
        << what << ": " << n;
  }
}

// An idle time (ms since a consumer was seen or active) on both sides: the
// same timestamp read a moment apart; -1 (never) must match exactly.
void expect_close_ms(const std::string& a, const std::string& b, const std::string& what) {
  const long long x = std::atoll(a.c_str()), y = std::atoll(b.c_str());
  if (x < 0 || y < 0) {
    EXPECT_EQ(x, y) << what;
    return;
  }
  EXPECT_LE(std::llabs(x - y), 10000) << what << ": " << a << " vs " << b;
}

// --- comparing one key ----------------------------------------------------------

void expect_same_stream(RedisProcess& src, RedisProcess& dst, const std::string& key,
                        const Server& from, const Server& to) {
  EXPECT_EQ(items(src.run({"XRANGE", key, "-", "+"})), items(dst.run({"XRANGE", key, "-", "+"})));
  expect_same_fields(fields_of(src.run({"XINFO", "STREAM", key}).get()),
                     fields_of(dst.run({"XINFO", "STREAM", key}).get()),
                     {"length", "last-generated-id", "max-deleted-entry-id", "entries-added",
                      "recorded-first-entry-id", "groups"},
                     key);
  Reply src_groups = src.run({"XINFO", "GROUPS", key}),
        dst_groups = dst.run({"XINFO", "GROUPS", key});
  ASSERT_TRUE(src_groups && dst_groups && src_groups->type == REDIS_REPLY_ARRAY &&
              dst_groups->type == REDIS_REPLY_ARRAY);
  ASSERT_EQ(src_groups->elements, dst_groups->elements) << key;
  for (size_t g = 0; g < src_groups->elements; ++g) {
    const auto a = fields_of(src_groups->element[g]), b = fields_of(dst_groups->element[g]);
    const std::string group = a.count("name") ? a.at("name") : "?";
    expect_same_fields(a, b,
                       {"name", "consumers", "pending", "last-delivered-id", "entries-read", "lag"},
                       key + " group " + group);
    EXPECT_EQ(items(src.run({"XPENDING", key, group, "-", "+", "1000"})).size(),
              items(dst.run({"XPENDING", key, group, "-", "+", "1000"})).size());
    // Each pending entry: ID, consumer, (idle), deliveries.
    Reply pa = src.run({"XPENDING", key, group, "-", "+", "1000"});
    Reply pb = dst.run({"XPENDING", key, group, "-", "+", "1000"});
    for (size_t i = 0; pa && pb && i < std::min(pa->elements, pb->elements); ++i) {
      const redisReply* ea = pa->element[i];
      const redisReply* eb = pb->element[i];
      ASSERT_EQ(ea->elements, 4u);
      ASSERT_EQ(eb->elements, 4u);
      for (size_t f : {0, 1, 3})
        EXPECT_EQ(flat(ea->element[f]), flat(eb->element[f]))
            << key << " " << group << " PEL " << i;
    }
    Reply ca = src.run({"XINFO", "CONSUMERS", key, group});
    Reply cb = dst.run({"XINFO", "CONSUMERS", key, group});
    ASSERT_TRUE(ca && cb);
    ASSERT_EQ(ca->elements, cb->elements) << key << " " << group;
    for (size_t c = 0; c < ca->elements; ++c) {
      const auto x = fields_of(ca->element[c]), y = fields_of(cb->element[c]);
      const std::string what = key + " " + group + " consumer " + x.at("name");
      expect_same_fields(x, y, {"name", "pending"}, what);
      expect_close_ms(x.at("idle"), y.at("idle"), what + " idle (seen time)");
      // Active time: RDB 11 and up; an RDB 10 target never had it.
      if (from.rdb >= 11 && to.rdb >= 11 && x.count("inactive") && y.count("inactive"))
        expect_close_ms(x.at("inactive"), y.at("inactive"), what + " inactive (active time)");
    }
  }
}

void expect_same_key(RedisProcess& src, RedisProcess& dst, const std::string& key,
                     const Server& from, const Server& to) {
  const std::string type = text(src.run({"TYPE", key}));
  ASSERT_EQ(type, text(dst.run({"TYPE", key}))) << key;
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  if (type == "string") {
    EXPECT_EQ(text(src.run({"GET", key})), text(dst.run({"GET", key}))) << key;
  } else if (type == "list") {
    EXPECT_EQ(items(src.run({"LRANGE", key, "0", "-1"})),
              items(dst.run({"LRANGE", key, "0", "-1"})))
        << key;
  } else if (type == "set") {
    EXPECT_EQ(sorted(items(src.run({"SMEMBERS", key}))), sorted(items(dst.run({"SMEMBERS", key}))))
        << key;
  } else if (type == "zset") {
    EXPECT_EQ(items(src.run({"ZRANGE", key, "0", "-1", "WITHSCORES"})),
              items(dst.run({"ZRANGE", key, "0", "-1", "WITHSCORES"})))
        << key;
  } else if (type == "hash") {
    const std::vector<std::string> a = items(src.run({"HGETALL", key}));
    std::map<std::string, std::string> ma, mb;
    for (size_t i = 0; i + 1 < a.size(); i += 2) ma[a[i]] = a[i + 1];
    const std::vector<std::string> b = items(dst.run({"HGETALL", key}));
    for (size_t i = 0; i + 1 < b.size(); i += 2) mb[b[i]] = b[i + 1];
    EXPECT_EQ(ma, mb) << key;
    if (from.field_ttls && to.field_ttls && !ma.empty()) {
      std::vector<std::string> q = {"HPEXPIRETIME", key, "FIELDS", std::to_string(ma.size())};
      for (const auto& [f, v] : ma) q.push_back(f);
      EXPECT_EQ(items(src.run(q)), items(dst.run(q))) << key << ": field TTLs";
    }
  } else if (type == "stream") {
    expect_same_stream(src, dst, key, from, to);
  } else {
    ADD_FAILURE() << key << ": type " << type;
  }
}

// --- the pairs ------------------------------------------------------------------

struct Pair {
  size_t from, to;  // in kServers
};

class RdbConvertRedisTest : public ::testing::TestWithParam<Pair> {};

TEST_P(RdbConvertRedisTest, RestoredValuesMatch) {
  const Server& from = kServers[GetParam().from];
  const Server& to = kServers[GetParam().to];
  TestServer src_server, dst_server;
  RRS_NEED_SERVER(src_server, from.name);
  RRS_NEED_SERVER(dst_server, to.name);
  RedisProcess src(RedisOptions().with_server(src_server));
  ASSERT_TRUE(src.started()) << src.start_error();
  RedisOptions dst_options = RedisOptions().with_server(dst_server);
  if (!to.always_sanitizes) dst_options.with_args({"--sanitize-dump-payload", "yes"});
  RedisProcess dst(dst_options);
  ASSERT_TRUE(dst.started()) << dst.start_error();
  if (!to.always_sanitizes) {
    EXPECT_EQ(items(dst.run({"CONFIG", "GET", "sanitize-dump-payload"})),
              (std::vector<std::string>{"sanitize-dump-payload", "yes"}));
  }

  const std::vector<Key> keys = fill(src, from);
  ASSERT_FALSE(HasFailure());
  std::map<std::string, int> converted;  // "24->22" -> keys
  int copied = 0;
  for (const Key& key : keys) {
    SCOPED_TRACE(key.name);
    const std::string payload = text(src.run({"DUMP", key.name}));
    ASSERT_GT(payload.size(), 1 + dump::kTrailerSize);
    ASSERT_EQ(dump::rdb_version(payload), from.rdb);
    const auto type = static_cast<uint8_t>(payload[0]);
    const std::string_view value(payload.data() + 1, payload.size() - 1 - dump::kTrailerSize);

    auto c = rdb::convert_value(type, value, from.rdb, to.rdb);
    ASSERT_TRUE(c.ok()) << c.status().message();
    uint32_t want_lost = rdb::kLossNone;
    if (key.field_ttls && to.rdb < 12) want_lost |= rdb::kLossFieldTtls;
    if (key.consumers && to.rdb == 10 && from.rdb >= 11) want_lost |= rdb::kLossConsumerActiveTime;
    EXPECT_EQ(c->lost, want_lost) << rdb::loss_names(c->lost);
    if (rdb::needs_conversion(type, from.rdb, to.rdb)) {
      converted[std::to_string(type) + "->" + std::to_string(c->type)]++;
    } else {
      ++copied;
      EXPECT_EQ(c->value, value);
    }

    std::string restored(dump::payload_size(c->value.size()), '\0');
    dump::write_payload(c->type, c->value, to.rdb, restored.data());
    Reply r = dst.command({"RESTORE", key.name, "0", restored});
    ASSERT_EQ(text(r), "OK") << to_string(r) << " (type " << int{c->type} << " from type "
                             << int{type} << ")\n"
                             << dst.log();
    expect_same_key(src, dst, key.name, from, to);
  }
  std::string summary;
  for (const auto& [types, n] : converted) summary += " " + types + " x" + std::to_string(n);
  std::cout << "rdb_convert: " << from.name << " (RDB " << from.rdb << ") -> " << to.name
            << " (RDB " << to.rdb << "): " << keys.size() << " keys restored and compared, "
            << copied
            << " unchanged, converted (type->type):" << (summary.empty() ? " none" : summary)
            << "\n";
}

std::vector<Pair> all_pairs() {
  std::vector<Pair> pairs;
  for (size_t a = 0; a < std::size(kServers); ++a)
    for (size_t b = 0; b < std::size(kServers); ++b)
      if (a != b) pairs.push_back({a, b});
  return pairs;
}

std::string pair_name(const ::testing::TestParamInfo<Pair>& info) {
  auto id = [](const char* name) {
    std::string s = name;
    for (char& ch : s)
      if (ch == '-' || ch == '.') ch = '_';
    return s;
  };
  return id(kServers[info.param.from].name) + "_to_" + id(kServers[info.param.to].name);
}

INSTANTIATE_TEST_SUITE_P(Pairs, RdbConvertRedisTest, ::testing::ValuesIn(all_pairs()), pair_name);

}  // namespace
}  // namespace rrs::test
