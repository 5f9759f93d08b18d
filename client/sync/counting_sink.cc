#include "client/sync/counting_sink.h"

#include "common/base/log.h"

namespace rrs {

Status CountingSink::check(const TableInfo& info) {
  counts_.functions = info.scripts.function_libraries;
  counts_.scripts = info.scripts.lua_scripts.size();
  return {};
}

Status CountingSink::load(const RecordBatch& batch) {
  counts_.keys += batch.records.size();
  return {};
}

Status CountingSink::take_failures(const std::vector<RecordFailure>& failures) {
  for (const RecordFailure& f : failures)
    log::error("record " + std::to_string(f.index) + " failed validation: " + f.reason);
  counts_.failed = failures.size();
  return {};
}

Status CountingSink::verdict() const {
  if (counts_.failed == 0) return {};
  return Status::error("fetch table",
                       std::to_string(counts_.failed) + " records failed validation (see above)");
}

}  // namespace rrs
