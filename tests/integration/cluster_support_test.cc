// hash_slot() against CLUSTER KEYSLOT, and the cluster test support
// (RedisCluster, fill_cluster) against real clusters of each server version
// tests/servers.sh lists: the layout it sets up is what every node reports,
// the data lands on the masters that serve it, failover() flips roles and
// migrate_slot() moves keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "proto/hash_slot.h"
#include "tests/support/cluster_dataset.h"
#include "tests/support/eventually.h"
#include "tests/support/ports.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_process.h"

namespace rrs::test {
namespace {

using namespace std::string_literals;

class ClusterSupport : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { RRS_NEED_SERVER(server_, GetParam()); }
  ClusterOptions options() const { return ClusterOptions().with_server(server_); }

  TestServer server_;
};

// Keys mostly of '{' and '}' with random bytes between, so most of them
// test where a hash tag starts and ends.
std::vector<std::string> brace_heavy_keys(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<std::string> keys = {
      "foo", "bar", "{user1000}.following", "foo{}{bar}",     "foo{{bar}}zap", "foo{bar}{zap}", "",
      "{}",  "}{",  "a\0b{\0}c"s,           "\xff\xfe{\x80}"s};
  while (keys.size() < n) {
    std::string k(gen() % 24, '\0');
    for (char& c : k) {
      const uint64_t r = gen();
      c = r % 5 == 0 ? '{' : r % 5 == 1 ? '}' : static_cast<char>(r >> 8);
    }
    keys.push_back(std::move(k));
  }
  return keys;
}

// CLUSTER KEYSLOT answers on a cluster-enabled node before any slot is assigned.
TEST_P(ClusterSupport, HashSlotMatchesClusterKeyslot) {
  RedisProcess node(RedisOptions().with_server(server_).with_args(
      {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port",
       std::to_string(free_loopback_port())}));
  ASSERT_TRUE(node.started()) << node.start_error();
  for (const std::string& key : brace_heavy_keys(400, 21)) {
    Reply r = node.run({"CLUSTER", "KEYSLOT", key});
    ASSERT_TRUE(r && r->type == REDIS_REPLY_INTEGER) << to_string(r);
    EXPECT_EQ(r->integer, hash_slot(key)) << testing::PrintToString(key);
  }
}

// Stream values carry times the server takes from its clock (a consumer's
// seen-time, a pending entry's delivery time): two servers given the same
// writes differ there and nowhere else.
std::map<std::string, std::string> without_clock_times(std::map<std::string, std::string> state) {
  static const std::regex kUnixMs(R"(\(integer\) 1[6-9]\d{11}\b)");
  for (auto& [name, value] : state)
    if (value.starts_with("stream ")) value = std::regex_replace(value, kUnixMs, "(integer) TIME");
  return state;
}

// The slot of shard `shard` that holds the most keys.
uint16_t fullest_slot(RedisCluster& cluster, size_t shard, const std::vector<uint64_t>& counts) {
  uint16_t best = 0;
  uint64_t most = 0;
  for (const SlotRange& r : cluster.slots(shard).ranges())
    for (uint32_t s = r.first; s <= r.last; ++s) {
      if (counts[s] <= most) continue;
      most = counts[s];
      best = static_cast<uint16_t>(s);
    }
  return best;
}

// The port CLUSTER SLOTS on `node` names as the master of `slot`, 0 if none.
long long owner_port(RedisProcess& node, uint16_t slot) {
  Reply r = node.run({"CLUSTER", "SLOTS"});
  for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; ++i) {
    const redisReply* range = r->element[i];
    if (range->element[0]->integer <= slot && slot <= range->element[1]->integer)
      return range->element[2]->element[1]->integer;
  }
  return 0;
}

