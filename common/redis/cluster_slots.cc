#include "common/redis/cluster_slots.h"

namespace rrs {
namespace {

constexpr const char* kStep = "read a cluster node's slots (CLUSTER SLOTS)";
// A host name or address is at most 255 bytes; a node ID is 40 hex digits.
constexpr size_t kMaxHost = 255, kMaxId = 64;

Status bad(const std::string& why) { return Status::error(kStep, why).as(ErrorKind::kBadData); }

bool as_int(const redisReply* r, int64_t lo, int64_t hi, int64_t& out) {
  if (r == nullptr || r->type != REDIS_REPLY_INTEGER || r->integer < lo || r->integer > hi)
    return false;
  out = r->integer;
  return true;
}

bool is_string(const redisReply* r) {
  return r != nullptr && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

Result<ClusterNode> parse_node(const redisReply* r, const Endpoint& asked) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements < 2 || !is_string(r->element[0]))
    return bad("a node entry is not [ip, port, ...]");
  int64_t port = 0;
  if (!as_int(r->element[1], 1, 65535, port)) return bad("a node's port is not 1..65535");
  ClusterNode n;
  n.at.host.assign(r->element[0]->str, r->element[0]->len);
  if (n.at.host.size() > kMaxHost) return bad("a node's address is longer than 255 bytes");
  if (n.at.host.empty()) n.at.host = asked.host;
  n.at.port = static_cast<uint16_t>(port);
  if (r->elements >= 3 && is_string(r->element[2])) {
    if (r->element[2]->len > kMaxId) return bad("a node ID is longer than 64 bytes");
    n.id.assign(r->element[2]->str, r->element[2]->len);
  }
  return n;
}

}  // namespace

Result<std::vector<ClusterSlotsEntry>> parse_cluster_slots(const redisReply& reply,
                                                           const Endpoint& asked) {
  if (reply.type != REDIS_REPLY_ARRAY) return bad("the reply is not an array");
  if (reply.elements > kHashSlots) return bad("more entries than slots");
  std::vector<ClusterSlotsEntry> out;
  out.reserve(reply.elements);
  for (size_t i = 0; i < reply.elements; ++i) {
    const redisReply* e = reply.element[i];
    if (e == nullptr || e->type != REDIS_REPLY_ARRAY || e->elements < 3)
      return bad("entry " + std::to_string(i) + " is not [first, last, master, ...]");
    int64_t first = 0, last = 0;
    if (!as_int(e->element[0], 0, kHashSlots - 1, first) ||
        !as_int(e->element[1], first, kHashSlots - 1, last))
      return bad("entry " + std::to_string(i) + " has a slot range outside 0-16383");
    ClusterSlotsEntry entry;
    entry.slots = {static_cast<uint16_t>(first), static_cast<uint16_t>(last)};
    RRS_ASSIGN_OR_RETURN(entry.master, parse_node(e->element[2], asked));
    for (size_t r = 3; r < e->elements; ++r) {
      RRS_ASSIGN_OR_RETURN(ClusterNode replica, parse_node(e->element[r], asked));
      entry.replicas.push_back(std::move(replica));
    }
    out.push_back(std::move(entry));
  }
  return out;
}

Result<std::optional<SlotRanges>> shard_slots(RedisClient& node) {
  RRS_ASSIGN_OR_RETURN(std::string cluster, node.info("cluster"));
  if (info_field(cluster, "cluster_enabled") != "1") return std::optional<SlotRanges>();
  RRS_ASSIGN_OR_RETURN(ReplyPtr myid, node.command({"CLUSTER", "MYID"}));
  if (!is_string(myid.get()) || myid->len == 0 || myid->len > kMaxId)
    return bad("CLUSTER MYID did not answer a node ID");
  const std::string me(myid->str, myid->len);
  RRS_ASSIGN_OR_RETURN(ReplyPtr reply, node.command({"CLUSTER", "SLOTS"}));
  RRS_ASSIGN_OR_RETURN(std::vector<ClusterSlotsEntry> entries,
                       parse_cluster_slots(*reply, node.endpoint()));
  SlotRanges served;
  for (const ClusterSlotsEntry& e : entries) {
    bool mine = e.master.id == me;
    for (const ClusterNode& r : e.replicas) mine = mine || r.id == me;
    if (!mine) continue;
    if (served.overlaps(SlotRanges::of(e.slots.first, e.slots.last)))
      return bad("slot range " + std::to_string(e.slots.first) + "-" +
                 std::to_string(e.slots.last) + " is listed twice");
    served.add(e.slots);
  }
  return std::optional<SlotRanges>(std::move(served));
}

}  // namespace rrs
