// What an RDB's events put into the table builder, for every source that
// reads an RDB: the PSYNC source (the master's RDB as it streams in) and the
// file source (a backup on disk). Records go straight into the builder;
// the RDB's redis-ver / valkey-ver say which server wrote it, "lua" aux
// fields (Redis < 7.0) and function libraries go into the scripts region,
// module data that is not a key is counted (the table cannot carry it), and
// a SLOT_IMPORT fails the snapshot. Progress is logged about once a second.
//
//   rdb::RdbParser parser;
//   RdbTableSink sink(builder, parser, what, [] { return rdb_size; });
//   ... feed the parser; sink.on_event(ev) for each event ...
//   SnapshotStats stats = sink.finish({{}, kind, offset, replid});
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/base/clock.h"
#include "proto/rdb_parser.h"
#include "server/snapshot_source.h"

namespace rrs {

// "12 MiB": RDB sizes in the snapshot's log lines.
inline std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// How a source reports an RDB written while its server was importing slots
// (the keys of those slots are not the node's yet): the step naming the RDB,
// what happens instead, and the error's kind.
struct SlotImportReport {
  std::string rdb;        // "the master's RDB"
  std::string what_then;  // "a snapshot is taken once the migration has finished"
  ErrorKind kind = ErrorKind::kUnavailable;
};

// The RDB's replication aux fields as written (empty when absent): Redis and
// Valkey write them for a replica, and for a master that has a backlog.
struct RdbReplAux {
  std::string replid;     // repl-id
  std::string offset;     // repl-offset
  std::string stream_db;  // repl-stream-db
};

class RdbTableSink {
 public:
  // `parser` is the one the events come from (its RDB version and byte
  // count); `rdb_size` gives the RDB's size for the progress lines (0:
  // unknown), asked only when one is logged.
  RdbTableSink(TableBuilder& into, const rdb::RdbParser& parser, SlotImportReport slot_import,
               std::function<uint64_t()> rdb_size);

  // One event from the parser; an error only for a SLOT_IMPORT.
  Status on_event(const rdb::Event& ev);

  // A streamed build lays its table out before the first records are in
  // (TableBuilder::stream): at the first key the builder gets what the RDB
  // said so far (the source `describe` gives, completed as finish() does, and
  // the function libraries), which an RDB carries before its keys.
  void describe_at_first_key(std::function<SourceInfo()> describe) {
    describe_ = std::move(describe);
  }

  // After the RDB's end: puts the function libraries into the builder and
  // sets its source, `source` completed with the server the RDB names, its
  // RDB version and the module data not carried. The snapshot's stats.
  SnapshotStats finish(SourceInfo source);

  const SnapshotStats& stats() const { return stats_; }
  const RdbReplAux& repl_aux() const { return repl_; }
  // Since the sink was made: the RDB's transfer and parse.
  double seconds() const { return seconds_since(t0_); }

 private:
  void on_aux(const rdb::Event& ev);
  void report_progress();
  // What finish() hands the builder: the source, completed, and the functions.
  void hand_over(SourceInfo source);

  TableBuilder& into_;
  const rdb::RdbParser& parser_;
  SlotImportReport slot_import_;
  std::function<uint64_t()> rdb_size_;
  SnapshotStats stats_;
  // valkey-ver wins: a Valkey writes no redis-ver, but a future one might.
  std::string redis_version_, valkey_version_;
  RdbReplAux repl_;
  std::vector<std::string> libraries_;
  std::function<SourceInfo()> describe_;
  Clock::time_point t0_ = Clock::now(), last_report_ = t0_;
};

}  // namespace rrs
