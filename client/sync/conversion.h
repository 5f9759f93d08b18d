// What the target is sent when it does not read the RDB version the master
// wrote: each record's DUMP payload re-encoded for the newest RDB version the
// target reads (proto/rdb_convert.h), or only restamped where the bytes stay
// the same, and the table's description and functions restamped to match.
// Both load paths take the converted table and records as if the master had
// written them; neither knows a conversion happened.
//
// Everything that can be refused is refused before the target is touched:
// versions no conversion reaches, and (without --allow-lossy-conversion)
// records the target cannot hold whole, which the table's header counts.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "client/client_config.h"
#include "client/fetch/record_batch.h"
#include "client/fetch/table_fetcher.h"
#include "proto/rdb_convert.h"
#include "proto/server_version.h"

namespace rrs {

class Conversion {
 public:
  // `target`: the server to load (nullopt when nothing is loaded: no
  // conversion). kRefused when the target reads neither the table's RDB
  // version nor one it converts to, or when it needs a conversion and the
  // master is to go on feeding it (--follow, --handoff).
  static Result<Conversion> plan(const ClientConfig& config, const TableInfo& table,
                                 const std::optional<ServerVersion>& target);

  // kRefused, naming the first such key (read from the table through
  // `fetcher`, before its run()), when records hold what the target has no
  // place for and lossy conversion was not allowed; else logs what will be
  // dropped.
  Status check_losses(TableFetcher& fetcher) const;

  bool needed() const { return from_ != to_; }
  // Why check_losses() cannot be made until the table is complete (its
  // header counts lossy records only once every record is written), or ""
  // when it can.
  std::string needs_whole_table() const;
  // The table as the target receives it (its RDB version and functions
  // restamped when converting).
  const TableInfo& info() const { return info_; }
  // Takes what the fetcher learned of the table since (TableInfo::catch_up);
  // never while the fetcher runs, as the load path reads info().
  void catch_up(const TableInfo& later) { info_.catch_up(later.header, later.dbs); }

  // Replaces each record's payload with the target's (the batch then keeps
  // the new bytes alive). kBadData: a malformed value or a payload of another
  // version than the table's; kRefused: no conversion for the value (module
  // data), or a loss the header did not announce, without
  // --allow-lossy-conversion.
  Status convert(RecordBatch& batch);

  // " convert_rdb=12:10 reencoded=N dropped_field_ttls=M ..." for the
  // summary line; empty when nothing was converted.
  std::string summary_fields() const;

 private:
  Status convert_one(const Record& r, std::string& out);

  TableInfo info_;
  uint16_t from_ = 0, to_ = 0;
  bool allow_lossy_ = false;
  uint64_t reencoded_ = 0;  // values whose bytes changed (the rest were restamped)
  std::array<uint64_t, rdb::kLossKindCount> dropped_{};  // records that lost a part, per kind
};

}  // namespace rrs
