// Datasets for Redis Cluster tests, written through plain Redis commands to
// the master that serves each key's slot (as a cluster client would).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/redis_cluster.h"
#include "tests/support/redis_process.h"

namespace rrs::test {

// One key and the commands that make it; each names only this key.
struct ClusterKey {
  std::string name;
  std::vector<std::vector<std::string>> writes;
  bool expires = false;  // it gets a (far-future, fixed) expiry
};

// `n` keys of every type: strings (binary, integer, empty, 4 KiB, now and
// then 100 KiB), hashes, lists, sets (intsets among them), sorted sets (with
// +inf/-inf), streams (half with a consumer group and a pending entry),
// HyperLogLogs, bitmaps, geo; one in 16 of each collection type large enough
// for its big encoding. Names: half carry a hash tag chosen so that the
// tagged keys spread evenly over all 16384 slots (every slot once n reaches
// about 32768), some with binary bytes after the tag; the rest are hashed
// whole: binary names with NULs, names with braces that are no tag
// ("a{}{b}", "{{x}}"), binary tags, and the empty name. One key in 7
// expires, at a fixed time in 2100, so two runs write the same data.
// Deterministic for a seed.
std::vector<ClusterKey> cluster_keys(size_t n, uint64_t seed = 1);

// What a fill wrote.
struct ClusterFill {
  uint64_t keys = 0;
  uint64_t expires = 0;
  std::vector<uint64_t> keys_per_slot;  // kHashSlots entries
};

// Writes cluster_keys(n, seed) into `cluster`, each key through the master
// serving its slot (pipelined), and returns what it wrote. Keys of a slot no
// master serves (a layout without full coverage) are left out. Failed
// commands are recorded as gtest failures.
ClusterFill fill_cluster(RedisCluster& cluster, size_t n, uint64_t seed = 1);

// The same keys into one server, e.g. a standalone reference to compare a
// cluster's logical_state() with.
ClusterFill write_keys(RedisProcess& server, const std::vector<ClusterKey>& keys);

}  // namespace rrs::test
