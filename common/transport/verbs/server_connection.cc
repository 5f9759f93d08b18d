#include "common/transport/verbs/server_connection.h"

#include "common/transport/verbs/work_request.h"

namespace rrs::verbs {

bool ServerConnection::prepare(ibv_pd* pd) {
  cq = CompletionQueue(ibv_create_cq(id->verbs, kServerCqDepth, nullptr, nullptr, 0));
  if (!cq.get()) return false;
  if (!msgs.register_in(pd)) return false;
  ibv_qp_init_attr qpa{.qp_context = nullptr,
                       .send_cq = cq.get(),
                       .recv_cq = cq.get(),
                       .srq = nullptr,
                       .cap = server_qp_caps(),
                       .qp_type = IBV_QPT_RC,
                       .sq_sig_all = 0};
  if (rdma_create_qp(id.get(), pd, &qpa) != 0) return false;
  qp = QueuePair(id.get());
  return msgs.post_all_recvs(qp.get()) == 0;
}

bool ServerConnection::send(std::string_view msg) {
  if (sends_in_flight == kServerSendSlots || msg.size() > kMessageSlot) return false;
  if (msgs.post_send(qp.get(), msg, wr_id::kMessage) != 0) return false;
  ++sends_in_flight;
  return true;
}

bool ServerConnection::post_recv(uint64_t recv_wr_id) {
  return msgs.post_recv(qp.get(), wr_id::slot_of(recv_wr_id)) == 0;
}

}  // namespace rrs::verbs
