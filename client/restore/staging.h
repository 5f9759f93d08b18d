// --atomic (restore mode): the table is loaded into staging DBs on the target
// and swapped in all at once when it is complete and checked, so the target
// shows either its old data or the whole new copy, never a mix.
//
//   plan():    flushes staging DBs an earlier --atomic run abandoned (they hold
//              kStagingMarker), reads `databases`, and picks one staging DB per
//              table DB: the highest-numbered DBs that are empty and that the
//              table does not use.
//   prepare(): rehearses the table's functions (below), then claims each
//              staging DB with a marker key naming this run.
//   swap_in(): checks each staging DB still holds this run's marker (WATCHed)
//              and as many keys as were loaded into it, then in one
//              MULTI/EXEC: the functions, DEL the markers, SWAPDB each table DB
//              with its staging DB and, with --flush, FLUSHDB ASYNC every
//              other DB (the staging DBs now hold the old data). Without
//              --flush the table DBs were empty at the check; a key written
//              to one just before EXEC ends in its staging DB, and is
//              reported there (report_late_writes), not flushed.
//   discard(): after a failure: kills the loader's connection (so nothing it
//              sent can still land), flushes the staging DBs that hold this
//              run's marker.
//
// Functions are server-wide, so they cannot be staged in a DB. prepare()
// rehearses them in one transaction that leaves the target as it was:
//   MULTI; FUNCTION RESTORE <table> APPEND|FLUSH; FUNCTION DUMP;
//   FUNCTION RESTORE <target's own> FLUSH; EXEC
// A conflict is refused there, before any key is loaded; the dump is what the
// target's functions will be, and swap_in() restores it with FLUSH (which
// cannot conflict) inside the swap's transaction.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "client/client_config.h"
#include "client/fetch/table_fetcher.h"
#include "client/restore/restore_loader.h"
#include "common/redis/redis_client.h"

namespace rrs {

// The key that marks a staging DB as this tool's, with who staged what in it.
inline constexpr const char* kStagingMarker = "rdma-client:staging";

class Staging {
 public:
  // Refusals (the target cannot take an atomic load as it is) have kind
  // kRefused, here and in prepare() and swap_in(). Needs the whole table
  // (info.complete()): the sync waits for one still being written.
  static Result<Staging> plan(const Endpoint& target, const RedisCredentials& creds,
                              std::chrono::milliseconds io_timeout, const TableInfo& info,
                              TargetPolicy policy);

  // After the loader's prepare(): rehearses the functions, claims the staging DBs.
  Status prepare(const TableInfo& info, const ServerVersion& target);

  // Table DB -> staging DB.
  const std::map<uint32_t, uint32_t>& dbs() const { return map_; }
  // "0:15,1:14": table DB:staging DB, for summary lines.
  std::string describe() const;
  // Libraries the swap restores (the table's).
  uint32_t function_libraries() const { return function_libraries_; }

  // Once the swap's transaction ran the old data is gone; `trouble` then
  // says what else in it failed (the functions, a flush), if anything.
  struct Swapped {
    Status trouble;
  };
  // Swaps the loaded copy in. An error: nothing was swapped.
  Result<Swapped> swap_in(const LoadStats& loaded);

  // Best effort after a failure. An error says what may be left behind.
  Status discard(int64_t loader_client_id);

 private:
  Staging(Endpoint target, RedisCredentials creds, std::chrono::milliseconds io_timeout)
      : target_(std::move(target)), creds_(std::move(creds)), io_timeout_(io_timeout) {}
  Result<RedisClient> connect() const;
  Status rehearse_functions(RedisClient& c, const TableInfo& info);
  Status claim(RedisClient& c);
  void report_late_writes(RedisClient& c);
  // swap_in()'s steps: the staging DBs still as loaded, then the
  // transaction queued (what each EXEC reply answers, for messages).
  Status check_staged(RedisClient& c, const LoadStats& loaded, const std::string& step);
  std::vector<std::string> queue_swap(RedisClient& c);

  Endpoint target_;
  RedisCredentials creds_;
  std::chrono::milliseconds io_timeout_;
  TargetPolicy policy_ = TargetPolicy::kRequireEmpty;
  uint32_t databases_ = 0;
  std::map<uint32_t, uint32_t> map_;
  std::vector<uint32_t> claimed_;            // staging DBs holding this run's marker
  std::map<uint32_t, std::string> markers_;  // staging DB -> its marker's value
  // What the swap does to functions: restore this payload with FLUSH, or
  // FUNCTION FLUSH (--flush, a table without functions), or nothing.
  std::string functions_payload_;
  bool flush_functions_ = false;
  uint32_t function_libraries_ = 0;
};

}  // namespace rrs
