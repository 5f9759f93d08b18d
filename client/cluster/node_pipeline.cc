#include "client/cluster/node_pipeline.h"

#include <poll.h>

#include <thread>

#include "client/cluster/slot_msets.h"
#include "client/restore/restore_command.h"
#include "proto/resp_writer.h"

namespace rrs {
namespace {

constexpr size_t kReadChunk = size_t{64} * 1024;
// Bytes already answered are dropped from the front of the buffer in steps
// of at least this much, and at least as much as stays (what stays is
// moved: so each byte is moved at most about once).
constexpr uint64_t kTrimStep = uint64_t{1} << 20;

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

Result<NodePipeline> NodePipeline::connect(const Endpoint& node, const RedisCredentials& creds,
                                           std::chrono::milliseconds timeout) {
  auto c = RedisClient::connect(node, creds, timeout);
  if (!c.ok()) return c.status().as(ErrorKind::kUnavailable);
  NodePipeline p(std::move(*c));
  p.reader_ = redisReaderCreate();
  if (p.reader_ == nullptr) return Status::error("connect to " + node.to_string(), "out of memory");
  return p;
}

NodePipeline::NodePipeline(NodePipeline&& o) noexcept
    : redis_(std::move(o.redis_)),
      reader_(std::exchange(o.reader_, nullptr)),
      out_(std::move(o.out_)),
      out_base_(o.out_base_),
      appended_(o.appended_),
      written_(o.written_),
      pending_(std::move(o.pending_)) {}

NodePipeline& NodePipeline::operator=(NodePipeline&& o) noexcept {
  if (this == &o) return *this;
  if (reader_) redisReaderFree(reader_);
  redis_ = std::move(o.redis_);
  reader_ = std::exchange(o.reader_, nullptr);
  out_ = std::move(o.out_);
  out_base_ = o.out_base_;
  appended_ = o.appended_;
  written_ = o.written_;
  pending_ = std::move(o.pending_);
  return *this;
}

NodePipeline::~NodePipeline() {
  if (reader_) redisReaderFree(reader_);
}

void NodePipeline::write_record(uint16_t slot, uint64_t index, std::string_view key,
                                int64_t expire_at_ms, std::string_view payload,
                                std::optional<std::string_view> value) {
  Pending p;
  p.command.slot = slot;
  p.command.index = index;
  p.command.bytes = key.size() + payload.size();
  p.command.key = key;
  p.start = appended_;
  append_write(out_, key, expire_at_ms, payload, value);
  appended_ = out_base_ + out_.size();
  p.end = appended_;
  pending_.push_back(std::move(p));
}

void NodePipeline::write_mset(uint16_t slot, SlotMsets& msets) {
  Pending p;
  p.start = appended_;
  p.command = msets.flush(slot, out_);
  appended_ = out_base_ + out_.size();
  p.end = appended_;
  pending_.push_back(std::move(p));
}

uint64_t NodePipeline::keys_in_flight() const {
  uint64_t n = 0;
  for (const Pending& p : pending_)
    if (!p.asking) n += p.command.keys();
  return n;
}

void NodePipeline::push(Pending p, std::string_view wire) {
  p.start = appended_;
  out_.append(wire);
  appended_ = out_base_ + out_.size();
  p.end = appended_;
  pending_.push_back(std::move(p));
}

void NodePipeline::resend(RoutedCommand command, bool asking) {
  if (asking) {
    std::string wire;
    resp::append_command(wire, {"ASKING"});
    Pending a;
    a.asking = true;
    push(std::move(a), wire);
  }
  const std::string wire = std::move(command.wire);
  command.wire.clear();
  Pending p;
  p.command = std::move(command);
  push(std::move(p), wire);
}

short NodePipeline::events() { return poll_events(redis_.stream(), unsent_bytes() > 0); }

std::string_view NodePipeline::bytes_of(const Pending& p) const {
  return std::string_view(out_).substr(static_cast<size_t>(p.start - out_base_),
                                       static_cast<size_t>(p.end - p.start));
}

void NodePipeline::trim() {
  const uint64_t keep_from = pending_.empty() ? written_ : pending_.front().start;
  const uint64_t drop = std::min(keep_from, written_) - out_base_;
  if (drop < out_.size() && (drop < kTrimStep || drop < out_.size() - drop)) return;
  out_.erase(0, static_cast<size_t>(drop));
  out_base_ += drop;
}

Status NodePipeline::write_some() {
  const size_t unsent = unsent_bytes();
  if (unsent == 0) return {};
  const size_t from = static_cast<size_t>(written_ - out_base_);
  auto w = redis_.stream().write_some(std::string_view(out_).substr(from, unsent));
  if (!w.ok()) return w.status().wrap("cluster node " + endpoint().to_string());
  written_ += *w;
  return {};
}

Status NodePipeline::read_some(std::vector<CommandOutcome>& outcomes) {
  char buf[kReadChunk];
  auto r = redis_.stream().read_some(buf);
  if (!r.ok()) return r.status().wrap("cluster node " + endpoint().to_string());
  if (r->closed)
    return Status::error("read from cluster node " + endpoint().to_string(),
                         "connection closed (a failover, a restart, or out of memory?)")
        .as(ErrorKind::kUnavailable);
  if (r->bytes == 0) return {};
  redisReaderFeed(reader_, buf, r->bytes);
  for (;;) {
    void* reply = nullptr;
    if (redisReaderGetReply(reader_, &reply) != REDIS_OK)
      return Status::error("parse a reply of cluster node " + endpoint().to_string(),
                           reader_->errstr)
          .as(ErrorKind::kBadData);
    if (reply == nullptr) return {};
    Status s = on_reply(*static_cast<redisReply*>(reply), outcomes);
    freeReplyObject(reply);
    RRS_RETURN_IF_ERROR(s);
  }
}

std::optional<std::string> NodePipeline::block_error(const Pending& p, const redisReply& exec) {
  // A queued command refused (MOVED, ASK, TRYAGAIN inside MULTI) aborts
  // the block: its error says what to do.
  if (!p.first_error.empty()) return p.first_error;
  if (exec.type == REDIS_REPLY_ERROR) return std::string(exec.str, exec.len);
  if (exec.type != REDIS_REPLY_ARRAY) return std::string("EXEC did not run the block");
  for (size_t i = 0; i < exec.elements; ++i)
    if (exec.element[i]->type == REDIS_REPLY_ERROR)
      return "command " + std::to_string(i + 1) +
             " of the block failed: " + std::string(exec.element[i]->str, exec.element[i]->len);
  return std::nullopt;
}

Status NodePipeline::on_reply(const redisReply& reply, std::vector<CommandOutcome>& outcomes) {
  if (pending_.empty() || pending_.front().end > written_)
    return Status::error("read cluster node " + endpoint().to_string(), "a reply to no command")
        .as(ErrorKind::kBadData);
  Pending& front = pending_.front();
  if (++front.replied < front.command.replies) {  // MULTI, or a queued command
    if (reply.type == REDIS_REPLY_ERROR && front.first_error.empty())
      front.first_error.assign(reply.str, reply.len);
    return {};
  }
  Pending p = std::move(front);
  pending_.pop_front();
  if (p.asking) return {};  // what follows says whether the ASK worked
  CommandOutcome o;
  std::optional<std::string> error;
  if (p.command.replies > 1)
    error = block_error(p, reply);
  else if (reply.type == REDIS_REPLY_ERROR)
    error = std::string(reply.str, reply.len);
  if (!error) {
    o.command = std::move(p.command);
    outcomes.push_back(std::move(o));
    return {};
  }
  const std::string_view err = *error;
  if (auto stop = stopping_error(err))
    return Status::error("apply to cluster node " + endpoint().to_string(), *stop);
  if (auto redirect = parse_redirect(err)) {
    o.what = CommandOutcome::What::kRedirect;
    o.redirect = *redirect;
  } else if (starts_with(err, "TRYAGAIN") || starts_with(err, "CLUSTERDOWN")) {
    o.what = CommandOutcome::What::kRetry;
    o.error = std::string(err);
  } else {
    o.what = CommandOutcome::What::kFailed;
    o.error = std::string(err);
  }
  if (o.what != CommandOutcome::What::kFailed) p.command.wire = std::string(bytes_of(p));
  o.command = std::move(p.command);
  outcomes.push_back(std::move(o));
  return {};
}

Status NodePipeline::on_events(short revents, std::vector<CommandOutcome>& outcomes) {
  // Either way may be what TLS waited for: both are tried when the socket
  // moved (a try that cannot go on returns at once).
  if (revents != 0) RRS_RETURN_IF_ERROR(write_some());
  if (revents != 0 || redis_.stream().buffered()) RRS_RETURN_IF_ERROR(read_some(outcomes));
  trim();
  return {};
}

std::vector<RoutedCommand> NodePipeline::take_unanswered() {
  std::vector<RoutedCommand> out;
  for (Pending& p : pending_) {
    if (p.asking) continue;
    p.command.wire = std::string(bytes_of(p));
    out.push_back(std::move(p.command));
  }
  pending_.clear();
  return out;
}

Status poll_pipelines(PipelineMap& pipelines, std::chrono::milliseconds wait,
                      const std::function<void(const std::string&, CommandOutcome)>& on_outcome,
                      const std::function<void(const std::string&, const Status&)>& on_lost,
                      bool& answered) {
  std::vector<pollfd> fds;
  std::vector<std::string> names;
  bool buffered = false;  // replies TLS decrypted already: no waiting
  for (auto& [name, p] : pipelines) {
    if (p.in_flight() == 0 && p.unsent_bytes() == 0) continue;
    fds.push_back({p.fd(), p.events(), 0});
    names.push_back(name);
    buffered = buffered || p.buffered();
  }
  if (fds.empty()) {
    if (wait.count() > 0) std::this_thread::sleep_for(wait);
    return {};
  }
  const int n = ::poll(fds.data(), fds.size(), buffered ? 0 : static_cast<int>(wait.count()));
  if (n < 0 && errno != EINTR) return Status::from_errno("poll the target cluster's masters");
  if (n <= 0 && !buffered) return {};
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0 && !pipelines.at(names[i]).buffered()) continue;
    std::vector<CommandOutcome> outcomes;
    Status s = pipelines.at(names[i]).on_events(fds[i].revents, outcomes);
    answered = answered || !outcomes.empty();
    for (CommandOutcome& o : outcomes) on_outcome(names[i], std::move(o));
    if (s.ok()) continue;
    if (s.kind() != ErrorKind::kUnavailable) return s;
    on_lost(names[i], s);
  }
  return {};
}

}  // namespace rrs
