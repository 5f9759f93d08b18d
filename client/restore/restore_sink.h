// The restore load path (--mode restore, the default): the records go into
// the target with pipelined RESTORE (RestoreLoader), or with --atomic into
// staging DBs swapped in at the end (Staging). A sync that stops early
// prints an `incomplete` line saying exactly what the target was given.
#pragma once

#include <optional>
#include <vector>

#include "client/client_config.h"
#include "client/restore/restore_loader.h"
#include "client/restore/staging.h"
#include "client/sync/load_sink.h"

namespace rrs {

class RestoreSink : public LoadSink {
 public:
  explicit RestoreSink(const ClientConfig& config) : config_(config) {}

  Status connect() override;
  std::optional<ServerVersion> target() const override { return loader_->target(); }
  std::string needs_whole_table() const override;
  Status check(const TableInfo& info) override;
  Status prepare(const TableInfo& info) override;
  Status load(const RecordBatch& batch) override;
  Status drain() override;
  Status take_failures(const std::vector<RecordFailure>& failures) override;
  Status finish() override;
  Status verdict() const override;
  void abandon(const Status& why, uint64_t invalid_records, double seconds) override;
  // Staging DBs are discarded; a partial plain load is flushed by the next
  // attempt unless it was loaded with --merge (that cannot be undone).
  Status start_over() override;
  LoadCounts counts() const override;
  std::string summary_fields() const override;
  // --follow: the keys restored with a guard TTL (restore_loader.h).
  TtlGuard take_ttl_guard() { return loader_->take_ttl_guard(); }

 private:
  // How far prepare() got: abandon() undoes accordingly.
  enum class Stage {
    kPlanning,   // nothing on the target changed yet
    kPreparing,  // the loader may have flushed or loaded functions/scripts
    kStaging,    // staging DBs being claimed: discard them on failure
    kLoading,    // records going in (or swapped in)
  };
  // A RESTORE pipeline that failed on an error reply: read the replies to
  // what was already sent, so the counts say what the target applied.
  Status settle_if_refused(Status s);
  void report_incomplete(uint64_t failed, const std::string& staging_left, double seconds);
  uint64_t records_and_scripts() const;

  const ClientConfig& config_;
  const TableInfo* info_ = nullptr;
  Stage stage_ = Stage::kPlanning;
  std::optional<RestoreLoader> loader_;
  std::optional<Staging> staging_;
  std::vector<RecordFailure> invalid_;
  Status swap_trouble_;  // the swap ran, but part of its transaction failed
  // An earlier attempt left part of an older epoch in the target, which
  // was empty or --flush: the next prepare() flushes it.
  bool flush_first_ = false;
};

}  // namespace rrs
