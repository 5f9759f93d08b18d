// The protection-domain-per-client fallback (no memory windows, forced on
// rxe with the server's test hook) registers the table again for every
// authenticated client, which pins every page of it: seconds for a table of
// many GiB. That runs off the server's event loop, so while one client's
// registration is in flight every other client is still served. The
// registration's time is stretched with the test hook
// (VerbsServerLimits::test_registration_delay, rdma-server's
// $RRS_TEST_PD_REGISTRATION_DELAY_MS) over a table of a few tens of MB.
//
// Verbs only: tests/vm/verbs-suite.sh runs these on Soft-RoCE; elsewhere they
// skip (and fail under RRS_REQUIRE_VERBS=1).
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <thread>

#include "common/transport/verbs/table_reader.h"
#include "common/transport/verbs/table_server.h"
#include "server/table_builder.h"
#include "tests/support/fake_payload.h"
#include "tests/support/server_loop.h"

namespace rrs {

// What the server holds, for the checks that nothing outlives its client.
class VerbsTableServerTestPeer {
 public:
  explicit VerbsTableServerTestPeer(const VerbsTableServer& s) : s_(s) {}
  size_t own_mrs() const {
    size_t n = 0;
    for (const auto& [id, c] : s_.connections_) n += c->grant && c->grant->table_mr != nullptr;
    return n;
  }
  size_t registrations_in_flight() const { return s_.registrations_in_flight(); }

