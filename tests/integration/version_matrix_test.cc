// Every server version the project supports, as master and as target, in
// both load modes: each cell ends equal (the target holds the master's data,
// compared value by value across versions). Where the target does not load
// the master's RDB version the client converts each value; where that drops
// something the target has no place for, the sync is refused with exit 5
// before anything is loaded, and with --allow-lossy-conversion ends equal but
// for what it counted as dropped. The servers come from tests/servers.sh.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/dataset.h"
#include "tests/support/eventually.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"

namespace rrs::test {
namespace {

const char* const kServers[] = {"redis-7.0", "valkey-8.0", "redis-8.0", "valkey-9.1"};

// Cells converted: every move to a server that cannot load the master's RDB
// version (a downgrade, or the other engine's format past RDB 11).
bool converted(const std::string& master, const std::string& target) {
  static const std::set<std::pair<std::string, std::string>> kConverted = {
      {"valkey-8.0", "redis-7.0"}, {"redis-8.0", "redis-7.0"},  {"redis-8.0", "valkey-8.0"},
      {"redis-8.0", "valkey-9.1"}, {"valkey-9.1", "redis-7.0"}, {"valkey-9.1", "valkey-8.0"},
      {"valkey-9.1", "redis-8.0"}};
  return kConverted.contains({master, target});
}

bool has_field_ttls(const std::string& server) {
  return server == "redis-8.0" || server == "valkey-9.1";
}

// What the conversion drops with this data set: field TTLs into a server
// without them, consumers' active times (streams with groups) into Redis 7.0
// from anything newer.
bool drops_field_ttls(const std::string& master, const std::string& target) {
  return converted(master, target) && has_field_ttls(master) && !has_field_ttls(target);
}
bool drops_active_times(const std::string& master, const std::string& target) {
  return converted(master, target) && target == "redis-7.0";
}

// A logical state without its hash field expiries (what a target without
// field TTLs cannot hold).
std::map<std::string, std::string> without_field_expiries(std::map<std::string, std::string> s) {
  std::erase_if(s,
                [](const auto& e) { return e.first.find(" field expiry ") != std::string::npos; });
  return s;
}

using Cell = std::tuple<std::string, std::string, std::string>;  // master, target, mode

class VersionMatrix : public SidecarTest, public ::testing::WithParamInterface<Cell> {};

TEST_P(VersionMatrix, EqualOrRefused) {
  const auto& [master_name, target_name, mode] = GetParam();
  TestServer master_server, target_server;
  RRS_NEED_SERVER(master_server, master_name);
  RRS_NEED_SERVER(target_server, target_name);
  RedisProcess master(RedisOptions().with_server(master_server));
  RedisProcess target(RedisOptions().with_server(target_server));
  ASSERT_TRUE(master.started()) << master.start_error();
  ASSERT_TRUE(target.started()) << target.start_error();

  fill_all_types(master);
  if (has_field_ttls(master_name)) {
    // A small (listpack) and a large (hashtable) hash, some fields with TTLs.
    master.client().run({"HSET", "hfe:small", "a", "1", "b", "2", "c", "3"});
    master.client().run({"HPEXPIREAT", "hfe:small", "4102444800000", "FIELDS", "1", "b"});
    for (int i = 0; i < 600; ++i)
      master.client().run({"HSET", "hfe:big", "f" + std::to_string(i), std::to_string(i)});
    master.client().run({"HPEXPIREAT", "hfe:big", "4102444800000", "FIELDS", "2", "f7", "f9"});
  }
  ASSERT_FALSE(HasFailure());

  SidecarServer server(master.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_EQ(parse_fields(server.ready_line())["engine"], master_server.engine())
      << server.ready_line();

  const bool lossy = drops_field_ttls(master_name, target_name) ||
                     drops_active_times(master_name, target_name);
  ClientRun run = sync_to(server.port(), target, {"--mode", mode});
  if (lossy) {
    EXPECT_EQ(run.exit_code, 5) << run.describe();
    EXPECT_NE(run.err.find("--allow-lossy-conversion"), std::string::npos) << run.describe();
    EXPECT_NE(run.err.find("(key \""), std::string::npos)
        << "names the first key: " << run.describe();
    EXPECT_EQ(target.client().total_keys(), 0u) << "a refusal loads nothing";
    run = sync_to(server.port(), target, {"--mode", mode, "--allow-lossy-conversion"});
  }
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  if (converted(master_name, target_name)) {
    EXPECT_NE(run.summary.find("convert_rdb"), run.summary.end()) << run.describe();
    EXPECT_GT(run.count("reencoded").value_or(0), 0u) << run.describe();
  }
  if (drops_field_ttls(master_name, target_name)) {
    EXPECT_EQ(run.count("dropped_field_ttls"), 2u) << run.describe();  // hfe:small, hfe:big
  }
  if (drops_active_times(master_name, target_name)) {
    EXPECT_GT(run.count("dropped_active_times").value_or(0), 0u) << run.describe();
  }
  if (drops_field_ttls(master_name, target_name)) {
    EXPECT_EQ(target.client().logical_state(),
              without_field_expiries(master.client().logical_state()));
  } else {
    EXPECT_EQ(target.client().logical_state(), master.client().logical_state());
  }
  if (master_name == target_name) {
    EXPECT_EQ(target.digest(), master.digest());
  }
}

// A target that needs the master's values converted cannot go on as its
// replica, nor take its commands: --handoff and --follow are refused before
// anything is loaded.
TEST_F(SidecarTest, DowngradeRefusesHandoffAndFollow) {
  TestServer master_version, target_version;
  RRS_NEED_SERVER(master_version, "redis-8.0");
  RRS_NEED_SERVER(target_version, "redis-7.0");
  RedisProcess master(RedisOptions().with_server(master_version));
  RedisProcess target(RedisOptions().with_server(target_version));
  ASSERT_TRUE(master.started()) << master.start_error();
  ASSERT_TRUE(target.started()) << target.start_error();
  fill_strings(master, 0, "k:", 10);
  SidecarServer server(master.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--mode", "replica", "--handoff", "--master", master.address()},
        std::vector<std::string>{"--follow"}}) {
    ClientRun run = sync_to(server.port(), target, flags);
    EXPECT_EQ(run.exit_code, 5) << run.describe();
    EXPECT_NE(run.err.find("does not load RDB 12"), std::string::npos) << run.describe();
    EXPECT_NE(run.err.find("A plain full sync works"), std::string::npos) << run.describe();
    EXPECT_EQ(target.client().total_keys(), 0u);
  }
  ClientRun plain = sync_to(server.port(), target, {"--mode", "replica"});
  EXPECT_EQ(plain.exit_code, 0) << plain.describe();
  EXPECT_EQ(target.client().logical_state(), master.client().logical_state());
}

// An empty master still writes its RDB header: the table carries that
// version, so the RDB a replica-mode client streams is one the target takes
// (it once said "REDIS0000").
class EmptyMaster : public SidecarTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(EmptyMaster, SyncsInBothModes) {
  TestServer version;
  RRS_NEED_SERVER(version, GetParam());
  RedisProcess master(RedisOptions().with_server(version));
  ASSERT_TRUE(master.started()) << master.start_error();
  SidecarServer server(master.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_NE(parse_fields(server.ready_line())["rdb"], "0") << server.ready_line();
  for (const char* mode : {"restore", "replica"}) {
    RedisProcess target(RedisOptions().with_server(version));
    ASSERT_TRUE(target.started()) << target.start_error();
    target.client().run({"SET", "stale", "x"});
    ClientRun run = sync_to(server.port(), target, {"--mode", mode, "--flush"});
    EXPECT_EQ(run.exit_code, 0) << mode << ": " << run.describe();
    EXPECT_EQ(run.count("keys"), 0u) << run.describe();
    EXPECT_EQ(target.client().total_keys(), 0u) << mode;
  }
}

std::string identifier(std::string name) {
  for (char& c : name)
    if (c == '-' || c == '.') c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Servers, EmptyMaster,
                         ::testing::ValuesIn(std::vector<std::string>(std::begin(kServers),
                                                                      std::end(kServers))),
                         [](const auto& server) { return identifier(server.param); });

// Upgrades through replica mode and --handoff: the target, newer than the
// master (or the other engine of a generation that loads its RDB), ends a
// replica of the master by a partial resync, and stays equal under writes.
using Pair = std::pair<std::string, std::string>;
class UpgradeHandoff : public SidecarTest, public ::testing::WithParamInterface<Pair> {};

TEST_P(UpgradeHandoff, EndsWithAPartialResync) {
  TestServer master_version, target_version;
  RRS_NEED_SERVER(master_version, GetParam().first);
  RRS_NEED_SERVER(target_version, GetParam().second);
  RedisProcess master(RedisOptions().with_server(master_version));
  RedisProcess target(RedisOptions().with_server(target_version));
  ASSERT_TRUE(master.started()) << master.start_error();
  ASSERT_TRUE(target.started()) << target.start_error();
  fill_strings(master, 0, "k:", 500);
  fill_strings(master, 3, "k3:", 50, 2000);
  SidecarServer server(master.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  fill_strings(master, 0, "after:", 200);  // into the change log, past the table
  const std::string full_before = master.info_field("stats", "sync_full");
  const std::string partial_before = master.info_field("stats", "sync_partial_ok");

  ClientRun run = sync_to(server.port(), target,
                          {"--mode", "replica", "--handoff", "--master", master.address()});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_NE(run.out.find("partial_resync=yes"), std::string::npos) << run.describe();
  EXPECT_EQ(master.info_field("stats", "sync_full"), full_before);
  EXPECT_EQ(std::stoull(master.info_field("stats", "sync_partial_ok")),
            std::stoull(partial_before) + 1);
  master.client().run({"SET", "after-handoff", "1"});
  EXPECT_TRUE(
      eventually([&] { return target.client().total_keys() == master.client().total_keys(); },
                 std::chrono::seconds(10), std::chrono::milliseconds(50)));
  EXPECT_EQ(target.info_field("replication", "master_link_status"), "up");
  EXPECT_EQ(target.client().logical_state(), master.client().logical_state());
}

INSTANTIATE_TEST_SUITE_P(
    Servers, UpgradeHandoff,
    ::testing::Values(Pair{"redis-7.0", "redis-8.0"}, Pair{"redis-7.0", "valkey-8.0"},
                      Pair{"redis-7.0", "valkey-9.1"}, Pair{"valkey-8.0", "valkey-9.1"},
                      Pair{"valkey-8.0", "redis-8.0"}),
    [](const auto& pair) { return identifier(pair.param.first + "_to_" + pair.param.second); });

std::vector<Cell> every_cell() {
  std::vector<Cell> cells;
  for (const char* m : kServers)
    for (const char* t : kServers)
      for (const char* mode : {"restore", "replica"}) cells.emplace_back(m, t, mode);
  return cells;
}

std::string cell_name(const ::testing::TestParamInfo<Cell>& cell) {
  const auto& [master, target, mode] = cell.param;
  return identifier(master + "_to_" + target + "_" + mode);
}

INSTANTIATE_TEST_SUITE_P(Servers, VersionMatrix, ::testing::ValuesIn(every_cell()), cell_name);

}  // namespace
}  // namespace rrs::test
