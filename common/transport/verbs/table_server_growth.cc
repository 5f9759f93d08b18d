// VerbsTableServer, an epoch served while it is written: registering all of
// its room would pin memory the table may never use, so it is registered in
// growing prefixes a step ahead of the writer (verbs::prefix_to_register),
// and every client reading it is sent the grown descriptor, unasked (its
// rkey, or a window bound onto the new prefix, and readable_length). A
// client never READs past what it was told; one that needs more waits for
// the next descriptor (VerbsTableReader::await_readable).
#include "common/base/log.h"
#include "common/transport/verbs/table_server.h"

namespace rrs {

void VerbsTableServer::on_grow_timer(evutil_socket_t, short, void* arg) {
  static_cast<VerbsTableServer*>(arg)->grow_streamed();
}

std::optional<Refusal> VerbsTableServer::refuse_streamed(ibv_context* device, const Table& t) {
  if (t.complete() || registry_.protection_for(device) != Protection::kPdPerClient)
    return std::nullopt;
  return Refusal{control::ErrorCode::kSnapshotPending,
                 "epoch " + std::to_string(t.epoch()) +
                     " is still being written; without memory windows each client registers "
                     "its own copy, so it is served once complete"};
}

void VerbsTableServer::grow_streamed() {
  if (!current_ || !current_->streamed()) {
    event_del(grow_timer_.get());
    return;
  }
  if (auto grown = registry_.grow(current_); !grown.ok()) {
    // Its clients wait for more, and give up after their --io-timeout.
    log::warn_limited("verbs registration growth",
                      grown.status()
                          .wrap("serve more of epoch " + std::to_string(current_->epoch()) +
                                " over verbs")
                          .message());
  }
  std::vector<std::pair<rdma_cm_id*, std::string>> gone;
  for (auto& [id, c] : connections_) {
    if (!c->session.holds_table(current_->epoch()) || !c->session.ready() || c->closing_since ||
        c->registering)
      continue;
    const verbs::Registration* r = registry_.find(c->id->verbs, current_);
    if (!r || c->told_readable >= verbs::describe(*r).readable_length) continue;
    if (std::string why = tell_grown(*c, *r); !why.empty()) gone.emplace_back(id, why);
  }
  for (const auto& [id, why] : gone) hang_up(id, (why + "; dropping it").c_str());
  // Written and registered to the end: nothing more to grow.
  if (current_->complete() && registry_.covers(current_)) {
    bool told = true;
    for (const auto& [id, c] : connections_)
      if (c->session.holds_table(current_->epoch()) && !c->closing_since)
        if (const verbs::Registration* r = registry_.find(c->id->verbs, current_))
          told = told && c->told_readable >= verbs::describe(*r).readable_length;
    if (told) event_del(grow_timer_.get());
  }
}

void VerbsTableServer::withdraw_streamed(uint64_t next) {
  const uint64_t epoch = current_->epoch();
  for (auto& [id, c] : connections_)
    if (c->session.holds_table(epoch) && !c->closing_since)
      close_with(*c, c->session.refuse(control::ErrorCode::kEpochGone,
                                       "epoch " + std::to_string(epoch) +
                                           " was withdrawn while it was being written (now " +
                                           std::to_string(next) + ")"));
}

std::string VerbsTableServer::tell_grown(Connection& c, const verbs::Registration& r) {
  // Its send slots come back as its completions are taken (else at the sweep).
  if (std::string why = take_completions(c); !why.empty()) return why;
  const uint32_t needed = r.protection == Protection::kWindowPerClient ? 2 : 1;
  if (c.sends_in_flight + needed > verbs::kServerSendSlots) return "";  // next time
  control::Descriptor d = verbs::describe(r);
  if (c.grant) {
    if (Status s = verbs::grant_grown(r, c.qp.get(), *c.grant, d, c.sends_in_flight); !s.ok())
      return s.message();
  }
  if (!c.send(control::encode_descriptor_message(d))) return "could not post a send";
  c.told_readable = d.readable_length;
  return "";
}

}  // namespace rrs
