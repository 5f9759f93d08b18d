// A real Redis Cluster for one test: masters and their replicas, each a
// RedisProcess (own loopback port, temp dir, nodes.conf) with cluster mode on,
// slots assigned, joined with CLUSTER MEET and CLUSTER REPLICATE, and ready
// (every node reports cluster_state:ok and the same slot map, every replica's
// link is up) before the constructor returns. Works with every server version
// tests/servers.sh lists (ClusterOptions::with_server). Stopped with its owner.
//
// The cluster is kept as shards: shard i is a master, the slots it serves and
// its replicas. failover(i) and migrate_slot() change them and wait until
// every node agrees again; node_for_slot() routes by this layout without
// asking the cluster.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proto/slot_ranges.h"
#include "tests/support/redis_process.h"

namespace rrs::test {

struct ClusterOptions {
  size_t masters = 3;
  size_t replicas_per_master = 0;
  // The slots of each master, one entry per master; empty: an even split
  // (even_slot_split). Slots no master owns are allowed: the nodes then run
  // with cluster-require-full-coverage no, so the cluster still reports ok.
  std::vector<SlotRanges> slots;
  // What every node starts with: the server version, a password (also the
  // replicas' masterauth), more flags (the cluster flags are added to
  // these). Its port is not used: each node gets a free one.
  RedisOptions node;
  // cluster-node-timeout: how soon a silent node is suspected. Small for
  // quick failure detection, large enough for a loaded 2-core machine.
  std::chrono::milliseconds node_timeout = std::chrono::seconds(2);
  // How long the constructor, failover() and migrate_slot() wait for every
  // node to agree.
  std::chrono::milliseconds ready_timeout = std::chrono::seconds(30);
  // Whether replicas fail over on their own when their master fails. Off by
  // default (cluster-replica-no-failover yes), so a slow moment on a busy
  // machine never reshapes the cluster under a test; failover() still works.
  bool automatic_failover = false;

  ClusterOptions& with_masters(size_t n) {
    masters = n;
    return *this;
  }
  ClusterOptions& with_replicas(size_t per_master) {
    replicas_per_master = per_master;
    return *this;
  }
  // Also sets the number of masters.
  ClusterOptions& with_slots(std::vector<SlotRanges> per_master) {
    masters = per_master.size();
    slots = std::move(per_master);
    return *this;
  }
  ClusterOptions& with_server(const TestServer& server) {
    node.with_server(server);
    return *this;
  }
};

// 16384 slots split into `masters` contiguous ranges as redis-cli --cluster
// create splits them: 3 masters get 0-5460, 5461-10922, 10923-16383.
std::vector<SlotRanges> even_slot_split(size_t masters);

class RedisCluster {
 public:
  // Starts and joins every node, then waits until the cluster is ready.
  // Check started() before use:
  //   RedisCluster cluster(ClusterOptions().with_replicas(1));
  //   ASSERT_TRUE(cluster.started()) << cluster.start_error();
  explicit RedisCluster(ClusterOptions opts = {});
  // SIGKILLs every node at once (nothing of a test cluster needs a clean
  // shutdown, and masters waiting on their replicas one by one take seconds),
  // then each RedisProcess reaps its node and removes its temp dir.
  ~RedisCluster();
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  bool started() const { return started_; }
  const std::string& start_error() const { return start_error_; }

  size_t shard_count() const { return shards_.size(); }
  // Shard i's master now (after failover(i), its former replica).
  RedisProcess& master(size_t shard) { return *nodes_.at(shards_.at(shard).master); }
  // The masters, shard by shard.
  std::vector<RedisProcess*> masters();
  // Every replica, shard by shard.
  std::vector<RedisProcess*> replicas();
  std::vector<RedisProcess*> replicas_of(size_t shard);
  // Every node, masters first, in the order they were started.
  std::vector<RedisProcess*> nodes();
  // The slots shard i serves.
  const SlotRanges& slots(size_t shard) const { return shards_.at(shard).slots; }
  // The master serving `slot`, or nullptr if no shard owns it.
  RedisProcess* node_for_slot(uint16_t slot);
  // Its shard, or shard_count() if none.
  size_t shard_for_slot(uint16_t slot) const;
  // A node's cluster id (CLUSTER MYID), "" if it is not one of ours.
  std::string node_id(const RedisProcess& node) const;
  // Where a cluster client starts: the first shard's master, "127.0.0.1:PORT".
  std::string seed() { return master(0).address(); }

  // INFO keyspace summed over the masters (cluster mode has DB 0 only).
  Keyspace keyspace();
  uint64_t total_keys() { return rrs::test::total_keys(keyspace()); }
  // RedisClient::logical_state of every master, merged: every key of the
  // cluster once. Function libraries are per node; one that differs between
  // masters appears once per shard that differs ("... (shard 2)").
  std::map<std::string, std::string> logical_state();
  // How many keys each slot holds (kHashSlots entries), from a SCAN of every
  // master and hash_slot() of each key: a few round trips per thousand keys,
  // where CLUSTER COUNTKEYSINSLOT would take one per slot. A key on a master
  // that does not serve its slot is recorded as a gtest failure.
  std::vector<uint64_t> keys_per_slot();

  // Waits until every node reports cluster_state:ok and sees the layout this
  // object holds (roles, replicas' masters, slots, no slot mid-migration, no
  // node suspected), and every replica's link to its master is up.
  testing::AssertionResult wait_ready();
  // CLUSTER FAILOVER on shard i's first replica: it becomes the master, the
  // old master its replica. Waits until the roles flipped and wait_ready().
  testing::AssertionResult failover(size_t shard);
  // Moves `slot` and its keys from the shard serving it to shard `to`:
  // SETSLOT IMPORTING / MIGRATING, MIGRATE of every key, SETSLOT NODE on
  // every master; then wait_ready().
  testing::AssertionResult migrate_slot(uint16_t slot, size_t to);

  // Every node's role, address and CLUSTER NODES view: for failure messages.
  std::string describe();

 private:
  struct Shard {
    size_t master = 0;             // index into nodes_
    std::vector<size_t> replicas;  // indices into nodes_
    SlotRanges slots;
  };

  bool start_node(const std::vector<std::string>& cluster_args, std::string& error);
  bool join(std::string& error);
  // The index in nodes_ of the node with cluster id `id`, nodes_.size() if none.
  size_t node_index(const std::string& id) const;
  // "" when every node agrees with the layout, else what does not.
  std::string disagreement();
  std::string node_disagreement(size_t node);
  // RedisOptions::password as AUTH / AUTH2 arguments of MIGRATE.
  std::vector<std::string> migrate_auth() const;

  ClusterOptions opts_;
  std::vector<std::unique_ptr<RedisProcess>> nodes_;
  std::vector<std::string> ids_;     // CLUSTER MYID, by node
  std::vector<uint16_t> bus_ports_;  // cluster-port, by node
  std::vector<Shard> shards_;
  bool started_ = false;
  std::string start_error_;
};

}  // namespace rrs::test
