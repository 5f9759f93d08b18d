// gen_dataset: loads N keys of ~V random bytes each into a Redis, as fast as the
// server can take them, so benchmarks measure real, incompressible payloads.
//
// Why not DEBUG POPULATE: its values compress to ~43 bytes per DUMP payload,
// which makes every snapshot/transfer figure lie. Random bytes do not compress.
//
// Two data sets (--type):
//   strings   `key:0000000000` .. `key:<N-1>` (10 digits, zero padded), each a
//             string of V bytes;
//   mixed     key i is a string, hash, list, set, zset or stream by i % 6, named
//             `<type>:<10 digits>`; each non-string holds --elements members whose
//             random bytes add up to about V, so both weigh about N x V.
// All bytes come from one xoshiro256** stream seeded from --seed, so the same
// flags give the same data set byte for byte.
//
// --binary-keys K names every K-th key (index % K == 0) `<prefix>:\0\xff\r\n <10 digits>`
// instead: key names with a NUL, a byte above 0x7f and CR LF, which a copy must
// keep byte for byte.
//
// --slots RANGES loads only the keys whose Redis Cluster hash slot
// (proto/hash_slot.h) is in RANGES (`0-5460,10923-16383`), into one master of
// a cluster. Every key is still generated, so the random stream advances as
// without --slots: loading each master with its own ranges gives, together,
// exactly the data set one unfiltered run loads into a standalone server.
//
// Two ways out:
//   default   pipelined commands over one hiredis connection, two batches in flight;
//   --resp    the same commands as RESP on stdout, for `redis-cli --pipe`.
#include <hiredis/hiredis.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"
#include "common/cli/exit_codes.h"
#include "proto/hash_slot.h"
#include "proto/slot_ranges.h"

