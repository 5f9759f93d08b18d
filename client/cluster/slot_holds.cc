#include "client/cluster/slot_holds.h"

#include <algorithm>

namespace rrs {

bool SlotHolds::must_wait(uint16_t slot, bool multi_key) const {
  if (auto h = held_.find(slot); h != held_.end() && !h->second.empty()) return true;
  auto w = on_its_way_.find(slot);
  if (w == on_its_way_.end()) return false;
  if (multi_key) return true;  // w is never left empty
  return std::any_of(w->second.begin(), w->second.end(),
                     [](const auto& u) { return u.second.multi_key || u.second.released; });
}

void SlotHolds::sent(const RoutedCommand& command) {
  on_its_way_[command.slot][command.index] = {command.multi_key, false};
}

void SlotHolds::hold(Held held) {
  std::deque<Held>& queue = held_[held.command.slot];
  auto at = std::find_if(queue.begin(), queue.end(),
                         [&](const Held& h) { return h.command.index > held.command.index; });
  queue.insert(at, std::move(held));
}

void SlotHolds::answered(uint16_t slot, uint64_t index) {
  auto w = on_its_way_.find(slot);
  if (w == on_its_way_.end()) return;
  w->second.erase(index);
  if (w->second.empty()) on_its_way_.erase(w);
}

// The slot's first held units, if due and nothing of the slot is on its way:
// the first alone after an ASK (the next ones may still be served where they
// were) or when it has several keys, else every due one up to the next ASK
// or multi-key unit, in order, on one connection.
bool SlotHolds::release_slot(uint16_t slot, std::deque<Held>& queue, Clock::time_point now,
                             std::chrono::milliseconds retry_after, const Send& send) {
  if (on_its_way_.contains(slot)) return true;
  bool first = true;
  while (!queue.empty() && queue.front().due <= now) {
    Held& h = queue.front();
    const bool alone = h.ask.has_value() || h.command.multi_key;
    if (alone && !first) return true;
    const uint64_t index = h.command.index;
    const bool multi_key = h.command.multi_key;
    if (!send(h)) {
      h.due = now + retry_after;
      return false;
    }
    on_its_way_[slot][index] = {multi_key, true};
    queue.pop_front();
    if (alone) return true;
    first = false;
  }
  return true;
}

bool SlotHolds::release_due(Clock::time_point now, std::chrono::milliseconds retry_after,
                            const Send& send) {
  bool all_reached = true;
  for (auto it = held_.begin(); it != held_.end();) {
    if (!release_slot(it->first, it->second, now, retry_after, send)) all_reached = false;
    it = it->second.empty() ? held_.erase(it) : std::next(it);
  }
  return all_reached;
}

}  // namespace rrs
