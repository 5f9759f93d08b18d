// VerbsTableServer, the clients' messages: AUTH and keepalives taken from
// each client's CQ (the server takes no completion events: one timer sweeps
// every client once per keepalive interval, another every kHandshakePoll
// those still in their handshake), answered as their sessions decide.
#include <algorithm>
#include <variant>
#include <vector>

#include "common/base/log.h"
#include "common/transport/serving_metrics.h"
#include "common/transport/verbs/table_server.h"
#include "common/transport/verbs/work_request.h"

namespace rrs {

using control::ErrorCode;

std::string VerbsTableServer::take_completions(Connection& c) {
  ibv_wc wc[verbs::kPollBatch];
  int n;
  while ((n = ibv_poll_cq(c.cq.get(), verbs::kPollBatch, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      // A malformed or oversized message, or a peer gone, ends the connection.
      if (wc[i].status != IBV_WC_SUCCESS)
        return std::string("completion error: ") + ibv_wc_status_str(wc[i].status);
      if (!verbs::wr_id::is_recv(wc[i].wr_id)) {
        --c.sends_in_flight;
        continue;
      }
      if (std::string why = take_message(c, wc[i]); !why.empty()) return why;
    }
  }
  return n < 0 ? "could not poll its CQ" : "";
}

// One RECV: the session says what it is and what to answer.
std::string VerbsTableServer::take_message(Connection& c, const ibv_wc& wc) {
  auto message = c.session.on_message(c.msgs.received(wc.wr_id, wc.byte_len));
  if (!message.ok() && !message.refusal().tell) return message.refusal().why;
  if (!c.post_recv(wc.wr_id)) return "could not post a receive";
  if (!message.ok()) {
    close_with(c, message.refusal());
    return "";
  }
  if (auto* auth = std::get_if<ServerSession::Auth>(&*message))
    return answer_auth(c, auth->server_proof);
  return answer_keepalive(c, std::get<ServerSession::Keepalive>(*message).seq);
}

std::string VerbsTableServer::answer_keepalive(Connection& c, uint64_t seq) {
  c.last_heard = Clock::now();
  // A client keeps one keepalive outstanding; one that floods us just misses answers.
  if (c.sends_in_flight == verbs::kServerSendSlots) return "";
  if (!c.send(control::encode_keepalive(control::MsgType::kKeepaliveAck, seq)))
    return "could not post a send";
  return "";
}

// The session has checked the client's proof: AUTH_OK with our own proof and
// the descriptor (the rkey's first trip), once the client's access is granted
// (grant(): under kPdPerClient, later, off the loop).
std::string VerbsTableServer::answer_auth(Connection& c, const control::Proof& server_proof) {
  if (auto d = c.session.offer(current_, control::TransportKind::kVerbs); !d.ok()) {
    close_with(c, c.session.refuse(d.refusal().code, d.refusal().why));
    return "";
  }
  if (c.session.holds_table(current_->epoch()))
    if (auto no = refuse_streamed(c.id->verbs, *current_)) {
      close_with(c, c.session.refuse(no->code, no->why));
      return "";
    }
  auto reg = registry_.registration_for(c.id->verbs, current_);
  if (!reg.ok()) {
    close_with(c, c.session.refuse(ErrorCode::kInternal, reg.status().message()));
    return "";
  }
  // A slot of max_clients only now that the secret is proved (this one, now
  // ready, not counted).
  size_t authenticated = 0;
  for (const auto& [id, other] : connections_)
    if (other.get() != &c && other->session.ready() && !other->closing_since) ++authenticated;
  auto no = ServerSession::admit(authenticated, limits_.access);
  if (!no) no = check_pinning(**reg);
  if (no) {
    close_with(c, c.session.refuse(no->code, no->why));
    return "";
  }
  c.epoch = current_->epoch();  // a newer epoch may have been published meanwhile
  c.last_heard = Clock::now();
  return grant(c, **reg, server_proof);
}

void VerbsTableServer::close_with(Connection& c, const Refusal& r) {
  ServingMetrics::refused(ServingTransport::kVerbs, r.code);
  log::warn_limited("verbs client refused", "verbs client " + c.peer + ": " +
                                                control::error_code_name(r.code) + ": " + r.why +
                                                "; disconnecting it");
  c.send(control::encode_error_message({r.code, r.why}));
  c.closing_since = Clock::now();
  arm_handshake_timer();
}

void VerbsTableServer::on_handshake_timer(evutil_socket_t, short, void* arg) {
  static_cast<VerbsTableServer*>(arg)->sweep_handshakes();
}

void VerbsTableServer::arm_handshake_timer() {
  for (const auto& [id, c] : connections_)
    if (!c->session.ready() || c->closing_since) {
      const timeval tv = to_timeval(verbs::kHandshakePoll);
      evtimer_add(handshake_timer_.get(), &tv);
      return;
    }
}

void VerbsTableServer::sweep_handshakes() {
  const auto now = Clock::now();
  std::vector<std::pair<rdma_cm_id*, std::string>> gone;
  for (auto& [id, c] : connections_) {
    if (c->session.ready() && !c->closing_since) continue;
    std::string why = take_completions(*c);
    if (!why.empty()) {
      gone.emplace_back(id, why + "; dropping it");
    } else if (c->closing_since) {
      if (c->sends_in_flight == 0 || now - *c->closing_since > verbs::kCloseGrace)
        gone.emplace_back(id, "disconnected");
    } else if (!c->session.ready() && now - c->connected_at > limits_.access.handshake_timeout) {
      close_with(*c, c->session.timed_out());
    }
  }
  for (const auto& [id, why] : gone) hang_up(id, why.c_str());
  arm_handshake_timer();
}

void VerbsTableServer::on_keepalive_timer(evutil_socket_t, short, void* arg) {
  static_cast<VerbsTableServer*>(arg)->sweep();
}

// One-sided READs are invisible to us, so silence is the only sign of a
// client whose host died or whose process hangs. Answers go out up to one
// interval late, well inside the client's limit of kKeepaliveMisses.
void VerbsTableServer::sweep() {
  const auto limit = limits_.keepalive_interval * control::kKeepaliveMisses;
  const auto now = Clock::now();
  std::vector<std::pair<rdma_cm_id*, std::string>> gone;
  for (auto& [id, c] : connections_) {
    if (!c->session.ready() || c->closing_since) continue;  // sweep_handshakes() has them
    std::string why = take_completions(*c);
    // One waiting for its registration sends nothing until AUTH_OK.
    if (why.empty() && !c->registering && now - c->last_heard > limit)
      why = "sent no keepalive for " +
            std::to_string(
                std::chrono::duration_cast<std::chrono::milliseconds>(now - c->last_heard)
                    .count()) +
            " ms";
    if (!why.empty()) gone.emplace_back(id, why + "; dropping it");
  }
  for (const auto& [id, why] : gone) hang_up(id, why.c_str());
}

}  // namespace rrs
