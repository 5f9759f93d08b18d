// rdma-server --source rdb on RDB files of versions 1 to 5 (Redis 1.0 to
// 2.4 and the 2.6 development formats), which no server here writes: files
// made by hand with every type and expiry form each version has, in the
// encodings Redis 2.4 wrote (zipmap, ziplists with 16/32/64-bit integer
// entries, intsets, zset scores as strings, EXPIRETIME in seconds); and an
// RDB 6 with AUX fields and RESIZEDB, opcodes of RDB 7 that every server's
// loader reads in a file of any version. For each
// server version the reference is that server loading the file itself (as
// its dump.rdb); a target loaded through the sidecar in restore mode, and in
// replica mode (from disk and diskless: before RDB 5 nothing may follow
// EOF on the link), must then equal it value for value and by DEBUG DIGEST.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "proto/crc64.h"
#include "proto/rdb_format.h"
#include "tests/support/rdb_bytes.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/temp_dir.h"

namespace rrs::test {
namespace {

using namespace std::string_literals;

// --- Redis 2.4's encodings (ziplist.c, zipmap.c, intset.c of 2.4.17) ---------

// A ziplist entry is a string or an integer; 2.4 writes integers that fit
// as int16 (0xc0), int32 (0xd0) or int64 (0xe0), strings with a 6-, 14- or
// 32-bit length (the last two big-endian).
using ZipEntry = std::variant<std::string, int64_t>;

std::string ziplist_entry_body(const ZipEntry& e) {
  if (const auto* n = std::get_if<int64_t>(&e)) {
    if (*n >= INT16_MIN && *n <= INT16_MAX) return "\xc0"s + le(static_cast<uint64_t>(*n), 2);
    if (*n >= INT32_MIN && *n <= INT32_MAX) return "\xd0"s + le(static_cast<uint64_t>(*n), 4);
    return "\xe0"s + le(static_cast<uint64_t>(*n), 8);
  }
  const std::string& s = std::get<std::string>(e);
  std::string head;
  if (s.size() < 64) {
    head = std::string(1, static_cast<char>(s.size()));
  } else if (s.size() < 16384) {
    head = {static_cast<char>(0x40 | (s.size() >> 8)), static_cast<char>(s.size() & 0xff)};
  } else {
    head = "\x80"s;
    for (int shift = 24; shift >= 0; shift -= 8) head += static_cast<char>(s.size() >> shift);
  }
  return head + s;
}

// zlbytes, zltail (the last entry's offset), zllen, entries (each with the
// previous entry's length: 1 byte, or 0xfe and 4 bytes), 0xff.
std::string ziplist(const std::vector<ZipEntry>& entries) {
  std::string body;
  size_t prev = 0, tail = 10;
  for (const ZipEntry& e : entries) {
    tail = 10 + body.size();
    std::string entry = prev < 254 ? std::string(1, static_cast<char>(prev))
                                   : "\xfe"s + le(prev, 4);
    entry += ziplist_entry_body(e);
    prev = entry.size();
    body += entry;
  }
  return le(11 + body.size(), 4) + le(tail, 4) + le(entries.size(), 2) + body + "\xff";
}

// <count> then per pair <len>field<len><free>value<free bytes>, then 0xff
// (lengths under 254 here: one byte each).
std::string zipmap(const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::string out(1, static_cast<char>(pairs.size()));
  for (const auto& [field, value] : pairs) {
    out += static_cast<char>(field.size()) + field;
    out += static_cast<char>(value.size()) + "\x01"s + value + "_";  // one free byte
  }
  return out + "\xff";
}

// Encoding width, count, the members sorted, little-endian.
std::string intset(std::vector<int64_t> members, int width) {
  std::sort(members.begin(), members.end());
  std::string out = le(width, 4) + le(members.size(), 4);
  for (int64_t m : members) out += le(static_cast<uint64_t>(m), width);
  return out;
}

// An RDB string of `plain` in LZF literal runs (a valid LZF stream the way
// any compressor may write it).
std::string lzf_string(const std::string& plain) {
  std::string lzf;
  for (size_t i = 0; i < plain.size(); i += 32) {
    const std::string run = plain.substr(i, 32);
    lzf += static_cast<char>(run.size() - 1) + run;
  }
  return "\xc3"s + len(lzf.size()) + len(plain.size()) + lzf;
}

// --- The file ----------------------------------------------------------------

constexpr int64_t kExpireSeconds = 2114380800;  // 2037-01-01: fits EXPIRETIME's int32

std::string key(uint8_t type, const std::string& name, const std::string& value) {
  return static_cast<char>(type) + str(name) + value;
}

// Every type and expiry form RDB `version` has, in DBs 0 and 3; an RDB 6
// also AUX fields and a RESIZEDB hint, as a tool may write them (Redis 3.0
// did not, the servers' loaders read them in any version).
std::string old_rdb(uint16_t version) {
  std::string r = "REDIS000" + std::to_string(version);
  if (version == 6)
    r += "\xfa"s + str("redis-ver") + str("3.0.7") + "\xfa"s + str("redis-bits") + "\xc0\x40"s +
         "\xfa"s + str("ctime") + str("1700000000") + "\xfa"s + str("%tool") + str("hand-made");
  r += "\xfe\x00"s;
  if (version == 6) r += "\xfb"s + len(15) + len(2);
  r += key(rdb::kString, "string", str("v" + std::to_string(version)));
  r += key(rdb::kString, "int", "\xc2"s + le(static_cast<uint64_t>(-123456789), 4));
  r += key(rdb::kString, "lzf", lzf_string(std::string(300, 'z') + "end"));
  r += key(rdb::kString, "\xff\x00 binary"s, str("\x00\r\n"s));
  r += "\xfd"s + le(kExpireSeconds, 4) + key(rdb::kString, "expires", str("in seconds"));
  std::string list = len(70);  // 14-bit count
  for (int i = 0; i < 70; ++i) list += str("e" + std::to_string(i));
  r += key(rdb::kList, "list", list);
  r += key(rdb::kSet, "set", len(3) + str("a") + str("b") + "\xc0\x07"s);
  // Scores as strings; 254 and 255 are +inf and -inf with no digits.
  r += key(rdb::kZset, "zset",
           len(4) + str("a") + "\x03"s + "1.5" + str("b") + "\xfe"s + str("c") + "\xff"s +
               str("d") + "\x04"s + "-0.2");
  r += key(rdb::kHash, "hash", len(2) + str("f1") + str("v1") + str("f2") + "\xc1\xf4\x01"s);
  if (version >= 2) {
    r += key(rdb::kHashZipmap, "zipmap", str(zipmap({{"f1", "v1"}, {"f2", "v2"}, {"n", "42"}})));
    r += key(rdb::kListZiplist, "ziplist",
             str(ziplist({"a"s, int64_t{7}, int64_t{-70000}, int64_t{1} << 40,
                          std::string(300, 'x'), "b"s})));
    r += "\xfd"s + le(kExpireSeconds + 1, 4) +
         key(rdb::kSetIntset, "intset16", str(intset({3, 1, 2}, 2)));
    r += key(rdb::kSetIntset, "intset64", str(intset({-5, int64_t{1} << 35}, 8)));
    r += key(rdb::kZsetZiplist, "zset-ziplist",
             str(ziplist({"m1"s, "1.5"s, "m2"s, int64_t{2}, "m3"s, int64_t{-100000}})));
  }
  if (version >= 3)
    r += "\xfc"s + le(kExpireSeconds * 1000 + 123, 8) + key(rdb::kString, "expires-ms", str("ms"));
  if (version >= 4)
    r += key(rdb::kHashZiplist, "hash-ziplist",
             str(ziplist({"f1"s, "v1"s, "f2"s, int64_t{5}, "long"s, std::string(100, 'l')})));
  r += "\xfe\x03"s + key(rdb::kString, "in-db-3", str("three"));
  r += "\xff";
  if (version >= rdb::kFirstVersionWithChecksum) r += le(crc64(0, r.data(), r.size()), 8);
  return r;
}

// What the file holds, read back by commands on a target.
void expect_values(RedisProcess& target, uint16_t version) {
  auto run = [&](const std::vector<std::string>& argv) { return to_string(target.command(argv)); };
  EXPECT_EQ(text(target.command({"GET", "string"})), "v" + std::to_string(version));
  EXPECT_EQ(text(target.command({"GET", "int"})), "-123456789");
  EXPECT_EQ(text(target.command({"GET", "lzf"})), std::string(300, 'z') + "end");
  EXPECT_EQ(text(target.command({"GET", "\xff\x00 binary"s})), "\x00\r\n"s);
  EXPECT_EQ(text(target.command({"LINDEX", "list", "69"})), "e69");
  EXPECT_EQ(text(target.command({"ZSCORE", "zset", "b"})), "inf");
  EXPECT_EQ(text(target.command({"ZSCORE", "zset", "c"})), "-inf");
  EXPECT_EQ(text(target.command({"HGET", "hash", "f2"})), "500");
  EXPECT_EQ(run({"PEXPIRETIME", "expires"}), "(integer) " + std::to_string(kExpireSeconds * 1000));
  if (version >= 2) {
    EXPECT_EQ(text(target.command({"HGET", "zipmap", "n"})), "42");
    EXPECT_EQ(text(target.command({"LINDEX", "ziplist", "3"})), "1099511627776");
    EXPECT_EQ(run({"SCARD", "intset16"}), "(integer) 3");
    EXPECT_EQ(run({"SISMEMBER", "intset64", "34359738368"}), "(integer) 1");
    EXPECT_EQ(text(target.command({"ZSCORE", "zset-ziplist", "m3"})), "-100000");
  }
  if (version >= 3) {
    EXPECT_EQ(run({"PEXPIRETIME", "expires-ms"}),
              "(integer) " + std::to_string(kExpireSeconds * 1000 + 123));
  }
  if (version >= 4) {
    EXPECT_EQ(text(target.command({"HGET", "hash-ziplist", "f2"})), "5");
  }
}

using Case = std::tuple<std::string, uint16_t>;  // server, RDB version

class RdbOldVersions : public SidecarTest, public ::testing::WithParamInterface<Case> {};

TEST_P(RdbOldVersions, LoadAsTheServerLoadsTheFile) {
  const auto& [name, version] = GetParam();
  TestServer server;
  RRS_NEED_SERVER(server, name);
  TempDir dir("rdbold");
  const std::string file = dir.write_file("dump.rdb", old_rdb(version));

  // The reference: the server loads the file itself.
  RedisProcess reference(RedisOptions().with_server(server).with_args(
      {"--dir", dir.path(), "--dbfilename", "dump.rdb"}));
  ASSERT_TRUE(reference.started()) << reference.start_error();
  expect_values(reference, version);
  const uint64_t keys = reference.client().total_keys();
  ASSERT_GE(keys, 10u);

  SidecarServer sidecar("", {"--source", "rdb", "--rdb-file", file});
  ASSERT_TRUE(sidecar.wait_ready()) << sidecar.describe();
  EXPECT_EQ(sidecar.ready_fields().at("rdb"), std::to_string(version)) << sidecar.ready_line();
  EXPECT_EQ(field_u64(sidecar.ready_fields(), "records"), keys) << sidecar.ready_line();

  // Replica mode from disk (the target saves the stream, then loads the
  // file) and diskless (it loads from the link and reads the EOF mark
  // right after the RDB).
  const std::vector<std::pair<std::string, std::vector<std::string>>> targets = {
      {"restore", {}},
      {"replica", {}},
      {"replica", {"--repl-diskless-load", "swapdb"}},
  };
  for (const auto& [mode, args] : targets) {
    SCOPED_TRACE(mode + (args.empty() ? "" : " " + args[1]));
    RedisProcess target(RedisOptions().with_server(server).with_args(args));
    ASSERT_TRUE(target.started()) << target.start_error();
    ClientRun run = sync_to(sidecar.port(), target, {"--mode", mode});
    ASSERT_EQ(run.exit_code, 0) << run.describe();
    EXPECT_EQ(run.count("keys"), keys) << run.describe();
    expect_values(target, version);
    EXPECT_EQ(target.client().logical_state(), reference.client().logical_state());
    EXPECT_EQ(target.digest(), reference.digest());
    EXPECT_EQ(target.keyspace(), reference.keyspace());
  }
}

std::vector<Case> every_case() {
  std::vector<Case> cases;
  for (const char* server : {"redis-7.0", "valkey-8.0", "redis-8.0", "valkey-9.1"})
    for (uint16_t version = 1; version <= 6; ++version) cases.emplace_back(server, version);
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Servers, RdbOldVersions, ::testing::ValuesIn(every_case()),
                         [](const auto& p) {
                           std::string name = std::get<0>(p.param);
                           for (char& c : name)
                             if (c == '-' || c == '.') c = '_';
                           return name + "_rdb" + std::to_string(std::get<1>(p.param));
                         });

}  // namespace
}  // namespace rrs::test
