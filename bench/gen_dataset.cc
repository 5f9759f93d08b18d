// gen_dataset: loads N keys of V random bytes each into a Redis, as fast as the
// server can take them, so benchmarks measure real, incompressible payloads.
//
// Why not DEBUG POPULATE: its values compress to ~43 bytes per DUMP payload,
// which makes every snapshot/transfer figure lie. Random bytes do not compress.
//
// Keys are `key:0000000000` .. `key:<N-1>` (10 digits, zero padded); values are
// one xoshiro256** stream seeded from --seed, so the same flags give the same
// data set byte for byte.
//
// Two ways out:
//   default   pipelined SETs over one hiredis connection, two batches in flight;
//   --resp    the same commands as RESP on stdout, for `redis-cli --pipe`.
#include <hiredis/hiredis.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/exit_codes.h"
#include "common/status.h"

namespace {

using rrs::Status;

struct Config {
  std::string host = "127.0.0.1";  // --redis HOST:PORT: the Redis to load
  int port = 6379;
  uint64_t keys = 1000000;     // --keys: how many keys
  size_t value_size = 1000;    // --value-size: bytes per value
  int db = 0;                  // --db: logical database to SELECT first
  uint64_t seed = 1;           // --seed: same seed, same bytes
  size_t batch = 256;          // --batch: SETs per pipelined write; two batches in flight
  bool resp_stdout = false;    // --resp: print RESP for `redis-cli --pipe` instead of connecting
};

// Upper bounds that keep one batch buffer reasonable (and sizes in int range).
constexpr size_t kMaxValueSize = 512u * 1024 * 1024;  // Redis' proto-max-bulk-len default
constexpr size_t kMaxBatchBytes = 256u * 1024 * 1024;

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

// Appends `SET key:NNNNNNNNNN <value>` commands, in RESP, to one buffer.
class SetEncoder {
 public:
  SetEncoder(size_t value_size, uint64_t seed) : value_size_(value_size), rng_(seed) {}

  void append(std::string& out, uint64_t index) {
    char key[32];
    const int key_len = std::snprintf(key, sizeof key, "key:%010llu",
                                      static_cast<unsigned long long>(index));
    char head[96];
    const int head_len = std::snprintf(head, sizeof head, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%zu\r\n",
                                       key_len, key, value_size_);
    out.append(head, static_cast<size_t>(head_len));
    const size_t at = out.size();
    out.resize(at + value_size_ + 2);
    rng_.fill(out.data() + at, value_size_);
    std::memcpy(out.data() + at + value_size_, "\r\n", 2);
  }

 private:
  size_t value_size_;
  Xoshiro256ss rng_;
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

// Reads `n` replies and requires each to be +OK.
Status expect_ok_replies(redisContext* c, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    void* raw = nullptr;
    if (redisGetReply(c, &raw) != REDIS_OK)
      return Status::error("read reply", c->errstr).as(rrs::ErrorKind::kUnavailable);
    Reply r(static_cast<redisReply*>(raw));
    if (r->type != REDIS_REPLY_STATUS) {
      const std::string what = r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len)
                                                            : "unexpected reply type";
      return Status::error("SET", what);
    }
  }
  return {};
}

// The pipeline: write batch k with plain write(2) on hiredis' socket (hiredis'
// own output buffer memmoves after every partial write), then read batch k-1's
// replies with hiredis. Replies are 5 bytes each, so they never fill the socket
// buffer while we are still writing: no deadlock.
Status load_via_hiredis(const Config& cfg) {
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

  SetEncoder enc(cfg.value_size, cfg.seed);
  std::string buf;
  size_t in_flight = 0;  // commands written whose replies are unread
  for (uint64_t next = 0; next < cfg.keys;) {
    const uint64_t n = std::min<uint64_t>(cfg.batch, cfg.keys - next);
    buf.clear();
    for (uint64_t i = 0; i < n; ++i) enc.append(buf, next + i);
    RRS_RETURN_IF_ERROR(write_all(c->fd, buf.data(), buf.size(), "write to redis"));
    RRS_RETURN_IF_ERROR(expect_ok_replies(c.get(), in_flight));
    in_flight = static_cast<size_t>(n);
    next += n;
  }
  return expect_ok_replies(c.get(), in_flight);
}

