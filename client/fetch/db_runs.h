// The DBs records turned out to be in while the table was still being
// written, before its DB directory existed. Records are sorted by DB, so
// each record's own DB may not be lower than the one before it; once the
// directory is known, every run of records seen in one DB must lie within
// that DB's slot range. A record outside the rules is refused (retried with
// the directory's DB); a run that contradicts the directory fails the fetch,
// since its records are already loaded.
#pragma once

#include <cstdint>
#include <vector>

#include "common/base/status.h"
#include "proto/table_layout.h"

namespace rrs {

class DbRuns {
 public:
  // Record `index` (indexes rising) says it is in `db`: false when that is
  // lower than the DB of the record noted before it.
  bool note(uint64_t index, uint32_t db);
  // kBadData when a run is not where the directory puts its DB.
  Status check(const std::vector<table::DbEntry>& dbs) const;

 private:
  struct Run {
    uint32_t db;
    uint64_t first, last;  // indexes of its first and last record seen
  };
  std::vector<Run> runs_;
};

}  // namespace rrs
