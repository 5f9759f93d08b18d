#include "client/cluster/slot_holds.h"

#include <algorithm>

namespace rrs {

bool SlotHolds::holds(uint16_t slot) const {
  auto h = held_.find(slot);
  auto r = released_.find(slot);
  return (h != held_.end() && !h->second.empty()) || (r != released_.end() && !r->second.empty());
}

void SlotHolds::hold(Held held) {
  std::deque<Held>& queue = held_[held.command.slot];
  auto at = std::find_if(queue.begin(), queue.end(),
                         [&](const Held& h) { return h.command.index > held.command.index; });
  queue.insert(at, std::move(held));
}

void SlotHolds::answered(uint16_t slot, uint64_t index) {
  auto r = released_.find(slot);
  if (r == released_.end()) return;
  r->second.erase(index);
  if (r->second.empty()) released_.erase(r);
}

// The slot's first held units, if due and nothing released before is
// unanswered: the first alone after an ASK (the next ones may still be
// served where they were), else every due one up to the next ASK, in order,
// on one connection.
bool SlotHolds::release_slot(uint16_t slot, std::deque<Held>& queue, Clock::time_point now,
                             std::chrono::milliseconds retry_after,
                             const PipelineFor& pipeline_for) {
  if (released_.contains(slot)) return true;
  while (!queue.empty() && queue.front().due <= now) {
    Held& h = queue.front();
    const bool ask = h.ask.has_value();
    if (ask && released_.contains(slot)) return true;
    NodePipeline* p = pipeline_for(slot, h.ask);
    if (p == nullptr) {
      h.due = now + retry_after;
      return false;
    }
    released_[slot].insert(h.command.index);
    p->resend(std::move(h.command), ask);
    queue.pop_front();
    if (ask) return true;
  }
  return true;
}

bool SlotHolds::release_due(Clock::time_point now, std::chrono::milliseconds retry_after,
                            const PipelineFor& pipeline_for) {
  bool all_reached = true;
  for (auto it = held_.begin(); it != held_.end();) {
    if (!release_slot(it->first, it->second, now, retry_after, pipeline_for)) all_reached = false;
    it = it->second.empty() ? held_.erase(it) : std::next(it);
  }
  return all_reached;
}

}  // namespace rrs
