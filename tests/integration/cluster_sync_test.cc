// rdma-client --cluster against real clusters: a source cluster of 3 shards,
// an rdma-server beside each master, loaded into target clusters of other
// layouts (4 masters, 2 uneven ones); the target ends equal key by key and
// slot by slot. Redirections while the client holds a stale slot map (a
// resharded slot: MOVED; a slot mid-migration: ASK; a failed-over master:
// MOVED from its old self) are followed, and the end state is still equal.
// What cannot go into a cluster is refused before anything is touched. A
// Valkey 9.1 source cluster goes into a Redis 8.0 one and back, converted.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/cli/exit_codes.h"
#include "proto/hash_slot.h"
#include "tests/support/cluster_dataset.h"
#include "tests/support/eventually.h"
#include "tests/support/ports.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/sidecar.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;

constexpr size_t kKeys = 3000;

class ClusterSyncTest : public SidecarTest {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    if (IsSkipped()) return;
    source_ = std::make_unique<RedisCluster>(ClusterOptions().with_masters(3).with_replicas(1));
    ASSERT_TRUE(source_->started()) << source_->start_error();
    fill_ = fill_cluster(*source_, kKeys);
    for (RedisProcess* m : source_->masters())
      m->run({"FUNCTION", "LOAD",
              "#!lua name=lib\nredis.register_function('f', function() "
              "return 1 end)"});
  }

  // An rdma-server beside every source master (or every node of `beside`),
  // on `ports` if given.
  void start_sidecars(const std::vector<uint16_t>& ports = {},
                      std::vector<RedisProcess*> beside = {}) {
    if (beside.empty()) beside = source_->masters();
    for (size_t i = 0; i < beside.size(); ++i) {
      std::vector<std::string> extra;
      if (!ports.empty()) extra = {"--port", std::to_string(ports[i])};
      sidecars_.push_back(std::make_unique<SidecarServer>(beside[i]->address(), extra));
    }
    for (auto& s : sidecars_) ASSERT_TRUE(s->wait_ready()) << s->describe();
  }

  std::vector<std::string> cluster_args(const std::vector<uint16_t>& ports, RedisCluster& target) {
    std::vector<std::string> argv = {client_binary(), "--cluster"};
    for (uint16_t p : ports) argv.push_back(sidecar_host() + ":" + std::to_string(p));
    for (const std::string& a :
         {std::string("--redis"), target.seed(), std::string("--transport"), test_transport()})
      argv.push_back(a);
    return argv;
  }

  std::vector<uint16_t> sidecar_ports() const {
    std::vector<uint16_t> ports;
    for (const auto& s : sidecars_) ports.push_back(s->port());
    return ports;
  }

  ClientRun sync_into(RedisCluster& target, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = cluster_args(sidecar_ports(), target);
    argv.erase(argv.begin());  // run_client adds the binary
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_client(argv);
  }

  // The target holds exactly the source's keys, in the same slots, and
  // every master has the functions. `from`: the source nodes the sidecars
  // read, when not the masters (a Redis 7.0 replica's stream groups can
  // differ from its master's: entries-read is not replicated).
  void expect_equal(RedisCluster& target, const std::vector<RedisProcess*>& from = {}) {
    EXPECT_EQ(target.total_keys(), fill_.keys);
    EXPECT_EQ(target.keys_per_slot(), fill_.keys_per_slot);
    const auto got = target.logical_state();
    std::map<std::string, std::string> want;
    if (from.empty()) want = source_->logical_state();
    for (RedisProcess* node : from) {
      node->run({"READONLY"});  // a cluster replica answers reads only after it
      want.merge(node->client().logical_state());
    }
    EXPECT_EQ(got.size(), want.size());
    for (const auto& [key, value] : want) {
      auto it = got.find(key);
      if (it == got.end()) {
        ADD_FAILURE() << "missing in the target: " << key;
      } else {
        EXPECT_EQ(it->second, value) << key;
      }
    }
  }

  std::unique_ptr<RedisCluster> source_;
  ClusterFill fill_;
  std::vector<std::unique_ptr<SidecarServer>> sidecars_;
};

// The `cluster-synced` line of a run's stdout.
Fields cluster_line(const std::string& out) {
  const size_t at = out.find("cluster-synced ");
  if (at == std::string::npos) return {};
  return parse_fields(out.substr(at, out.find('\n', at) - at));
}

