#include "tests/support/cluster_dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string_view>

#include "proto/hash_slot.h"
#include "tests/support/dataset.h"

namespace rrs::test {
namespace {

using Argv = std::vector<std::string>;
using namespace std::string_literals;

// 2100-01-01 in ms: fixed, so the same keys have the same PEXPIRETIME on any
// server and in any run, and far past any test.
const std::string kExpireAtMs = "4102444800000";

// Commands in flight per connection while filling.
constexpr size_t kPipelineDepth = 256;

// For every slot, a short tag that hashes to it ("t<j>", the first j that
// does): found once, by trying j = 0, 1, ... (about 170,000 CRCs).
const std::vector<std::string>& tag_for_slot() {
  static const std::vector<std::string> tags = [] {
    std::vector<std::string> t(kHashSlots);
    size_t found = 0;
    for (uint64_t j = 0; found < kHashSlots; ++j) {
      std::string tag = "t" + std::to_string(j);
      std::string& slot_tag = t[hash_slot(tag)];
      if (!slot_tag.empty()) continue;
      slot_tag = std::move(tag);
      ++found;
    }
    return t;
  }();
  return tags;
}

// Key i's name: see cluster_keys().
std::string key_name(size_t i, size_t n, uint64_t seed) {
  const std::string id = std::to_string(i);
  if (i == 1) return "";
  switch (i % 4) {
    case 0:
    case 1: {
      const size_t slot = (i * kHashSlots / n + seed) % kHashSlots;
      const std::string tag = "{" + tag_for_slot()[slot] + "}";
      return i % 4 == 0 ? tag + ":key:" + id : tag + "\0\xff\r\n"s + id;
    }
    case 2: {
      static const char* const kBraces[] = {"key:", "a{}{b}:", "half{open:", "{{x}}:", "}{c:"};
      return kBraces[(i / 4) % 5] + id;
    }
    default:
      return (i / 4) % 2 ? "\0bin\xfe"s + id + "\0"s
                         : "x{\0\xff"s + std::to_string(i % 5) + "}\0"s + id;
  }
}

// RPUSH/SADD/... key item0 item1 ...: `count` items made by `item`.
template <class Item>
Argv with_items(Argv argv, size_t count, Item item) {
  for (size_t j = 0; j < count; ++j) item(argv, j);
  return argv;
}

// The commands that make key `k` of type `type` (0..10).
void add_writes(ClusterKey& k, size_t i, uint64_t seed) {
  const std::string& key = k.name;
  const uint64_t value_seed = seed * 1000003 + i;
  // One collection in 16 of each type gets past the small encodings
  // (128 hash/zset entries, 512 intset entries, one quicklist node).
  const bool large = (i / 11) % 16 == 0;
  const size_t items = large ? 600 : 4;
  auto& w = k.writes;
  switch (i % 11) {
    case 0: w.push_back({"SET", key, random_bytes(i % 64, value_seed)}); break;
    case 1:
      w.push_back({"INCRBY", key, std::to_string(static_cast<int64_t>(i) * 7919 - 5000)});
      break;
    case 2:
      w.push_back(with_items({"HSET", key}, items, [&](Argv& a, size_t j) {
        a.push_back("f" + std::to_string(j));
        a.push_back(j == 1 ? "v\0\r\n"s : "v" + std::to_string(j * i));
      }));
      break;
    case 3:
      w.push_back(with_items({"RPUSH", key}, items, [&](Argv& a, size_t j) {
        a.push_back(j == 0 ? ""s : "item" + std::to_string(j));
      }));
      break;
    case 4:
      w.push_back(with_items({"SADD", key}, items, [&](Argv& a, size_t j) {
        // Integers only on even keys: an intset until it grows past 512.
        a.push_back(i % 2 ? "m" + std::to_string(j) : std::to_string(j * 3));
      }));
      break;
    case 5:
      w.push_back(
          with_items({"ZADD", key, "+inf", "top", "-inf", "bottom"}, items, [&](Argv& a, size_t j) {
            a.push_back(std::to_string(j) + ".5");
            a.push_back("z" + std::to_string(j));
          }));
      break;
    case 6:
      for (size_t j = 1; j <= (large ? 200 : 3); ++j)
        w.push_back({"XADD", key, std::to_string(1700000000000 + j) + "-" + std::to_string(i), "n",
                     std::to_string(j), "bin", "\0\xff"s});
      if (i % 2 == 0) {
        w.push_back({"XGROUP", "CREATE", key, "g", "0"});
        w.push_back({"XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", key, ">"});
      }
      break;
    case 7:
      w.push_back(with_items({"PFADD", key}, large ? 3000 : 5,
                             [&](Argv& a, size_t j) { a.push_back("e" + std::to_string(j)); }));
      break;
    case 8:
      w.push_back({"SETBIT", key, std::to_string(i % 1000), "1"});
      w.push_back({"SETBIT", key, "7", "1"});
      break;
    case 9:
      w.push_back({"GEOADD", key, "13.361389", "38.115556", "Palermo", "15.087269", "37.502669",
                   "Catania"});
      break;
    default:
      w.push_back({"SET", key, random_bytes(i % 1000 == 10 ? 100 << 10 : 4 << 10, value_seed)});
      break;
  }
  if (i % 7 == 0) {
    w.push_back({"PEXPIREAT", key, kExpireAtMs});
    k.expires = true;
  }
}

// Sends each key's writes on `c`, kPipelineDepth commands in flight.
void write_pipelined(RedisClient& c, const std::vector<const ClusterKey*>& keys) {
  std::vector<const Argv*> commands;
  for (const ClusterKey* k : keys)
    for (const Argv& argv : k->writes) commands.push_back(&argv);
  for (size_t at = 0; at < commands.size(); at += kPipelineDepth) {
    const size_t end = std::min(commands.size(), at + kPipelineDepth);
    for (size_t j = at; j < end; ++j) {
      std::vector<std::string_view> views(commands[j]->begin(), commands[j]->end());
      c.product().append(views);
    }
    for (size_t j = at; j < end; ++j) {
      auto r = c.product().get_reply();
      if (!r.ok()) {
        ADD_FAILURE() << "fill: " << (*commands[j])[0] << ": " << r.status().message();
        return;
      }
      if ((*r)->type == REDIS_REPLY_ERROR)
        ADD_FAILURE() << "fill: " << (*commands[j])[0] << " " << to_string(*r);
    }
  }
}

void count(ClusterFill& fill, const ClusterKey& k) {
  ++fill.keys;
  if (k.expires) ++fill.expires;
  ++fill.keys_per_slot[hash_slot(k.name)];
}

}  // namespace

std::vector<ClusterKey> cluster_keys(size_t n, uint64_t seed) {
  std::vector<ClusterKey> keys(n);
  for (size_t i = 0; i < n; ++i) {
    keys[i].name = key_name(i, n, seed);
    add_writes(keys[i], i, seed);
  }
  return keys;
}

ClusterFill fill_cluster(RedisCluster& cluster, size_t n, uint64_t seed) {
  ClusterFill fill;
  fill.keys_per_slot.assign(kHashSlots, 0);
  const std::vector<ClusterKey> keys = cluster_keys(n, seed);
  std::vector<std::vector<const ClusterKey*>> by_shard(cluster.shard_count());
  for (const ClusterKey& k : keys) {
    const size_t shard = cluster.shard_for_slot(hash_slot(k.name));
    if (shard == cluster.shard_count()) continue;  // no master serves its slot
    by_shard[shard].push_back(&k);
    count(fill, k);
  }
  for (size_t shard = 0; shard < by_shard.size(); ++shard)
    write_pipelined(cluster.master(shard).client(), by_shard[shard]);
  return fill;
}

ClusterFill write_keys(RedisProcess& server, const std::vector<ClusterKey>& keys) {
  ClusterFill fill;
  fill.keys_per_slot.assign(kHashSlots, 0);
  std::vector<const ClusterKey*> all;
  for (const ClusterKey& k : keys) {
    all.push_back(&k);
    count(fill, k);
  }
  server.client().select(0);
  write_pipelined(server.client(), all);
  return fill;
}

}  // namespace rrs::test
