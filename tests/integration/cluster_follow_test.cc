// rdma-client --cluster --follow against real clusters: a 3-shard source
// cluster with an rdma-server beside each master, followed into a target of
// another layout while a writer drives the source through the owning
// masters: multi-key commands on hash tags, MULTI/EXEC on one slot, EVAL with
// keys, ZUNIONSTORE (movable keys: COMMAND GETKEYS), TTLs set and removed,
// DEL, and a FUNCTION LOAD on every source master (a command for
// every target master). Once the writer stops, the target equals the source
// value for value; SIGTERM stops every shard's follower, exit 0.
#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/cli/exit_codes.h"
#include "proto/hash_slot.h"
#include "tests/support/cluster_dataset.h"
#include "tests/support/cluster_write_load.h"
#include "tests/support/eventually.h"
#include "tests/support/http_get.h"
#include "tests/support/ports.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/sidecar.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;

constexpr size_t kKeys = 2000;

class ClusterFollowTest : public SidecarTest {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    if (IsSkipped()) return;
    source_ = std::make_unique<RedisCluster>(ClusterOptions().with_masters(3));
    ASSERT_TRUE(source_->started()) << source_->start_error();
    fill_cluster(*source_, kKeys);
  }

  // An rdma-server beside every source master, with a change log.
  void start_sidecars(const std::vector<std::string>& extra = {}) {
    for (RedisProcess* m : source_->masters()) {
      std::vector<std::string> args = {"--source", "psync"};
      args.insert(args.end(), extra.begin(), extra.end());
      sidecars_.push_back(std::make_unique<SidecarServer>(m->address(), args));
    }
    for (auto& s : sidecars_) ASSERT_TRUE(s->wait_ready()) << s->describe();
  }

  Process start_follower(RedisCluster& target, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {client_binary(), "--cluster"};
    for (const auto& s : sidecars_) argv.push_back(sidecar(*s));
    argv.insert(argv.end(), {"--redis", target.seed(), "--follow", "--status-interval", "1",
                             "--transport", test_transport(), "--quiet"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Process(argv);
  }

  static std::string sidecar(const SidecarServer& s) {
    return sidecar_host() + ":" + std::to_string(s.port());
  }

  // Waits until the target's values equal the source's; on failure, records
  // the first difference.
  bool converged(RedisCluster& target, std::chrono::milliseconds within) {
    std::map<std::string, std::string> want, got;
    const bool same = eventually(
        [&] {
          want = source_->logical_state();
          got = target.logical_state();
          return want == got;
        },
        within, 500ms);
    if (!same) ADD_FAILURE() << first_difference(want, got);
    return same;
  }

  static std::string first_difference(const std::map<std::string, std::string>& want,
                                      const std::map<std::string, std::string>& got) {
    for (const auto& [name, value] : want) {
      auto it = got.find(name);
      if (it == got.end()) return "the target lacks " + name;
      if (it->second != value) return name + ": source " + value + " target " + it->second;
    }
    for (const auto& [name, value] : got)
      if (!want.count(name)) return "the target has extra " + name;
    return "equal";
  }

  std::unique_ptr<RedisCluster> source_;
  std::vector<std::unique_ptr<SidecarServer>> sidecars_;
};

// Every shard's status line: one per sidecar, with its source named.
size_t shards_following(const std::string& out) {
  static const std::regex line(R"(following source=(\S+) offset=)");
  std::set<std::string> sources;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator();
       ++it)
    sources.insert((*it)[1]);
  return sources.size();
}

