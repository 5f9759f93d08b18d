#include "tests/support/redis_cluster.h"

#include <cmath>
#include <sstream>
#include <utility>

#include "proto/hash_slot.h"
#include "tests/support/eventually.h"
#include "tests/support/ports.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;

// How often the waits below poll. Each is bounded: by
// ClusterOptions::ready_timeout, or by a limit of its own.
constexpr auto kPoll = 50ms;
// Another test may take a cluster bus port between our probe and the bind.
constexpr int kBusPortAttempts = 3;
// A manual failover gives up after 5 s (CLUSTER_MF_TIMEOUT); it is asked again.
constexpr int kFailoverAttempts = 3;
constexpr auto kFailoverWait = 7s;
// Keys per MIGRATE while moving a slot.
constexpr int kMigrateBatch = 100;
// MIGRATE's own timeout (ms) for one batch.
constexpr const char* kMigrateTimeoutMs = "10000";

// One line of CLUSTER NODES:
// <id> <ip:port@cport[,...]> <flags> <master|-> <ping> <pong> <epoch> <link> <slot>...
struct NodeLine {
  std::string id;
  std::vector<std::string> flags;
  std::string master_id;  // "-" for a master
  std::string link;       // "connected" / "disconnected"
  SlotRanges slots;
  bool mid_migration = false;  // an "[slot->-id]" or "[slot-<-id]" entry
  bool parsed = true;

  bool has(const std::string& flag) const {
    for (const auto& f : flags)
      if (f == flag) return true;
    return false;
  }
  bool is_replica() const { return has("slave") || has("replica"); }
};

std::vector<NodeLine> parse_cluster_nodes(const std::string& text) {
  std::vector<NodeLine> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line == "\r") continue;
    std::istringstream words(line);
    NodeLine n;
    std::string addr, flags, ping, pong, epoch;
    if (!(words >> n.id >> addr >> flags >> n.master_id >> ping >> pong >> epoch >> n.link))
      n.parsed = false;
    std::istringstream each_flag(flags);
    for (std::string f; std::getline(each_flag, f, ',');) n.flags.push_back(f);
    for (std::string slot; words >> slot;) {
      if (slot.front() == '[') {
        n.mid_migration = true;
        continue;
      }
      auto r = SlotRanges::parse(slot);
      if (r.ok())
        n.slots = n.slots.united(*r);
      else
        n.parsed = false;
    }
    lines.push_back(std::move(n));
  }
  return lines;
}

// `slots` without `slot`.
SlotRanges without(const SlotRanges& slots, uint16_t slot) {
  return slots.complement().united(SlotRanges::of(slot, slot)).complement();
}

bool is_error(const Reply& r) { return !r || r->type == REDIS_REPLY_ERROR; }

}  // namespace

std::vector<SlotRanges> even_slot_split(size_t masters) {
  std::vector<SlotRanges> split;
  const double per_master = static_cast<double>(kHashSlots) / static_cast<double>(masters);
  double cursor = 0;
  long first = 0;
  for (size_t i = 0; i < masters; ++i) {
    long last = std::lround(cursor + per_master - 1);
    if (last > kHashSlots - 1 || i + 1 == masters) last = kHashSlots - 1;
    if (last < first) last = first;
    split.push_back(SlotRanges::of(static_cast<uint16_t>(first), static_cast<uint16_t>(last)));
    first = last + 1;
    cursor += per_master;
  }
  return split;
}

