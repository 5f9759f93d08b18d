// Writes the seeds that redis-server cannot produce: control-protocol
// messages and mapping tables (made with the real encoders, so they stay in
// step with the format), and RDBs with the types and opcodes that Redis 7.0
// does not write (older and newer encodings, modules, pre-GA functions), and
// RDB values, empty collections among them, for rdb_value_fuzz, and values
// of every type convert_value() converts, for rdb_convert_fuzz.
//
//   build-fuzz/tests/fuzz/make_seeds tests/fuzz/corpus
//
// writes into corpus/control, corpus/table_layout, corpus/rdb,
// corpus/rdb_value and corpus/rdb_convert. Each table is checked with the decoders before it is
// written.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/byte_order.h"
#include "proto/change_log_layout.h"
#include "proto/control.h"
#include "proto/crc32c.h"
#include "proto/crc64.h"
#include "proto/dump_payload.h"
#include "proto/listpack.h"
#include "proto/rdb_format.h"
#include "proto/table_layout.h"

namespace {

namespace fs = std::filesystem;

void write(const fs::path& dir, const std::string& name, std::string_view bytes) {
  fs::create_directories(dir);
  std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) {
    std::fprintf(stderr, "make_seeds: cannot write %s\n", (dir / name).c_str());
    std::exit(1);
  }
}

// --- control ----------------------------------------------------------------

void control_seeds(const fs::path& dir) {
  using namespace rrs::control;
  write(dir, "connect", encode_connect(Hello{}));
  write(dir, "connect-range", encode_connect(Hello{.min_version = 1, .max_version = 4}));
  write(dir, "connect-log-only", encode_connect(Hello{.log_only = true}));
  Accept a;
  a.hello = HelloOk{.version = kProtocolVersion,
                    .max_read_len = kMaxReadLength,
                    .max_in_flight = 16,
                    .keepalive_interval_ms = 1000};
  a.descriptor = Descriptor{.epoch = 7,
                            .table_length = 1 << 20,
                            .remote_addr = 0x7f0012340000,
                            .rkey = 0x1234,
                            .layout_version = 2,
                            .transport = TransportKind::kVerbs,
                            .readable_length = 1 << 20};
  std::string accept = encode_accept(a);
  accept.resize(kAcceptPrivateDataMax, '\0');  // rdma_cm pads private data with zeros
  write(dir, "accept", accept);
  Accept gated = a;
  gated.hello.auth_required = true;
  gated.hello.server_nonce.fill(std::byte{0x5a});
  gated.descriptor.reset();
  write(dir, "accept-auth", encode_accept(gated));
  Proof proof;
  proof.fill(std::byte{0xa5});
  std::string auth;
  append_auth(auth, 0, MsgType::kAuth, proof);
  write(dir, "auth", auth);
  write(dir, "auth-granted", encode_auth_granted({proof, *a.descriptor}));
  write(dir, "auth-failed", encode_error_message({ErrorCode::kAuthFailed, "wrong shared secret"}));
  write(dir, "reject", encode_reject({ErrorCode::kUnsupportedVersion, "no common version"}));
  write(dir, "keepalive", encode_keepalive(MsgType::kKeepalive, 12345));
  write(dir, "keepalive-ack", encode_keepalive(MsgType::kKeepaliveAck, 12345));
  Descriptor streamed = *a.descriptor;  // an epoch being written: a prefix grown
  streamed.table_length = uint64_t{1} << 30, streamed.readable_length = 96 << 20;
  write(dir, "descriptor-grown", encode_descriptor_message(streamed));

  std::string client;  // what a client sends over TCP
  append_hello(client, 1, Hello{});
  append_auth(client, 1, MsgType::kAuth, proof);
  append_get_descriptor(client, 2);
  append_read(client, 3, ReadRequest{.epoch = 7, .offset = 0, .length = 4096});
  append_read(client, 4, ReadRequest{.epoch = 7, .offset = 4096, .length = 1 << 20});
  write(dir, "client-stream", client);

  std::string server;  // and what the server answers
  append_hello_ok(server, 1, gated.hello);
  append_auth(server, 1, MsgType::kAuthOk, proof);
  Descriptor tcp = *a.descriptor;
  tcp.transport = TransportKind::kTcp, tcp.remote_addr = 0, tcp.rkey = 0;
  append_descriptor(server, 2, tcp);
  append_read_data_header(server, 3, 32);
  server.append(32, 'x');
  append_error(server, 4, {ErrorCode::kEpochGone, "epoch 7 was replaced by 8"});
  write(dir, "server-stream", server);
}

