// The RDB parser against what redis-server really writes: every record cut
// out of a saved RDB, turned into a DUMP payload, must equal byte for byte
// what DUMP returns for that key on the same server (which also checks our
// CRC64), with the same absolute expiry, under both rdbcompression settings.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "proto/dump_payload.h"
#include "proto/rdb_parser.h"
#include "tests/support/dataset.h"
#include "tests/support/redis_process.h"

namespace rrs::test {
namespace {

// SAVE, then the bytes of the RDB file.
std::string save_rdb(RedisProcess& redis) {
  redis.run({"SAVE"});
  Reply dir = redis.run({"CONFIG", "GET", "dir"});
  Reply file = redis.run({"CONFIG", "GET", "dbfilename"});
  std::string path = std::string(dir->element[1]->str) + "/" + file->element[1]->str;
  std::ifstream in(path, std::ios::binary);
  std::stringstream all;
  all << in.rdbuf();
  return all.str();
}

void expect_records_equal_dump(const std::string& compression) {
  RedisProcess redis;
  ASSERT_TRUE(redis.started()) << redis.start_error();
  redis.run({"CONFIG", "SET", "rdbcompression", compression});
  fill_all_types(redis);
  ASSERT_FALSE(::testing::Test::HasFailure());
  std::string rdb = save_rdb(redis);
  ASSERT_GT(rdb.size(), 9u);

  rdb::RdbParser parser;
  parser.feed(rdb);
  uint64_t records = 0, functions = 0;
  bool end = false;
  while (true) {
    auto ev = parser.next();
    ASSERT_TRUE(ev.ok()) << ev.status().message();
    if (!*ev) break;
    const rdb::Event& e = **ev;
    if (e.kind == rdb::EventKind::kFunction) functions++;
    if (e.kind == rdb::EventKind::kEnd) end = true;
    if (e.kind != rdb::EventKind::kRecord) continue;
    records++;
    std::string payload(dump::payload_size(e.value.size()), '\0');
    dump::write_payload(e.type, e.value, parser.version(), payload.data());
    redis.client().select(static_cast<int>(e.db));
    std::string key(e.key);
    EXPECT_EQ(payload, text(redis.command({"DUMP", key})))
        << "key '" << key << "' in DB " << e.db << ", type " << int{e.type};
    Reply expire = redis.command({"PEXPIRETIME", key});
    ASSERT_TRUE(expire && expire->type == REDIS_REPLY_INTEGER);
    EXPECT_EQ(e.expire_at_ms, expire->integer) << key;
  }
  EXPECT_TRUE(end);
  EXPECT_TRUE(parser.done());
  EXPECT_EQ(parser.rest(), "");
  EXPECT_EQ(records, redis.client().total_keys());
  EXPECT_EQ(functions, redis.client().functions().size());
}

TEST(RdbParserRedisTest, RecordsEqualDumpCompressed) { expect_records_equal_dump("yes"); }
TEST(RdbParserRedisTest, RecordsEqualDumpUncompressed) { expect_records_equal_dump("no"); }

}  // namespace
}  // namespace rrs::test
