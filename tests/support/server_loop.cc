#include "tests/support/server_loop.h"

#include <event2/thread.h>

#include <csignal>

#include "common/transport/verbs/device.h"

namespace rrs::test {

std::string verbs_address() {
  const char* a = std::getenv("RRS_VERBS_ADDR");
  return a ? a : "";
}

std::string verbs_unusable() {
  if (verbs_address().empty()) return "RRS_VERBS_ADDR is not set";
  auto device = rdma_device_active();
  return device.ok() ? "" : device.status().reason();
}

ServerLoop::~ServerLoop() {
  if (!base_) return;
  event_base_loopbreak(base_);
  if (thread_.joinable()) thread_.join();
  server_.reset();
  event_base_loop(base_, EVLOOP_NONBLOCK);  // finish deferred frees
  if (idle_) event_free(idle_);
  event_base_free(base_);
}

void ServerLoop::make_base() {
  // The base is reached from two threads (on_loop posts from the test's).
  evthread_use_pthreads();
  // The programs ignore SIGPIPE in main(): a TLS write (OpenSSL's, not
  // MSG_NOSIGNAL) to a client that left must not end the test either.
  std::signal(SIGPIPE, SIG_IGN);
  base_ = event_base_new();
}

void ServerLoop::run(std::unique_ptr<TableServer> server) {
  server_ = std::move(server);
  const std::string a = server_->address();
  port_ = static_cast<uint16_t>(std::stoi(a.substr(a.rfind(':') + 1)));
  // Keeps the loop alive while it has nothing else to wait for.
  idle_ = event_new(
      base_, -1, EV_PERSIST, [](evutil_socket_t, short, void*) {}, nullptr);
  const timeval tv{1, 0};
  event_add(idle_, &tv);
  thread_ = std::thread([this] { event_base_dispatch(base_); });
}

void ServerLoop::publish(TablePtr table) {
  Status s = on_loop([&] { return server_->publish(table); });
  EXPECT_TRUE(s.ok()) << s.message();
}

size_t ServerLoop::client_count() {
  return on_loop([this] { return server_->client_count(); });
}

}  // namespace rrs::test
