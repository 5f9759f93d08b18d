// Loads validated records into the target Redis with pipelined
// RESTORE key ttl payload REPLACE ABSTTL (strings: MSET, or SET with PXAT;
// see restore_command.h), switching DBs with SELECT, after the table's
// functions (FUNCTION RESTORE) and Lua scripts (SCRIPT LOAD).
//
// After the handshake the loader drives the socket itself: commands are
// formatted into one output buffer and written as the socket takes them,
// while replies are parsed as they arrive (hiredis's reader, which does no
// I/O). Redis never waits for us between batches, and we never wait for a
// reply before sending the next command.
#pragma once

#include <hiredis/read.h>

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "client/client_config.h"
#include "client/fetch/record_batch.h"
#include "client/fetch/table_fetcher.h"
#include "client/restore/restore_command.h"
#include "client/restore/ttl_guard.h"
#include "common/redis/redis_client.h"

namespace rrs {

struct LoadStats {
  uint64_t keys = 0;                             // records the target acknowledged with +OK
  uint64_t bytes = 0;                            // key + payload bytes of those
  uint64_t skipped_expired = 0;                  // already expired when we got to them
  uint64_t failed = 0;                           // records and SCRIPT LOADs the target refused
  uint32_t function_libraries = 0;               // restored with FUNCTION RESTORE
  uint64_t scripts = 0;                          // Lua scripts loaded with SCRIPT LOAD
  std::map<uint32_t, uint64_t> per_db;           // keys loaded, by table DB
  std::map<uint32_t, uint64_t> per_db_volatile;  // of those, keys with a TTL
  std::vector<std::string> errors;  // the first few failures, in full (each names its command)
};

class RestoreLoader {
 public:
  static Result<RestoreLoader> connect(const Endpoint& target, const RedisCredentials& creds,
                                       std::chrono::milliseconds io_timeout);
  RestoreLoader(RestoreLoader&&) noexcept = default;
  ~RestoreLoader();

  // Checks the target can take the table (empty unless --merge, new enough
  // for the payloads' RDB version and for Redis Functions if the table has
  // any), flushing it first with --flush, then applies the table's functions
  // and Lua scripts. Functions go in with FUNCTION RESTORE: APPEND by default
  // (a library the target already has is refused), FLUSH with --flush
  // (FLUSHALL leaves functions alone), REPLACE with --merge.
  // A refusal (the target cannot take the table as it is) has kind kRefused.
  // `staged` (--atomic): no FLUSHALL and no functions here; the Staging
  // swaps the keys in and applies the functions in one transaction.
  Status prepare(const TableInfo& info, TargetPolicy policy, bool staged = false);
  // --atomic: RESTORE each table DB's keys into its staging DB instead.
  void stage_into(std::map<uint32_t, uint32_t> dbs) { staging_ = std::move(dbs); }
  // --follow: hold records expiring soon with a guard TTL (see TtlGuard).
  void guard_ttls();
  // The keys held so far (the guard is empty when guard_ttls() was not called).
  TtlGuard take_ttl_guard() { return std::move(guard_); }

  // Queues a batch's RESTOREs (copied: the batch may be dropped on return),
  // writing and reading replies as the target takes them.
  Status load(const RecordBatch& batch);
  // Waits for every outstanding reply.
  Status finish();
  // After load() or finish() failed on an error reply: reads the replies to
  // the commands already written in full (without writing more, for at most
  // `timeout`), so stats() counts what the target applied.
  void settle(std::chrono::milliseconds timeout);
  // RESTOREs written to the target in full whose replies have not been read:
  // the target may or may not have applied them.
  uint64_t unacknowledged() const;
  // Whether the target was changed at all: flushed, functions or scripts
  // loaded, or any RESTORE written.
  bool touched() const {
    return flushed_ || stats_.function_libraries > 0 || stats_.scripts > 0 || written_ > 0;
  }
  bool flushed() const { return flushed_; }
  // CLIENT ID of the loading connection (0 if unknown), so a failed --atomic
  // load can kill it before flushing what it staged.
  int64_t client_id() const { return client_id_; }

  const LoadStats& stats() const { return stats_; }
  const ServerVersion& target() const { return target_; }

 private:
  // A command written or queued whose reply has not been read.
  struct Pending {
    const char* command;  // "SELECT", "RESTORE", "SET" or "MSET"
    uint32_t db;          // the table's DB
    uint64_t index;       // the (first) record's
    uint64_t bytes;       // key + payload bytes of its records
    std::string key;      // the (first) key, for the error message if it fails
    uint32_t keys = 0;    // records it writes (MSET: many; SELECT: none)
    bool has_ttl = false;
    uint64_t end = 0;  // where the command ends in the output stream (appended_)
  };
  explicit RestoreLoader(RedisClient client) : redis_(std::move(client)) {}
  Status apply_functions(const table::Scripts& s, TargetPolicy policy);
  Status apply_lua_scripts(const table::Scripts& s);
  // Queues the command that writes `r` (see restore_command.h): RESTORE, SET,
  // or a place in the MSET being built.
  void append_record(const Record& r, int64_t expire_at_ms);
  void append_select(uint32_t db);
  void flush_mset();
  // Records the command appended to out_ since `before` as pending.
  void queued(Pending p, size_t before);
  // Writes and reads until at most `max_pending` replies are outstanding and
  // the output buffer is below `max_out` bytes.
  Status pump(size_t max_pending, size_t max_out);
  Status handle_reply(const redisReply* reply);

  RedisClient redis_;
  redisReader* reader_ = nullptr;
  std::chrono::milliseconds io_timeout_{30000};
  std::string out_;
  size_t out_pos_ = 0;
  std::deque<Pending> pending_;
  MsetBuilder mset_;
  uint64_t mset_index_ = 0;  // its first record's index and key
  std::string mset_key_;
  uint64_t mset_bytes_ = 0;
  std::string scratch_;        // a decompressed string value
  bool plain_strings_ = true;  // the user may run SET and MSET
  int64_t current_db_ = -1;
  std::map<uint32_t, uint32_t> staging_;  // table DB -> DB to RESTORE into
  uint64_t appended_ = 0;                 // bytes ever appended to out_
  uint64_t written_ = 0;                  // bytes ever written to the socket
  bool flushed_ = false;
  int64_t client_id_ = 0;
  uint16_t table_rdb_ = 0;
  ServerVersion target_;
  bool guarding_ = false;
  TtlGuard guard_;
  LoadStats stats_;
};

}  // namespace rrs
