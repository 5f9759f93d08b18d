// One client of VerbsTableServer: its cm_id, an RC QP whose only traffic is
// control messages (AUTH, keepalives, their answers), the CQ the server's
// sweeps poll (no completion channel: the server takes no completion
// events), its session, and what it was granted. Loop thread only.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/base/clock.h"
#include "common/transport/control_session.h"
#include "common/transport/verbs/message_slots.h"
#include "common/transport/verbs/owners.h"
#include "common/transport/verbs/protection.h"
#include "common/transport/verbs/queue_depths.h"

namespace rrs::verbs {

struct ServerConnection {
  explicit ServerConnection(const ServerTerms& terms) : session(terms) {}

  // Creates the CQ and QP (capabilities: server_qp_caps()) in `pd` and posts
  // every RECV before the accept, so the client's first message always
  // finds one. False (errno set) on failure.
  bool prepare(ibv_pd* pd);
  // SENDs one message from a free send slot; false when none is free or the
  // post fails.
  bool send(std::string_view msg);
  bool post_recv(uint64_t recv_wr_id);

  // Creation order; destroyed in reverse (grant, QP, message MR, CQ, PD, id).
  CmId id;
  // kPdPerClient: the PD of this client's QP, message buffers and grant,
  // shared with no other client (else the QP uses the device's PD). Its
  // registration in flight holds it too, so it outlives a client gone meanwhile.
  SharedProtectionDomain own_pd;
  CompletionQueue cq;
  MessageSlots<kServerRecvSlots, kServerSendSlots> msgs;
  QueuePair qp;
  std::optional<Grant> grant;

  // The handshake: until session.ready(), the client knows no rkey.
  ServerSession session;
  // Names this connection to work done off the loop (never reused; its
  // cm_id's address may be, by a later client).
  uint64_t serial = 0;
  // kPdPerClient, AUTH checked: its own copy of `table` is being registered
  // (RegistrationWorker); AUTH_OK with `server_proof` goes out when it is done.
  struct Registering {
    control::Proof server_proof;
    TablePtr table;
  };
  std::optional<Registering> registering;
  uint64_t epoch = 0;
  // The readable_length of the last descriptor it was sent (a streamed
  // epoch's registered prefix grows: VerbsTableServer::tell_grown).
  uint64_t told_readable = 0;
  std::string peer;
  Clock::time_point connected_at;
  Clock::time_point last_heard;
  // SENDs and BINDs posted and not yet completed (at most kServerSendSlots).
  uint32_t sends_in_flight = 0;
  // Told why it must go (an ERROR SEND); disconnected once that is out.
  std::optional<Clock::time_point> closing_since;
  // rdma_cm said ESTABLISHED (the client's RTU came). A client may SEND
  // before that: its QP is up as soon as it has our accept.
  bool established = false;
};

}  // namespace rrs::verbs