// --- mapping tables -----------------------------------------------------------

struct Rec {
  uint32_t db;
  std::string key;
  std::string value;  // RDB-encoded string value
  int64_t expire_at_ms = rrs::table::kNoExpiry;
};

std::string string_value(std::string_view s) {
  std::string v;
  rrs::rdb::append_length(v, s.size());
  v.append(s);
  return v;
}

std::string payload_of(const std::string& value) {
  std::string p(rrs::dump::payload_size(value.size()), '\0');
  rrs::dump::write_payload(rrs::rdb::kString, value, 10, p.data());
  return p;
}

// A whole table as the server builds it, with slot size `slot_size`.
std::string table(const std::vector<Rec>& recs, uint32_t slot_size,
                  const rrs::table::Scripts& scripts) {
  using namespace rrs::table;
  Header h;
  h.state = State::kReady;
  h.epoch = 42;
  h.created_unix_ms = 1'790'000'000'000;
  h.engine = rrs::Engine::kRedis;
  h.server_version = "7.0.15";
  h.rdb_version = 10;
  h.slot_size = slot_size;
  h.record_count = recs.size();
  std::vector<DbEntry> dbs;
  std::vector<std::string> payloads;
  uint64_t heap = 0;
  for (size_t i = 0; i < recs.size(); ++i) {
    if (dbs.empty() || dbs.back().db != recs[i].db) dbs.push_back({recs[i].db, i, 0, 0});
    ++dbs.back().key_count;
    if (recs[i].expire_at_ms != kNoExpiry) ++dbs.back().expires_count;
    payloads.push_back(payload_of(recs[i].value));
    if (!fits_inline(slot_size, recs[i].key.size(), payloads.back().size()))
      heap += heap_footprint(recs[i].key.size(), payloads.back().size());
  }
  h.db_count = static_cast<uint32_t>(dbs.size());
  if (!plan_geometry(h, heap, scripts_region_size(scripts)).ok()) std::abort();

  std::vector<std::byte> t(h.total_size);
  for (size_t i = 0; i < dbs.size(); ++i)
    encode_db_entry(dbs[i], std::span<std::byte, kDbEntrySize>(
                                &t[h.dbdir_offset + i * kDbEntrySize], kDbEntrySize));
  h.dbdir_crc32c = rrs::crc32c(0, &t[h.dbdir_offset], h.dbdir_size);
  uint64_t heap_ref = 0;
  for (size_t i = 0; i < recs.size(); ++i) {
    RecordIn r{recs[i].db, recs[i].key, payloads[i], recs[i].expire_at_ms};
    std::span<std::byte> slot(&t[h.slot_offset(i)], slot_size);
    if (fits_inline(slot_size, r.key.size(), r.payload.size())) {
      encode_inline_slot(r, slot);
      continue;
    }
    encode_heap_slot(r, heap_ref, slot);
    std::byte* at = &t[h.heap_offset + heap_ref];
    std::memcpy(at, r.key.data(), r.key.size());
    std::memcpy(at + r.key.size(), r.payload.data(), r.payload.size());
    heap_ref += heap_footprint(r.key.size(), r.payload.size());
  }
  if (h.scripts_size)
    h.scripts_crc32c = encode_scripts(scripts, std::span(&t[h.scripts_offset], h.scripts_size));
  encode_header(h, std::span<std::byte, kHeaderSize>(t.data(), kHeaderSize));

  // The seed is only useful if the decoders take it.
  auto back = decode_header(std::span(t).first(kHeaderSize), t.size());
  bool ok = back.ok() &&
            decode_db_directory(*back, std::span(t).subspan(h.dbdir_offset, h.dbdir_size)).ok() &&
            decode_scripts(*back, std::span(t).subspan(h.scripts_offset, h.scripts_size)).ok();
  for (size_t i = 0; ok && i < recs.size(); ++i)
    ok = decode_slot(*back, i, recs[i].db, std::span(t).subspan(h.slot_offset(i), slot_size)).ok();
  if (!ok) {
    std::fprintf(stderr, "make_seeds: a table seed does not decode\n");
    std::exit(1);
  }
  return {reinterpret_cast<const char*>(t.data()), t.size()};
}

