#include "client/verify/verify_run.h"

#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "client/sync/progress.h"
#include "client/verify/function_libraries.h"
#include "client/verify/key_reader.h"
#include "client/verify/key_source.h"
#include "client/verify/report.h"
#include "common/base/clock.h"
#include "common/base/log.h"

namespace rrs {
namespace {

using verify::KeyReader;
using verify::KeyState;

// DB -> key count, from INFO keyspace (only DBs that hold keys).
Result<std::map<uint32_t, uint64_t>> db_sizes(RedisClient& client) {
  RRS_ASSIGN_OR_RETURN(std::string info, client.info("keyspace"));
  std::map<uint32_t, uint64_t> dbs;
  for (const KeyspaceDb& db : parse_keyspace(info)) dbs[db.db] = db.keys;
  return dbs;
}

// "0:N,3:M" ("-" for none), as the sync's summary writes dbs=.
std::string db_list(const std::map<uint32_t, uint64_t>& dbs) {
  std::string out;
  for (const auto& [db, keys] : dbs)
    out += (out.empty() ? "" : ",") + std::to_string(db) + ":" + std::to_string(keys);
  return out.empty() ? "-" : out;
}

Result<KeyReader> open_side(const Endpoint& at, const std::string& auth_file, const char* env,
                            const ClientConfig& c, const char* side) {
  RRS_ASSIGN_OR_RETURN(RedisCredentials creds, load_credentials(auth_file, env, c.redis_tls));
  auto client = RedisClient::connect(at, creds, c.io_timeout);
  if (!client.ok()) return client.status().wrap(std::string("the ") + side);
  return KeyReader::open(std::move(*client), side);
}

// One run: both sides, the counts so far, the lines printed.
class Verifier {
 public:
  Verifier(const ClientConfig& c, KeyReader source, KeyReader target)
      : c_(c), source_(std::move(source)), target_(std::move(target)) {}
  Status run();
  const verify::VerifyCounts& counts() const { return counts_; }

 private:
  Status compare_db(uint32_t db, uint64_t db_keys, uint64_t total);
  Status compare_batch(uint32_t db, const std::vector<std::string>& keys);
  Status find_extras(uint32_t db);
  Status compare_libraries();
  void report(std::string_view key, uint32_t db, const verify::Difference& d);

  const ClientConfig& c_;
  KeyReader source_, target_;
  verify::VerifyCounts counts_;
  uint64_t printed_ = 0;
  std::optional<Progress> progress_;
  std::vector<KeyState> source_states_, target_states_;
};

void Verifier::report(std::string_view key, uint32_t db, const verify::Difference& d) {
  if (d.what == "missing")
    ++counts_.missing;
  else if (d.what == "extra")
    ++counts_.extra;
  else
    ++counts_.different;
  if (printed_++ < c_.max_differences)
    std::printf("%s\n", verify::difference_line(key, db, d).c_str());
}

Status Verifier::compare_batch(uint32_t db, const std::vector<std::string>& keys) {
  const auto tolerance = static_cast<int64_t>(c_.ttl_tolerance_ms);
  RRS_RETURN_IF_ERROR(read_both(source_, target_, keys, source_states_, target_states_));
  std::vector<std::string> differing;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!source_states_[i].exists()) continue;  // gone since it was listed
    ++counts_.compared;
    if (verify::compare_key(source_states_[i], target_states_[i], tolerance))
      differing.push_back(keys[i]);
  }
  // A second look at the keys that differ: one written, expired or changed
  // in type between the two sides' reads (a replica a moment behind) is
  // not a difference if it is the same now.
  if (!differing.empty())
    RRS_RETURN_IF_ERROR(read_both(source_, target_, differing, source_states_, target_states_));
  for (size_t i = 0; i < differing.size(); ++i) {
    if (!source_states_[i].exists()) continue;
    if (auto d = verify::compare_key(source_states_[i], target_states_[i], tolerance))
      report(differing[i], db, *d);
  }
  progress_->update(counts_.compared, 0);
  return {};
}

// Keys on the target the source does not have: SCAN the target, EXISTS on
// the source, a batch per round trip.
Status Verifier::find_extras(uint32_t db) {
  verify::KeyScan scan(target_.client());
  std::vector<std::string> keys;
  while (true) {
    RRS_ASSIGN_OR_RETURN(bool more, scan.next(keys));
    if (!more) return {};
    for (const std::string& k : keys) source_.client().append({"EXISTS", k});
    for (const std::string& k : keys) {
      RRS_ASSIGN_OR_RETURN(ReplyPtr r, source_.client().get_reply());
      if (r->type == REDIS_REPLY_INTEGER && r->integer == 0)
        report(k, db, {"extra", "none", "present"});
    }
  }
}