TEST_F(ClusterFollowTest, ThreeShardsFollowedIntoFourMasters) {
  ClusterWriter writer(*source_);
  while (writer.rounds() < 100) std::this_thread::sleep_for(10ms);  // before the snapshots
  start_sidecars();
  RedisCluster target(ClusterOptions().with_masters(4));
  ASSERT_TRUE(target.started()) << target.start_error();
  const uint16_t metrics_port = free_loopback_port();
  Process follower = start_follower(target, {"--metrics", std::to_string(metrics_port)});
  ASSERT_TRUE(follower.wait_for_line("cluster-synced", 90s)) << follower.describe();
  ASSERT_TRUE(eventually([&] { return shards_following(follower.stdout_text()) == 3; }, 30s))
      << follower.describe();
  // A follow-lag series per shard, named by its sidecar.
  const std::string scraped = http_get(metrics_port, "/metrics").body;
  for (const auto& s : sidecars_)
    EXPECT_TRUE(
        sample_value(scraped, "rrs_client_follow_lag_bytes{source=\"" + sidecar(*s) + "\"}"))
        << scraped;
  uint64_t before = writer.rounds();
  while (writer.rounds() < before + 200 && follower.running()) std::this_thread::sleep_for(10ms);
  // One source master flushes itself while the writer goes on: the target
  // loses that shard's keys, and only those.
  source_->master(1).run({"FLUSHALL"});
  before = writer.rounds();
  while (writer.rounds() < before + 100 && follower.running()) std::this_thread::sleep_for(10ms);
  // Commands for every master, from each source master's stream: the
  // second and third LOAD find the library there and replace it; the second
  // and third DELETE find it gone already, which is what they want.
  for (RedisProcess* m : source_->masters()) {
    m->run({"FUNCTION", "LOAD",
            "#!lua name=followed\nredis.register_function('g', function() return 2 end)"});
    m->run({"FUNCTION", "LOAD",
            "#!lua name=gone\nredis.register_function('h', function() return 3 end)"});
  }
  for (RedisProcess* m : source_->masters()) m->run({"FUNCTION", "DELETE", "gone"});
  writer.stop();
  EXPECT_EQ(writer.errors(), "");

  EXPECT_TRUE(converged(target, 30s)) << follower.describe();
  EXPECT_NE(target.logical_state().count("function library followed"), 0u);
  EXPECT_EQ(target.logical_state().count("function library gone"), 0u);
  EXPECT_TRUE(follower.running()) << follower.describe();

  follower.signal(SIGTERM);
  EXPECT_EQ(follower.wait(30s), 0) << follower.describe();
  // Each shard says where it stopped; together they applied the writer's
  // commands, and each broadcast its FUNCTION LOADs and DELETE.
  static const std::regex stopped(
      R"(stopped source=\S+ offset=\d+ .*commands=(\d+) .*all_masters=(\d+) flushes=(\d+))");
  const std::string out = follower.stdout_text();
  uint64_t commands = 0, broadcasts = 0, flushes = 0, lines = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), stopped);
       it != std::sregex_iterator(); ++it, ++lines) {
    commands += std::stoull((*it)[1]);
    broadcasts += std::stoull((*it)[2]);
    flushes += std::stoull((*it)[3]);
  }
  EXPECT_EQ(flushes, 1u) << follower.describe();
  EXPECT_EQ(lines, 3u) << follower.describe();
  EXPECT_GT(commands, 300u * 10) << follower.describe();
  EXPECT_EQ(broadcasts, 9u) << follower.describe();
}

// A field summed over the last status line of every shard.
uint64_t sum_of_last(const std::string& out, const std::string& field) {
  static const std::regex line(R"((following|stopped) source=(\S+) [^\n]*)");
  std::map<std::string, uint64_t> last;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator();
       ++it)
    last[(*it)[2]] = field_u64(parse_fields(it->str()), field).value_or(0);
  uint64_t sum = 0;
  for (const auto& [source, n] : last) sum += n;
  return sum;
}

// The target changes under the followers while the writer runs: the slots
// of busy hash tags resharded key by key (ASK while they migrate, TRYAGAIN
// for multi-key commands split by it, MOVED after), and a master failed
// over to its replica (MOVED from its old self). Each slot's commands still
// apply in stream order: the target ends equal to the source.
TEST_F(ClusterFollowTest, RedirectionsWhileFollowingKeepEachSlotInOrder) {
  ClusterWriter writer(*source_);
  while (writer.rounds() < 50) std::this_thread::sleep_for(10ms);
  start_sidecars();
  RedisCluster target(ClusterOptions().with_masters(3).with_replicas(1));
  ASSERT_TRUE(target.started()) << target.start_error();
  Process follower = start_follower(target);
  ASSERT_TRUE(eventually([&] { return shards_following(follower.stdout_text()) == 3; }, 90s))
      << follower.describe();

  for (size_t k = 0; k < 6; ++k) {
    const uint16_t slot = hash_slot("t" + std::to_string(k));
    ASSERT_TRUE(target.migrate_slot(slot, (target.shard_for_slot(slot) + 1) % 3))
        << target.describe();
  }
  ASSERT_TRUE(target.failover(2)) << target.describe();
  const uint64_t before = writer.rounds();
  while (writer.rounds() < before + 200 && follower.running()) std::this_thread::sleep_for(10ms);
  writer.stop();
  EXPECT_EQ(writer.errors(), "");

  EXPECT_TRUE(converged(target, 60s)) << follower.describe();
  ASSERT_TRUE(follower.running()) << follower.describe();
  follower.signal(SIGTERM);
  EXPECT_EQ(follower.wait(30s), 0) << follower.describe();
  EXPECT_GT(sum_of_last(follower.stdout_text(), "moved"), 0u) << follower.describe();
}