Status load_via_stdout(const Config& cfg) {
  std::string buf;
  if (cfg.db != 0) buf = resp_command({"SELECT", std::to_string(cfg.db)});
  SetEncoder enc(cfg.value_size, cfg.seed);
  for (uint64_t next = 0; next < cfg.keys;) {
    const uint64_t n = std::min<uint64_t>(cfg.batch, cfg.keys - next);
    for (uint64_t i = 0; i < n; ++i) enc.append(buf, next + i);
    RRS_RETURN_IF_ERROR(write_all(STDOUT_FILENO, buf.data(), buf.size(), "write to stdout"));
    buf.clear();
    next += n;
  }
  return {};
}

void usage(FILE* out) {
  std::fprintf(out,
               "usage: gen_dataset --redis HOST:PORT [--keys N] [--value-size BYTES] [--db N]\n"
               "                   [--seed S] [--batch N] [--resp]\n"
               "  --redis HOST:PORT  Redis to load (default 127.0.0.1:6379)\n"
               "  --keys N           number of keys, key:0000000000 .. (default 1000000)\n"
               "  --value-size B     random bytes per value (default 1000)\n"
               "  --db N             database to SELECT first (default 0)\n"
               "  --seed S           PRNG seed; same flags, same data (default 1)\n"
               "  --batch N          SETs per pipelined write, two in flight (default 256)\n"
               "  --resp             write RESP to stdout for `redis-cli --pipe` instead\n");
}

template <typename T>
bool parse_number(std::string_view s, T& out) {
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end;
}

// Returns an empty string on success, else what was wrong.
std::string parse_flags(int argc, char** argv, Config& cfg) {
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
    } else if (flag == "--db") {
      if (!parse_number(v, cfg.db) || cfg.db < 0)
        return "--db expects a database number >= 0, got '" + std::string(v) + "'";
    } else if (flag == "--seed") {
      if (!parse_number(v, cfg.seed)) return "--seed expects an unsigned integer";
    } else if (flag == "--batch") {
      if (!parse_number(v, cfg.batch) || cfg.batch == 0)
        return "--batch expects a count >= 1, got '" + std::string(v) + "'";
    } else {
      return "unknown flag " + std::string(flag);
    }
  }
  // Cap a batch's bytes so a huge --value-size does not ask for gigabytes at once.
  const size_t per_command = cfg.value_size + 64;
  cfg.batch = std::max<size_t>(1, std::min(cfg.batch, kMaxBatchBytes / per_command));
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

  const auto t0 = std::chrono::steady_clock::now();  // CLOCK_MONOTONIC
  const Status st = cfg.resp_stdout ? load_via_stdout(cfg) : load_via_hiredis(cfg);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    std::fprintf(stderr, "gen_dataset: %s\n", st.message().c_str());
    // Unreachable or timed out: 3; Redis refused a command (OOM, bad --db): 1.
    return st.kind() == rrs::ErrorKind::kUnavailable ? rrs::exit_code::kUnavailable : 1;
  }
  // In --resp mode stdout carries the protocol, so the summary goes to stderr.
  FILE* out = cfg.resp_stdout ? stderr : stdout;
  const double payload = static_cast<double>(cfg.keys) * static_cast<double>(cfg.value_size);
  std::fprintf(out,
               "loaded keys=%llu value_size=%zu db=%d seed=%llu payload_bytes=%.0f seconds=%.3f "
               "keys_per_s=%.0f MB_per_s=%.1f\n",
               static_cast<unsigned long long>(cfg.keys), cfg.value_size, cfg.db,
               static_cast<unsigned long long>(cfg.seed), payload, seconds,
               seconds > 0 ? static_cast<double>(cfg.keys) / seconds : 0.0,
               seconds > 0 ? payload / seconds / 1e6 : 0.0);
  return rrs::exit_code::kOk;
}