// Flags 31 (every CRC recomputed, the region length from the input), a
// region of 2^64 - 1 bytes, and a table still being built whose heap's room
// fills it: its first heap record's key + payload passes 2^64 and wraps to a
// short length.
// A table's header rewritten as a streamed epoch's while it is built: no
// DB directory yet, everything written counted complete (CRC left stale).
void as_building(std::byte* p) {
  using namespace rrs::table;
  rrs::wire::store_u32(p + hdr::kState, static_cast<uint32_t>(State::kBuilding));
  rrs::wire::store_u32(p + hdr::kDbCount, 0);
  rrs::wire::store_u64(p + hdr::kDbdirOffset, 0);
  rrs::wire::store_u64(p + hdr::kDbdirSize, 0);
  rrs::wire::store_u32(p + hdr::kDbdirCrc, 0);
}

// A streamed epoch part way: its first `complete` records counted, and
// room for them all.
std::string building_table(const std::vector<Rec>& recs, size_t complete) {
  using namespace rrs::table;
  std::string t = table(recs, 128, {});
  auto* p = reinterpret_cast<std::byte*>(t.data());
  as_building(p);
  const uint64_t slots = rrs::wire::load_u64(p + hdr::kSlotsOffset);
  uint64_t heap = 0;
  for (size_t i = 0; i < complete; ++i) {
    const std::byte* s = p + slots + i * 128;
    if (static_cast<uint8_t>(s[slot::kKind]) == static_cast<uint8_t>(SlotKind::kHeap))
      heap = rrs::wire::load_u64(s + slot::kHeapRef) +
             heap_footprint(rrs::wire::load_u32(s + slot::kKeyLen),
                            rrs::wire::load_u64(s + slot::kPayloadLen));
  }
  rrs::wire::store_u64(p + hdr::kRecordCount, complete);
  rrs::wire::store_u64(p + hdr::kSlotCount, complete);
  rrs::wire::store_u64(p + hdr::kSlotsSize, complete * 128);
  rrs::wire::store_u64(p + hdr::kHeapSize, heap);
  for (size_t i = 0; i < kLossKinds; ++i)  // none in these records
    rrs::wire::store_u64(p + hdr::kLossy + i * hdr::kLossyEntrySize, 0);
  rrs::wire::store_u32(p + hdr::kHeaderCrc, rrs::crc32c(0, p, hdr::kHeaderCrc));
  if (!decode_header(std::span(p, kHeaderSize), t.size()).ok()) {
    std::fprintf(stderr, "make_seeds: the building table seed does not decode\n");
    std::exit(1);
  }
  return std::string(1, '\0') + t;
}

std::string huge_region_table(const std::vector<Rec>& recs) {
  using namespace rrs::table;
  std::string t = table(recs, 64, {});
  auto* p = reinterpret_cast<std::byte*>(t.data());
  const uint64_t total = ~uint64_t{0} & ~uint64_t{kRegionAlign - 1};
  const uint64_t heap_offset = rrs::wire::load_u64(p + hdr::kHeapOffset);
  as_building(p);
  rrs::wire::store_u64(p + hdr::kTotalSize, total);
  rrs::wire::store_u64(p + hdr::kHeapSize, total - heap_offset);
  rrs::wire::store_u64(p + hdr::kHeapCapacity, total - heap_offset);
  const uint64_t slots = rrs::wire::load_u64(p + hdr::kSlotsOffset);
  for (size_t i = 0; i < recs.size(); ++i) {
    std::byte* s = p + slots + i * 64;
    if (static_cast<uint8_t>(s[slot::kKind]) != static_cast<uint8_t>(SlotKind::kHeap)) continue;
    rrs::wire::store_u32(s + slot::kKeyLen, 20000);
    rrs::wire::store_u64(s + slot::kPayloadLen, total - heap_offset - 100);
    break;
  }
  std::string seed(1, '\x1f');
  for (int i = 0; i < 8; ++i) seed += '\xff';
  return seed + t;
}

