// VerbsTableServer, what a client is given: the accept (HELLO_OK, the READ
// depth, the descriptor without a secret), its PD, and after AUTH its grant:
// windows bound at once, or under kPdPerClient its own copy of the epoch,
// registered by the RegistrationWorker off the loop while the loop serves
// everyone else, and answered when it is done. Also what those copies pin.
#include <algorithm>

#include "common/base/log.h"
#include "common/transport/verbs/device.h"
#include "common/transport/verbs/table_server.h"

namespace rrs {

using control::ErrorCode;

bool VerbsTableServer::accept(Connection& c, const verbs::Registration& r,
                              const control::HelloOk& hello, const rdma_conn_param& param) {
  ibv_device_attr dev{};
  ibv_query_device(c.id->verbs, &dev);
  control::Accept accept;
  accept.hello = hello;
  // With a secret, the rkey goes out only after AUTH (answer_auth).
  if (c.session.ready()) {
    accept.descriptor = verbs::describe(r);
    c.told_readable = accept.descriptor->readable_length;
  }
  std::string data = control::encode_accept(accept);
  rdma_conn_param cp{};
  cp.private_data = data.data();
  cp.private_data_len = static_cast<uint8_t>(data.size());
  // We answer READs (responder); we never issue them. In a CONNECT_REQUEST,
  // responder_resources is what the peer asks of us (its initiator depth).
  // Never more than the READs we allow in flight: rdma_cm sets the client's
  // QP to what we grant here, so its hardware holds it to our limit.
  cp.responder_resources = static_cast<uint8_t>(
      std::min({static_cast<uint32_t>(param.responder_resources),
                static_cast<uint32_t>(std::max(dev.max_qp_rd_atom, 0)), limits_.max_in_flight}));
  cp.initiator_depth = 0;
  return rdma_accept(c.id.get(), &cp) == 0;
}

// Under kPdPerClient each client pins the epoch's table and log once more:
// refused ("server full", so it retries) when RLIMIT_MEMLOCK cannot cover
// that on top of what is pinned already (copies being registered included),
// rather than failing in ibv_reg_mr.
std::optional<Refusal> VerbsTableServer::check_pinning(const verbs::Registration& r) const {
  if (r.protection != Protection::kPdPerClient) return std::nullopt;
  uint64_t pinned = registry_.pinned_bytes();
  for (const auto& [id, c] : connections_) {
    if (c->grant) pinned += verbs::pinned_bytes(*c->grant);
    if (c->registering) pinned += verbs::copy_bytes(*c->registering->table);
  }
  Status s = check_memlock(pinned + verbs::copy_bytes(*r.table), limits_.test_memlock_limit);
  if (s.ok()) return std::nullopt;
  // The key words first: a reject's private data cuts the text at ~120 bytes.
  return Refusal{ErrorCode::kServerFull,
                 "RLIMIT_MEMLOCK cannot cover one more pinned copy of the table (no memory "
                 "windows: each client pins its own): " +
                     s.reason()};
}

Result<ibv_pd*> VerbsTableServer::pd_for_client(Connection& c, const verbs::Registration& r) {
  if (r.protection != Protection::kPdPerClient) return registry_.pd_for(r.device);
  c.own_pd = verbs::ProtectionDomain(ibv_alloc_pd(r.device));
  if (!c.own_pd) return Status::from_errno("ibv_alloc_pd");
  return c.own_pd.get();
}

// Windows are bound at once (work requests on the client's own QP); under
// kPdPerClient the client's copy is registered off the loop and AUTH_OK
// waits for it (on_registered).
std::string VerbsTableServer::grant(Connection& c, const verbs::Registration& r,
                                    const control::Proof& server_proof) {
  if (r.protection == Protection::kPdPerClient) {
    if (!worker_) {
      auto w = verbs::RegistrationWorker::start(
          base_, [this](verbs::RegistrationWorker::Done d) { on_registered(std::move(d)); },
          limits_.test_registration_delay);
      if (!w.ok()) {
        close_with(c, c.session.refuse(ErrorCode::kInternal, w.status().message()));
        return "";
      }
      worker_ = std::move(*w);
    }
    c.registering = Connection::Registering{server_proof, r.table};
    worker_->submit({c.serial, r.table, c.own_pd});
    log::info("verbs client " + c.peer + ": registering its own copy of epoch " +
              std::to_string(c.epoch) + " (" + std::to_string(verbs::copy_bytes(*r.table) >> 20) +
              " MiB) off the event loop");
    return "";
  }
  control::Descriptor d = verbs::describe(r);
  Status granted = verbs::grant_access(r, c.qp.get(), c.grant, d, c.sends_in_flight);
  if (!granted.ok()) {
    close_with(c, c.session.refuse(ErrorCode::kInternal, granted.message()));
    return "";
  }
  return send_auth_granted(c, server_proof, d);
}

std::string VerbsTableServer::send_auth_granted(Connection& c, const control::Proof& server_proof,
                                                const control::Descriptor& d) {
  if (!c.send(control::encode_auth_granted({server_proof, d}))) return "could not post a send";
  c.told_readable = d.readable_length;
  log::info_limited("verbs client authenticated", "verbs client " + c.peer +
                                                      " authenticated (epoch " +
                                                      std::to_string(c.epoch) + ")");
  return "";
}

// A registration is done. The client is looked up by its serial: it may have
// gone meanwhile (then `done` releases its MRs, then the PD, here). The grant
// is for the epoch the client was given at AUTH: retired since, it is served
// while its grace lasts, as to any client of it; already unregistered, the
// client is told the epoch is gone and reconnects to the current one.
void VerbsTableServer::on_registered(verbs::RegistrationWorker::Done done) {
  auto it = std::find_if(connections_.begin(), connections_.end(),
                         [&](const auto& kv) { return kv.second->serial == done.client; });
  if (it == connections_.end()) return;
  Connection& c = *it->second;
  if (!c.registering) return;
  const control::Proof server_proof = c.registering->server_proof;
  c.registering.reset();
  if (c.closing_since) return;
  if (!done.grant.ok()) {
    close_with(c, c.session.refuse(ErrorCode::kInternal, done.grant.status().message()));
    return;
  }
  const verbs::Registration* r = registry_.find(c.id->verbs, done.table);
  if (!r) {
    const std::string now = current_ ? std::to_string(current_->epoch()) : "none";
    close_with(c, c.session.refuse(ErrorCode::kEpochGone,
                                   "epoch " + std::to_string(c.epoch) +
                                       " was replaced while it was registered (now " + now + ")"));
    return;
  }
  control::Descriptor d = verbs::describe(*r);
  c.grant = std::move(*done.grant);
  verbs::put_rkeys(*c.grant, d);
  c.last_heard = Clock::now();  // its keepalives start now
  if (std::string why = send_auth_granted(c, server_proof, d); !why.empty())
    hang_up(it->first, (why + "; dropping it").c_str());
}

}  // namespace rrs
