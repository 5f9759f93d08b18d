#include "client/cluster/cluster_stream_sink.h"

#include <poll.h>

#include <algorithm>
#include <thread>

#include "client/cluster/cluster_ttl_guard.h"
#include "client/cluster/keyless_units.h"
#include "common/base/log.h"

namespace rrs {
namespace {

// Units unacknowledged at once before write() waits for replies: enough to
// keep every master busy, few enough to bound what is held for resending.
constexpr size_t kMaxUnacked = 16384;
// A unit redirected or resent this often is going round in circles.
constexpr uint32_t kMaxHops = 16;
// Before a unit is sent again after TRYAGAIN, CLUSTERDOWN or a lost master.
constexpr std::chrono::milliseconds kRetryAfter{100};
// Connecting to a master blocks the loop; a failed-over one is not waited on.
constexpr std::chrono::milliseconds kMaxConnectWait{2000};

}  // namespace

Result<std::unique_ptr<ClusterStreamSink>> ClusterStreamSink::create(const ClientConfig& config,
                                                                     ClusterTarget& target,
                                                                     uint64_t position,
                                                                     SlotRanges slots,
                                                                     TtlGuard guard) {
  auto lookup = RedisClient::connect(config.redis, target.credentials(), target.io_timeout());
  if (!lookup.ok())
    return lookup.status()
        .wrap("connect to the target cluster to follow")
        .as(ErrorKind::kUnavailable);
  auto sink = std::unique_ptr<ClusterStreamSink>(
      new ClusterStreamSink(target, position, std::move(slots), std::move(*lookup)));
  sink->guard_ = std::move(guard);
  return sink;
}

ClusterStreamSink::ClusterStreamSink(ClusterTarget& target, uint64_t position, SlotRanges slots,
                                     RedisClient lookup)
    : target_(target),
      map_(target.first_map()),
      slots_(std::move(slots)),
      lookup_(std::move(lookup)),
      keys_([this](const std::vector<std::string_view>& argv) { return lookup_.command(argv); }),
      base_(position),
      applied_(position) {
  map_stale_ = true;  // the load may have been redirected since the first map
}

Status ClusterStreamSink::write(std::span<const std::byte> bytes) {
  parser_.feed(bytes);
  while (true) {
    auto cmd = parser_.next();
    if (!cmd.ok()) return cmd.status().wrap("parse the replication stream");
    if (!*cmd) return {};
    RRS_ASSIGN_OR_RETURN(auto unit, units_.add((*cmd)->args, base_ + parser_.consumed()));
    if (unit) RRS_RETURN_IF_ERROR(add(*unit));
    if (unacked_.size() >= kMaxUnacked) RRS_RETURN_IF_ERROR(pump(kMaxUnacked / 2));
  }
}

Status ClusterStreamSink::add(const StreamUnit& unit) {
  RRS_ASSIGN_OR_RETURN(UnitRoute route, route_unit(unit, keys_));
  if (route.where == UnitRoute::Where::kAllMasters) return to_all_masters(unit);
  if (route.where == UnitRoute::Where::kShardSlots) return flush_shard(unit);
  const uint64_t seq = next_seq_++;
  if (route.where == UnitRoute::Where::kNowhere) {
    unacked_[seq] = {unit.end, 0, unit.describe(), false};
    acknowledge(seq);
    return {};
  }
  RoutedCommand c;
  c.slot = route.slot;
  c.multi_key = route.multi_key;
  c.index = seq;
  c.key = unit.describe();
  c.wire = unit.wire(c.replies);
  c.bytes = c.wire.size();
  unacked_[seq] = {unit.end, static_cast<uint32_t>(unit.commands.size()), c.key, false};
  submit(std::move(c));
  return {};
}

Status ClusterStreamSink::to_all_masters(const StreamUnit& unit) {
  RRS_RETURN_IF_ERROR(pump(0));  // what came before it, first
  RRS_RETURN_IF_ERROR(send_to_every_master(target_, unit));
  broadcast_++;
  commands_++;
  applied_ = unit.end;
  return {};
}

Status ClusterStreamSink::flush_shard(const StreamUnit& unit) {
  RRS_RETURN_IF_ERROR(pump(0));  // what came before it, first
  auto deleted = flush_slots(target_, slots_);
  if (!deleted.ok())
    return deleted.status().wrap("apply " + unit.describe() + " (ending at stream offset " +
                                 std::to_string(unit.end) + ") to the source shard's slots " +
                                 slots_.to_string());
  log::info(unit.describe() + " on source shard " + slots_.to_string() + ": deleted its " +
            std::to_string(*deleted) + " keys from the target");
  flushes_++;
  commands_++;
  applied_ = unit.end;
  return {};
}

NodePipeline* ClusterStreamSink::pipeline(const Endpoint& node) {
  const std::string name = node.to_string();
  if (auto it = pipelines_.find(name); it != pipelines_.end()) return &it->second;
  auto p = NodePipeline::connect(node, target_.credentials(),
                                 std::min<std::chrono::milliseconds>(target_.io_timeout(),
                                                                     kMaxConnectWait));
  if (!p.ok()) {
    log::warn("cluster master " + name + " unreachable: " + p.status().message());
    return nullptr;
  }
  return &pipelines_.emplace(name, std::move(*p)).first->second;
}

void ClusterStreamSink::submit(RoutedCommand command) {
  const uint16_t slot = command.slot;
  if (!holds_.must_wait(slot, command.multi_key)) {
    const int owner = map_.owner(slot);
    if (NodePipeline* p = owner == SlotMap::kUnowned ? nullptr : pipeline(map_.masters()[owner])) {
      holds_.sent(command);
      p->resend(std::move(command), false);
      return;
    }
    map_stale_ = true;
    return holds_.hold({Clock::now() + kRetryAfter, std::move(command), std::nullopt});
  }
  holds_.hold({Clock::now(), std::move(command), std::nullopt});
}

void ClusterStreamSink::release_due(Clock::time_point now) {
  const bool reached = holds_.release_due(now, kRetryAfter, [this](SlotHolds::Held& h) {
    const int owner = map_.owner(h.command.slot);
    NodePipeline* p = h.ask                        ? pipeline(*h.ask)
                      : owner == SlotMap::kUnowned ? nullptr
                                                   : pipeline(map_.masters()[owner]);
    if (p == nullptr) return false;
    p->resend(std::move(h.command), h.ask.has_value());
    return true;
  });
  if (!reached) map_stale_ = true;
}

void ClusterStreamSink::acknowledge(uint64_t seq) {
  auto it = unacked_.find(seq);
  if (it == unacked_.end()) return;
  it->second.acked = true;
  while (!unacked_.empty() && unacked_.begin()->second.acked) {
    applied_ = unacked_.begin()->second.end;
    commands_ += unacked_.begin()->second.commands;
    unacked_.erase(unacked_.begin());
  }
}

void ClusterStreamSink::on_outcome(CommandOutcome o) {
  using What = CommandOutcome::What;
  RoutedCommand& c = o.command;
  holds_.answered(c.slot, c.index);
  if (o.what == What::kLoaded) return acknowledge(c.index);
  if (o.what != What::kFailed && ++c.hops > kMaxHops) {
    o.what = What::kFailed;
    o.error = "sent " + std::to_string(kMaxHops) + " times without being applied (last: " +
              (o.error.empty() ? "a redirection" : o.error) + ")";
  }
  const auto now = Clock::now();
  switch (o.what) {
    case What::kLoaded: return;
    case What::kFailed: {
      if (!stop_.ok()) return;
      const uint64_t end = unacked_.contains(c.index) ? unacked_[c.index].end : 0;
      stop_ = Status::error("apply the replication stream to the cluster",
                            "the target refused " + c.key + " (ending at stream offset " +
                                std::to_string(end) + "): " + o.error.substr(0, 300) +
                                ". Stopping rather than let the target diverge further: it "
                                "holds the stream up to offset " +
                                std::to_string(applied_));
      return;
    }
    case What::kRedirect:
      if (o.redirect.ask) {
        asked_++;
        return holds_.hold({now, std::move(c), o.redirect.to});
      }
      moved_++;
      map_.move(o.redirect.slot, o.redirect.to);
      return holds_.hold({now, std::move(c), std::nullopt});
    case What::kRetry:
      retried_++;
      if (o.error.rfind("CLUSTERDOWN", 0) == 0) map_stale_ = true;
      return holds_.hold({now + kRetryAfter, std::move(c), std::nullopt});
  }
}

void ClusterStreamSink::drop_pipeline(const std::string& node, const Status& why) {
  auto it = pipelines_.find(node);
  if (it == pipelines_.end()) return;
  std::vector<RoutedCommand> again = it->second.take_unanswered();
  pipelines_.erase(it);
  map_stale_ = true;
  log::warn("lost cluster master " + node + ": " + why.message() + "; sending its " +
            std::to_string(again.size()) + " unanswered stream units again by a fresh slot map");
  for (RoutedCommand& c : again) {
    resent_++;
    c.hops++;
    holds_.answered(c.slot, c.index);
    holds_.hold({Clock::now() + kRetryAfter, std::move(c), std::nullopt});
  }
}

Status ClusterStreamSink::step(std::chrono::milliseconds max_wait, Clock::time_point& last_answer) {
  const auto now = Clock::now();
  if (map_stale_ && !holds_.empty()) {
    if (auto fresh = target_.refresh_map(); fresh.ok()) {
      map_ = std::move(*fresh);
      map_stale_ = false;
    }
  }
  release_due(now);
  auto wait = target_.io_timeout() -
              std::chrono::duration_cast<std::chrono::milliseconds>(now - last_answer);
  if (wait.count() <= 0)
    return Status::error("apply the replication stream to the cluster",
                         "no answer from any master for " +
                             std::to_string(target_.io_timeout().count() / 1000) + " s; " +
                             std::to_string(unacked_.size()) + " stream units unacknowledged")
        .as(ErrorKind::kUnavailable);
  wait = std::min(wait, max_wait);
  if (!holds_.empty()) wait = std::min(wait, kRetryAfter);
  return poll_pipelines(wait, last_answer);
}

Status ClusterStreamSink::poll_pipelines(std::chrono::milliseconds wait,
                                         Clock::time_point& last_answer) {
  bool answered = false;
  Status s = rrs::poll_pipelines(
      pipelines_, wait, [this](const std::string&, CommandOutcome o) { on_outcome(std::move(o)); },
      [this](const std::string& node, const Status& why) { drop_pipeline(node, why); }, answered);
  if (answered) last_answer = Clock::now();
  return s;
}

Status ClusterStreamSink::pump(size_t max_unacked) {
  auto last_answer = Clock::now();
  while (unacked_.size() > max_unacked && stop_.ok())
    RRS_RETURN_IF_ERROR(step(target_.io_timeout(), last_answer));
  return stop_;
}

Status ClusterStreamSink::send() {
  auto last_answer = Clock::now();
  RRS_RETURN_IF_ERROR(step(std::chrono::milliseconds(0), last_answer));
  return stop_;
}

Status ClusterStreamSink::collect() { return pump(0); }

Status ClusterStreamSink::caught_up() {
  if (guard_.keys.empty() || units_.in_block() || !unacked_.empty()) return {};
  RRS_ASSIGN_OR_RETURN(uint64_t restored, restore_guarded_ttls(target_, guard_));
  log_guard_given_back(guard_, restored);
  guard_ = TtlGuard{};
  return {};
}

std::string ClusterStreamSink::progress() const {
  return "commands=" + std::to_string(commands_) + " moved=" + std::to_string(moved_) +
         " asked=" + std::to_string(asked_) + " retried=" + std::to_string(retried_) +
         " resent=" + std::to_string(resent_) + " all_masters=" + std::to_string(broadcast_) +
         " flushes=" + std::to_string(flushes_);
}

}  // namespace rrs