// A field summed over every shard's `synced` line.
uint64_t sum_over_shards(const std::string& out, const std::string& field) {
  uint64_t sum = 0;
  size_t at = 0;
  while ((at = out.find("synced keys=", at)) != std::string::npos) {
    const size_t end = out.find('\n', at);
    sum += field_u64(parse_fields(out.substr(at, end - at)), field).value_or(0);
    at = end;
  }
  return sum;
}

TEST_F(ClusterSyncTest, ThreeShardsIntoFourMastersAndIntoTwoUnevenOnes) {
  start_sidecars();
  RedisCluster four(ClusterOptions().with_masters(4));
  ASSERT_TRUE(four.started()) << four.start_error();
  ClientRun run = sync_into(four);
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  Fields total = cluster_line(run.out);
  EXPECT_EQ(total["sources"], "3") << run.out;
  EXPECT_EQ(total["masters"], "4") << run.out;
  EXPECT_EQ(field_u64(total, "keys"), fill_.keys) << run.out;
  expect_equal(four);

  auto uneven = SlotRanges::parse("0-999");
  auto rest = SlotRanges::parse("1000-16383");
  ASSERT_TRUE(uneven.ok() && rest.ok());
  RedisCluster two(ClusterOptions().with_slots({*uneven, *rest}));
  ASSERT_TRUE(two.started()) << two.start_error();
  run = sync_into(two);
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  expect_equal(two);

  // Again without --flush: every master is checked, and refused.
  run = sync_into(two);
  EXPECT_EQ(run.exit_code, exit_code::kRefused) << run.describe();
  EXPECT_NE(run.err.find("--flush"), std::string::npos) << run.describe();
  run = sync_into(two, {"--flush"});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  expect_equal(two);
}

// The client reads the target's slot map, then waits for the sidecars
// (--connect-timeout); meanwhile the target changes under it: one slot
// resharded, one left mid-migration, one master failed over to its
// replica. Every RESTORE still lands where the key belongs.
TEST_F(ClusterSyncTest, RedirectionsFromAStaleSlotMapAreFollowed) {
  RedisCluster target(ClusterOptions().with_masters(3).with_replicas(1));
  ASSERT_TRUE(target.started()) << target.start_error();
  const std::vector<uint16_t> ports = {free_loopback_port(), free_loopback_port(),
                                       free_loopback_port()};
  std::vector<std::string> argv = cluster_args(ports, target);
  argv.insert(argv.end(), {"--connect-timeout", "60"});
  Process client(argv);
  ASSERT_TRUE(client.wait_for_line("target cluster:", 30s, Process::Stream::kStderr))
      << client.describe();

  // A slot of shard 0 that holds keys, resharded to shard 1: MOVED.
  uint16_t moved = 0;
  while (target.shard_for_slot(moved) != 0 || fill_.keys_per_slot[moved] == 0) ++moved;
  ASSERT_TRUE(target.migrate_slot(moved, 1)) << target.describe();
  // Shard 2's master becomes a replica: MOVED from it.
  ASSERT_TRUE(target.failover(2)) << target.describe();
  // A slot of shard 1 left migrating to shard 0 (last: the cluster does not
  // settle while it is): ASK.
  uint16_t asked = moved + 1;
  while (target.shard_for_slot(asked) != 1 || fill_.keys_per_slot[asked] == 0) ++asked;
  RedisProcess& from = target.master(1);
  RedisProcess& to = target.master(0);
  to.run({"CLUSTER", "SETSLOT", std::to_string(asked), "IMPORTING", target.node_id(from)});
  from.run({"CLUSTER", "SETSLOT", std::to_string(asked), "MIGRATING", target.node_id(to)});
  // Plain strings of that slot go in one MSET, which the migrating master
  // answers with ASK: it is split into one SET per key.
  std::string tag;
  for (int j = 0; hash_slot(tag) != asked; ++j) tag = "{m" + std::to_string(j) + "}";
  for (int i = 0; i < 4; ++i) {
    const std::string key = tag + "plain:" + std::to_string(i);
    ASSERT_TRUE(source_->master(source_->shard_for_slot(asked)).run({"SET", key, "v"}));
    fill_.keys++;
    fill_.keys_per_slot[asked]++;
  }

  start_sidecars(ports);
  EXPECT_EQ(client.wait(90s), 0) << client.describe();
  const std::string out = client.stdout_text();
  EXPECT_GT(sum_over_shards(out, "moved"), 0u) << out;
  EXPECT_GT(sum_over_shards(out, "asked"), 0u) << out;
  EXPECT_GT(sum_over_shards(out, "split"), 0u) << out;
  ASSERT_TRUE(target.migrate_slot(asked, 0)) << target.describe();
  expect_equal(target);
}

