// The tests' Redis client: a thin wrapper over the product's rrs::RedisClient
// (common/redis/redis_client.h) that adds only what tests want: error replies
// returned as replies, run() recording a gtest failure, and the few questions
// tests ask of a whole dataset (DEBUG DIGEST, INFO keyspace, what the digest
// leaves out). Code under test that takes an rrs::RedisClient gets one from
// product() or release().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/redis/redis_client.h"

namespace rrs::test {

// Replies as the product's client returns them (REDIS_REPLY_* types and
// redisReply come with it).
using Reply = ReplyPtr;

// One-line rendering of a reply ("(error) NOAUTH ...", "(integer) 3", ...) for
// failure messages. Null renders as "(no reply)".
std::string to_string(const redisReply* r);
inline std::string to_string(const Reply& r) { return to_string(r.get()); }
// The bytes of a string, status or error reply; "" for any other (nil, an
// integer, an array, no reply).
std::string text(const Reply& r);

// `argv` as a RESP array of bulk strings: what a client sends, and what a
// master's replication stream carries.
std::string resp_command(const std::vector<std::string>& argv);

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
  // Connects to 127.0.0.1:`port` and, if `password` is not empty, AUTHs
  // ("user password" or "password", as the sidecar's auth variables take
  // them), then PINGs: a server that wants a password the client lacks is a
  // failed connect, naming NOAUTH. `timeout` bounds the connect and every
  // later command. With `tls`, the server's tls-port is meant.
  static Result<RedisClient> connect(uint16_t port, const std::string& password = "",
                                     std::chrono::milliseconds timeout = std::chrono::seconds(30),
                                     std::shared_ptr<const TlsContext> tls = nullptr);

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
  // One field of an INFO section ("" if absent or on failure).
  std::string info_field(const std::string& section, const std::string& field);
  // What DEBUG DIGEST leaves out: each key's exact expiry (PEXPIRETIME; the
  // digest only notes that one exists), each stream's consumer groups,
  // pending entries and consumers (XINFO STREAM FULL), keyed "db<N>:<key>";
  // and the function libraries (functions()), keyed "function library <name>".
  // Leaves DB 0 selected.
  std::map<std::string, std::string> state_outside_digest();
  // The whole data set as values, read with each type's own commands, so it
  // compares across server versions and engines (where DUMP payloads and
  // DEBUG DIGEST may differ): "db<N>:<key>" -> type and value (sets and hash
  // fields sorted), exact expiry (PEXPIRETIME), each hash field's expiry
  // where the server has field TTLs (HPEXPIRETIME), each stream's entries,
  // groups, pending entries and consumers (XINFO STREAM FULL without the
  // consumers' active-time, which older servers do not keep), and the
  // function libraries. Leaves DB 0 selected.
  std::map<std::string, std::string> logical_state();

  // FUNCTION LIST WITHCODE as library name -> engine, functions (sorted, as
  // Redis lists them in hash order) and code; empty before Redis 7.0.
  std::map<std::string, std::string> functions();

  // Bounds every later command (DEBUG DIGEST of a big dataset on a loaded
  // machine can take seconds).
  void set_timeout(std::chrono::milliseconds timeout);

  std::string last_error() const { return last_error_; }

  // The product's client underneath, for code under test.
  rrs::RedisClient& product() { return client_; }
  rrs::RedisClient release() && { return std::move(client_); }

 private:
  explicit RedisClient(rrs::RedisClient c) : client_(std::move(c)) {}
  // Every key of every non-empty DB, with its name in the state maps
  // ("db<N>:<printable key>"), its DB selected. Leaves DB 0 selected.
  void for_each_key(
      const std::function<void(const std::string& key, const std::string& name)>& visit);
  // A hash's fields and values (sorted); its fields' expiries go into `state`.
  std::string hash_state(const std::string& key, const std::string& name,
                         std::map<std::string, std::string>& state);

  rrs::RedisClient client_;
  std::string last_error_;
};

}  // namespace rrs::test