namespace {

using rrs::Status;

enum class DataType { kStrings, kMixed };

struct Config {
  std::string host = "127.0.0.1";  // --redis HOST:PORT: the Redis to load
  int port = 6379;
  uint64_t keys = 1000000;             // --keys: how many keys
  size_t value_size = 1000;            // --value-size: random bytes per key
  DataType type = DataType::kStrings;  // --type strings|mixed
  size_t elements = 10;                // --elements: members per non-string key (--type mixed)
  int db = 0;                          // --db: logical database to SELECT first
  uint64_t seed = 1;                   // --seed: same seed, same bytes
  size_t batch = 0;           // --batch: keys per pipelined write, two in flight; 0: by size
  bool resp_stdout = false;   // --resp: print RESP for `redis-cli --pipe` instead of connecting
  uint64_t binary_every = 0;  // --binary-keys K: every K-th key gets a binary name; 0: none
  std::optional<rrs::SlotRanges> slots;  // --slots: only keys of these hash slots
};

// Upper bounds that keep one batch buffer reasonable (and sizes in int range).
constexpr size_t kMaxValueSize = size_t{512} * 1024 * 1024;  // Redis' proto-max-bulk-len default
constexpr size_t kMaxElements = 1u << 20;
constexpr size_t kMaxBatchBytes = size_t{256} * 1024 * 1024;
// The default batch: 256 keys, fewer if that would pass 8 MiB. 1000 x 1 MiB
// loaded in 1.0-2.4 s with 4-32 MiB per write, 3.5 s with 256 MiB; for 16-byte
// values 256 to 65536 keys per write made no difference (Redis is the bottleneck).
constexpr size_t kDefaultBatchKeys = 256;
constexpr size_t kDefaultBatchBytes = size_t{8} * 1024 * 1024;
// Hash fields and set/zset members get at least this many random bytes, so they
// stay distinct (else tiny --value-size / --elements shares would collide).
constexpr size_t kMinMember = 8;

// splitmix64 to seed, xoshiro256** for the bytes: fast, and good enough that the
// values are incompressible. See https://prng.di.unimi.it/.
class Xoshiro256ss {
 public:
  explicit Xoshiro256ss(uint64_t seed) {
    for (auto& s : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      s = z ^ (z >> 31);
    }
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  void fill(char* out, size_t n) {
    for (; n >= 8; n -= 8, out += 8) {
      const uint64_t v = next();
      std::memcpy(out, &v, 8);
    }
    if (n > 0) {
      const uint64_t v = next();
      std::memcpy(out, &v, n);
    }
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// Appends, in RESP, the commands that create key `index` to one buffer, and each
// command's name to `names` so a refused one can be named.
class Encoder {
 public:
  explicit Encoder(const Config& cfg)
      : type_(cfg.type),
        value_size_(cfg.value_size),
        elements_(cfg.elements),
        binary_every_(cfg.binary_every),
        rng_(cfg.seed) {
    if (cfg.slots) {
      wanted_.assign(rrs::kHashSlots, false);
      for (const rrs::SlotRange& r : cfg.slots->ranges())
        for (uint32_t s = r.first; s <= r.last; ++s) wanted_[s] = true;
    }
  }

  // Appends key `index`'s commands unless --slots leaves its hash slot out;
  // either way its random bytes are drawn. Returns whether it was appended.
  bool append(std::string& out, std::vector<const char*>& names, uint64_t index) {
    const size_t at = out.size(), named = names.size();
    const uint64_t payload = payload_bytes_;
    append_all(out, names, index);
    if (wanted_.empty() || wanted_[rrs::hash_slot(last_key_)]) {
      ++keys_;
      return true;
    }
    out.resize(at);
    names.resize(named);
    payload_bytes_ = payload;
    return false;
  }

  // Random bytes written so far: values, fields and members (not scores or IDs).
  uint64_t payload_bytes() const { return payload_bytes_; }
  // Keys appended so far (with --slots, only those in its slots).
  uint64_t keys() const { return keys_; }

 private:
  void append_all(std::string& out, std::vector<const char*>& names, uint64_t index) {
    if (type_ == DataType::kStrings) return append_set(out, names, "key", index);
    switch (index % 6) {
      case 0: return append_set(out, names, "string", index);
      case 1: return append_hash(out, names, index);
      case 2: return append_members(out, names, "RPUSH", "list", 0, index);
      case 3: return append_members(out, names, "SADD", "set", kMinMember, index);
      case 4: return append_zset(out, names, index);
      default: return append_stream(out, names, index);
    }
  }

  void append_set(std::string& out, std::vector<const char*>& names, const char* prefix,
                  uint64_t index) {
    head(out, 3, "SET", names);
    bulk(out, key(prefix, index));
    random_bulk(out, value_size_);
  }

  void append_hash(std::string& out, std::vector<const char*>& names, uint64_t index) {
    head(out, 2 + 2 * elements_, "HSET", names);
    bulk(out, key("hash", index));
    for (size_t j = 0; j < elements_; ++j) {
      const size_t s = share(j);
      random_bulk(out, std::max(kMinMember, s / 2));
      random_bulk(out, s - s / 2);
    }
  }

  // RPUSH/SADD: the key, then one member of `min_size` bytes or more per element.
  void append_members(std::string& out, std::vector<const char*>& names, const char* command,
                      const char* prefix, size_t min_size, uint64_t index) {
    head(out, 2 + elements_, command, names);
    bulk(out, key(prefix, index));
    for (size_t j = 0; j < elements_; ++j) random_bulk(out, std::max(min_size, share(j)));
  }

  void append_zset(std::string& out, std::vector<const char*>& names, uint64_t index) {
    head(out, 2 + 2 * elements_, "ZADD", names);
    bulk(out, key("zset", index));
    for (size_t j = 0; j < elements_; ++j) {
      char score[32];  // uniform in [0, 1); %.17g round-trips the double exactly
      const double d = static_cast<double>(rng_.next() >> 11) * 0x1.0p-53;
      bulk(out, {score, static_cast<size_t>(std::snprintf(score, sizeof score, "%.17g", d))});
      random_bulk(out, std::max(kMinMember, share(j)));
    }
  }

  // XADD takes one entry per call: E commands with explicit IDs 1-1 .. 1-E.
  void append_stream(std::string& out, std::vector<const char*>& names, uint64_t index) {
    const std::string k = key("stream", index);
    for (size_t j = 0; j < elements_; ++j) {
      head(out, 5, "XADD", names);
      bulk(out, k);
      bulk(out, "1-" + std::to_string(j + 1));
      const size_t s = share(j);
      random_bulk(out, s / 2);
      random_bulk(out, s - s / 2);
    }
  }

  // Element j's part of --value-size; the remainder goes to the first elements.
  size_t share(size_t j) const { return value_size_ / elements_ + (j < value_size_ % elements_); }

  // The key's name, also kept as last_key_ for the --slots filter.
  const std::string& key(const char* prefix, uint64_t index) {
    char k[48];
    const bool binary = binary_every_ != 0 && index % binary_every_ == 0;
    const int n = std::snprintf(k, sizeof k, binary ? "%s:0\xff\r\n%010llu" : "%s:%010llu", prefix,
                                static_cast<unsigned long long>(index));
    if (binary) k[std::strlen(prefix) + 1] = '\0';  // the '0' after the colon becomes a NUL
    last_key_.assign(k, static_cast<size_t>(n));
    return last_key_;
  }

  static void length(std::string& out, char kind, size_t n) {
    char buf[24];
    buf[0] = kind;
    out.append(buf, std::to_chars(buf + 1, buf + sizeof buf, n).ptr);
    out += "\r\n";
  }

  static void head(std::string& out, size_t args, const char* command,
                   std::vector<const char*>& names) {
    length(out, '*', args);
    bulk(out, command);
    names.push_back(command);
  }

  static void bulk(std::string& out, std::string_view s) {
    length(out, '$', s.size());
    out.append(s);
    out += "\r\n";
  }

  void random_bulk(std::string& out, size_t n) {
    length(out, '$', n);
    const size_t at = out.size();
    out.resize(at + n + 2);
    rng_.fill(out.data() + at, n);
    std::memcpy(out.data() + at + n, "\r\n", 2);
    payload_bytes_ += n;
  }

  DataType type_;
  size_t value_size_;
  size_t elements_;
  uint64_t binary_every_;
  Xoshiro256ss rng_;
  uint64_t payload_bytes_ = 0;
  uint64_t keys_ = 0;
  std::string last_key_;
  std::vector<bool> wanted_;  // per hash slot, with --slots; empty: every key
};

// Like write(2) but loops over short writes and EINTR.
Status write_all(int fd, const char* p, size_t n, const char* step) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::from_errno(step).as(rrs::ErrorKind::kUnavailable);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return {};
}

std::string resp_command(std::initializer_list<std::string_view> args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (auto a : args) {
    out += "$" + std::to_string(a.size()) + "\r\n";
    out.append(a);
    out += "\r\n";
  }
  return out;
}

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextDeleter>;

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// Reads one reply per command in `names`; fails on the first error reply.
Status expect_replies(redisContext* c, const std::vector<const char*>& names) {
  for (const char* name : names) {
    void* raw = nullptr;
    if (redisGetReply(c, &raw) != REDIS_OK)
      return Status::error("read reply", c->errstr).as(rrs::ErrorKind::kUnavailable);
    Reply r(static_cast<redisReply*>(raw));
    if (r->type == REDIS_REPLY_ERROR) return Status::error(name, std::string(r->str, r->len));
  }
  return {};
}

// The pipeline: write batch k with plain write(2) on hiredis' socket (hiredis'
// own output buffer memmoves after every partial write), then read batch k-1's
// replies with hiredis. Replies are a few bytes each (+OK, :10, an XADD ID), and
// what the socket cannot take Redis holds in the client's output buffer (no limit
// for normal clients) while it keeps reading: no deadlock.
Status load_via_hiredis(const Config& cfg, Encoder& enc) {
  const timeval connect_timeout{5, 0};
  Context c(redisConnectWithTimeout(cfg.host.c_str(), cfg.port, connect_timeout));
  const std::string where = "connect to " + cfg.host + ":" + std::to_string(cfg.port);
  if (!c) return Status::error(where, "out of memory");
  if (c->err) return Status::error(where, c->errstr).as(rrs::ErrorKind::kUnavailable);
  const timeval io_timeout{120, 0};  // a stuck server fails the run instead of hanging it
  if (redisSetTimeout(c.get(), io_timeout) != REDIS_OK) return Status::error(where, c->errstr);

  if (cfg.db != 0) {
    Reply r(static_cast<redisReply*>(redisCommand(c.get(), "SELECT %d", cfg.db)));
    if (!r) return Status::error("SELECT", c->errstr).as(rrs::ErrorKind::kUnavailable);
    if (r->type == REDIS_REPLY_ERROR) return Status::error("SELECT", std::string(r->str, r->len));
  }

  std::string buf;
  std::vector<const char*> sent, in_flight;  // this batch's commands; the last one's, unread
  for (uint64_t next = 0; next < cfg.keys;) {
    const uint64_t n = std::min<uint64_t>(cfg.batch, cfg.keys - next);
    buf.clear();
    sent.clear();
    for (uint64_t i = 0; i < n; ++i) enc.append(buf, sent, next + i);
    RRS_RETURN_IF_ERROR(write_all(c->fd, buf.data(), buf.size(), "write to redis"));
    RRS_RETURN_IF_ERROR(expect_replies(c.get(), in_flight));
    std::swap(sent, in_flight);
    next += n;
  }
  return expect_replies(c.get(), in_flight);
}

Status load_via_stdout(const Config& cfg, Encoder& enc) {
  std::string buf;
  if (cfg.db != 0) buf = resp_command({"SELECT", std::to_string(cfg.db)});
  std::vector<const char*> names;  // only needed to name refused commands; no replies here
  for (uint64_t next = 0; next < cfg.keys;) {
    const uint64_t n = std::min<uint64_t>(cfg.batch, cfg.keys - next);
    for (uint64_t i = 0; i < n; ++i) enc.append(buf, names, next + i);
    RRS_RETURN_IF_ERROR(write_all(STDOUT_FILENO, buf.data(), buf.size(), "write to stdout"));
    buf.clear();
    names.clear();
    next += n;
  }
  return {};
}

void usage(FILE* out) {
  std::fprintf(out,
               "usage: gen_dataset --redis HOST:PORT [--keys N] [--value-size BYTES]\n"
               "                   [--type strings|mixed] [--elements E] [--db N] [--seed S]\n"
               "                   [--batch N] [--binary-keys K] [--slots RANGES] [--resp]\n"
               "  --redis HOST:PORT  Redis to load (default 127.0.0.1:6379)\n"
               "  --keys N           number of keys (default 1000000)\n"
               "  --value-size B     random bytes per key (default 1000)\n"
               "  --type strings     keys key:0000000000 .., strings of B bytes (default)\n"
               "  --type mixed       key i is a string, hash, list, set, zset or stream by\n"
               "                     i %% 6, named e.g. hash:0000000001; a non-string holds\n"
               "                     E elements of ~B/E random bytes each (hash and stream\n"
               "                     entries split theirs into field and value; hash fields\n"
               "                     and set/zset members get >= %zu bytes so they stay\n"
               "                     distinct); zset scores are random in [0,1); stream IDs\n"
               "                     are 1-1 .. 1-E. Load it into an empty database\n"
               "  --elements E       elements per non-string key, --type mixed only\n"
               "                     (default 10). Redis 7 keeps a zset a listpack up to 128\n"
               "                     entries and a hash up to 512, each <= 64 bytes:\n"
               "                     --elements 10 --value-size 640 gives listpacks;\n"
               "                     --elements 200 a skiplist zset but a listpack hash;\n"
               "                     --elements 600, or --elements 200 --value-size 30000\n"
               "                     (entries over 64 bytes), hashtable and skiplist. Sets of\n"
               "                     random bytes are hashtables and lists quicklists (7.2+:\n"
               "                     listpacks up to 128 members of <= 64 bytes / 8 KiB)\n"
               "  --db N             database to SELECT first (default 0)\n"
               "  --seed S           PRNG seed; same flags, same data (default 1)\n"
               "  --batch N          keys per pipelined write, two in flight (default %zu,\n"
               "                     fewer if a write would pass %zu MiB)\n"
               "  --binary-keys K    name every K-th key (index %% K == 0) with binary bytes:\n"
               "                     <prefix>:\\0\\xff\\r\\n<10 digits> (default 0: none)\n"
               "  --slots RANGES     load only keys whose cluster hash slot is in RANGES,\n"
               "                     e.g. 0-5460,10923-16383 (every key is still generated:\n"
               "                     one run per master, each with its slots, loads the\n"
               "                     same keys and bytes as one run without --slots)\n"
               "  --resp             write RESP to stdout for `redis-cli --pipe` instead\n",
               kMinMember, kDefaultBatchKeys, kDefaultBatchBytes >> 20);
}

template <typename T>
bool parse_number(std::string_view s, T& out) {
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end;
}

// Returns an empty string on success, else what was wrong.
std::string parse_flags(int argc, char** argv, Config& cfg) {
  bool elements_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--resp") {
      cfg.resp_stdout = true;
      continue;
    }
    if (flag == "-h" || flag == "--help") {
      usage(stdout);
      std::exit(rrs::exit_code::kOk);
    }
    if (i + 1 >= argc) return std::string(flag) + " needs a value";
    const std::string_view v = argv[++i];
    if (flag == "--redis") {
      const size_t colon = v.rfind(':');
      if (colon == std::string_view::npos || !parse_number(v.substr(colon + 1), cfg.port) ||
          cfg.port <= 0 || cfg.port > 65535)
        return "--redis expects HOST:PORT, got '" + std::string(v) + "'";
      std::string_view host = v.substr(0, colon);
      if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);  // [::1]:6379
      cfg.host = std::string(host);
    } else if (flag == "--keys") {
      if (!parse_number(v, cfg.keys)) return "--keys expects a count, got '" + std::string(v) + "'";
    } else if (flag == "--value-size") {
      if (!parse_number(v, cfg.value_size) || cfg.value_size > kMaxValueSize)
        return "--value-size expects 0.." + std::to_string(kMaxValueSize) + ", got '" +
               std::string(v) + "'";
    } else if (flag == "--type") {
      if (v == "strings") {
        cfg.type = DataType::kStrings;
      } else if (v == "mixed") {
        cfg.type = DataType::kMixed;
      } else {
        return "--type expects strings or mixed, got '" + std::string(v) + "'";
      }
    } else if (flag == "--elements") {
      if (!parse_number(v, cfg.elements) || cfg.elements == 0 || cfg.elements > kMaxElements)
        return "--elements expects 1.." + std::to_string(kMaxElements) + ", got '" +
               std::string(v) + "'";
      elements_given = true;
    } else if (flag == "--db") {
      if (!parse_number(v, cfg.db) || cfg.db < 0)
        return "--db expects a database number >= 0, got '" + std::string(v) + "'";
    } else if (flag == "--seed") {
      if (!parse_number(v, cfg.seed)) return "--seed expects an unsigned integer";
    } else if (flag == "--binary-keys") {
      if (!parse_number(v, cfg.binary_every))
        return "--binary-keys expects a count, got '" + std::string(v) + "'";
    } else if (flag == "--slots") {
      auto slots = rrs::SlotRanges::parse(v);
      if (!slots.ok() || slots->empty())
        return "--slots expects hash slot ranges like 0-5460,10923-16383, got '" + std::string(v) +
               "'";
      cfg.slots = std::move(*slots);
    } else if (flag == "--batch") {
      if (!parse_number(v, cfg.batch) || cfg.batch == 0)
        return "--batch expects a count >= 1, got '" + std::string(v) + "'";
    } else {
      return "unknown flag " + std::string(flag);
    }
  }
  if (elements_given && cfg.type != DataType::kMixed)
    return "--elements only applies to --type mixed; add --type mixed or drop --elements";
  // A key's RESP size, about: its payload and key, plus framing per element (an
  // XADD with its header is ~70 bytes) and the minimum member size.
  size_t per_key = cfg.value_size + 64;
  if (cfg.type == DataType::kMixed) per_key += cfg.elements * (80 + kMinMember);
  if (cfg.batch == 0)
    cfg.batch = std::clamp<size_t>(kDefaultBatchBytes / per_key, 1, kDefaultBatchKeys);
  // Cap a batch's bytes so a huge --value-size does not ask for gigabytes at once.
  cfg.batch = std::max<size_t>(1, std::min(cfg.batch, kMaxBatchBytes / per_key));
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  if (std::string err = parse_flags(argc, argv, cfg); !err.empty()) {
    std::fprintf(stderr, "gen_dataset: %s\n", err.c_str());
    usage(stderr);
    return rrs::exit_code::kUsage;
  }

