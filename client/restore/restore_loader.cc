#include "client/restore/restore_loader.h"

#include <poll.h>

#include <utility>

#include "client/restore/restore_command.h"
#include "client/sync/target_checks.h"
#include "common/base/clock.h"
#include "common/base/log.h"
#include "proto/dump_payload.h"
#include "proto/resp_writer.h"

namespace rrs {
namespace {

// Bounds on what we hold for the target: enough to keep Redis busy, small
// enough that a slow target cannot make us buffer the whole table.
constexpr size_t kMaxPending = 16384;
constexpr size_t kMaxOutBytes = 8u << 20;
constexpr size_t kMaxErrorsKept = 10;
constexpr size_t kReadChunk = size_t{64} * 1024;

std::string first_line(std::string_view s) {
  std::string_view line = s.substr(0, s.find('\n'));
  return log::printable(line);
}

}  // namespace

Result<RestoreLoader> RestoreLoader::connect(const Endpoint& target, const RedisCredentials& creds,
                                             std::chrono::milliseconds io_timeout) {
  auto c = RedisClient::connect(target, creds, io_timeout);
  if (!c.ok()) return c.status().as(ErrorKind::kUnavailable);
  RestoreLoader l(std::move(*c));
  l.io_timeout_ = io_timeout;
  RRS_ASSIGN_OR_RETURN(l.target_, target_server(l.redis_));
  return l;
}

RestoreLoader::~RestoreLoader() {
  if (reader_) redisReaderFree(reader_);
}

Status RestoreLoader::prepare(const TableInfo& info, TargetPolicy policy, bool staged) {
  table_rdb_ = static_cast<uint16_t>(info.header.rdb_version);
  RRS_RETURN_IF_ERROR(check_target_reads(redis_, target_, info));

  if (staged)  // for Staging::discard(); only then, so a plain load needs no CLIENT right
    if (auto id = redis_.command({"CLIENT", "ID"}); id.ok() && (*id)->type == REDIS_REPLY_INTEGER)
      client_id_ = (*id)->integer;

  if (policy == TargetPolicy::kFlush) {
    if (!staged) {
      RRS_RETURN_IF_ERROR(redis_.command({"FLUSHALL"}).status().wrap("flush target"));
      flushed_ = true;
    }
  } else if (policy == TargetPolicy::kRequireEmpty) {
    auto held = keys_held(redis_);
    if (!held.ok()) return held.status();
    if (!held->empty())
      return Status::error("check target Redis " + redis_.endpoint().to_string(),
                           "it is not empty (" + *held +
                               (staged ? "); use --flush to replace its data (with --atomic it "
                                         "stays until the new copy is swapped in)"
                                       : "); use --flush to FLUSHALL it first, or --merge to "
                                         "load on top (table keys replace existing ones)"))
          .as(ErrorKind::kRefused);
  }

  if (!staged) RRS_RETURN_IF_ERROR(apply_functions(info.scripts, policy));
  // Lua scripts are a cache (SCRIPT LOAD is idempotent), not data: loaded
  // up front in both cases.
  RRS_RETURN_IF_ERROR(apply_lua_scripts(info.scripts));

  // From here on we drive the connection ourselves.
  reader_ = redisReaderCreate();
  if (!reader_) return Status::error("prepare loader", "out of memory");
  // Strings go as RESTORE until the probes' replies say the user may SET
  // and MSET (restore_command.h); they lead the pipeline, so a paused
  // target holds them like everything else instead of blocking prepare.
  probes_sent_ = append_plain_string_probes(out_);
  probe_bytes_ = out_.size();
  appended_ += probe_bytes_;
  for (size_t i = 0; i < probes_sent_; ++i)
    pending_.push_back({kProbe, 0, 0, 0, {}, 0, false, appended_});
  return {};
}

Status RestoreLoader::apply_functions(const table::Scripts& s, TargetPolicy policy) {
  const std::string where = "load functions into " + redis_.endpoint().to_string();
  if (s.function_payload.empty()) {
    // A replica of a master without functions has none; FLUSHALL kept them.
    if (policy == TargetPolicy::kFlush && target_.has_functions())
      RRS_RETURN_IF_ERROR(redis_.command({"FUNCTION", "FLUSH"}).status().wrap(where));
    return {};
  }
  const char* mode = policy == TargetPolicy::kFlush   ? "FLUSH"
                     : policy == TargetPolicy::kMerge ? "REPLACE"
                                                      : "APPEND";
  redis_.append({"FUNCTION", "RESTORE", s.function_payload, mode});
  auto r = redis_.get_reply();
  if (!r.ok()) return r.status().wrap(where);
  if ((*r)->type == REDIS_REPLY_ERROR) {
    std::string err((*r)->str, (*r)->len);
    // FUNCTION RESTORE is all or nothing: a refusal leaves the target as it was.
    if (err.find("already exists") != std::string::npos)
      return Status::error(where, "the target's functions conflict with the table's: " + err +
                                      (policy == TargetPolicy::kMerge
                                           ? "; --merge replaces only libraries of the same "
                                             "name: use --flush to replace all of them"
                                           : "; use --flush to replace the target's functions "
                                             "with the table's, or --merge to replace its "
                                             "libraries of the same name"))
          .as(ErrorKind::kRefused);
    return Status::error(where, "FUNCTION RESTORE " + std::string(mode) + " of " +
                                    std::to_string(s.function_libraries) +
                                    " libraries failed: " + err);
  }
  stats_.function_libraries = s.function_libraries;
  return {};
}

Status RestoreLoader::apply_lua_scripts(const table::Scripts& s) {
  // Like a key that fails to RESTORE, a script the target refuses is
  // reported and counted, and the load carries on.
  for (const std::string& body : s.lua_scripts) redis_.append({"SCRIPT", "LOAD", body});
  for (size_t i = 0; i < s.lua_scripts.size(); ++i) {
    auto r = redis_.get_reply();
    if (!r.ok()) return r.status().wrap("load Lua scripts into " + redis_.endpoint().to_string());
    if ((*r)->type != REDIS_REPLY_ERROR) {
      stats_.scripts++;
      continue;
    }
    stats_.failed++;
    if (stats_.errors.size() < kMaxErrorsKept)
      stats_.errors.push_back("SCRIPT LOAD failed: Lua script " + std::to_string(i + 1) + " of " +
                              std::to_string(s.lua_scripts.size()) + " ('" +
                              first_line(s.lua_scripts[i]) +
                              "'): " + std::string((*r)->str, (*r)->len));
  }
  return {};
}

void RestoreLoader::queued(Pending p, size_t before) {
  appended_ += out_.size() - before;
  p.end = appended_;
  pending_.push_back(std::move(p));
}

void RestoreLoader::append_select(uint32_t db) {
  flush_mset();
  auto staged = staging_.find(db);
  std::string n = std::to_string(staged == staging_.end() ? db : staged->second);
  const size_t before = out_.size();
  resp::append_command(out_, {"SELECT", n});
  queued({"SELECT", db, 0, 0, {}, 0}, before);
  current_db_ = db;
}

void RestoreLoader::append_record(const Record& r, int64_t expire_at_ms) {
  const uint64_t bytes = r.key.size() + r.payload.size();
  const auto value = plain_strings_ ? plain_string(r.payload, scratch_) : std::nullopt;
  if (value && expire_at_ms < 0) {
    if (mset_.empty()) {
      mset_index_ = r.index;
      mset_key_.assign(r.key);
      mset_bytes_ = 0;
    }
    mset_.add(r.key, *value);
    mset_bytes_ += bytes;
    if (mset_.full()) flush_mset();
    return;
  }
  const size_t before = out_.size();
  const char* command = value ? "SET" : "RESTORE";
  if (value)
    append_set(out_, r.key, expire_at_ms, *value);
  else
    append_restore(out_, r.key, expire_at_ms, r.payload);
  queued({command, r.db, r.index, bytes, std::string(r.key), 1, r.expire_at_ms >= 0}, before);
}

void RestoreLoader::flush_mset() {
  if (mset_.empty()) return;
  const auto keys = static_cast<uint32_t>(mset_.keys());
  const size_t before = out_.size();
  mset_.flush_into(out_);
  queued({"MSET", static_cast<uint32_t>(current_db_), mset_index_, mset_bytes_,
          std::move(mset_key_), keys},
         before);
  mset_key_.clear();
}

void RestoreLoader::guard_ttls() {
  guarding_ = true;
  guard_.loaded_at_ms = unix_ms();
  guard_.guard_at_ms = guard_.loaded_at_ms +
                       std::chrono::duration_cast<std::chrono::milliseconds>(TtlGuard::kHold)
                           .count();
}

Status RestoreLoader::load(const RecordBatch& batch) {
  const int64_t now = unix_ms();
  const int64_t guard_before =
      now + std::chrono::duration_cast<std::chrono::milliseconds>(TtlGuard::kWindow).count();
  for (const Record& r : batch.records) {
    int64_t expire_at = r.expire_at_ms;
    if (guarding_ && expire_at >= 0 && expire_at <= guard_before) {
      guard_.keys.push_back({r.db, std::string(r.key), expire_at});
      expire_at = guard_.guard_at_ms;
    } else if (expire_at >= 0 && expire_at <= now) {
      stats_.skipped_expired++;
      continue;
    }
    if (r.db != current_db_) append_select(r.db);
    append_record(r, expire_at);
    if (out_.size() - out_pos_ >= kMaxOutBytes || pending_.size() >= kMaxPending)
      RRS_RETURN_IF_ERROR(pump(kMaxPending / 2, kMaxOutBytes / 2));
  }
  // Commands hold copies of the records, so the batch may go as soon as we return.
  flush_mset();
  return pump(kMaxPending, kMaxOutBytes);
}

Status RestoreLoader::finish() { return pump(0, 0); }

uint64_t RestoreLoader::unacknowledged() const {
  uint64_t n = 0;
  for (const Pending& p : pending_) {
    if (p.end > written_) break;  // not written in full: the target cannot have run it
    n += p.keys;
  }
  return n;
}

void RestoreLoader::settle(std::chrono::milliseconds timeout) {
  if (!reader_) return;
  const auto deadline = Clock::now() + timeout;
  char buf[kReadChunk];
  while (!pending_.empty() && pending_.front().end <= written_) {
    void* reply = nullptr;
    if (redisReaderGetReply(reader_, &reply) != REDIS_OK) return;
    if (reply) {
      // Stop errors come back as a Status here; the load has stopped already.
      (void)handle_reply(static_cast<redisReply*>(reply));
      freeReplyObject(reply);
      continue;
    }
    auto got = read_by(redis_.stream(), buf, deadline, "settle");
    if (!got.ok()) return;
    redisReaderFeed(reader_, buf, *got);
  }
}

Status RestoreLoader::pump(size_t max_pending, size_t max_out) {
  Stream& stream = redis_.stream();
  const std::string target = "target Redis " + redis_.endpoint().to_string();
  char buf[kReadChunk];
  for (;;) {
    size_t unsent = out_.size() - out_pos_;
    if (unsent <= max_out && pending_.size() <= max_pending) break;
    if (!stream.buffered()) {
      pollfd p{stream.fd(), poll_events(stream, unsent > 0), 0};
      int n = ::poll(&p, 1, static_cast<int>(io_timeout_.count()));
      if (n == 0)
        return Status::error("load into " + redis_.endpoint().to_string(),
                             "no progress for " + std::to_string(io_timeout_.count() / 1000) +
                                 " s (is the target Redis blocked?)")
            .as(ErrorKind::kUnavailable);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::from_errno("poll target Redis");
      }
    }
    // Both ways are tried: one that cannot go on returns at once.
    if (unsent) {
      auto w = stream.write_some(std::string_view(out_).substr(out_pos_));
      if (!w.ok()) return w.status().wrap(target);
      out_pos_ += *w;
      written_ += *w;
      if (out_pos_ == out_.size() || out_pos_ > (1u << 20)) {
        out_.erase(0, out_pos_);  // amortized: at most once per MiB written
        out_pos_ = 0;
      }
    }
    {
      auto r = stream.read_some(buf);
      if (!r.ok()) return r.status().wrap(target);
      if (r->closed)
        return Status::error("read from " + target,
                             "connection closed (did the target restart or run out of memory?)")
            .as(ErrorKind::kUnavailable);
      if (r->bytes == 0) continue;
      redisReaderFeed(reader_, buf, r->bytes);
      for (;;) {
        void* reply = nullptr;
        if (redisReaderGetReply(reader_, &reply) != REDIS_OK)
          return Status::error("parse target Redis reply", reader_->errstr).as(ErrorKind::kBadData);
        if (!reply) break;
        Status s = handle_reply(static_cast<redisReply*>(reply));
        freeReplyObject(reply);
        RRS_RETURN_IF_ERROR(s);
      }
    }
  }
  return {};
}

