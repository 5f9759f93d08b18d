// An RDB corpus per server version: for each server (Redis 7.0 and 8.0,
// Valkey 8.0 and 9.1) and two encoding settings, a master filled with every
// type (tests/support/dataset.h, and hashes with field TTLs where the server
// has them) SAVEs its RDB. The reference is a fresh server of the same
// version loading that file itself (as its dump.rdb); a fresh target loaded
// through `rdma-server --source rdb --rdb-file` and `rdma-client`, in
// restore or replica mode, must equal it value for value
// (RedisClient::logical_state()) and by DEBUG DIGEST.
//
// The settings make the RDB hold each type's other encodings:
//   small: every small-encoding threshold at its lowest (hash, zset and set
//          listpacks and intsets off, one element per quicklist node, one
//          entry per stream node, dense HyperLogLogs), so the RDB holds
//          hashtables, skiplists, many-node quicklists and streams;
//   compact: every threshold at 100000, so everything stays a listpack or
//          an intset (listpack lists on 7.2 and up), with quicklist nodes
//          LZF-compressed (list-compress-depth 1).
// The *-listpack-* names are what every version here takes (Redis 7.0 also
// takes the older *-ziplist-* ones); set-max-listpack-* came with 7.2.
// The reference and the targets run with the master's settings.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/dataset.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/temp_dir.h"

