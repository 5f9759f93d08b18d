// TcpTableServer's limits against peers that do not play by the rules, on
// raw sockets (tests/support/raw_peer.h): the handshake is a deadline, not an
// inactivity timer; a slot of --max-clients is taken only by a client that
// proved the secret; unauthenticated connections have budgets of their own,
// per peer address too; the READ depth HELLO_OK announces is enforced; and a
// client that stops taking its answers is dropped, releasing its epoch.
#include <gtest/gtest.h>

#include <thread>

#include "common/transport/tcp/table_reader.h"
#include "common/transport/tcp/table_server.h"
#include "server/table_builder.h"
#include "tests/support/fake_payload.h"
#include "tests/support/process.h"
#include "tests/support/raw_peer.h"
#include "tests/support/server_loop.h"

namespace rrs {
namespace {

using namespace std::chrono_literals;
using test::RawPeer;

constexpr uint32_t kReadLength = 2u << 20;

std::shared_ptr<Table> table_with_big_record() {
  TableBuilder b;
  b.set_source({{Engine::kRedis, 7, 0, 15}, table::SourceKind::kScan, 0, {}});
  b.add(0, "small", test::fake_payload(100, 's'), -1);
  b.add(0, "big", test::fake_payload(3u << 20, 'B'), -1);
  auto t = b.build(7);
  EXPECT_TRUE(t.ok());
  return *t;
}

class TcpLimits : public ::testing::Test {
 protected:
  void start() {
    limits_.access.secret = test::kTestSidecarSecret;
    Status s = loop_.start([&](event_base* base) {
      return TcpTableServer::listen(base, {"127.0.0.1", 0}, limits_);
    });
    ASSERT_TRUE(s.ok()) << s.message();
    table_ = table_with_big_record();
    loop_.publish(table_);
  }
  RawPeer peer(const char* from = "127.0.0.1") {
    auto p = RawPeer::connect(loop_.port(), from);
    EXPECT_TRUE(p.ok()) << p.status().message();
    return std::move(*p);
  }
  Status connect_reader(std::chrono::milliseconds within) {
    TcpTableReader reader({"127.0.0.1", loop_.port()}, 5s, std::string(test::kTestSidecarSecret));
    return reader.connect(Clock::now() + within);
  }
  template <typename Pred>
  bool eventually(Pred pred, std::chrono::milliseconds within = 5s) {
    for (auto until = Clock::now() + within; Clock::now() < until;) {
      if (pred()) return true;
      std::this_thread::sleep_for(20ms);
    }
    return pred();
  }
  std::vector<TcpTableServer::Queue> queues() {
    return loop_.on_loop(
        [this] { return static_cast<TcpTableServer&>(loop_.server()).queues_for_test(); });
  }
  // READs of the table's first kReadLength bytes, ids 100.., in one write.
  static std::string reads(uint64_t epoch, int n) {
    std::string out;
    for (int i = 0; i < n; ++i)
      control::append_read(out, 100 + i, {epoch, 0, kReadLength, control::Region::kTable});
    return out;
  }