  Encoder enc(cfg);
  const auto t0 = std::chrono::steady_clock::now();  // CLOCK_MONOTONIC
  const Status st = cfg.resp_stdout ? load_via_stdout(cfg, enc) : load_via_hiredis(cfg, enc);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                             .count();
  if (!st.ok()) {
    std::fprintf(stderr, "gen_dataset: %s\n", st.message().c_str());
    // Unreachable or timed out: 3; Redis refused a command (OOM, bad --db): 1.
    return st.kind() == rrs::ErrorKind::kUnavailable ? rrs::exit_code::kUnavailable : 1;
  }
  // In --resp mode stdout carries the protocol, so the summary goes to stderr.
  FILE* out = cfg.resp_stdout ? stderr : stdout;
  const double payload = static_cast<double>(enc.payload_bytes());
  const std::string type = cfg.type == DataType::kStrings
                               ? "strings"
                               : "mixed elements=" + std::to_string(cfg.elements);
  std::fprintf(out,
               "loaded keys=%llu value_size=%zu type=%s db=%d seed=%llu payload_bytes=%.0f "
               "seconds=%.3f keys_per_s=%.0f MB_per_s=%.1f generated=%llu slots=%s "
               "binary_keys=%llu\n",
               static_cast<unsigned long long>(enc.keys()), cfg.value_size, type.c_str(), cfg.db,
               static_cast<unsigned long long>(cfg.seed), payload, seconds,
               seconds > 0 ? static_cast<double>(enc.keys()) / seconds : 0.0,
               seconds > 0 ? payload / seconds / 1e6 : 0.0,
               static_cast<unsigned long long>(cfg.keys),
               cfg.slots ? cfg.slots->to_string().c_str() : "all",
               static_cast<unsigned long long>(cfg.binary_every));
  return rrs::exit_code::kOk;
}
