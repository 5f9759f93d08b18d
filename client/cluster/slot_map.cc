#include "client/cluster/slot_map.h"

#include <charconv>

#include "common/redis/cluster_slots.h"

namespace rrs {
namespace {

constexpr const char* kStep = "read the target cluster's slot map (CLUSTER SLOTS)";

Status bad(const std::string& why) { return Status::error(kStep, why).as(ErrorKind::kBadData); }

bool same(const Endpoint& a, const Endpoint& b) { return a.host == b.host && a.port == b.port; }

}  // namespace

Result<SlotMap> SlotMap::parse(const redisReply& reply, const Endpoint& asked) {
  RRS_ASSIGN_OR_RETURN(std::vector<ClusterSlotsEntry> entries, parse_cluster_slots(reply, asked));
  SlotMap map;
  map.owner_.fill(kUnowned);
  for (const ClusterSlotsEntry& e : entries) {
    const Endpoint& master = e.master.at;
    if (master.host == "?")
      return bad("a master's address is unknown ('?'): set cluster-preferred-endpoint-type to "
                 "ip on the target cluster");
    const int index = map.master_index(master);
    for (uint32_t s = e.slots.first; s <= e.slots.last; ++s) {
      if (map.owner_[s] != kUnowned)
        return bad("slot " + std::to_string(s) + " is claimed by two entries");
      map.owner_[s] = static_cast<int16_t>(index);
    }
  }
  return map;
}

uint32_t SlotMap::unowned_slots() const {
  uint32_t n = 0;
  for (int16_t o : owner_) n += o == kUnowned;
  return n;
}

std::string SlotMap::ranges_of(int index) const {
  std::string out;
  for (uint32_t s = 0; s < kHashSlots;) {
    if (owner_[s] != index) {
      ++s;
      continue;
    }
    uint32_t e = s;
    while (e + 1 < kHashSlots && owner_[e + 1] == index) ++e;
    out += (out.empty() ? "" : ",") + std::to_string(s) + (e > s ? "-" + std::to_string(e) : "");
    s = e + 1;
  }
  return out;
}

int SlotMap::master_index(const Endpoint& master) {
  for (size_t m = 0; m < masters_.size(); ++m)
    if (same(masters_[m], master)) return static_cast<int>(m);
  masters_.push_back(master);
  return static_cast<int>(masters_.size() - 1);
}

int SlotMap::move(uint16_t slot, const Endpoint& master) {
  const int index = master_index(master);
  owner_[slot] = static_cast<int16_t>(index);
  return index;
}

Result<SlotMap> fetch_slot_map(RedisClient& node) {
  auto reply = node.command({"CLUSTER", "SLOTS"});
  if (!reply.ok()) {
    if (reply.status().message().find("cluster support disabled") != std::string::npos)
      return Status::error(kStep, node.endpoint().to_string() +
                                      " is not in cluster mode; drop --cluster to load a "
                                      "standalone target")
          .as(ErrorKind::kRefused);
    return reply.status().as(ErrorKind::kUnavailable);
  }
  return SlotMap::parse(**reply, node.endpoint());
}

std::optional<Redirect> parse_redirect(std::string_view err) {
  Redirect r;
  if (err.substr(0, 6) == "MOVED ") {
    err.remove_prefix(6);
  } else if (err.substr(0, 4) == "ASK ") {
    r.ask = true;
    err.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const size_t space = err.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  unsigned slot = 0;
  auto [end, ec] = std::from_chars(err.data(), err.data() + space, slot);
  if (ec != std::errc() || end != err.data() + space || slot >= kHashSlots) return std::nullopt;
  r.slot = static_cast<uint16_t>(slot);
  auto to = parse_endpoint(err.substr(space + 1));
  if (!to.ok()) return std::nullopt;
  r.to = *to;
  return r;
}

}  // namespace rrs
