#include "client/fetch/db_runs.h"

#include <algorithm>
#include <string>

namespace rrs {

bool DbRuns::note(uint64_t index, uint32_t db) {
  if (!runs_.empty() && db < runs_.back().db) return false;
  if (runs_.empty() || db != runs_.back().db)
    runs_.push_back({db, index, index});
  else
    runs_.back().last = index;
  return true;
}

Status DbRuns::check(const std::vector<table::DbEntry>& dbs) const {
  for (const Run& r : runs_) {
    auto e = std::find_if(dbs.begin(), dbs.end(),
                          [&](const table::DbEntry& d) { return d.db == r.db; });
    if (e != dbs.end() && r.first >= e->first_slot && r.last - e->first_slot < e->key_count)
      continue;
    return Status::error("check records against the DB directory",
                         "records " + std::to_string(r.first) + " to " + std::to_string(r.last) +
                             " said they were in DB " + std::to_string(r.db) +
                             ", where the DB directory does not put them (they went to the "
                             "target by their own word)")
        .as(ErrorKind::kBadData);
  }
  return {};
}

}  // namespace rrs