void RestoreLoader::on_probe_reply(const redisReply* reply) {
  if (reply->type == REDIS_REPLY_ERROR && probe_refused({reply->str, reply->len})) {
    if (!probe_refused_)
      log::info("the target's user may not run SET and MSET: strings go as RESTORE too (grant "
                "+set +mset for a faster load of small values)");
    probe_refused_ = true;
    return;
  }
  if (++probes_passed_ == probes_sent_ && !probe_refused_) plain_strings_ = true;
}

Status RestoreLoader::handle_reply(const redisReply* reply) {
  if (pending_.empty())
    return Status::error("read target Redis reply", "reply to no command").as(ErrorKind::kBadData);
  Pending p = std::move(pending_.front());
  pending_.pop_front();
  if (p.command == kProbe) {
    on_probe_reply(reply);
    return {};
  }
  if (reply->type != REDIS_REPLY_ERROR) {
    if (p.keys > 0) {
      stats_.keys += p.keys;
      stats_.bytes += p.bytes;
      stats_.per_db[p.db] += p.keys;
      if (p.has_ttl) stats_.per_db_volatile[p.db] += p.keys;
    }
    return {};
  }
  std::string_view err(reply->str, reply->len);
  const std::string where = "load into " + redis_.endpoint().to_string();
  // Errors that every following command would hit too: stop now, say why.
  if (p.keys == 0) {  // SELECT
    auto staged = staging_.find(p.db);
    if (staged != staging_.end())
      return Status::error(where, "SELECT " + std::to_string(staged->second) +
                                      " (the staging DB for DB " + std::to_string(p.db) +
                                      ") failed: " + std::string(err));
    return Status::error(where, "SELECT " + std::to_string(p.db) + " failed: " + std::string(err) +
                                    " (does the target have enough `databases`?)");
  }
  if (auto stop = stopping_error(err)) return Status::error(where, *stop);

  // Per-record failures: count, keep the first few in full, carry on.
  stats_.failed += p.keys;
  if (stats_.errors.size() < kMaxErrorsKept)
    stats_.errors.push_back(
        write_failure(p.command, p.keys, p.key, p.index, p.db, err, table_rdb_, target_));
  return {};
}

}  // namespace rrs
