// Follow mode's order keeper for a cluster: which units of each hash slot
// are on their way to the target, and which wait to be sent (again), in
// stream order. A unit redirected (MOVED, ASK), told to wait (TRYAGAIN,
// CLUSTERDOWN) or lost with its connection is held, and so is every later
// unit of its slot, behind it; they are released in stream order once
// nothing of their slot is on its way: a later unit of a slot never
// overtakes an earlier one.
//
// Single-key units of a slot are pipelined. A multi-key unit goes alone:
// not while another unit of its slot is on its way, and none behind it until
// it is answered. A slot migration can refuse it (TRYAGAIN: its keys split
// between two nodes) while a later unit sharing one of its keys, still where
// it was, succeeds; sent alone, nothing of its slot can pass it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>

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
  // Sends a released unit (taking its command): to its ASK node after
  // ASKING, or to its slot's master by the map; false if that node cannot be
  // reached now (the unit stays held).
  using Send = std::function<bool(Held& held)>;

  // Whether a new unit of `slot` must queue behind others rather than be sent.
  bool must_wait(uint16_t slot, bool multi_key) const;
  // A new unit was sent straight away (must_wait was false).
  void sent(const RoutedCommand& command);
  void hold(Held held);
  // A unit sent or released was answered (whatever the answer), or lost.
  void answered(uint16_t slot, uint64_t index);
  // Sends what is due by `send`; false if some slot's master could not be
  // reached (its units wait `retry_after` more; the map may be stale).
  bool release_due(Clock::time_point now, std::chrono::milliseconds retry_after, const Send& send);
  bool empty() const { return held_.empty(); }

 private:
  struct OnItsWay {
    bool multi_key = false;
    bool released = false;  // sent from held_: later units queue behind it
  };
  bool release_slot(uint16_t slot, std::deque<Held>& queue, Clock::time_point now,
                    std::chrono::milliseconds retry_after, const Send& send);

  std::map<uint16_t, std::deque<Held>> held_;  // by slot, in stream order
  // By slot, then stream index: sent, not yet answered.
  std::map<uint16_t, std::map<uint64_t, OnItsWay>> on_its_way_;
};

}  // namespace rrs
