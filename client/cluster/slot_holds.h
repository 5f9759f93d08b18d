// Follow mode's order keeper for a cluster: the units of each hash slot that
// wait to be sent (again), in stream order. A unit redirected (MOVED, ASK),
// told to wait (TRYAGAIN, CLUSTERDOWN) or lost with its connection is held,
// and so is every later unit of its slot, behind it; they are released in
// stream order, and the next ones only once every unit released before is
// answered: a later unit of a slot never overtakes an earlier one.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "client/cluster/node_pipeline.h"
#include "common/base/clock.h"

namespace rrs {

class SlotHolds {
 public:
  struct Held {
    Clock::time_point due;
    RoutedCommand command;        // command.index: its place in the stream
    std::optional<Endpoint> ask;  // ASK: once to this node, after ASKING
  };
  // Where a released unit goes: the pipeline to its ASK node, or to its
  // slot's master by the map; nullptr if that master cannot be reached now.
  using PipelineFor = std::function<NodePipeline*(uint16_t slot, const std::optional<Endpoint>&)>;

  // Whether a unit of `slot` must queue behind others rather than be sent.
  bool holds(uint16_t slot) const;
  void hold(Held held);
  // A released unit was answered (whatever the answer).
  void answered(uint16_t slot, uint64_t index);
  // Sends what is due by `pipeline_for`; false if some slot's master could
  // not be reached (its units wait `retry_after` more; the map may be stale).
  bool release_due(Clock::time_point now, std::chrono::milliseconds retry_after,
                   const PipelineFor& pipeline_for);
  bool empty() const { return held_.empty(); }

 private:
  bool release_slot(uint16_t slot, std::deque<Held>& queue, Clock::time_point now,
                    std::chrono::milliseconds retry_after, const PipelineFor& pipeline_for);

  std::map<uint16_t, std::deque<Held>> held_;        // by slot, in stream order
  std::map<uint16_t, std::set<uint64_t>> released_;  // sent from held_, not yet answered
};

}  // namespace rrs