// PTTL of `key` on the master serving it (-2: none, -1: no TTL, -3: no answer).
int64_t pttl(RedisCluster& cluster, const std::string& key) {
  Reply r = cluster.node_for_slot(hash_slot(key))->command({"PTTL", key});
  return r && r->type == REDIS_REPLY_INTEGER ? r->integer : -3;
}

// The TTL guard, per shard: keys expiring soon are loaded with a guard TTL
// and get their own back once their shard's follower caught up, unless the
// stream changed them. Without it "extended" (expired by the load, its TTL
// extended on the source after the snapshot) would be lost on the target.
TEST_F(ClusterFollowTest, GuardTtlKeepsKeysWhoseTtlTheSourceExtended) {
  auto owner = [&](const std::string& key) -> RedisProcess& {
    return *source_->node_for_slot(hash_slot(key));
  };
  owner("extended").run({"SET", "extended", "v", "PX", "1500"});
  owner("untouched").run({"SET", "untouched", "v", "PX", "1500"});
  owner("later").run({"SET", "later", "v", "EX", "300"});
  start_sidecars();
  owner("extended").run({"PEXPIRE", "extended", "600000"});
  std::this_thread::sleep_for(2s);
  RedisCluster target(ClusterOptions().with_masters(2));
  ASSERT_TRUE(target.started()) << target.start_error();
  Process follower = start_follower(target);
  EXPECT_TRUE(eventually([&] { return pttl(target, "extended") > 500000; }, 60s, 100ms))
      << follower.describe();
  EXPECT_TRUE(eventually([&] { return pttl(target, "untouched") == -2; }, 30s, 100ms));
  EXPECT_TRUE(eventually(
      [&] {
        const int64_t t = pttl(target, "later");
        return t > 0 && t <= 300000;
      },
      30s, 100ms))
      << follower.describe();
  follower.signal(SIGTERM);
  EXPECT_EQ(follower.wait(30s), 0) << follower.describe();
}

// A follower that falls behind a shard's change log ring cannot resync that
// shard alone (its keys are on every target master): every shard stops,
// exit 3, and the message says to run again with --flush.
TEST_F(ClusterFollowTest, FallingBehindOneShardsRingStopsWithExit3) {
  start_sidecars({"--log-size", "16k"});
  RedisCluster target(ClusterOptions().with_masters(2));
  ASSERT_TRUE(target.started()) << target.start_error();
  Process follower = start_follower(target);
  ASSERT_TRUE(eventually([&] { return shards_following(follower.stdout_text()) == 3; }, 90s))
      << follower.describe();
  follower.signal(SIGSTOP);
  {
    ClusterWriter writer(*source_);
    while (writer.rounds() < 300) std::this_thread::sleep_for(10ms);
    writer.stop();
    EXPECT_EQ(writer.errors(), "");
  }
  follower.signal(SIGCONT);
  EXPECT_EQ(follower.wait(60s), exit_code::kUnavailable) << follower.describe();
  const std::string err = follower.stderr_text();
  EXPECT_NE(err.find("fell behind the change log"), std::string::npos) << follower.describe();
  EXPECT_NE(err.find("--flush"), std::string::npos) << follower.describe();
}

// The source cluster resharded while followed: a key moving into another
// source shard comes as RESTORE-ASKING in that shard's stream and as a DEL in
// its old shard's, which nothing orders on the target. Every follower stops
// (exit 5) naming it, rather than lose the key.
TEST_F(ClusterFollowTest, ASourceSlotMigrationStopsTheFollowersWithExit5) {
  RedisProcess& owner = *source_->node_for_slot(hash_slot("moving"));
  owner.run({"SET", "moving", "v"});
  start_sidecars();
  RedisCluster target(ClusterOptions().with_masters(2));
  ASSERT_TRUE(target.started()) << target.start_error();
  Process follower = start_follower(target);
  ASSERT_TRUE(eventually([&] { return shards_following(follower.stdout_text()) == 3; }, 90s))
      << follower.describe();
  const uint16_t slot = hash_slot("moving");
  ASSERT_TRUE(source_->migrate_slot(slot, (source_->shard_for_slot(slot) + 1) % 3))
      << source_->describe();
  EXPECT_EQ(follower.wait(60s), exit_code::kRefused) << follower.describe();
  const std::string err = follower.stderr_text();
  EXPECT_NE(err.find("being resharded"), std::string::npos) << follower.describe();
  EXPECT_NE(err.find("--flush"), std::string::npos) << follower.describe();
}

}  // namespace
}  // namespace rrs::test