RedisCluster::RedisCluster(ClusterOptions opts) : opts_(std::move(opts)) {
  if (opts_.masters == 0) {
    start_error_ = "a cluster needs at least one master";
    return;
  }
  if (opts_.slots.empty()) opts_.slots = even_slot_split(opts_.masters);
  if (opts_.slots.size() != opts_.masters) {
    start_error_ = std::to_string(opts_.slots.size()) + " slot ranges for " +
                   std::to_string(opts_.masters) + " masters";
    return;
  }
  SlotRanges owned;
  for (const SlotRanges& s : opts_.slots) {
    if (owned.overlaps(s)) {
      start_error_ = "two masters would own slots of " + s.to_string();
      return;
    }
    owned = owned.united(s);
  }

  std::vector<std::string> args = {"--cluster-enabled", "yes", "--cluster-config-file",
                                   "nodes.conf",  // in the node's own --dir
                                   "--cluster-node-timeout",
                                   std::to_string(opts_.node_timeout.count()),
                                   // A master keeps its replicas, even one left without slots.
                                   "--cluster-allow-replica-migration", "no"};
  if (!owned.covers_all()) args.insert(args.end(), {"--cluster-require-full-coverage", "no"});
  if (!opts_.automatic_failover) args.insert(args.end(), {"--cluster-replica-no-failover", "yes"});
  if (!opts_.node.password.empty()) args.insert(args.end(), {"--masterauth", opts_.node.password});

  const size_t total = opts_.masters * (1 + opts_.replicas_per_master);
  for (size_t k = 0; k < total; ++k) {
    std::string error;
    if (!start_node(args, error)) {
      start_error_ = "start cluster node " + std::to_string(k) + ": " + error;
      return;
    }
  }
  for (size_t i = 0; i < opts_.masters; ++i) {
    Shard s;
    s.master = i;
    s.slots = opts_.slots[i];
    for (size_t j = 0; j < opts_.replicas_per_master; ++j)
      s.replicas.push_back(opts_.masters + i * opts_.replicas_per_master + j);
    shards_.push_back(std::move(s));
  }
  if (!join(start_error_)) return;
  auto ready = wait_ready();
  if (!ready) {
    start_error_ = ready.message();
    return;
  }
  started_ = true;
}

RedisCluster::~RedisCluster() {
  for (auto& n : nodes_) n->kill();
}

bool RedisCluster::start_node(const std::vector<std::string>& cluster_args, std::string& error) {
  for (int attempt = 1; attempt <= kBusPortAttempts; ++attempt) {
    RedisOptions o = opts_.node;
    o.port = 0;
    // The bus port is named: port + 10000, the default, is past 65535 for
    // much of the ephemeral range.
    const uint16_t bus = free_loopback_port();
    o.extra_args.insert(o.extra_args.end(), cluster_args.begin(), cluster_args.end());
    o.extra_args.insert(o.extra_args.end(), {"--cluster-port", std::to_string(bus)});
    auto node = std::make_unique<RedisProcess>(std::move(o));
    if (node->started()) {
      nodes_.push_back(std::move(node));
      bus_ports_.push_back(bus);
      return true;
    }
    error += node->start_error();
    if (node->start_error().find("in use") == std::string::npos) return false;
  }
  return false;
}

bool RedisCluster::join(std::string& error) {
  for (size_t k = 0; k < nodes_.size(); ++k) {
    RedisProcess& n = *nodes_[k];
    Reply id = n.command({"CLUSTER", "MYID"});
    if (is_error(id) || text(id).empty()) {
      error = "CLUSTER MYID on " + n.address() + ": " + to_string(id);
      return false;
    }
    ids_.push_back(text(id));
    // Distinct epochs up front, as redis-cli sets them: no epoch collisions
    // to resolve after the meet.
    Reply epoch = n.command({"CLUSTER", "SET-CONFIG-EPOCH", std::to_string(k + 1)});
    if (is_error(epoch)) {
      error = "CLUSTER SET-CONFIG-EPOCH on " + n.address() + ": " + to_string(epoch);
      return false;
    }
  }
  for (const Shard& s : shards_) {
    if (s.slots.empty()) continue;
    std::vector<std::string> add = {"CLUSTER", "ADDSLOTSRANGE"};
    for (const SlotRange& r : s.slots.ranges()) {
      add.push_back(std::to_string(r.first));
      add.push_back(std::to_string(r.last));
    }
    Reply r = nodes_[s.master]->command(add);
    if (is_error(r)) {
      error = "CLUSTER ADDSLOTSRANGE on " + nodes_[s.master]->address() + ": " + to_string(r);
      return false;
    }
  }
  for (size_t k = 1; k < nodes_.size(); ++k) {
    Reply r = nodes_[0]->command({"CLUSTER", "MEET", "127.0.0.1", std::to_string(nodes_[k]->port()),
                                  std::to_string(bus_ports_[k])});
    if (is_error(r)) {
      error = "CLUSTER MEET " + nodes_[k]->address() + ": " + to_string(r);
      return false;
    }
  }
  // CLUSTER REPLICATE needs the replica to know its master by id.
  auto knows_everyone = [&] {
    for (auto& n : nodes_) {
      const auto lines = parse_cluster_nodes(text(n->command({"CLUSTER", "NODES"})));
      if (lines.size() != nodes_.size()) return false;
      for (const NodeLine& l : lines)
        if (node_index(l.id) == nodes_.size() || l.has("handshake")) return false;
    }
    return true;
  };
  if (!eventually(knows_everyone, opts_.ready_timeout, kPoll)) {
    error = "the nodes did not all meet within " + std::to_string(opts_.ready_timeout.count()) +
            " ms:\n" + describe();
    return false;
  }
  for (const Shard& s : shards_) {
    for (size_t replica : s.replicas) {
      Reply r = nodes_[replica]->command({"CLUSTER", "REPLICATE", ids_[s.master]});
      if (is_error(r)) {
        error = "CLUSTER REPLICATE on " + nodes_[replica]->address() + ": " + to_string(r);
        return false;
      }
    }
  }
  return true;
}