// A target master that dies after the client read the slot map and
// connected to it, and stays down (no replica to take over): the client
// finds it unreachable when it prepares the masters, before it changes any,
// and every shard stops with exit 3; the other masters are untouched.
TEST_F(ClusterSyncTest, ATargetMasterDownBeforeTheLoadLeavesTheTargetUntouched) {
  RedisCluster target(ClusterOptions().with_masters(3));
  ASSERT_TRUE(target.started()) << target.start_error();
  const std::vector<uint16_t> ports = {free_loopback_port(), free_loopback_port(),
                                       free_loopback_port()};
  std::vector<std::string> argv = cluster_args(ports, target);
  argv.insert(argv.end(), {"--connect-timeout", "60", "--io-timeout", "3"});
  Process client(argv);
  ASSERT_TRUE(client.wait_for_line("target cluster:", 30s, Process::Stream::kStderr))
      << client.describe();
  const std::string dead = target.master(2).address();
  target.master(2).kill();
  start_sidecars(ports);
  EXPECT_EQ(client.wait(90s), exit_code::kUnavailable) << client.describe();
  EXPECT_NE(client.stdout_text().find("cluster-incomplete "), std::string::npos)
      << client.describe();
  EXPECT_NE(client.stderr_text().find(dead), std::string::npos) << client.describe();
  for (size_t shard = 0; shard < 2; ++shard) {
    EXPECT_EQ(total_keys(target.master(shard).keyspace()), 0u);
    EXPECT_EQ(target.master(shard).run({"FUNCTION", "LIST"})->elements, 0u);
  }
}

// The keys the fill put in the slots of target shards other than `shard`.
uint64_t keys_outside(RedisCluster& target, const ClusterFill& fill, size_t shard) {
  uint64_t n = 0;
  for (uint16_t slot = 0; slot < kHashSlots; ++slot)
    if (target.shard_for_slot(slot) != shard) n += fill.keys_per_slot[slot];
  return n;
}

// Writes to target master 2 are paused (CLIENT PAUSE WRITE) during the load,
// so its RESTOREs wait unanswered while the other masters take theirs.
// Without functions the preparation writes nothing, so it is not held up.
class StalledMasterTest : public ClusterSyncTest {
 protected:
  void SetUp() override {
    ClusterSyncTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    for (RedisProcess* m : source_->masters()) m->run({"FUNCTION", "FLUSH"});
    target_ = std::make_unique<RedisCluster>(ClusterOptions().with_masters(3));
    ASSERT_TRUE(target_->started()) << target_->start_error();
    target_->master(2).run({"CLIENT", "PAUSE", "60000", "WRITE"});
    start_sidecars();
  }
  void TearDown() override {
    if (target_) target_->master(2).run({"CLIENT", "UNPAUSE"});
  }
  // Until masters 0 and 1 hold every key of their slots.
  bool others_loaded() {
    return eventually(
        [&] {
          uint64_t held = 0;
          for (size_t shard = 0; shard < 2; ++shard)
            held += total_keys(target_->master(shard).keyspace());
          return held == keys_outside(*target_, fill_, 2);
        },
        30s);
  }
  std::unique_ptr<RedisCluster> target_;
};