namespace rrs::test {
namespace {

const char* const kServers[] = {"redis-7.0", "valkey-8.0", "redis-8.0", "valkey-9.1"};

enum class Encodings { kSmall, kCompact };
const char* name_of(Encodings e) { return e == Encodings::kSmall ? "small" : "compact"; }
// For gtest's messages and test list.
void PrintTo(Encodings e, std::ostream* os) { *os << name_of(e); }

bool has_set_listpacks(const std::string& server) { return server != "redis-7.0"; }
bool has_field_ttls(const std::string& server) {
  return server == "redis-8.0" || server == "valkey-9.1";
}

std::vector<std::string> encoding_args(const std::string& server, Encodings e) {
  std::vector<std::string> args;
  auto set = [&](const char* name, const char* value) {
    args.insert(args.end(), {std::string("--") + name, value});
  };
  if (e == Encodings::kSmall) {
    set("hash-max-listpack-entries", "0");
    set("zset-max-listpack-entries", "0");
    set("set-max-intset-entries", "0");
    if (has_set_listpacks(server)) set("set-max-listpack-entries", "0");
    set("list-max-listpack-size", "1");
    set("stream-node-max-entries", "1");
    set("hll-sparse-max-bytes", "0");
  } else {
    for (const char* name :
         {"hash-max-listpack-entries", "hash-max-listpack-value", "zset-max-listpack-entries",
          "zset-max-listpack-value", "set-max-intset-entries", "list-max-listpack-size",
          "stream-node-max-entries", "hll-sparse-max-bytes"})
      set(name, "100000");
    if (has_set_listpacks(server)) {
      set("set-max-listpack-entries", "100000");
      set("set-max-listpack-value", "100000");
    }
    set("stream-node-max-bytes", "0");  // no byte limit
    set("list-compress-depth", "1");
  }
  return args;
}

RedisOptions options(const TestServer& server, Encodings e, std::vector<std::string> more = {}) {
  std::vector<std::string> args = encoding_args(server.name, e);
  args.insert(args.end(), more.begin(), more.end());
  return RedisOptions().with_server(server).with_args(std::move(args));
}

// fill_all_types, and where the server has them hashes with field TTLs: a
// small and a large one (a listpack and a hashtable by default), some
// fields with TTLs, as version_matrix_test writes them.
void fill(RedisProcess& master, const std::string& server) {
  fill_all_types(master);
  if (!has_field_ttls(server)) return;
  RedisClient& c = master.client();
  c.run({"HSET", "hfe:small", "a", "1", "b", "2", "c", "3"});
  c.run({"HPEXPIREAT", "hfe:small", "4102444800000", "FIELDS", "1", "b"});
  std::vector<std::string> big = {"HSET", "hfe:big"};
  for (int i = 0; i < 600; ++i) big.insert(big.end(), {"f" + std::to_string(i), std::to_string(i)});
  c.run(big);
  c.run({"HPEXPIREAT", "hfe:big", "4102444800000", "FIELDS", "2", "f7", "f9"});
}

// The settings took: OBJECT ENCODING of a few keys on the master.
void expect_encodings(RedisProcess& master, const std::string& server, Encodings e) {
  auto encoding = [&](const char* key) { return text(master.run({"OBJECT", "ENCODING", key})); };
  if (e == Encodings::kSmall) {
    EXPECT_EQ(encoding("hash:small"), "hashtable");
    EXPECT_EQ(encoding("zset:small"), "skiplist");
    EXPECT_EQ(encoding("set:intset"), "hashtable");
    EXPECT_EQ(encoding("list:small"), "quicklist");
  } else {
    EXPECT_EQ(encoding("hash:large"), "listpack");
    EXPECT_EQ(encoding("zset:large"), "listpack");
    EXPECT_EQ(encoding("set:manyints"), "intset");
    EXPECT_EQ(encoding("set:large"), has_set_listpacks(server) ? "listpack" : "hashtable");
  }
}

std::string copy_file(const std::string& from, const TempDir& into, const std::string& name) {
  std::ifstream in(from, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_FALSE(bytes.empty()) << from;
  return into.write_file(name, bytes);
}

using Case = std::tuple<std::string, Encodings, std::string>;  // server, encodings, mode

class RdbCorpus : public SidecarTest, public ::testing::WithParamInterface<Case> {};

TEST_P(RdbCorpus, SidecarLoadEqualsTheServersOwnLoad) {
  const auto& [name, encodings, mode] = GetParam();
  TestServer server;
  RRS_NEED_SERVER(server, name);

  RedisProcess master(options(server, encodings));
  ASSERT_TRUE(master.started()) << master.start_error();
  fill(master, name);
  expect_encodings(master, name, encodings);
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(text(master.run({"SAVE"})), "OK");
  TempDir dir("rdbcorpus");
  const std::string file = copy_file(master.dir().file("dump.rdb"), dir, "dump.rdb");

  // (a) The server's own load of the file.
  RedisProcess reference(
      options(server, encodings, {"--dir", dir.path(), "--dbfilename", "dump.rdb"}));
  ASSERT_TRUE(reference.started()) << reference.start_error();
  const auto want = reference.client().logical_state();
  ASSERT_GT(want.size(), 50u);
  const std::string want_digest = reference.digest();
  ASSERT_EQ(want_digest, master.digest()) << "the server's own load differs from its master";
  ASSERT_EQ(reference.client().total_keys(), master.client().total_keys());

  // (b) The sidecar's.
  SidecarServer sidecar("", {"--source", "rdb", "--rdb-file", file});
  ASSERT_TRUE(sidecar.wait_ready()) << sidecar.describe();
  EXPECT_EQ(field_u64(sidecar.ready_fields(), "records"), master.client().total_keys())
      << sidecar.ready_line();
  RedisProcess target(options(server, encodings));
  ASSERT_TRUE(target.started()) << target.start_error();
  ClientRun run = sync_to(sidecar.port(), target, {"--mode", mode});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(run.count("keys"), master.client().total_keys()) << run.describe();
  EXPECT_EQ(target.digest(), want_digest);
  EXPECT_EQ(target.client().logical_state(), want);
  EXPECT_EQ(target.keyspace(), reference.keyspace());
}

std::vector<Case> every_case() {
  std::vector<Case> cases;
  for (const char* server : kServers)
    for (Encodings e : {Encodings::kSmall, Encodings::kCompact})
      for (const char* mode : {"restore", "replica"}) cases.emplace_back(server, e, mode);
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<Case>& c) {
  auto [server, encodings, mode] = c.param;
  for (char& ch : server)
    if (ch == '-' || ch == '.') ch = '_';
  return server + "_" + name_of(encodings) + "_" + mode;
}

INSTANTIATE_TEST_SUITE_P(Servers, RdbCorpus, ::testing::ValuesIn(every_case()), case_name);

}  // namespace
}  // namespace rrs::test
