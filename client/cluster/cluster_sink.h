// The cluster load path (rdma-client --cluster): one source shard's records,
// each written into the target master that owns its hash slot (RESTORE, SET,
// or with its slot's other TTL-less strings in one MSET: slot_msets.h),
// through a pipeline per master, all driven from this thread by one poll
// loop.
//
// Redirections are followed as a cluster client must: MOVED updates the
// slot map and the command goes to the new owner; ASK sends it there once,
// after ASKING; TRYAGAIN and CLUSTERDOWN send it again shortly (with a fresh
// map for CLUSTERDOWN); a connection lost (a failover) sends every
// unanswered command again by a fresh map. Nothing waits longer than
// --io-timeout without an answer from any master.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client/client_config.h"
#include "client/cluster/cluster_target.h"
#include "client/cluster/node_pipeline.h"
#include "client/cluster/slot_msets.h"
#include "client/restore/ttl_guard.h"
#include "client/sync/load_sink.h"
#include "common/base/clock.h"

namespace rrs {

class ClusterSink : public LoadSink {
 public:
  // The sink of source shard `shard` (its index in config.sidecars).
  ClusterSink(const ClientConfig& config, ClusterTarget& target, size_t shard)
      : config_(config),
        target_(target),
        shard_(shard),
        map_(target.first_map()),
        msets_(kGatherBudget) {}

  Status connect() override;
  std::optional<ServerVersion> target() const override { return target_.oldest(); }
  Status check(const TableInfo& info) override;
  Status prepare(const TableInfo& info) override;
  Status load(const RecordBatch& batch) override;
  Status drain() override;
  Status take_failures(const std::vector<RecordFailure>& failures) override {
    invalid_ = failures;
    return {};
  }
  Status finish() override;
  Status verdict() const override;
  void abandon(const Status& why, uint64_t invalid_records, double seconds) override;
  LoadCounts counts() const override;
  std::string summary_fields() const override;

  // --follow: the keys loaded with a guard TTL (client/restore/ttl_guard.h).
  TtlGuard take_ttl_guard() { return guard_ ? std::move(*guard_) : TtlGuard{}; }
  // Keys each target master acknowledged from this shard, by address.
  const std::map<std::string, uint64_t>& per_master() const { return per_master_; }

 private:
  // Bytes of small TTL-less strings held back to gather them by slot: from
  // a source in hash order, 64 MiB gives each of a shard's 5,461 slots 12
  // KiB, about 200 keys with 16-byte values.
  static constexpr size_t kGatherBudget = size_t{64} << 20;
  // A command to send again once `due` has passed.
  struct Later {
    Clock::time_point due;
    RoutedCommand command;
  };
  // The pipeline to `node`, connected on first use; nullptr if it cannot be
  // reached now (the caller sends again later).
  NodePipeline* pipeline(const Endpoint& node);
  // The pipeline to the master that owns `slot` by the current map.
  NodePipeline* owner_pipeline(uint16_t slot);
  void route(RoutedCommand command);
  // Sends the MSET gathered for `slot` to its owner (or later).
  void send_mset(uint16_t slot);
  // Sends every slot's MSET, pumping to stay within the in-flight bounds.
  Status send_msets();
  // An MSET not taken whole (ASK, TRYAGAIN, CLUSTERDOWN): one SET per key,
  // each routed now, or `later` by a fresh map.
  void split(const RoutedCommand& mset, bool later);
  void send_later(RoutedCommand command, std::chrono::milliseconds after);
  void on_outcome(const std::string& node, CommandOutcome o);
  // A master's connection failed: everything it had not answered goes again.
  void drop_pipeline(const std::string& node, const Status& why);
  // Sends and reads until no more than `max_in_flight` commands are
  // unanswered (and `max_held` bytes held for them) across every master.
  Status pump(size_t max_in_flight, size_t max_held);
  Status step(Clock::time_point& last_answer);
  size_t in_flight() const;
  uint64_t keys_in_flight() const;
  size_t held_bytes() const;

  const ClientConfig& config_;
  ClusterTarget& target_;
  const size_t shard_;
  SlotMap map_;
  bool map_stale_ = false;
  const TableInfo* info_ = nullptr;
  // The table was still being written at check(): no DB list to refuse a
  // DB other than 0 up front, so each record's DB is checked.
  bool check_each_db_ = false;
  bool loading_ = false;
  std::optional<TtlGuard> guard_;                  // --follow
  std::map<std::string, NodePipeline> pipelines_;  // by "host:port"
  std::vector<Later> later_;
  SlotMsets msets_;      // TTL-less plain strings waiting for their slot's MSET
  std::string scratch_;  // a decompressed string value (restore_command.h)
  Status stop_;          // an error reply that ends the load

  // Counts.
  LoadCounts counts_;
  std::map<std::string, uint64_t> per_master_;
  std::vector<std::string> errors_;
  std::vector<RecordFailure> invalid_;
  uint64_t moved_ = 0, asked_ = 0, retried_ = 0, resent_ = 0, reconnects_ = 0, msets_sent_ = 0,
           split_ = 0;
};

}  // namespace rrs
