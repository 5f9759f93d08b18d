// --no-load: fetches and validates every record, loads nothing. Measures the
// transfer alone and checks a table end to end without touching a Redis.
#pragma once

#include "client/sync/load_sink.h"

namespace rrs {

class CountingSink : public LoadSink {
 public:
  Status connect() override { return {}; }
  Status check(const TableInfo& info) override;
  Status prepare(const TableInfo&) override { return {}; }
  Status load(const RecordBatch& batch) override;
  Status take_failures(const std::vector<RecordFailure>& failures) override;
  Status finish() override { return {}; }
  Status verdict() const override;
  void abandon(const Status&, uint64_t, double) override {}
  Status start_over() override {
    counts_ = {};
    return {};
  }
  LoadCounts counts() const override { return counts_; }
  bool loads() const override { return false; }

 private:
  LoadCounts counts_;
};

}  // namespace rrs
