// A blocking hiredis connection for tests: binary-safe argv commands, replies
// owned by RAII handles, and the few questions tests ask of a whole dataset
// (DEBUG DIGEST, INFO keyspace).
#pragma once

#include <hiredis.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "common/base/status.h"

namespace rrs::test {

struct ReplyFree {
  void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

// One-line rendering of a reply ("(error) NOAUTH ...", "(integer) 3", ...) for
// failure messages. Null renders as "(no reply)".
std::string to_string(const redisReply* r);
inline std::string to_string(const Reply& r) { return to_string(r.get()); }

// One DB's line of INFO keyspace.
struct DbCounts {
  uint64_t keys = 0;
  uint64_t expires = 0;
  bool operator==(const DbCounts&) const = default;
};
// DB index -> counts, for the non-empty DBs only (as INFO reports them).
using Keyspace = std::map<int, DbCounts>;
std::ostream& operator<<(std::ostream& os, const DbCounts& c);
std::ostream& operator<<(std::ostream& os, const Keyspace& k);
uint64_t total_keys(const Keyspace& k);

class RedisClient {
 public:
  // Connects and, if `password` is not empty, AUTHs ("user password" or
  // "password", as the sidecar's auth variables take them).
  static Result<RedisClient> connect(uint16_t port, const std::string& password = "",
                                     std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // Sends one command; null if the connection failed (see last_error()).
  // Error replies are returned as replies.
  Reply command(const std::vector<std::string>& argv);

  // Like command(), but a broken connection or an error reply also records a
  // gtest failure naming the command: for setup steps that must work.
  Reply run(const std::vector<std::string>& argv);

  // SELECT db (checked with run()).
  void select(int db);
  // DEBUG DIGEST: "0000..." for an empty dataset. Empty on failure.
  std::string digest();
  Keyspace keyspace();
  // Sum of DBSIZE over every DB.
  uint64_t total_keys() { return rrs::test::total_keys(keyspace()); }
  // What DEBUG DIGEST leaves out: each key's exact expiry (PEXPIRETIME; the
  // digest only notes that one exists), each stream's consumer groups,
  // pending entries and consumers (XINFO STREAM FULL), keyed "db<N>:<key>";
  // and the function libraries (functions()), keyed "function library <name>".
  // Leaves DB 0 selected.
  std::map<std::string, std::string> state_outside_digest();
  // FUNCTION LIST WITHCODE as library name -> engine, functions (sorted, as
  // Redis lists them in hash order) and code; empty before Redis 7.0.
  std::map<std::string, std::string> functions();

  // Bounds every later command (DEBUG DIGEST of a big dataset on a loaded
  // machine can take seconds).
  bool set_timeout(std::chrono::milliseconds timeout);

  std::string last_error() const { return last_error_; }

 private:
  struct ContextFree {
    void operator()(redisContext* c) const noexcept { redisFree(c); }
  };
  explicit RedisClient(redisContext* c) : ctx_(c) {}

  std::unique_ptr<redisContext, ContextFree> ctx_;
  std::string last_error_;
};

}  // namespace rrs::test
