#include "client/follow/stream_sink.h"

#include "common/base/clock.h"
#include "common/base/log.h"

namespace rrs {

Status CommandSink::write(std::span<const std::byte> bytes) {
  parser_.feed(bytes);
  while (true) {
    auto cmd = parser_.next();
    if (!cmd.ok()) return cmd.status().wrap("parse the replication stream");
    if (!*cmd) return {};
    RRS_RETURN_IF_ERROR(applier_.add(**cmd, base_ + parser_.consumed()));
  }
}

Status CommandSink::caught_up() {
  if (guard_.keys.empty() || applier_.in_transaction()) return {};
  RRS_ASSIGN_OR_RETURN(uint64_t restored, applier_.restore_ttls(guard_));
  log_guard_given_back(guard_, restored);
  guard_ = TtlGuard{};
  return {};
}

void log_guard_given_back(const TtlGuard& guard, uint64_t restored) {
  log::info(std::to_string(restored) + " of the " + std::to_string(guard.keys.size()) +
            " keys loaded with a guard TTL (they expire within minutes) got their own TTL back; "
            "the master's stream changed the others");
  const auto waited = std::chrono::milliseconds(unix_ms() - guard.loaded_at_ms);
  if (waited > TtlGuard::kWindow)
    log::warn("catching up took " + std::to_string(waited.count() / 1000) +
              " s from the load, more than the guard's window of " +
              std::to_string(TtlGuard::kWindow.count()) +
              " minutes: a key that expired on the target by its own clock before the master's "
              "change to it arrived may be missing; --mode replica has no such window");
}

std::string CommandSink::progress() const {
  return "commands=" + std::to_string(applier_.commands());
}

Status StreamForwarder::write(std::span<const std::byte> bytes) {
  RRS_RETURN_IF_ERROR(
      link_.send(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
  position_ += bytes.size();
  return {};
}

std::string StreamForwarder::progress() const {
  return "acked=" + (link_.acked() ? std::to_string(*link_.acked()) : std::string("-"));
}

}  // namespace rrs