// Its connections lost mid-load (CLIENT KILL, then it answers again): every
// unanswered RESTORE is sent again by a fresh slot map, and the end state
// is equal.
TEST_F(StalledMasterTest, ALostConnectionMidLoadIsResentAndEndsEqual) {
  std::vector<std::string> argv = cluster_args(sidecar_ports(), *target_);
  Process client(argv);
  ASSERT_TRUE(others_loaded()) << client.describe();
  target_->master(2).run({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  target_->master(2).run({"CLIENT", "UNPAUSE"});
  EXPECT_EQ(client.wait(60s), 0) << client.describe();
  EXPECT_GT(sum_over_shards(client.stdout_text(), "resent"), 0u) << client.describe();
  expect_equal(*target_);
}

// A master that stays silent past --io-timeout: each shard stops with exit
// 3, an `incomplete` line and, on stderr, what each master acknowledged;
// the other masters hold every key of their slots.
TEST_F(StalledMasterTest, AMasterSilentPastTheIoTimeoutEndsTheRunWithExit3) {
  std::vector<std::string> argv = cluster_args(sidecar_ports(), *target_);
  argv.insert(argv.end(), {"--io-timeout", "2"});
  Process client(argv);
  EXPECT_EQ(client.wait(60s), exit_code::kUnavailable) << client.describe();
  const std::string out = client.stdout_text();
  EXPECT_NE(out.find("cluster-incomplete "), std::string::npos) << out;
  EXPECT_NE(out.find("incomplete keys="), std::string::npos) << out;
  EXPECT_NE(client.stderr_text().find("by master: "), std::string::npos) << client.describe();
  EXPECT_TRUE(others_loaded());
}

// A sidecar beside each shard's replica (chained replication: the replica
// serves the sidecar's PSYNC with the master's replication ID and offsets):
// the whole copy forks no source master.
TEST_F(ClusterSyncTest, SidecarsOnReplicasForkNoSourceMaster) {
  std::vector<std::string> forks;
  for (RedisProcess* m : source_->masters()) forks.push_back(m->info_field("stats", "total_forks"));
  // The replicas hold everything written before their sidecars snapshot them.
  for (size_t shard = 0; shard < source_->shard_count(); ++shard) {
    RedisProcess* replica = source_->replicas_of(shard).front();
    const std::string want = source_->master(shard).info_field("replication", "master_repl_offset");
    ASSERT_TRUE(eventually(
        [&] { return replica->info_field("replication", "slave_repl_offset") == want; }, 30s))
        << "shard " << shard << " replica behind";
  }
  start_sidecars({}, source_->replicas());
  for (size_t i = 0; i < sidecars_.size(); ++i)
    EXPECT_EQ(sidecars_[i]->ready_fields().at("hash_slots"), source_->slots(i).to_string())
        << sidecars_[i]->ready_line();
  RedisCluster target(ClusterOptions().with_masters(3));
  ASSERT_TRUE(target.started()) << target.start_error();
  ClientRun run = sync_into(target);
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  expect_equal(target, source_->replicas());
  std::vector<std::string> after;
  for (RedisProcess* m : source_->masters()) after.push_back(m->info_field("stats", "total_forks"));
  EXPECT_EQ(after, forks) << "a source master forked";
}

// A slot migrated away from a shard while its RDB streams in: the table
// could hold keys its shard no longer serves, so rdma-server takes the
// snapshot again, and the table it publishes carries the slots as they are
// after the migration.
TEST_F(ClusterSyncTest, ASlotMovedDuringTheSnapshotMakesItTakeAnother) {
  RedisProcess& master = source_->master(0);
  master.run({"CONFIG", "SET", "rdb-key-save-delay", "3000"});  // ~3 s of RDB for ~1000 keys
  SidecarServer sidecar(master.address());
  ASSERT_TRUE(sidecar.process().wait_for_line("began a full resync", 30s, Process::Stream::kStderr))
      << sidecar.describe();
  const uint16_t moved = static_cast<uint16_t>(source_->slots(0).ranges().front().first);
  ASSERT_TRUE(source_->migrate_slot(moved, 1)) << source_->describe();
  master.run({"CONFIG", "SET", "rdb-key-save-delay", "0"});
  ASSERT_TRUE(sidecar.wait_ready(90s)) << sidecar.describe();
  EXPECT_NE(sidecar.process().stderr_text().find("slots changed while its RDB streamed in"),
            std::string::npos)
      << sidecar.describe();
  EXPECT_EQ(sidecar.ready_fields().at("hash_slots"), source_->slots(0).to_string())
      << sidecar.ready_line();
  EXPECT_EQ(source_->slots(0).to_string().find(std::to_string(moved) + "-"), std::string::npos);
}

// Two sidecars of one shard (its master and its replica) and none of
// another: the tables' slots overlap and leave a gap; refused untouched.
TEST_F(ClusterSyncTest, SidecarsThatDoNotCoverEverySlotOnceAreRefused) {
  start_sidecars({}, {&source_->master(0), source_->replicas_of(0).front(), &source_->master(1)});
  RedisCluster target(ClusterOptions().with_masters(2));
  ASSERT_TRUE(target.started()) << target.start_error();
  ClientRun run = sync_into(target);
  EXPECT_EQ(run.exit_code, exit_code::kRefused) << run.describe();
  EXPECT_NE(run.err.find("in more than one shard's table"), std::string::npos) << run.describe();
  EXPECT_EQ(target.total_keys(), 0u);
  sidecars_.erase(sidecars_.begin() + 1);  // the replica's
  run = sync_into(target);
  EXPECT_EQ(run.exit_code, exit_code::kRefused) << run.describe();
  EXPECT_NE(run.err.find("are in no shard's table"), std::string::npos) << run.describe();
  EXPECT_NE(run.err.find(source_->slots(2).to_string()), std::string::npos) << run.describe();
  EXPECT_EQ(target.total_keys(), 0u);
}

TEST_F(ClusterSyncTest, WhatTheTargetCannotTakeIsRefusedUntouched) {
  start_sidecars();
  // A standalone target is not a cluster.
  RedisProcess standalone;
  ASSERT_TRUE(standalone.started()) << standalone.start_error();
  std::vector<std::string> argv = {"--cluster"};
  for (uint16_t p : sidecar_ports()) argv.push_back(sidecar_host() + ":" + std::to_string(p));
  argv.insert(argv.end(), {"--redis", standalone.address(), "--transport", test_transport()});
  ClientRun run = run_client(argv);
  EXPECT_EQ(run.exit_code, exit_code::kRefused) << run.describe();
  EXPECT_NE(run.err.find("not in cluster mode"), std::string::npos) << run.describe();

  // A cluster missing slots cannot take every key.
  auto some = SlotRanges::parse("0-8000");
  ASSERT_TRUE(some.ok());
  RedisCluster partial(ClusterOptions().with_slots({*some}));
  ASSERT_TRUE(partial.started()) << partial.start_error();
  run = sync_into(partial);
  EXPECT_EQ(run.exit_code, exit_code::kRefused) << run.describe();
  EXPECT_NE(run.err.find("have no master"), std::string::npos) << run.describe();
  EXPECT_EQ(partial.total_keys(), 0u);
}

// Other versions on both sides: a Valkey 9.1 or Redis 8.0 source cluster
// (whose RDB comes slot by slot, so a slot's small strings fill their MSET
// from consecutive records) into a cluster of the other engine, each value
// converted for its RDB version. The target ends equal key by key and slot
// by slot.
using VersionPair = std::pair<std::string, std::string>;  // source, target
class ClusterVersionsTest : public SidecarTest,
                            public ::testing::WithParamInterface<VersionPair> {};

TEST_P(ClusterVersionsTest, ThreeShardsIntoThreeMastersOfTheOtherEngine) {
  const auto& [source_name, target_name] = GetParam();
  TestServer source_server, target_server;
  RRS_NEED_SERVER(source_server, source_name);
  RRS_NEED_SERVER(target_server, target_name);
  RedisCluster source(ClusterOptions().with_masters(3).with_server(source_server));
  ASSERT_TRUE(source.started()) << source.start_error();
  const ClusterFill fill = fill_cluster(source, kKeys);
  RedisCluster target(ClusterOptions().with_masters(3).with_server(target_server));
  ASSERT_TRUE(target.started()) << target.start_error();

  std::vector<std::unique_ptr<SidecarServer>> sidecars;
  std::vector<std::string> argv = {"--cluster"};
  for (RedisProcess* m : source.masters())
    sidecars.push_back(std::make_unique<SidecarServer>(m->address()));
  for (auto& s : sidecars) {
    ASSERT_TRUE(s->wait_ready()) << s->describe();
    argv.push_back(sidecar_host() + ":" + std::to_string(s->port()));
  }
  argv.insert(argv.end(), {"--redis", target.seed(), "--transport", test_transport()});
  ClientRun run = run_client(argv);
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_NE(run.out.find("convert_rdb="), std::string::npos) << run.out;
  EXPECT_GT(sum_over_shards(run.out, "msets"), 0u) << run.out;
  EXPECT_EQ(target.total_keys(), fill.keys);
  EXPECT_EQ(target.keys_per_slot(), fill.keys_per_slot);
  EXPECT_EQ(target.logical_state(), source.logical_state());
}

INSTANTIATE_TEST_SUITE_P(Servers, ClusterVersionsTest,
                         ::testing::Values(VersionPair{"valkey-9.1", "redis-8.0"},
                                           VersionPair{"redis-8.0", "valkey-9.1"}),
                         [](const auto& pair) {
                           std::string name = pair.param.first + "_to_" + pair.param.second;
                           std::replace(name.begin(), name.end(), '-', '_');
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

}  // namespace
}  // namespace rrs::test
