#include "client/cluster/slot_map.h"

#include <charconv>

namespace rrs {
namespace {

constexpr const char* kStep = "read the target cluster's slot map (CLUSTER SLOTS)";

Status bad(const std::string& why) { return Status::error(kStep, why).as(ErrorKind::kBadData); }

bool as_int(const redisReply* r, int64_t lo, int64_t hi, int64_t& out) {
  if (r == nullptr || r->type != REDIS_REPLY_INTEGER || r->integer < lo || r->integer > hi)
    return false;
  out = r->integer;
  return true;
}

// [ip, port, id, ...]: the node's address. An empty ip is the asked node's.
Result<Endpoint> node_endpoint(const redisReply* r, const Endpoint& asked) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
      r->element[0]->type != REDIS_REPLY_STRING)
    return bad("a node entry is not [ip, port, ...]");
  int64_t port = 0;
  if (!as_int(r->element[1], 1, 65535, port)) return bad("a node's port is not 1..65535");
  std::string host(r->element[0]->str, r->element[0]->len);
  if (host == "?")
    return bad("a master's address is unknown ('?'): set cluster-preferred-endpoint-type to ip "
               "on the target cluster");
  if (host.empty()) host = asked.host;
  if (host.size() > 255) return bad("a node's address is longer than 255 bytes");
  return Endpoint{std::move(host), static_cast<uint16_t>(port)};
}

bool same(const Endpoint& a, const Endpoint& b) { return a.host == b.host && a.port == b.port; }

}  // namespace

Result<SlotMap> SlotMap::parse(const redisReply& reply, const Endpoint& asked) {
  if (reply.type != REDIS_REPLY_ARRAY) return bad("the reply is not an array");
  SlotMap map;
  map.owner_.fill(kUnowned);
  for (size_t i = 0; i < reply.elements; ++i) {
    const redisReply* e = reply.element[i];
    if (e == nullptr || e->type != REDIS_REPLY_ARRAY || e->elements < 3)
      return bad("entry " + std::to_string(i) + " is not [first, last, master, ...]");
    int64_t first = 0, last = 0;
    if (!as_int(e->element[0], 0, kHashSlots - 1, first) ||
        !as_int(e->element[1], first, kHashSlots - 1, last))
      return bad("entry " + std::to_string(i) + " has a slot range outside 0-16383");
    RRS_ASSIGN_OR_RETURN(Endpoint master, node_endpoint(e->element[2], asked));
    int index = kUnowned;
    for (size_t m = 0; m < map.masters_.size(); ++m)
      if (same(map.masters_[m], master)) index = static_cast<int>(m);
    if (index == kUnowned) {
      if (map.masters_.size() >= kHashSlots) return bad("more masters than slots");
      index = static_cast<int>(map.masters_.size());
      map.masters_.push_back(master);
    }
    for (int64_t s = first; s <= last; ++s) {
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

int SlotMap::move(uint16_t slot, const Endpoint& master) {
  int index = kUnowned;
  for (size_t m = 0; m < masters_.size(); ++m)
    if (same(masters_[m], master)) index = static_cast<int>(m);
  if (index == kUnowned) {
    index = static_cast<int>(masters_.size());
    masters_.push_back(master);
  }
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
