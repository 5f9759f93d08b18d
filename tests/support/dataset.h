// Datasets for sync tests, written through plain Redis commands so they hold
// exactly what a user's Redis would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/support/redis_process.h"

namespace rrs::test {

// Every type and internal encoding the sidecar must carry, in DBs 0, 1, 5 and
// 15: binary-safe and empty keys and values, integer strings, small
// (listpack/intset) and large (hashtable/quicklist/skiplist) collections,
// +inf/-inf scores, streams with consumer groups and pending entries,
// HyperLogLogs (sparse and dense), bitmaps, geo, keys with far-future TTLs,
// ~100 KiB values and one 9 MiB value (larger than any slot, and than many
// single reads), and two function libraries, lib1 (f1) and lib2 (f2, f3).
// Deterministic: the same bytes on every run.
// Failed commands are recorded as gtest failures. Leaves DB 0 selected.
void fill_all_types(RedisProcess& redis);

// `count` string keys "<prefix><i>" in `db`, each with a `value_size`-byte value.
void fill_strings(RedisProcess& redis, int db, const std::string& prefix, size_t count,
                  size_t value_size = 32);

// A Lua function library `name` with one function `function` returning
// `returns`, for FUNCTION LOAD.
std::string lua_library(const std::string& name, const std::string& function, int returns);

// `n` bytes from a generator seeded with `seed`: incompressible and repeatable.
std::string random_bytes(size_t n, uint64_t seed);

}  // namespace rrs::test