size_t RedisCluster::node_index(const std::string& id) const {
  for (size_t k = 0; k < ids_.size(); ++k)
    if (ids_[k] == id) return k;
  return nodes_.size();
}

std::vector<RedisProcess*> RedisCluster::masters() {
  std::vector<RedisProcess*> out;
  for (const Shard& s : shards_) out.push_back(nodes_[s.master].get());
  return out;
}

std::vector<RedisProcess*> RedisCluster::replicas() {
  std::vector<RedisProcess*> out;
  for (size_t i = 0; i < shards_.size(); ++i)
    for (RedisProcess* r : replicas_of(i)) out.push_back(r);
  return out;
}

std::vector<RedisProcess*> RedisCluster::replicas_of(size_t shard) {
  std::vector<RedisProcess*> out;
  for (size_t k : shards_.at(shard).replicas) out.push_back(nodes_[k].get());
  return out;
}

std::vector<RedisProcess*> RedisCluster::nodes() {
  std::vector<RedisProcess*> out;
  for (auto& n : nodes_) out.push_back(n.get());
  return out;
}

size_t RedisCluster::shard_for_slot(uint16_t slot) const {
  for (size_t i = 0; i < shards_.size(); ++i)
    if (shards_[i].slots.contains(slot)) return i;
  return shards_.size();
}

RedisProcess* RedisCluster::node_for_slot(uint16_t slot) {
  const size_t shard = shard_for_slot(slot);
  return shard < shards_.size() ? &master(shard) : nullptr;
}

std::string RedisCluster::node_id(const RedisProcess& node) const {
  for (size_t k = 0; k < nodes_.size() && k < ids_.size(); ++k)
    if (nodes_[k].get() == &node) return ids_[k];
  return "";
}

Keyspace RedisCluster::keyspace() {
  Keyspace sum;
  for (RedisProcess* m : masters()) {
    for (const auto& [db, counts] : m->keyspace()) {
      sum[db].keys += counts.keys;
      sum[db].expires += counts.expires;
    }
  }
  return sum;
}

std::map<std::string, std::string> RedisCluster::logical_state() {
  std::map<std::string, std::string> merged;
  for (size_t i = 0; i < shards_.size(); ++i) {
    for (auto& [name, value] : master(i).client().logical_state()) {
      auto [at, inserted] = merged.emplace(name, value);
      if (!inserted && at->second != value)
        merged.emplace(name + " (shard " + std::to_string(i) + ")", value);
    }
  }
  return merged;
}

