// TableServer over TCP, driven by a libevent loop (the caller's event_base;
// every method runs on that loop's thread). Each client speaks the control
// protocol: HELLO, AUTH (when the server has a secret), GET_DESCRIPTOR, then
// any number of READs, answered from the published table without copying it
// (evbuffer references). With TLS, libevent's OpenSSL bufferevent carries
// the same frames; with kernel TLS the kernel encrypts what it sends.
#pragma once

#include <event2/event.h>
#include <event2/listener.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/net/endpoint.h"
#include "common/tls/tls_context.h"
#include "common/transport/control_session.h"
#include "common/transport/transport.h"

namespace rrs {

struct TcpServerLimits {
  // Answers a client may have queued and not yet taken before we stop
  // reading its requests: the max_in_flight HELLO_OK announces, enforced.
  uint32_t max_in_flight = 16;
  // Bytes of answers queued for one client (change-log bytes are copies;
  // table bytes are references that pin their epoch) before we stop reading
  // its requests: never more, unless one answer alone is bigger.
  size_t max_queued_bytes = 64u << 20;
  // A client must take each answer within this of its being queued, or it is
  // dropped: one that stops reading cannot pin a retired epoch any longer.
  std::chrono::milliseconds reply_timeout{60000};
  AccessPolicy access;
  // Whether the published table may be handed out (ServerTerms::demand).
  TableDemand* demand = nullptr;
  // TLS 1.3 on every connection (a kServer context for TlsWire::kTransport;
  // with a CA, clients must show a certificate it signed); null: plain TCP.
  std::shared_ptr<const TlsContext> tls;
};

class TcpTableServer final : public TableServer {
 public:
  static Result<std::unique_ptr<TcpTableServer>> listen(event_base* base, const Endpoint& at,
                                                        const TcpServerLimits& limits = {});
  // Closes every connection. libevent finishes freeing them on the loop's
  // next turn: the owner should run it once more (EVLOOP_NONBLOCK).
  ~TcpTableServer() override;

  Status publish(TablePtr table) override;
  bool streams() const override { return true; }
  std::string address() const override { return bound_.to_string(); }
  bool encrypted() const override { return limits_.tls != nullptr; }
  void disconnect_all() override;
  uint16_t port() const { return bound_.port; }
  // Every connection, in its handshake or authenticated.
  size_t client_count() const override { return clients_.size(); }
  size_t table_readers(uint64_t epoch) const override;
  // Per connection: answers queued and not yet taken by the kernel, and their
  // bytes. Loop thread only; for tests.
  struct Queue {
    size_t answers = 0, bytes = 0;
  };
  std::vector<Queue> queues_for_test() const;

  class Client;  // one connection; defined in the .cc

 private:
  TcpTableServer(event_base* base, const TcpServerLimits& limits)
      : base_(base),
        limits_(limits),
        terms_{limits.access, limits.max_in_flight, {}, limits.demand} {}
  static void on_accept(evconnlistener*, evutil_socket_t fd, sockaddr* addr, int len, void* arg);
  void drop(Client* c);

  friend class Client;
  event_base* base_;
  TcpServerLimits limits_;
  ServerTerms terms_;  // what every client's ServerSession offers
  Endpoint bound_;
  std::unique_ptr<evconnlistener, void (*)(evconnlistener*)> listener_{nullptr,
                                                                       evconnlistener_free};
  TablePtr table_;
  std::unordered_set<Client*> clients_;
  // Slots: connections still in their handshake (in all, and per peer
  // address), and authenticated ones (at most access.max_clients).
  size_t pending_ = 0, authenticated_ = 0;
  std::unordered_map<std::string, size_t> pending_by_host_;
};

}  // namespace rrs