 private:
  const VerbsTableServer& s_;
};

namespace {

using namespace std::chrono_literals;
constexpr const char* kSecret = "registration-secret-0123456789";
// The registration's time in the first case: the others set their own.
constexpr auto kDelay = 4000ms;

// A table of ~24 MiB: 24 records of 1 MiB.
std::shared_ptr<Table> big_table(uint64_t epoch) {
  TableBuilder b;
  b.set_source({{Engine::kRedis, 7, 0, 15}, table::SourceKind::kScan, 0, {}});
  for (int i = 0; i < 24; ++i)
    b.add(0, "key:" + std::to_string(i), test::fake_payload(1u << 20, static_cast<char>('a' + i)),
          -1);
  auto t = b.build(epoch);
  EXPECT_TRUE(t.ok());
  return *t;
}

Status read_once(TableReader& reader) {
  std::vector<std::byte> buf(256);
  RRS_RETURN_IF_ERROR(reader.register_buffer(buf));
  TableRead read{1, 0, buf, control::Region::kTable};
  Status s = reader.post_reads({&read, 1});
  std::vector<uint64_t> done;
  if (s.ok()) s = reader.poll(done, 5000ms);
  reader.unregister_buffer(buf);
  return s;
}

class VerbsRegistration : public ::testing::Test {
 protected:
  void SetUp() override {
    RRS_SKIP_WITHOUT_VERBS();
    limits_.access.secret = kSecret;
    limits_.access.max_clients = 4;
    limits_.test_no_memory_windows = true;
    limits_.test_registration_delay = kDelay;
    // Keepalives every 300 ms: a client gives up on a server silent for 1.5 s.
    limits_.keepalive_interval = 300ms;
  }
  void start() {
    loop_ = std::make_unique<test::ServerLoop>();
    Status s = loop_->start([&](event_base* base) {
      return VerbsTableServer::listen(base, {test::verbs_address(), 0}, limits_);
    });
    ASSERT_TRUE(s.ok()) << s.message();
  }
  std::unique_ptr<VerbsTableReader> reader() {
    return std::make_unique<VerbsTableReader>(Endpoint{test::verbs_address(), loop_->port()},
                                              20000ms, kSecret);
  }
  template <typename F>
  auto with_peer(F f) {
    return loop_->on_loop([&] {
      return f(VerbsTableServerTestPeer(static_cast<VerbsTableServer&>(loop_->server())));
    });
  }
  size_t in_flight() {
    return with_peer([](const auto& p) { return p.registrations_in_flight(); });
  }
  // Waits for `n` registrations in flight (asking the loop: a stalled loop
  // answers late).
  bool in_flight_becomes(size_t n, std::chrono::milliseconds within) {
    for (auto until = Clock::now() + within; Clock::now() < until;) {
      if (in_flight() == n) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  bool clients_become(size_t n) {
    for (auto until = Clock::now() + 5s; Clock::now() < until;) {
      if (loop_->client_count() == n) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  VerbsServerLimits limits_;
  std::unique_ptr<test::ServerLoop> loop_;
};

// While B's registration is in flight, A (connected before) keeps having its
// keepalives answered and the loop runs a job at once; B reads once it is done.
TEST_F(VerbsRegistration, TheLoopServesOthersWhileAClientsRegistrationIsInFlight) {
  start();
  loop_->publish(big_table(200));
  auto a = reader();
  ASSERT_TRUE(a->connect(Clock::now() + 20s).ok());
  ASSERT_TRUE(read_once(*a).ok());

  auto b = reader();
  auto b_connected = std::async(std::launch::async, [&] { return b->connect(Clock::now() + 20s); });
  const auto b_started = Clock::now();
  // B's AUTH reaches the server within a handshake poll.
  std::this_thread::sleep_for(500ms);
  // Most of B's registration: A's keepalives (the server answers them at
  // each sweep) and a job run on the loop, which must come back at once.
  while (Clock::now() < b_started + kDelay - 1s) {
    Status s = a->keepalive();
    ASSERT_TRUE(s.ok()) << "A lost the server while B's registration ran: " << s.message();
    auto job = std::async(std::launch::async, [&] { return loop_->on_loop([] { return 0; }); });
    ASSERT_EQ(job.wait_for(1s), std::future_status::ready)
        << "the loop stalled behind B's registration";
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(b_connected.wait_for(0s), std::future_status::timeout)
      << "B connected before its registration could have finished";
  Status s = b_connected.get();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_GE(Clock::now() - b_started, kDelay);
  EXPECT_TRUE(read_once(*b).ok());
  EXPECT_TRUE(read_once(*a).ok());
  EXPECT_TRUE(a->keepalive().ok());
  EXPECT_EQ(with_peer([](const auto& p) { return p.own_mrs(); }), 2u);
}

// B gives up while its registration is in flight: the registration still
// ends, its MRs are released and nothing of B is touched; the next client
// is served as usual.
TEST_F(VerbsRegistration, AClientGoneMidRegistrationLeavesNothingBehind) {
  limits_.test_registration_delay = 5000ms;
  start();
  loop_->publish(big_table(210));
  auto b = reader();
  EXPECT_FALSE(b->connect(Clock::now() + 1500ms).ok());  // gives up (at 2 s, the least)
  b.reset();
  ASSERT_TRUE(clients_become(0));
  EXPECT_EQ(in_flight(), 1u) << "B's registration should still be under way";
  ASSERT_TRUE(in_flight_becomes(0, 10s));
  EXPECT_EQ(with_peer([](const auto& p) { return p.own_mrs(); }), 0u);

  auto c = reader();
  ASSERT_TRUE(c->connect(Clock::now() + 20s).ok());
  EXPECT_TRUE(read_once(*c).ok());
  EXPECT_EQ(with_peer([](const auto& p) { return p.own_mrs(); }), 1u);
}

// A new epoch is published while B's registration (of the epoch it was
// given at AUTH) is in flight. Grace 0: that epoch is gone when the
// registration ends, B is told so, reconnects and gets the new one.
TEST_F(VerbsRegistration, AnEpochGoneMidRegistrationIsToldAndTheClientMovesOn) {
  // Long enough that the new epoch is surely published while B's
  // registration is still under way (with 2 s, a busy TCG guest once
  // finished it first).
  limits_.test_registration_delay = 6000ms;
  limits_.retire_grace = 0s;
  start();
  loop_->publish(big_table(220));
  auto b = reader();
  auto b_connected = std::async(std::launch::async, [&] { return b->connect(Clock::now() + 30s); });
  ASSERT_TRUE(in_flight_becomes(1, 5s));
  loop_->publish(big_table(221));
  Status s = b_connected.get();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(b->descriptor().epoch, 221u);
  EXPECT_TRUE(read_once(*b).ok());
}

// The same within the old epoch's grace: B gets the epoch it was given at
// AUTH (not the newer one), and reads it.
TEST_F(VerbsRegistration, AnEpochRetiredMidRegistrationIsStillGrantedInItsGrace) {
  limits_.test_registration_delay = 2000ms;
  limits_.retire_grace = 60s;
  start();
  loop_->publish(big_table(230));
  auto b = reader();
  auto b_connected = std::async(std::launch::async, [&] { return b->connect(Clock::now() + 30s); });
  ASSERT_TRUE(in_flight_becomes(1, 5s));
  loop_->publish(big_table(231));
  Status s = b_connected.get();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(b->descriptor().epoch, 230u);
  EXPECT_TRUE(read_once(*b).ok());
}

// The server stops with a registration in flight: the worker is joined (its
// test delay cut short), the result released, and the stop does not wait
// out the registration.
TEST_F(VerbsRegistration, StoppingWithARegistrationInFlightJoinsTheWorker) {
  limits_.test_registration_delay = 30000ms;
  start();
  loop_->publish(big_table(240));
  auto b = reader();
  auto b_connected = std::async(std::launch::async, [&] { return b->connect(Clock::now() + 8s); });
  ASSERT_TRUE(in_flight_becomes(1, 5s));
  const auto t0 = Clock::now();
  loop_.reset();
  EXPECT_LT(Clock::now() - t0, 5s);
  EXPECT_FALSE(b_connected.get().ok());
}

}  // namespace
}  // namespace rrs
