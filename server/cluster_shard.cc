#include "server/cluster_shard.h"

#include <chrono>

#include "common/base/log.h"
#include "common/redis/cluster_slots.h"

namespace rrs {

std::optional<SlotRanges> read_shard_slots(const Endpoint& node, const RedisCredentials& creds) {
  auto c = RedisClient::connect(node, creds, std::chrono::seconds(10));
  Result<std::optional<SlotRanges>> slots = c.ok() ? shard_slots(*c)
                                                   : Result<std::optional<SlotRanges>>(c.status());
  if (!slots.ok()) {
    // A minimal user (+psync +replconf +ping) may not ask: fine for a
    // standalone master, so not a warning.
    const bool denied = slots.status().message().find("NOPERM") != std::string::npos;
    (denied ? log::info : log::warn)(
        "could not read which cluster slots " + node.to_string() +
        " serves: " + slots.status().message() +
        "; the table carries none, so rdma-client --cluster cannot check that the shards "
        "cover every slot (the source's user needs +info +cluster|myid +cluster|slots)");
    return std::nullopt;
  }
  if (*slots)
    log::info(node.to_string() + " is a cluster node; its shard serves slots " +
              ((*slots)->empty() ? "none" : (*slots)->to_string()));
  return *slots;
}

std::string slots_text(const std::optional<SlotRanges>& slots) {
  if (!slots) return "-";
  return slots->empty() ? "none" : slots->to_string();
}

}  // namespace rrs
