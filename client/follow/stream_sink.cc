#include "client/follow/stream_sink.h"

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
