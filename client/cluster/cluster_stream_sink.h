// --cluster --follow: one source shard's stream into the target cluster.
// The bytes are parsed (resp::CommandParser), cut into units (stream_units.h:
// a command, or a MULTI ... EXEC block) and each unit goes, as one pipelined
// command, to the master owning its keys' slot, through the same
// NodePipelines the load uses; a unit for every master (FLUSHALL,
// FUNCTION LOAD) waits until everything before it is acknowledged, then goes
// to each master in turn.
//
// Order: a slot's units apply in stream order, redirections included
// (client/cluster/slot_holds.h).
//
// applied() is the stream position up to which every unit was acknowledged.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "client/client_config.h"
#include "client/cluster/cluster_target.h"
#include "client/cluster/command_keys.h"
#include "client/cluster/node_pipeline.h"
#include "client/cluster/slot_holds.h"
#include "client/cluster/stream_units.h"
#include "client/follow/stream_sink.h"
#include "common/base/clock.h"
#include "proto/resp_parser.h"

namespace rrs {

class ClusterStreamSink : public StreamSink {
 public:
  // `position`: the stream offset of the shard's table; `slots`: the slots
  // its table serves (what a FLUSHALL in its stream empties); `guard`: the
  // keys its load held with a guard TTL, given their own back at the first
  // catch-up. Connects the connection that asks the target for key specs.
  static Result<std::unique_ptr<ClusterStreamSink>> create(const ClientConfig& config,
                                                           ClusterTarget& target, uint64_t position,
                                                           SlotRanges slots, TtlGuard guard);

  Status write(std::span<const std::byte> bytes) override;
  Status send() override;
  Status collect() override;
  uint64_t applied() const override { return applied_; }
  std::string progress() const override;
  Status caught_up() override;

 private:
  ClusterStreamSink(ClusterTarget& target, uint64_t position, SlotRanges slots, RedisClient lookup);
  // A unit sent or held, not yet acknowledged.
  struct Unacked {
    uint64_t end;
    uint32_t commands;
    std::string name;  // for messages
    bool acked = false;
  };
  Status add(const StreamUnit& unit);
  Status to_all_masters(const StreamUnit& unit);
  Status flush_shard(const StreamUnit& unit);
  void submit(RoutedCommand command);
  void release_due(Clock::time_point now);
  NodePipeline* pipeline(const Endpoint& node);
  void on_outcome(CommandOutcome o);
  void drop_pipeline(const std::string& node, const Status& why);
  void acknowledge(uint64_t seq);
  Status step(std::chrono::milliseconds max_wait, Clock::time_point& last_answer);
  Status poll_pipelines(std::chrono::milliseconds wait, Clock::time_point& last_answer);
  // Sends and reads until at most `max_unacked` units are unacknowledged.
  Status pump(size_t max_unacked);

  ClusterTarget& target_;
  SlotMap map_;
  const SlotRanges slots_;  // the source shard's
  TtlGuard guard_;
  bool map_stale_ = false;
  RedisClient lookup_;  // COMMAND INFO / GETKEYS
  CommandKeys keys_;
  resp::CommandParser parser_;
  uint64_t base_;  // stream position of the parser's first byte
  UnitBuilder units_;
  std::map<std::string, NodePipeline> pipelines_;  // by "host:port"
  std::map<uint64_t, Unacked> unacked_;            // by sequence number
  uint64_t next_seq_ = 0;
  SlotHolds holds_;
  uint64_t applied_;
  Status stop_;  // a unit the target refused
  uint64_t commands_ = 0, moved_ = 0, asked_ = 0, retried_ = 0, resent_ = 0, broadcast_ = 0,
           flushes_ = 0;
};

}  // namespace rrs