std::vector<uint64_t> RedisCluster::keys_per_slot() {
  std::vector<uint64_t> counts(kHashSlots);
  for (size_t i = 0; i < shards_.size(); ++i) {
    RedisClient& c = master(i).client();
    uint64_t misplaced = 0;
    std::string example;
    std::string cursor = "0";
    do {
      Reply r = c.run({"SCAN", cursor, "COUNT", "1000"});
      if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) return counts;
      cursor.assign(r->element[0]->str, r->element[0]->len);
      const redisReply* keys = r->element[1];
      for (size_t k = 0; k < keys->elements; ++k) {
        const std::string_view key(keys->element[k]->str, keys->element[k]->len);
        const uint16_t slot = hash_slot(key);
        ++counts[slot];
        if (shards_[i].slots.contains(slot)) continue;
        if (misplaced++ == 0) example = to_string(keys->element[k]);
      }
    } while (cursor != "0");
    if (misplaced)
      ADD_FAILURE() << misplaced << " key(s) on shard " << i << "'s master " << master(i).address()
                    << " are in slots it does not serve, e.g. " << example;
  }
  return counts;
}

testing::AssertionResult RedisCluster::wait_ready() {
  std::string why;
  auto agreed = [&] {
    why = disagreement();
    return why.empty();
  };
  if (eventually(agreed, opts_.ready_timeout, kPoll)) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "the cluster did not settle within "
                                     << opts_.ready_timeout.count() << " ms: " << why << "\n"
                                     << describe();
}

std::string RedisCluster::disagreement() {
  for (size_t k = 0; k < nodes_.size(); ++k) {
    std::string why = node_disagreement(k);
    if (!why.empty()) return nodes_[k]->address() + " " + why;
  }
  return "";
}

std::string RedisCluster::node_disagreement(size_t node) {
  RedisProcess& n = *nodes_[node];
  const std::string state = rrs::info_field(text(n.command({"CLUSTER", "INFO"})), "cluster_state");
  if (state != "ok") return "reports cluster_state:" + state;
  const auto lines = parse_cluster_nodes(text(n.command({"CLUSTER", "NODES"})));
  if (lines.size() != nodes_.size())
    return "knows " + std::to_string(lines.size()) + " nodes, not " + std::to_string(nodes_.size());
  for (const NodeLine& l : lines) {
    const size_t k = node_index(l.id);
    if (k == nodes_.size()) return "knows a node " + l.id + " that is not ours";
    const std::string who = "sees " + nodes_[k]->address() + " ";
    if (!l.parsed) return who + "in a line it cannot parse";
    for (const char* bad : {"fail", "fail?", "handshake", "noaddr"})
      if (l.has(bad)) return who + "flagged " + bad;
    if (l.link != "connected") return who + l.link;
    if (l.mid_migration) return who + "with a slot mid-migration";
    for (size_t i = 0; i < shards_.size(); ++i) {
      const Shard& s = shards_[i];
      const std::string shard = " (shard " + std::to_string(i) + ")";
      if (k == s.master) {
        if (!l.has("master")) return who + "not as a master" + shard;
        if (l.slots != s.slots)
          return who + "with slots " + l.slots.to_string() + ", not " + s.slots.to_string() + shard;
      }
      for (size_t replica : s.replicas) {
        if (k != replica) continue;
        if (!l.is_replica() || l.master_id != ids_[s.master])
          return who + "not as a replica of " + nodes_[s.master]->address() + shard;
      }
    }
  }
  for (const Shard& s : shards_) {
    for (size_t replica : s.replicas) {
      if (replica != node) continue;
      const std::string link = n.info_field("replication", "master_link_status");
      if (link != "up") return "has its link to its master " + link;
    }
  }
  return "";
}

testing::AssertionResult RedisCluster::failover(size_t shard) {
  if (shard >= shards_.size() || shards_[shard].replicas.empty())
    return testing::AssertionFailure() << "failover(" << shard << "): no such shard with a replica";
  Shard& s = shards_[shard];
  RedisProcess& promoted = *nodes_[s.replicas[0]];
  bool flipped = false;
  for (int attempt = 1; attempt <= kFailoverAttempts && !flipped; ++attempt) {
    Reply r = promoted.command({"CLUSTER", "FAILOVER"});
    if (is_error(r))
      return testing::AssertionFailure()
             << "CLUSTER FAILOVER on " << promoted.address() << ": " << to_string(r);
    flipped = eventually([&] { return promoted.info_field("replication", "role") == "master"; },
                         kFailoverWait, kPoll);
  }
  if (!flipped)
    return testing::AssertionFailure()
           << "shard " << shard << "'s replica " << promoted.address()
           << " did not become master after " << kFailoverAttempts << " CLUSTER FAILOVERs\n"
           << describe();
  // The old master follows the new one, in the replica's place.
  std::swap(s.master, s.replicas[0]);
  return wait_ready();
}

