#include "client/replica/replica_sink.h"

#include "client/sync/target_checks.h"
#include "common/base/log.h"
#include "common/net/socket.h"

namespace rrs {
namespace {

Status load_lua_scripts(RedisClient& target, const table::Scripts& s) {
  // Redis 7 replicas no longer take scripts from the RDB; SCRIPT LOAD works
  // on a replica and on every version.
  for (const std::string& body : s.lua_scripts)
    RRS_RETURN_IF_ERROR(
        target.command({"SCRIPT", "LOAD", body}).status().wrap("load a Lua script"));
  return {};
}

}  // namespace

Status ReplicaSink::connect() {
  RRS_ASSIGN_OR_RETURN(RedisCredentials creds, load_credentials(config_.redis_auth_file,
                                                                kClientAuthEnv, config_.redis_tls));
  auto client = RedisClient::connect(config_.redis, creds,
                                     std::chrono::milliseconds(config_.io_timeout));
  if (!client.ok()) return client.status().wrap("connect to the target");
  RRS_ASSIGN_OR_RETURN(const ServerVersion server, target_server(*client));
  target_.emplace(std::move(*client), server);
  return {};
}

Status ReplicaSink::check(const TableInfo& info) {
  info_ = &info;
  const table::Header& h = info.header;
  source_kind_ = h.source_kind;
  // An RDB file's table has a place in the history when the file named one.
  has_history_ = h.source_kind == table::SourceKind::kPsync ||
                 (h.source_kind == table::SourceKind::kRdbFile && !h.source_replid.empty());
  replid_ = has_history_ ? h.source_replid : random_run_id();  // a history of its own
  offset_ = has_history_ ? h.source_offset : 0;
  if (!has_history_ && (config_.follow || config_.handoff))
    return Status::error("--mode replica",
                         "the table was taken with rdma-server --source scan, which has no "
                         "replication history to follow or hand off; use --source psync, or "
                         "drop --follow/--handoff")
        .as(ErrorKind::kUsage);
  RRS_RETURN_IF_ERROR(target_->check(info, config_.policy));
  check_each_db_ = !info.complete();
  RRS_ASSIGN_OR_RETURN(auto tls, link_tls());
  // The link listens where the client's connection to the target comes from,
  // and takes a connection only from the target's address.
  const int fd = target_->redis().fd();
  RRS_ASSIGN_OR_RETURN(link_, ReplicaLink::listen(local_host(fd), peer_host(fd),
                                                  std::chrono::milliseconds(config_.io_timeout),
                                                  std::move(tls)));
  return {};
}

Result<std::shared_ptr<const TlsContext>> ReplicaSink::link_tls() {
  const TlsOptions& o = config_.redis_tls;
  // A target whose CONFIG GET is refused is taken to replicate as it is
  // reached: over TLS with --redis-tls.
  const bool over_tls = target_->replicates_over_tls().value_or(o.enabled);
  const std::string step = "serve the target's replica link over TLS";
  if (over_tls && !o.enabled)
    return Status::error(step, "the target replicates over TLS (tls-replication yes): give "
                               "--redis-tls with --redis-tls-cert and --redis-tls-key, a "
                               "certificate it trusts, for the link it connects to")
        .as(ErrorKind::kUsage);
  // A TLS master's replica must replicate over TLS once handed off.
  if (!over_tls && o.enabled && config_.handoff)
    return Status::error("check the target for --handoff",
                         "the master speaks TLS (--redis-tls) but the target replicates over "
                         "plain TCP (tls-replication no): CONFIG SET tls-replication yes on it")
        .as(ErrorKind::kRefused);
  if (!over_tls) return std::shared_ptr<const TlsContext>();
  auto ctx = TlsContext::make(o, TlsRole::kServer, TlsWire::kRedis);
  if (!ctx.ok())
    return ctx.status().wrap("the target replicates over TLS (tls-replication yes), so its "
                             "replica link is a TLS server");
  log::info("the target replicates over TLS: its replica link answers with " + o.cert_file);
  return std::make_shared<const TlsContext>(std::move(*ctx));
}

Status ReplicaSink::prepare(const TableInfo& info) {
  // From here a failure detaches it again, so it does not keep retrying a
  // link that is gone (also when REPLICAOF failed after a REPLICAOF NO ONE).
  attached_ = true;
  RRS_ASSIGN_OR_RETURN(const TargetHistory history, target_->replicate_from(link_->endpoint()));
  RRS_RETURN_IF_ERROR(link_->accept_full_sync(
      replid_, offset_, history, Clock::now() + std::chrono::milliseconds(config_.io_timeout)));
  const std::string keys = info.complete()
                               ? std::to_string(info.header.record_count) + " keys"
                               : "the keys as the sidecar writes them (" +
                                     std::to_string(info.header.record_count) + " so far)";
  log::info("the target connected (" + link_->psync_request() + "); streaming it an RDB of " +
            keys + " as a full resync to " + replid_ + " offset " + std::to_string(offset_));
  rdb_.emplace(info, *link_, replid_, offset_);
  return rdb_->begin();
}

Status ReplicaSink::load(const RecordBatch& batch) {
  // Checked before the RDB selects the DB: a replica exits on one it lacks.
  if (check_each_db_)
    for (const Record& r : batch.records)
      if (r.db != db_checked_) {
        RRS_RETURN_IF_ERROR(target_->check_db(r.db).wrap("record " + std::to_string(r.index)));
        db_checked_ = r.db;
      }
  return rdb_->add(batch);
}

Status ReplicaSink::take_failures(const std::vector<RecordFailure>& failures) {
  if (failures.empty()) return {};
  for (const RecordFailure& f : failures)
    log::error("record " + std::to_string(f.index) + " failed validation: " + f.reason);
  return Status::error("stream the RDB", std::to_string(failures.size()) +
                                             " records failed validation, and an RDB without "
                                             "them would be a wrong replica")
      .as(ErrorKind::kBadData);
}

Status ReplicaSink::finish() {
  RRS_RETURN_IF_ERROR(rdb_->end());
  RRS_RETURN_IF_ERROR(
      target_->wait_loaded(*link_, offset_, std::chrono::milliseconds(config_.io_timeout)));
  RRS_RETURN_IF_ERROR(target_->verify_synced(replid_, offset_));
  loaded_ = true;  // a failure from here on leaves the target a whole replica
  return load_lua_scripts(target_->redis(), info_->scripts);
}

void ReplicaSink::abandon(const Status&, uint64_t, double) {
  if (loaded_ || !link_) return;
  link_->close();
  if (!attached_) return;
  const bool detached = target_->detach();
  log::error(std::string("the target ") + config_.redis.to_string() +
             " did not get the whole data set; " +
             (detached ? "it was detached (REPLICAOF NO ONE)"
                       : "it could not be detached (REPLICAOF NO ONE failed: is it down?); "
                         "if it comes back it retries a link that is gone, so run "
                         "REPLICAOF NO ONE on it") +
             ". A replica drops an incomplete transfer and keeps what it held before; its "
             "log and INFO keyspace say what it holds now");
}

Status ReplicaSink::start_over() {
  if (link_) link_->close();
  if (attached_ && !target_->detach())
    return Status::error("start over", "the target could not be detached (REPLICAOF NO ONE "
                                       "failed: is it down?)");
  info_ = nullptr;
  link_.reset();
  rdb_.reset();
  check_each_db_ = false;
  db_checked_ = -1;
  attached_ = false;
  return {};
}

LoadCounts ReplicaSink::counts() const {
  LoadCounts c;
  if (rdb_) {
    c.keys = rdb_->stats().keys;
    c.bytes = rdb_->stats().bytes;
    c.per_db = rdb_->stats().per_db;
  }
  c.functions = info_->scripts.function_libraries;
  c.scripts = info_->scripts.lua_scripts.size();
  return c;
}

std::string ReplicaSink::summary_fields() const {
  return " mode=replica offset=" + std::to_string(offset_) +
         " rdb_bytes=" + std::to_string(rdb_ ? rdb_->rdb_bytes() : 0);
}

void ReplicaSink::leave_target() {
  link_->close();
  if (!has_history_) {
    (void)target_->detach();
    log::info(std::string(source_kind_ == table::SourceKind::kScan
                              ? "the table came from --source scan"
                              : "the table came from an RDB file without repl-id/repl-offset") +
              ", which has no replication history to continue: the target was detached "
              "(REPLICAOF NO ONE) and is a standalone copy");
  } else {
    explain_left_replica(replid_, offset_);
  }
}

void explain_left_replica(std::string_view replid, uint64_t offset) {
  log::info("the target holds the master's history " + std::string(replid) + " up to offset " +
            std::to_string(offset) +
            " and is a replica whose master link is now down: REPLICAOF <master host> <port> "
            "continues it with a partial resync while the master's repl-backlog still reaches "
            "back to that offset (or run with --handoff); REPLICAOF NO ONE makes it a "
            "standalone copy");
}

}  // namespace rrs
