// rdb::is_empty_collection against a real redis-server: no DUMP payload of a
// real value is empty (servers never write empty collections, so this guards
// against false positives on every type and encoding), and an RDB holding
// only what the function calls empty loads with every one of those keys
// skipped ("empty keys skipped"), while the empty intset and zipmap it calls
// not empty make the loader fail instead. (The same crafted RDBs were loaded
// by valkey-server 8.0.1 by hand, with the same outcome.)
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "proto/crc64.h"
#include "proto/dump_payload.h"
#include "proto/rdb_format.h"
#include "proto/rdb_parser.h"
#include "proto/rdb_value.h"
#include "tests/support/dataset.h"
#include "tests/support/eventually.h"
#include "tests/support/redis_process.h"
#include "tests/support/temp_dir.h"

namespace rrs::test {
namespace {

using namespace std::string_literals;

// SAVE, then the bytes of the RDB file.
std::string save_rdb(RedisProcess& redis) {
  redis.run({"SAVE"});
  std::ifstream in(redis.dir().file("dump.rdb"), std::ios::binary);
  std::stringstream all;
  all << in.rdbuf();
  return all.str();
}

// The smallest value of every encoding, and collections shrunk to one
// element: the real values closest to empty.
void fill_smallest(RedisProcess& redis) {
  redis.client().select(2);
  redis.run({"RPUSH", "list:one", "a"});
  redis.run({"RPUSH", "list:popped", "a", "b", "c"});
  redis.run({"RPOP", "list:popped"});
  redis.run({"RPOP", "list:popped"});
  std::vector<std::string> many = {"RPUSH", "list:trimmed"};
  for (int i = 0; i < 2000; ++i) many.push_back("element-" + std::to_string(i));
  redis.run(many);  // several quicklist nodes
  redis.run({"LTRIM", "list:trimmed", "-1", "-1"});
  redis.run({"RPUSH", "list:plain-node", std::string(10000, 'p')});  // a plain node
  redis.run({"SADD", "set:one-int", "7"});
  redis.run({"SADD", "set:one-str", "s"});
  redis.run({"SADD", "set:removed", "1", "2"});
  redis.run({"SREM", "set:removed", "1"});
  redis.run({"ZADD", "zset:one", "1", "m"});
  redis.run({"HSET", "hash:one", "f", ""});
  redis.run({"HSET", "hash:deleted", "f", "v", "g", "w"});
  redis.run({"HDEL", "hash:deleted", "f"});
  redis.run({"XADD", "stream:trimmed", "1-1", "f", "v"});
  redis.run({"XTRIM", "stream:trimmed", "MAXLEN", "0"});
  redis.client().select(0);
}

void expect_no_dump_is_empty(const std::string& compression) {
  RedisProcess redis;
  ASSERT_TRUE(redis.started()) << redis.start_error();
  redis.run({"CONFIG", "SET", "rdbcompression", compression});
  fill_all_types(redis);
  fill_smallest(redis);
  ASSERT_FALSE(::testing::Test::HasFailure());

  // The RDB names every key; DUMP gives its payload.
  rdb::RdbParser parser;
  parser.feed(save_rdb(redis));
  std::map<int, int> types;  // type -> keys
  while (true) {
    auto ev = parser.next();
    ASSERT_TRUE(ev.ok()) << ev.status().message();
    if (!*ev) break;
    const rdb::Event& e = **ev;
    if (e.kind != rdb::EventKind::kRecord) continue;
    EXPECT_FALSE(rdb::is_empty_collection(e.type, e.value, parser.version()))
        << "RDB record of key '" << e.key << "', type " << int{e.type};
    redis.client().select(static_cast<int>(e.db));
    std::string payload = text(redis.command({"DUMP", std::string(e.key)}));
    ASSERT_GT(payload.size(), 1 + dump::kTrailerSize) << e.key;
    auto version = dump::rdb_version(payload);
    ASSERT_TRUE(version);
    const auto type = static_cast<uint8_t>(payload[0]);
    std::string_view value(payload.data() + 1, payload.size() - 1 - dump::kTrailerSize);
    EXPECT_FALSE(rdb::is_empty_collection(type, value, *version))
        << "DUMP of key '" << e.key << "', type " << int{type};
    types[type]++;
  }
  // Every encoding Redis 7.0 writes was seen.
  for (uint8_t t :
       {rdb::kString, rdb::kSet, rdb::kZset2, rdb::kHash, rdb::kSetIntset, rdb::kListQuicklist2,
        rdb::kHashListpack, rdb::kZsetListpack, rdb::kStreamListpacks2})
    EXPECT_GT(types[t], 0) << "no key of type " << int{t};
}

TEST(RdbValueRedisTest, NoDumpOfARealValueIsEmptyCompressed) { expect_no_dump_is_empty("yes"); }
TEST(RdbValueRedisTest, NoDumpOfARealValueIsEmptyUncompressed) { expect_no_dump_is_empty("no"); }

// --- Crafted RDBs, loaded by redis-server at start-up ------------------------

std::string len(uint64_t n) {
  std::string s;
  rdb::append_length(s, n);
  return s;
}
std::string str(std::string_view s) { return len(s.size()) + std::string(s); }
std::string lzf_literal(std::string_view plain) {  // one literal run, <= 32 bytes
  return "\xc3"s + len(1 + plain.size()) + len(plain.size()) + static_cast<char>(plain.size() - 1) +
         std::string(plain);
}
const std::string kEmptyZiplist = "\x0b\x00\x00\x00\x0a\x00\x00\x00\x00\x00\xff"s;
const std::string kEmptyListpack = "\x07\x00\x00\x00\x00\x00\xff"s;

struct Value {
  uint8_t type;
  std::string bytes;
};

// An RDB of version 10 (what Redis 7.0 writes and reads): DB 0 with the
// string "sentinel" and `values` as keys "k0", "k1", ...
std::string rdb_of(const std::vector<Value>& values) {
  std::string out = "REDIS0010"s + static_cast<char>(rdb::kOpSelectDb) + len(0);
  out += static_cast<char>(rdb::kString) + str("sentinel") + str("still here");
  for (size_t i = 0; i < values.size(); ++i)
    out += static_cast<char>(values[i].type) + str("k" + std::to_string(i)) + values[i].bytes;
  out += static_cast<char>(rdb::kOpEof);
  const uint64_t crc = crc64(0, out.data(), out.size());
  for (int i = 0; i < 8; ++i) out += static_cast<char>(crc >> (8 * i));
  return out;
}

// Starts redis-server on `rdb` as its dump file.
std::unique_ptr<RedisProcess> load(const TempDir& dir, const std::string& rdb) {
  dir.write_file("crafted.rdb", rdb);
  return std::make_unique<RedisProcess>(
      RedisOptions().with_args({"--dir", dir.path(), "--dbfilename", "crafted.rdb"}));
}

TEST(RdbValueRedisTest, TheLoaderSkipsExactlyWhatIsEmpty) {
  const std::string packed = len(rdb::kQuicklistPacked);
  const std::vector<Value> empties = {
      {rdb::kList, len(0)},
      {rdb::kSet, len(0)},
      {rdb::kZset, len(0)},
      {rdb::kHash, len(0)},
      {rdb::kZset2, len(0)},
      {rdb::kListZiplist, str(kEmptyZiplist)},
      {rdb::kZsetZiplist, str(kEmptyZiplist)},
      {rdb::kHashZiplist, lzf_literal(kEmptyZiplist)},
      {rdb::kListQuicklist, len(0)},
      {rdb::kListQuicklist, len(2) + str(kEmptyZiplist) + lzf_literal(kEmptyZiplist)},
      {rdb::kHashListpack, str(kEmptyListpack)},
      {rdb::kZsetListpack, lzf_literal(kEmptyListpack)},
      // Counted by the header (lpLength), not walked (sanitize-dump-payload
      // no): a count of 0 over a field and value, an unknown count with the
      // end marker first.
      {rdb::kHashListpack, str("\x0d\x00\x00\x00\x00\x00\x81"
                               "f\x02\x81v\x02\xff"s)},
      {rdb::kZsetListpack, lzf_literal("\x0a\x00\x00\x00\xff\xff\xff\x01\x01\xff"s)},
      {rdb::kListQuicklist2, len(0)},
      {rdb::kListQuicklist2, len(2) + packed + str(kEmptyListpack) + packed +
                                 lzf_literal("\x07\x00\x00\x00\xff\xff\xff"s)},
  };
  const std::string rdb = rdb_of(empties);

  // What the function says of each record, as the parser hands it over.
  rdb::RdbParser parser;
  parser.feed(rdb);
  int records = 0, empty = 0;
  while (true) {
    auto ev = parser.next();
    ASSERT_TRUE(ev.ok()) << ev.status().message();
    if (!*ev) break;
    if ((*ev)->kind != rdb::EventKind::kRecord) continue;
    records++;
    const bool is_empty = rdb::is_empty_collection((*ev)->type, (*ev)->value, parser.version());
    EXPECT_EQ(is_empty, (*ev)->key != "sentinel") << (*ev)->key;
    empty += is_empty ? 1 : 0;
  }
  ASSERT_EQ(records, static_cast<int>(empties.size()) + 1);
  ASSERT_EQ(empty, static_cast<int>(empties.size()));

  // What Redis does with them: loads the sentinel, skips every other key.
  TempDir dir("empty-rdb");
  auto redis = load(dir, rdb);
  ASSERT_TRUE(redis->started()) << redis->start_error();
  EXPECT_EQ(redis->client().total_keys(), 1u) << redis->log();
  EXPECT_EQ(text(redis->command({"GET", "sentinel"})), "still here");
  // The loader's summary line may reach the log file a moment after PING
  // answers.
  const std::string skipped = "empty keys skipped: " + std::to_string(empties.size());
  EXPECT_TRUE(eventually([&] { return redis->log().find(skipped) != std::string::npos; },
                         std::chrono::seconds(5), std::chrono::milliseconds(20)))
      << redis->log();

  // And RESTORE refuses each as a DUMP payload.
  for (const Value& v : empties) {
    std::string payload(dump::payload_size(v.bytes.size()), '\0');
    dump::write_payload(v.type, v.bytes, 10, payload.data());
    Reply r = redis->command({"RESTORE", "restored", "0", payload});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->type, REDIS_REPLY_ERROR) << "type " << int{v.type} << ": " << to_string(r.get());
  }
}

// Empty intsets and zipmaps are not skipped: the loader calls them corrupt and
// stops (redis-server exits), so the function must not call them empty.
TEST(RdbValueRedisTest, EmptyIntsetsAndZipmapsFailTheLoad) {
  const std::string empty_intset = "\x02\x00\x00\x00\x00\x00\x00\x00"s;
  const std::string empty_zipmap = "\x00\xff"s;
  for (const Value& v :
       {Value{rdb::kSetIntset, str(empty_intset)}, Value{rdb::kHashZipmap, str(empty_zipmap)}}) {
    SCOPED_TRACE(int{v.type});
    EXPECT_FALSE(rdb::is_empty_collection(v.type, v.bytes, 10));
    TempDir dir("empty-rdb");
    auto redis = load(dir, rdb_of({v}));
    EXPECT_FALSE(redis->started());
    EXPECT_NE(redis->start_error().find("integrity check failed"), std::string::npos)
        << redis->start_error();
  }
}

}  // namespace
}  // namespace rrs::test