std::vector<std::string> RedisCluster::migrate_auth() const {
  const std::string& password = opts_.node.password;
  if (password.empty()) return {};
  return {"AUTH", password};
}

testing::AssertionResult RedisCluster::migrate_slot(uint16_t slot, size_t to) {
  const size_t from = shard_for_slot(slot);
  if (from == shards_.size() || to >= shards_.size() || from == to)
    return testing::AssertionFailure()
           << "migrate_slot(" << slot << ", " << to << "): the slot is served by shard " << from
           << " of " << shards_.size();
  RedisProcess& src = master(from);
  RedisProcess& dst = master(to);
  const std::string s = std::to_string(slot);
  auto step = [](RedisProcess& node, const std::vector<std::string>& argv) -> std::string {
    Reply r = node.command(argv);
    if (!is_error(r)) return "";
    return argv[0] + " " + argv[1] + " on " + node.address() + ": " + to_string(r);
  };
  // The order redis-cli uses: the destination accepts the slot's keys before
  // the source starts redirecting to it.
  std::string error = step(dst, {"CLUSTER", "SETSLOT", s, "IMPORTING", node_id(src)});
  if (error.empty()) error = step(src, {"CLUSTER", "SETSLOT", s, "MIGRATING", node_id(dst)});
  while (error.empty()) {
    Reply keys = src.command({"CLUSTER", "GETKEYSINSLOT", s, std::to_string(kMigrateBatch)});
    if (is_error(keys) || keys->type != REDIS_REPLY_ARRAY) {
      error = "CLUSTER GETKEYSINSLOT: " + to_string(keys);
      break;
    }
    if (keys->elements == 0) break;
    std::vector<std::string> migrate = {"MIGRATE", "127.0.0.1", std::to_string(dst.port()),
                                        "",        "0",         kMigrateTimeoutMs};
    for (const std::string& a : migrate_auth()) migrate.push_back(a);
    migrate.emplace_back("KEYS");
    for (size_t k = 0; k < keys->elements; ++k)
      migrate.emplace_back(keys->element[k]->str, keys->element[k]->len);
    error = step(src, migrate);
  }
  // The new owner first, then the old one (so it stops serving the slot only
  // once the new one does), then every other master.
  if (error.empty()) error = step(dst, {"CLUSTER", "SETSLOT", s, "NODE", node_id(dst)});
  if (error.empty()) error = step(src, {"CLUSTER", "SETSLOT", s, "NODE", node_id(dst)});
  for (size_t i = 0; i < shards_.size() && error.empty(); ++i)
    if (i != from && i != to)
      error = step(master(i), {"CLUSTER", "SETSLOT", s, "NODE", node_id(dst)});
  if (!error.empty())
    return testing::AssertionFailure() << "migrate slot " << slot << " from shard " << from
                                       << " to shard " << to << ": " << error;
  shards_[from].slots = without(shards_[from].slots, slot);
  shards_[to].slots.add({slot, slot});
  return wait_ready();
}

std::string RedisCluster::describe() {
  std::string out;
  for (size_t k = 0; k < nodes_.size(); ++k) {
    RedisProcess& n = *nodes_[k];
    out += "node " + std::to_string(k) + " " + n.address() +
           (k < ids_.size() ? " " + ids_[k] : "") + " role:" + n.info_field("replication", "role") +
           " cluster_state:" +
           rrs::info_field(text(n.command({"CLUSTER", "INFO"})), "cluster_state") + "\n" +
           text(n.command({"CLUSTER", "NODES"}));
  }
  return out;
}

}  // namespace rrs::test