Status Verifier::compare_db(uint32_t db, uint64_t db_keys, uint64_t total) {
  RRS_RETURN_IF_ERROR(source_.select(db));
  RRS_RETURN_IF_ERROR(target_.select(db));
  if (c_.verify_sample > 0) {
    const uint64_t share = verify::sample_share(c_.verify_sample, db_keys, total);
    if (share == 0) return {};
    RRS_ASSIGN_OR_RETURN(auto keys, verify::sample_keys(source_.client(), share));
    for (size_t at = 0; at < keys.size(); at += verify::kBatchKeys) {
      const size_t end = std::min(keys.size(), at + verify::kBatchKeys);
      RRS_RETURN_IF_ERROR(compare_batch(db, {keys.begin() + static_cast<ptrdiff_t>(at),
                                             keys.begin() + static_cast<ptrdiff_t>(end)}));
    }
    return {};
  }
  verify::KeyScan scan(source_.client());
  std::vector<std::string> keys;
  while (true) {
    RRS_ASSIGN_OR_RETURN(bool more, scan.next(keys));
    if (!more) break;
    RRS_RETURN_IF_ERROR(compare_batch(db, keys));
  }
  return find_extras(db);
}

Status Verifier::run() {
  RRS_ASSIGN_OR_RETURN(auto source_dbs, db_sizes(source_.client()));
  RRS_ASSIGN_OR_RETURN(auto target_dbs, db_sizes(target_.client()));
  uint64_t total = 0;
  for (const auto& [db, keys] : source_dbs) total += keys;
  counts_.keys = c_.verify_sample > 0 ? std::min(c_.verify_sample, total) : total;
  if (!c_.quiet)
    log::info("keys per DB: source " + db_list(source_dbs) + ", target " + db_list(target_dbs));
  progress_.emplace(Progress::Totals{counts_.keys, 0}, c_.quiet);
  // A full run also walks the DBs only the target has, for their extras.
  std::set<uint32_t> dbs;
  for (const auto& [db, keys] : source_dbs) dbs.insert(db);
  if (c_.verify_sample == 0)
    for (const auto& [db, keys] : target_dbs) dbs.insert(db);
  for (uint32_t db : dbs) RRS_RETURN_IF_ERROR(compare_db(db, source_dbs[db], total));
  progress_->update(counts_.compared, 0, true);
  return compare_libraries();
}

// Function libraries are not keys: read whole on both sides and compared
// by name and code. A side that refuses FUNCTION LIST (its user lacks
// +function) leaves them uncompared, said in the log and the summary.
Status Verifier::compare_libraries() {
  std::string source_why, target_why;
  RRS_ASSIGN_OR_RETURN(auto source, verify::read_libraries(source_.client(), source_why));
  RRS_ASSIGN_OR_RETURN(auto target, verify::read_libraries(target_.client(), target_why));
  if (!source || !target) {
    log::warn("function libraries not compared: the " + std::string(!source ? "source" : "target") +
              " refused FUNCTION LIST (" + (!source ? source_why : target_why) + ")");
    return {};
  }
  counts_.libraries_compared = true;
  counts_.libraries = source->size();  // and, below, those only the target has
  for (const auto& [name, d] : verify::compare_libraries(*source, *target)) {
    ++counts_.libraries_different;
    if (d.what == "library-extra") ++counts_.libraries;
    if (printed_++ < c_.max_differences) std::printf("%s\n", verify::library_line(name, d).c_str());
  }
  return {};
}

}  // namespace

Status run_verify(const ClientConfig& config) {
  const Clock::time_point start = Clock::now();
  RRS_ASSIGN_OR_RETURN(KeyReader source,
                       open_side(config.source_redis, config.source_redis_auth_file, kSourceAuthEnv,
                                 config, "source"));
  RRS_ASSIGN_OR_RETURN(KeyReader target, open_side(config.redis, config.redis_auth_file,
                                                   kClientAuthEnv, config, "target"));
  Verifier v(config, std::move(source), std::move(target));
  Status s = v.run();
  // A side that went away or answered nonsense: the run could not compare.
  if (!s.ok())
    return s.kind() == ErrorKind::kFailed || s.kind() == ErrorKind::kBadData
               ? s.as(ErrorKind::kUnavailable)
               : s;
  const verify::VerifyCounts& counts = v.counts();
  std::printf("%s\n", verify::summary_line(counts, seconds_since(start)).c_str());
  std::fflush(stdout);
  if (counts.equal()) return {};
  return Status::error("verify", std::to_string(counts.different + counts.missing + counts.extra) +
                                     " keys and " + std::to_string(counts.libraries_different) +
                                     " function libraries differ (see the lines above)");
}

}  // namespace rrs