void table_seeds(const fs::path& dir) {
  std::vector<Rec> recs = {
      {0, "user:1", string_value("alice")},
      {0, "counter", string_value("12345"), 1'790'000'060'000},
      {0, "big", string_value(std::string(300, 'b'))},  // to the heap
      {5, "k", string_value("")},
      {5, std::string("bin\0key", 7), string_value(std::string("\x00\xff\x01", 3))},
  };
  rrs::table::Scripts scripts;
  // FUNCTION DUMP's shape: opcode, library code as an RDB string, version, CRC.
  std::string lib = "#!lua name=lib\nredis.register_function('f', function() return 1 end)";
  std::string fdump(1, static_cast<char>(rrs::rdb::kOpFunction2));
  rrs::rdb::append_length(fdump, lib.size());
  fdump += lib;
  fdump += std::string("\x0a\x00", 2);
  uint64_t crc = rrs::crc64(0, fdump.data(), fdump.size());
  for (int i = 0; i < 8; ++i) fdump += static_cast<char>(crc >> (8 * i));
  scripts.function_payload = fdump;
  scripts.function_libraries = 1;
  scripts.lua_scripts = {"return 1", "return redis.call('GET', KEYS[1])"};
  rrs::SlotRanges shard = rrs::SlotRanges::of(0, 5460);
  shard.add({9000, 9000});
  scripts.hash_slots = shard;

  // The flag byte: 0 leaves every CRC as written (they are valid), 15 makes
  // the harness recompute them, so mutations get past them.
  for (std::string flags : {std::string(1, '\0'), std::string(1, '\x0f')}) {
    std::string tag = flags[0] ? "-fixcrc" : "";
    write(dir, "table" + tag, flags + table(recs, 128, scripts));
    write(dir, "table-no-scripts" + tag, flags + table(recs, 64, {}));
  }
  write(dir, "table-empty", std::string(1, '\0') + table({}, 64, {}));
  write(dir, "table-huge-region", huge_region_table(recs));
  write(dir, "table-building", building_table(recs, recs.size() / 2));
}

// --- RDBs redis-server 7.0 does not write ---------------------------------

// Builds an RDB by hand, byte by byte as rdb.c writes it.
class Rdb {
 public:
  explicit Rdb(int version) : version_(version) {
    char magic[10];
    if (version >= rrs::rdb::kFirstValkeyVersion)
      std::snprintf(magic, sizeof magic, "VALKEY%03d", version);
    else
      std::snprintf(magic, sizeof magic, "REDIS%04d", version);
    s_ = magic;
  }
  Rdb& op(uint8_t b) {
    s_ += static_cast<char>(b);
    return *this;
  }
  Rdb& len(uint64_t n) {
    rrs::rdb::append_length(s_, n);
    return *this;
  }
  Rdb& str(std::string_view v) {
    len(v.size());
    s_ += v;
    return *this;
  }
  Rdb& le(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) s_ += static_cast<char>(v >> (8 * i));
    return *this;
  }
  Rdb& raw(std::string_view v) {
    s_ += v;
    return *this;
  }
  Rdb& aux(std::string_view k, std::string_view v) { return op(rrs::rdb::kOpAux).str(k).str(v); }
  Rdb& key(uint8_t type, std::string_view k) { return op(type).str(k); }
  // An integer-encoded string (RDB_ENC_INT16).
  Rdb& int16(int16_t v) { return op(0xc1).le(static_cast<uint16_t>(v), 2); }
  // EOF, then from RDB 5 the checksum (0: not computed).
  std::string eof(bool checksum = true) {
    op(rrs::rdb::kOpEof);
    if (version_ >= rrs::rdb::kFirstVersionWithChecksum)
      le(checksum ? rrs::crc64(0, s_.data(), s_.size()) : 0, 8);
    return s_;
  }

 private:
  int version_;
  std::string s_;
};

// A string literal with its NULs.
template <size_t N>
std::string bin(const char (&s)[N]) {
  return std::string(s, N - 1);
}

std::string stream_id(uint64_t ms, uint64_t seq) {  // 128-bit big-endian, as streamID is saved
  std::string id;
  for (int i = 7; i >= 0; --i) id += static_cast<char>(ms >> (8 * i));
  for (int i = 7; i >= 0; --i) id += static_cast<char>(seq >> (8 * i));
  return id;
}

// A stream value of RDB type `type` (15, 19 or 21): one listpack, one group
// with one pending entry owned by one consumer.
void stream(Rdb& r, uint8_t type) {
  using namespace rrs::rdb;
  const bool v2 = type != kStreamListpacks, v3 = type == kStreamListpacks3;
  r.len(1).str(stream_id(1000, 0)).str(bin("\x1c\x00\x00\x00\x02\x00\xff"));
  r.len(1).len(1000).len(0);                        // length, last ID
  if (v2) r.len(1000).len(0).len(0).len(0).len(1);  // first ID, max deleted ID, entries added
  r.len(1).str("group").len(1000).len(0);           // one group, its last delivered ID
  if (v2) r.len(1);                                 // entries read
  r.len(1).raw(stream_id(1000, 0)).le(1'700'000'000'000, 8).len(1);  // PEL: ID, time, count
  r.len(1).str("consumer").le(1'700'000'000'000, 8);                 // one consumer, seen time
  if (v3) r.le(1'700'000'000'000, 8);                                // active time
  r.len(1).raw(stream_id(1000, 0));                                  // its PEL
}