TEST_P(ClusterSupport, ThreeMastersWithReplicasFailoverAndMigration) {
  ClusterOptions opts = options().with_masters(3).with_replicas(1);
  // A password: replicas need masterauth, migrate_slot's MIGRATE needs AUTH.
  opts.node.with_password("cluster-test-password");
  RedisCluster cluster(opts);
  ASSERT_TRUE(cluster.started()) << cluster.start_error();
  ASSERT_EQ(cluster.masters().size(), 3u);
  ASSERT_EQ(cluster.replicas().size(), 3u);
  EXPECT_EQ(cluster.slots(0).to_string(), "0-5460");
  EXPECT_EQ(cluster.slots(1).to_string(), "5461-10922");
  EXPECT_EQ(cluster.slots(2).to_string(), "10923-16383");
  EXPECT_EQ(cluster.seed(), cluster.master(0).address());
  for (RedisProcess* r : cluster.replicas())
    EXPECT_EQ(r->info_field("replication", "role"), "slave");
  EXPECT_EQ(cluster.node_for_slot(hash_slot("foo")), &cluster.master(2));  // slot 12182

  constexpr size_t kKeys = 3000;
  const ClusterFill fill = fill_cluster(cluster, kKeys, 7);
  EXPECT_EQ(fill.keys, kKeys);
  const std::vector<uint64_t> counts = cluster.keys_per_slot();
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), uint64_t{0}), kKeys);
  EXPECT_TRUE(counts == fill.keys_per_slot);
  EXPECT_EQ(cluster.keyspace(), (Keyspace{{0, {kKeys, fill.expires}}}));
  for (size_t shard = 0; shard < 3; ++shard)
    EXPECT_GT(cluster.master(shard).client().total_keys(), kKeys / 5) << shard;

  // The same writes into one standalone server of the version: the cluster
  // holds exactly that, spread over its masters.
  RedisProcess reference(RedisOptions().with_server(server_));
  ASSERT_TRUE(reference.started()) << reference.start_error();
  write_keys(reference, cluster_keys(kKeys, 7));
  const auto written = without_clock_times(reference.client().logical_state());
  EXPECT_TRUE(without_clock_times(cluster.logical_state()) == written);

  for (size_t shard = 0; shard < 3; ++shard) {
    RedisProcess& replica = *cluster.replicas_of(shard)[0];
    EXPECT_TRUE(eventually([&] { return digest_of(replica) == cluster.master(shard).digest(); },
                           std::chrono::seconds(20)))
        << "shard " << shard << "'s replica did not catch up";
  }

  // Failover: shard 1's replica serves its slots, its old master follows it.
  RedisProcess* old_master = &cluster.master(1);
  RedisProcess* promoted = cluster.replicas_of(1)[0];
  ASSERT_TRUE(cluster.failover(1));
  EXPECT_EQ(&cluster.master(1), promoted);
  EXPECT_EQ(cluster.replicas_of(1)[0], old_master);
  EXPECT_EQ(promoted->info_field("replication", "role"), "master");
  EXPECT_EQ(old_master->info_field("replication", "role"), "slave");
  EXPECT_EQ(owner_port(cluster.master(0), 5461), promoted->port());
  EXPECT_TRUE(cluster.keys_per_slot() == fill.keys_per_slot);
  // The new master takes writes for the shard's slots (no MOVED).
  std::string shard1_key = "after-failover:";
  while (cluster.shard_for_slot(hash_slot(shard1_key)) != 1) shard1_key += 'x';
  cluster.master(1).run({"SET", shard1_key, "v"});

  // Migration: shard 0's fullest slot, keys and all, to shard 2.
  const uint16_t slot = fullest_slot(cluster, 0, fill.keys_per_slot);
  ASSERT_GT(fill.keys_per_slot[slot], 1u);
  ASSERT_TRUE(cluster.migrate_slot(slot, 2));
  EXPECT_EQ(cluster.node_for_slot(slot), &cluster.master(2));
  EXPECT_FALSE(cluster.slots(0).contains(slot));
  EXPECT_TRUE(cluster.slots(2).contains(slot));
  for (RedisProcess* node : cluster.nodes())
    EXPECT_EQ(owner_port(*node, slot), cluster.master(2).port()) << node->address();
  const std::string n = std::to_string(slot);
  EXPECT_EQ(cluster.master(2).run({"CLUSTER", "COUNTKEYSINSLOT", n})->integer,
            static_cast<long long>(fill.keys_per_slot[slot]));
  EXPECT_EQ(cluster.master(0).run({"CLUSTER", "COUNTKEYSINSLOT", n})->integer, 0);
  std::vector<uint64_t> moved = fill.keys_per_slot;
  ++moved[hash_slot(shard1_key)];
  EXPECT_TRUE(cluster.keys_per_slot() == moved);
  EXPECT_EQ(cluster.total_keys(), kKeys + 1);
}

// Two masters, each with ranges that are not one block, and slots no one
// serves: the cluster is still ok (cluster-require-full-coverage no), and
// keys of the unserved slots are left out of a fill.
TEST_P(ClusterSupport, TwoMastersWithAnUnevenLayout) {
  auto layout = [](const char* text) { return *SlotRanges::parse(text); };
  RedisCluster cluster(options().with_slots({layout("0-99,8000-16383"), layout("100-4999,7000")}));
  ASSERT_TRUE(cluster.started()) << cluster.start_error();
  ASSERT_EQ(cluster.shard_count(), 2u);
  EXPECT_TRUE(cluster.replicas().empty());
  EXPECT_EQ(cluster.node_for_slot(50), &cluster.master(0));
  EXPECT_EQ(cluster.node_for_slot(7000), &cluster.master(1));
  EXPECT_EQ(cluster.node_for_slot(6000), nullptr);
  EXPECT_EQ(cluster.shard_for_slot(6000), 2u);
  for (RedisProcess* node : cluster.nodes()) {
    EXPECT_EQ(owner_port(*node, 8000), cluster.master(0).port());
    EXPECT_EQ(owner_port(*node, 7000), cluster.master(1).port());
    EXPECT_EQ(owner_port(*node, 6000), 0);
  }

  const ClusterFill fill = fill_cluster(cluster, 1000, 3);
  EXPECT_LT(fill.keys, 1000u);
  EXPECT_GT(fill.keys, 500u);
  const std::vector<uint64_t> counts = cluster.keys_per_slot();
  EXPECT_TRUE(counts == fill.keys_per_slot);
  for (uint32_t s = 5000; s < 7000; ++s) EXPECT_EQ(counts[s], 0u) << s;
  EXPECT_EQ(cluster.keyspace(), (Keyspace{{0, {fill.keys, fill.expires}}}));
}

INSTANTIATE_TEST_SUITE_P(Servers, ClusterSupport,
                         testing::Values("redis-7.0", "valkey-8.0", "redis-8.0", "valkey-9.1"),
                         [](const testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param;
                           std::replace_if(
                               name.begin(), name.end(),
                               [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); },
                               '_');
                           return name;
                         });

}  // namespace
}  // namespace rrs::test