  TcpServerLimits limits_;
  test::ServerLoop loop_;
  TablePtr table_;
};

// Two peers each sending a byte of HELLO now and then, well inside any
// inactivity timeout, are still dropped when the handshake's deadline comes.
TEST_F(TcpLimits, HandshakeIsADeadlineNotAnInactivityTimeout) {
  limits_.access.handshake_timeout = 600ms;
  start();
  control::Hello hello;
  std::string frame;
  control::append_hello(frame, 1, hello);
  RawPeer a = peer(), b = peer();
  const auto t0 = Clock::now();
  bool a_closed = false, b_closed = false;
  for (size_t i = 0; i < frame.size() - 1 && !(a_closed && b_closed); ++i) {
    if (!a_closed) a.send(frame.substr(i, 1));
    if (!b_closed) b.send(frame.substr(i, 1));
    std::this_thread::sleep_for(100ms);
    a_closed = a_closed || a.wait_closed(0ms);
    b_closed = b_closed || b.wait_closed(0ms);
  }
  EXPECT_TRUE(a_closed && b_closed) << "still connected after " << frame.size() - 1 << " bytes";
  EXPECT_LT(Clock::now() - t0, 1500ms);
}

// Peers that never authenticate do not take the slots of --max-clients: a
// client with the secret is served while they hang on.
TEST_F(TcpLimits, UnauthenticatedPeersNeverCrowdOutAClientWithTheSecret) {
  limits_.access.max_clients = 2;
  limits_.access.handshake_timeout = 10s;
  start();
  RawPeer a = peer("127.0.0.2"), b = peer("127.0.0.3");
  ASSERT_TRUE(eventually([&] { return loop_.client_count() == 2; }));
  Status s = connect_reader(1s);
  EXPECT_TRUE(s.ok()) << s.message();
  // Both slots taken by clients with the secret: a third is "server full".
  TcpTableReader r1({"127.0.0.1", loop_.port()}, 5s, std::string(test::kTestSidecarSecret));
  TcpTableReader r2({"127.0.0.1", loop_.port()}, 5s, std::string(test::kTestSidecarSecret));
  ASSERT_TRUE(r1.connect(Clock::now() + 2s).ok());
  ASSERT_TRUE(r2.connect(Clock::now() + 2s).ok());
  s = connect_reader(300ms);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kUnavailable) << s.message();
  EXPECT_NE(s.message().find("--max-clients"), std::string::npos) << s.message();
}

// One address may hold only a few connections in their handshake; other
// addresses are not affected.
TEST_F(TcpLimits, UnauthenticatedConnectionsAreLimitedPerAddress) {
  limits_.access.max_unauthenticated_per_address = 3;
  limits_.access.handshake_timeout = 10s;
  start();
  std::vector<RawPeer> held;
  held.reserve(3);
  for (int i = 0; i < 3; ++i) held.push_back(peer("127.0.0.2"));
  ASSERT_TRUE(eventually([&] { return loop_.client_count() == 3; }));
  RawPeer extra = peer("127.0.0.2");
  RawPeer::Frame f;
  ASSERT_EQ(extra.read_frame(f, 2s), RawPeer::Got::kFrame);
  ASSERT_EQ(f.header.type, control::MsgType::kError);
  EXPECT_NE(f.body.find("per address"), std::string::npos) << f.body;
  EXPECT_TRUE(extra.wait_closed(2s));
  for (RawPeer& p : held) {
    std::string got;
    EXPECT_FALSE(p.wait_closed(100ms, &got)) << "a held connection was closed: " << got;
  }
  Status s = connect_reader(2s);
  EXPECT_TRUE(s.ok()) << s.message();
}

// HELLO_OK announces a READ depth; a client that sends far more READs than
// that without taking the answers gets no more than that many queued (and no
// more bytes than max_queued_bytes), and every READ is answered in order
// once it reads.
TEST_F(TcpLimits, AnnouncedReadDepthAndQueuedBytesAreEnforced) {
  limits_.max_queued_bytes = 12u << 20;  // room for 6 answers of 2 MiB
  start();
  RawPeer p = peer();
  auto d = p.handshake(5s);
  ASSERT_TRUE(d.ok()) << d.status().message();
  constexpr int kReads = 64;
  std::thread flood([&] { p.send(reads(d->epoch, kReads)); });
  auto over = [&] {
    for (const auto& q : queues())
      if (q.answers > limits_.max_in_flight || q.bytes > limits_.max_queued_bytes) return true;
    return false;
  };
  // Let the server answer as much as it will while we do not read.
  for (int i = 0; i < 25; ++i) {
    EXPECT_FALSE(over()) << "answers or bytes queued past the limits";
    std::this_thread::sleep_for(20ms);
  }
  size_t queued = 0;
  for (const auto& q : queues()) queued = std::max(queued, q.bytes);
  EXPECT_GT(queued, 0u);
  for (int i = 0; i < kReads; ++i) {
    RawPeer::Frame f;
    ASSERT_EQ(p.read_frame(f, 5s), RawPeer::Got::kFrame) << "answer " << i;
    ASSERT_EQ(f.header.type, control::MsgType::kReadData);
    EXPECT_EQ(f.header.request_id, 100u + i);
    EXPECT_EQ(f.body.size(), kReadLength);
  }
  flood.join();
}

// At the default byte limit (64 MiB, room for 32 answers of 2 MiB) the depth
// is what holds: no more than max_in_flight answers' bytes are queued.
TEST_F(TcpLimits, DepthHoldsBelowTheByteLimit) {
  start();
  RawPeer p = peer();
  auto d = p.handshake(5s);
  ASSERT_TRUE(d.ok()) << d.status().message();
  std::thread flood([&] { p.send(reads(d->epoch, 200)); });
  std::this_thread::sleep_for(300ms);
  for (const auto& q : queues()) {
    EXPECT_LE(q.answers, limits_.max_in_flight);
    EXPECT_LE(q.bytes, limits_.max_in_flight * (kReadLength + control::kFrameHeaderSize));
  }
  for (int i = 0; i < 200; ++i) {
    RawPeer::Frame f;
    ASSERT_EQ(p.read_frame(f, 5s), RawPeer::Got::kFrame) << "answer " << i;
    EXPECT_EQ(f.header.request_id, 100u + i);
  }
  flood.join();
}

// A client that stops taking its answers is dropped within reply_timeout
// (long before the idle timeout), and the epoch its answers referenced is
// released.
TEST_F(TcpLimits, ClientThatTakesNoAnswersIsDroppedAndReleasesTheEpoch) {
  limits_.reply_timeout = 700ms;
  limits_.access.idle_timeout = std::chrono::seconds(300);
  start();
  RawPeer p = peer();
  auto d = p.handshake(5s);
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_TRUE(p.send(reads(d->epoch, 16)));
  ASSERT_TRUE(eventually([&] { return table_.use_count() > 2; }, 2s));
  loop_.publish(table_with_big_record());  // the epoch retires; only queued answers hold it
  EXPECT_TRUE(eventually([&] { return loop_.client_count() == 0; }, 3s));
  EXPECT_TRUE(eventually([&] { return table_.use_count() == 1; }, 2s)) << table_.use_count();
}

}  // namespace
}  // namespace rrs