void rdb_seeds(const fs::path& dir) {
  using namespace rrs::rdb;
  // The 8-byte fragment seed rdb_parser_fuzz reads first.
  const std::string prefix("\x05\x00\x00\x00\x00\x00\x00\x00", 8);

  Rdb v9(9);  // Redis 5.0: pre-listpack encodings, modules, a Lua script in AUX
  v9.aux("redis-ver", "5.0.14").aux("redis-bits", "64").aux("lua", "return 1");
  v9.op(kOpModuleAux).len(0x1234567890ull << 10).len(kModuleUint).len(2);
  v9.len(kModuleString).str("aux").len(kModuleEof);
  v9.op(kOpSelectDb).len(0).op(kOpResizeDb).len(12).len(2);
  v9.key(kString, "i").int16(-42);
  v9.key(kList, "list").len(2).str("a").str("b");
  v9.key(kSet, "set").len(2).str("x").str("y");
  v9.key(kZset, "zset")
      .len(3)
      .str("a")
      .raw("\x03"
           "1.5")
      .str("b")
      .op(254)
      .str("c")
      .op(253);
  v9.key(kHash, "hash").len(1).str("f").str("v");
  v9.key(kZset2, "zset2").len(1).str("m").le(0x3ff8000000000000ull, 8);
  v9.op(kOpExpireTime).le(1'900'000'000, 4);
  v9.key(kHashZipmap, "zipmap")
      .str(bin("\x01\x01"
               "f\x01\x00v\xff"));
  v9.op(kOpExpireTimeMs).le(1'900'000'000'000, 8).op(kOpIdle).len(10);
  v9.key(kListZiplist, "ziplist").str(bin("\x0b\x00\x00\x00\x0a\x00\x00\x00\x00\x00\xff"));
  v9.op(kOpFreq).op(5);
  v9.key(kSetIntset, "intset").str(bin("\x02\x00\x00\x00\x01\x00\x00\x00\x07\x00"));
  v9.key(kZsetZiplist, "zziplist").str("zl");
  v9.key(kHashZiplist, "hziplist").str("zl");
  v9.key(kListQuicklist, "quicklist").len(2).str("node1").str("node2");
  stream(v9.key(kStreamListpacks, "stream"), kStreamListpacks);
  v9.key(kModule2, "mod").len(0x1234567890ull << 10);
  v9.len(kModuleSint).len(7).len(kModuleUint).len(8).len(kModuleFloat).le(0x3f800000, 4);
  v9.len(kModuleDouble).le(0x3ff0000000000000ull, 8).len(kModuleString).str("s").len(kModuleEof);
  write(dir, "synthetic-v9", prefix + v9.eof());

  Rdb v10(10);  // Redis 7.0 release candidates and GA opcodes
  v10.aux("redis-ver", "7.0.0");
  v10.op(kOpFunctionPreGa).str("lib").str("LUA").len(1).str("desc");  // name, engine, description
  v10.str("redis.register_function('f', function() return 1 end)");   // code
  v10.op(kOpFunction2);
  v10.str("#!lua name=lib2\nredis.register_function('g', function() return 2 end)");
  v10.op(kOpSelectDb).len(3);
  v10.key(kListQuicklist2, "ql2").len(2).len(kQuicklistPacked).str("lp");
  v10.len(kQuicklistPlain).str(std::string(100, 'p'));
  stream(v10.key(kStreamListpacks2, "stream2"), kStreamListpacks2);
  write(dir, "synthetic-v10", prefix + v10.eof());

  Rdb v12(12);  // Redis 7.2 and 7.4: set listpacks, stream v3, field TTLs
  v12.aux("redis-ver", "7.4.0").op(kOpSelectDb).len(0).op(kOpSlotInfo).len(100).len(2).len(0);
  v12.key(kSetListpack, "slp").str("lp");
  stream(v12.key(kStreamListpacks3, "stream3"), kStreamListpacks3);
  v12.key(kHashMetadata, "hmeta").le(1'900'000'000'000, 8).len(2);
  v12.len(0).str("f1").str("v1").len(1'900'000'000'000).str("f2").str("v2");
  v12.key(kHashMetadataPreGa, "hmeta-rc").len(1).len(0).str("f").str("v");
  v12.key(kHashListpackEx, "hlpex").le(1'900'000'000'000, 8).str("lp");
  v12.key(kHashListpackExPreGa, "hlpex-rc").str("lp");
  write(dir, "synthetic-v12", prefix + v12.eof());

  Rdb v80(80);  // Valkey 9: its own numbering (type 22, opcode 243)
  v80.aux("valkey-ver", "9.1.2").op(kOpValkeySlotImport).str(std::string(40, 'j')).len(1);
  v80.len(0).len(100).op(kOpSelectDb).len(0);
  v80.key(kValkeyHash2, "hash2").len(1).str("f").str("v").le(1'900'000'000'000, 8);
  v80.key(kSetListpack, "slp").str("lp");
  write(dir, "synthetic-v80", prefix + v80.eof());

  Rdb v6(6);  // Redis 2.6, and a master that does not checksum (rdbchecksum no)
  v6.op(kOpSelectDb).len(0).key(kString, "k").str("v");
  write(dir, "synthetic-v6-no-checksum", prefix + v6.eof(false));

  // Redis 2.2 (RDB 1): the original types, zset scores as strings, expiries
  // in seconds; the file ends at EOF.
  Rdb v1(1);
  v1.op(kOpSelectDb).len(0).op(kOpExpireTime).le(2'000'000'000, 4).key(kString, "s").int16(7);
  v1.key(kList, "l").len(2).str("a").str("b").key(kSet, "set").len(1).str("m");
  v1.key(kZset, "z")
      .len(2)
      .str("a")
      .raw("\x03"
           "1.5")
      .str("b")
      .op(255);
  v1.key(kHash, "h").len(1).str("f").str("v").op(kOpSelectDb).len(9).key(kString, "k").str("v");
  write(dir, "synthetic-v1", prefix + v1.eof());
  // Redis 2.4 (RDB 2): its zipmap, ziplist and intset blobs.
  Rdb v2(2);
  v2.op(kOpSelectDb)
      .len(0)
      .key(kHashZipmap, "zm")
      .str(bin("\x01\x01"
               "f\x01\x00"
               "v\xff"));
  const std::string ziplist = bin("\x12\x00\x00\x00\x0d\x00\x00\x00\x02\x00"
                                  "\x00\x01"
                                  "a\x03\xc0\x07\x00\xff");
  v2.key(kListZiplist, "zl").str(ziplist).key(kZsetZiplist, "zz").str(ziplist);
  v2.key(kSetIntset, "is").str(bin("\x02\x00\x00\x00\x01\x00\x00\x00\x07\x00"));
  write(dir, "synthetic-v2", prefix + v2.eof());
  // The 2.6 development formats: EXPIRETIME_MS (3), ziplist hash (4), checksum (5).
  Rdb v4(4);
  v4.op(kOpSelectDb).len(0).op(kOpExpireTimeMs).le(2'000'000'000'123, 8);
  v4.key(kHashZiplist, "zh").str(ziplist);
  write(dir, "synthetic-v4", prefix + v4.eof());
  Rdb v5(5);
  v5.op(kOpSelectDb).len(0).key(kHashZiplist, "zh").str(ziplist).key(kString, "k").str("v");
  write(dir, "synthetic-v5", prefix + v5.eof());
}

// --- change log header (fed to table_layout_fuzz) ----------------------------

void change_log_seeds(const fs::path& dir) {
  namespace cl = rrs::change_log;
  // A log of 2 blocks holding one whole block of stream and 500 bytes of the
  // next, laid out as check_change_log reads it: header, whole blocks, seals.
  cl::Header h;
  h.capacity = 2 * cl::kBlockSize;
  h.log_id = 1795323455714574;
  h.first = h.start = 1000;
  h.end = 1000 + cl::kBlockSize + 500;
  h.replid = "8de1cbd5ac4a2a3e4da3c8d6fc9a3b2e9ac16f43";
  std::string stream;
  while (stream.size() < h.end - h.start) stream += "*1\r\n$4\r\nPING\r\n";
  stream.resize(h.end - h.start);
  auto header = cl::encode_header(h);
  std::string seed(1, '\0');  // table_layout_fuzz's flag byte
  seed.append(reinterpret_cast<const char*>(header.data()), header.size());
  seed += stream;
  seed.append(cl::blocks_end(h, h.end) - h.end, '\0');  // the rest of the open block
  for (size_t at = 0; at < stream.size(); at += cl::kBlockSize) {
    const size_t fill = std::min<size_t>(cl::kBlockSize, stream.size() - at);
    std::byte seal[cl::kSealSize];
    rrs::wire::store_u64(seal, cl::seal_word(static_cast<uint32_t>(fill),
                                             rrs::crc32c(0, stream.data() + at, fill)));
    seed.append(reinterpret_cast<const char*>(seal), sizeof seal);
  }
  write(dir, "change-log", seed);
}

// --- Values for rdb_value_fuzz ---------------------------------------------

// Each seed: a type byte, a version byte (0: RDB 12, 1: RDB 80), the value.
// Empty collections of every kind that has them, and their nearest
// non-empty neighbours.
void rdb_value_seeds(const fs::path& dir) {
  using namespace rrs::rdb;
  auto len = [](uint64_t n) {
    std::string s;
    append_length(s, n);
    return s;
  };
  auto str = [&](std::string_view v) { return len(v.size()) + std::string(v); };
  auto lzf = [&](std::string_view plain) {  // one literal run
    return "\xc3" + len(1 + plain.size()) + len(plain.size()) +
           static_cast<char>(plain.size() - 1) + std::string(plain);
  };
  const std::string ttl = bin("\x00\x68\xe5\xcf\x8b\x01\x00\x00");
  const std::string zl = bin("\x0b\x00\x00\x00\x0a\x00\x00\x00\x00\x00\xff");
  const std::string zl_one = bin("\x0e\x00\x00\x00\x0a\x00\x00\x00\x01\x00\x00\x01"
                                 "a\xff");
  const std::string lp = bin("\x07\x00\x00\x00\x00\x00\xff");
  const std::string lp_one = bin("\x0a\x00\x00\x00\x01\x00\x81"
                                 "a\x02\xff");
  const std::string packed = len(kQuicklistPacked);
  auto seed = [&](const std::string& name, uint8_t type, bool valkey, const std::string& value) {
    write(dir, name, std::string(1, static_cast<char>(type)) + (valkey ? '\x01' : '\x00') + value);
  };
  seed("list-empty", kList, false, len(0));
  seed("list-one", kList, false, len(1) + str("a"));
  seed("zset2-empty", kZset2, false, len(0));
  seed("hash-empty", kHash, true, len(0));
  seed("ziplist-empty", kListZiplist, false, str(zl));
  seed("ziplist-one", kHashZiplist, false, str(zl_one));
  seed("ziplist-lzf", kZsetZiplist, false, lzf(zl));
  seed("listpack-empty", kHashListpack, false, str(lp));
  seed("listpack-one", kSetListpack, false, str(lp_one));
  seed("listpack-lzf", kZsetListpack, true, lzf(lp));
  seed("quicklist-empty-nodes", kListQuicklist, false, len(2) + str(zl) + lzf(zl));
  seed("quicklist-one", kListQuicklist, false, len(2) + str(zl) + str(zl_one));
  seed("quicklist2-empty-nodes", kListQuicklist2, false,
       len(2) + packed + str(lp) + packed + lzf(lp));
  seed("quicklist2-plain", kListQuicklist2, false,
       len(2) + packed + str(lp) + len(kQuicklistPlain) + str("p"));
  seed("hash-ttl-rc-empty", kHashMetadataPreGa, false, len(0));
  seed("valkey-hash2-empty", 22, true, len(0));
  seed("hash-lpex-rc-empty", kHashListpackExPreGa, false, str(lp));
  seed("hash-ttl-empty", kHashMetadata, false, ttl + len(0));
  seed("hash-lpex-empty", kHashListpackEx, false, ttl + lzf(lp));
  seed("intset-empty", kSetIntset, false, str(bin("\x02\x00\x00\x00\x00\x00\x00\x00")));
  seed("zipmap-empty", kHashZipmap, false, str(bin("\x00\xff")));
  seed("stream-empty", kStreamListpacks2, false, len(0) + std::string(7, '\0') + len(0));
  seed("string-empty", kString, false, str(""));
}

// --- Values for rdb_convert_fuzz -------------------------------------------

// Each seed: a type byte, the RDB version converted from and the one
// converted to (a byte each), the value. Every conversion rule, plain and
// LZF-compressed, and values that only change their trailer.
void rdb_convert_seeds(const fs::path& dir) {
  using namespace rrs::rdb;
  namespace lp = rrs::listpack;
  auto len = [](uint64_t n) {
    std::string s;
    append_length(s, n);
    return s;
  };
  auto le = [](uint64_t v, int bytes) {
    std::string s;
    for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
    return s;
  };
  auto str = [&](std::string_view v) { return len(v.size()) + std::string(v); };
  auto lzf = [&](std::string_view plain) {  // literal runs of up to 32 bytes
    std::string c;
    for (size_t i = 0; i < plain.size(); i += 32) {
      const std::string_view run = plain.substr(i, 32);
      c += static_cast<char>(run.size() - 1);
      c += run;
    }
    return "\xc3" + len(c.size()) + len(plain.size()) + c;
  };
  auto finish = [](lp::Writer&& w) {
    auto done = std::move(w).finish();
    if (!done.ok()) std::exit(1);
    return *done;
  };
  auto seed = [&](const std::string& name, uint8_t type, uint16_t from, uint16_t to,
                  const std::string& value) {
    write(dir, name,
          std::string{static_cast<char>(type), static_cast<char>(from), static_cast<char>(to)} +
              value);
  };
  const uint64_t t = 1'900'000'000'000;

  lp::Writer set;
  for (const char* m : {"a", "7", "-300", "70000", "5000000000", "0123", "member"}) set.add(m);
  const std::string set_lp = finish(std::move(set));
  seed("set-listpack-to-10", kSetListpack, 12, 10, str(set_lp));
  seed("set-listpack-lzf-to-10", kSetListpack, 80, 10, lzf(set_lp));

  lp::Writer node;
  for (const char* e : {"1", "0", "f", "v", "0", "0", "1", "0", "2"}) node.add(e);
  std::string stream = len(1) + str(std::string(16, '\x01')) + str(finish(std::move(node)));
  for (uint64_t i = 1; i <= 8; ++i) stream += len(i);
  stream += len(1) + str("group") + len(1) + len(2) + len(3);   // one group
  stream += len(1) + std::string(16, 'a') + le(t, 8) + len(1);  // its PEL
  stream += len(2) + str("alice") + le(t, 8) + le(t + 1, 8) + len(1) + std::string(16, 'a');
  stream += str("bob") + le(t, 8) + le(t, 8) + len(0);
  seed("stream-v3-to-10", kStreamListpacks3, 12, 10, stream);

  lp::Writer ex;
  ex.add("f1"), ex.add("v1"), ex.add_int(static_cast<int64_t>(t));
  ex.add("42"), ex.add(std::string(100, 'x')), ex.add_int(0);
  const std::string ex_lp = finish(std::move(ex));
  seed("hash-lpex-to-80", kHashListpackEx, 12, 80, le(t, 8) + str(ex_lp));
  seed("hash-lpex-lzf-to-11", kHashListpackEx, 12, 11, le(t, 8) + lzf(ex_lp));
  seed("hash-lpex-rc-to-10", kHashListpackExPreGa, 12, 10, str(ex_lp));

  const std::string meta = le(t, 8) + len(3) + len(1) + str("f1") + str("v1") + len(0) + str("f2") +
                           lzf(std::string(40, 'v')) + len(500) + str("f3") + str("");
  seed("hash-meta-to-80", kHashMetadata, 12, 80, meta);
  seed("hash-meta-to-11", kHashMetadata, 12, 11, meta);
  seed("hash-meta-rc-to-80", kHashMetadataPreGa, 12, 80,
       len(2) + len(t) + str("f") + str("v") + len(0) + str("g") + str("w"));

  const std::string hash2 = len(3) + str("f1") + str("v1") + le(t, 8) + str("f2") +
                            lzf(std::string(40, 'v')) + le(~uint64_t{0}, 8) + str("f3") + str("") +
                            le(0, 8);
  seed("valkey-hash2-to-12", kValkeyHash2, 80, 12, hash2);
  seed("valkey-hash2-to-11", kValkeyHash2, 80, 11, hash2);

  seed("string-restamp", kString, 12, 80, str("v"));
  seed("module-refused", kModule2, 12, 11, len(0x1234) + len(kModuleEof));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds CORPUS_DIR (tests/fuzz/corpus)\n");
    return 2;
  }
  fs::path out = argv[1];
  control_seeds(out / "control");
  table_seeds(out / "table_layout");
  change_log_seeds(out / "table_layout");
  rdb_seeds(out / "rdb");
  rdb_value_seeds(out / "rdb_value");
  rdb_convert_seeds(out / "rdb_convert");
  return 0;
}
