// The replica link alone, with hand-made peers on loopback: the handshake a
// Redis replica runs gets +FULLRESYNC and the $EOF: opener, and a connection
// that is not the target (its PSYNC is "? -1", or names another replication
// ID) or that hangs up mid-handshake is dropped while the link keeps waiting
// for the target; with real targets of both engines (ImpostorFirst), one that
// connected first gets nothing and the target's own INFO confirms the sync.
// Connections from the target's address are served at once: silent ones
// (fewer or more than the pending limit) do not delay a real target, one
// silent for the I/O timeout is dropped, and a peer whose PSYNC is wrong is
// dropped while another's handshake goes on around it.
#include "client/replica/replica_link.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <poll.h>

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/replica/replica_target.h"
#include "client/sync/target_checks.h"
#include "common/redis/redis_client.h"
#include "proto/rdb_writer.h"
#include "tests/support/redis_client.h"
#include "tests/support/redis_process.h"

namespace rrs {
namespace {

using namespace std::chrono_literals;
using test::resp_command;

constexpr char kTargetId[] = "1111111111111111111111111111111111111111";
constexpr char kMasterId[] = "2222222222222222222222222222222222222222";
// The target as INFO replication showed it before REPLICAOF: it asks for
// PSYNC kTargetId 1.
const TargetHistory kTarget{kTargetId, 0};

// A peer that connects to `at`, sends a replica's handshake asking to
// continue `psync_id`, and returns everything it reads until the link closes
// or the +FULLRESYNC line and $EOF opener have arrived.
std::string replica_handshake(const Endpoint& at, const std::string& psync_id,
                              bool hang_up_early = false, const std::string& psync_offset = "1") {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(at.port);
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    return "connect failed";
  }
  std::string out = resp_command({"PING"});
  if (!hang_up_early)
    out += resp_command({"REPLCONF", "listening-port", "6380"}) +
           resp_command({"REPLCONF", "capa", "eof", "capa", "psync2"}) +
           resp_command({"PSYNC", psync_id, psync_offset});
  (void)!::write(fd, out.data(), out.size());
  std::string got;
  char buf[4096];
  while (true) {
    if (hang_up_early && got.find("+PONG\r\n") != std::string::npos) break;
    if (got.find("$EOF:") != std::string::npos && got.size() >= got.find("$EOF:") + 47) break;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return got;
}

// A hand-driven connection to the link: sends commands when told, and reads
// the link's answers with a deadline. Left alone, it is a silent peer.
class LinkPeer {
 public:
  explicit LinkPeer(const Endpoint& at) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(at.port);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  }
  ~LinkPeer() { ::close(fd_); }
  LinkPeer(const LinkPeer&) = delete;
  LinkPeer& operator=(const LinkPeer&) = delete;

  bool connected() const { return connected_; }
  void send(const std::vector<std::string>& argv) {
    const std::string out = resp_command(argv);
    (void)!::write(fd_, out.data(), out.size());
  }
  // Whether `want` arrived within `timeout` (everything read is in got()).
  bool read_until(std::string_view want, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (got_.find(want) == std::string::npos)
      if (!read_some(deadline)) return false;
    return true;
  }
  // Whether the link closed this connection within `timeout`.
  bool closed_within(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!closed_ && read_some(deadline)) {
    }
    return closed_;
  }
  const std::string& got() const { return got_; }

 private:
  // One read, waiting until `deadline`; false once nothing more will come.
  bool read_some(Clock::time_point deadline) {
    if (closed_) return false;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd_, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n <= 0) {
      closed_ = true;  // EOF, or a reset: the link dropped it
      return false;
    }
    got_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_;
  bool connected_ = false;
  bool closed_ = false;
  std::string got_;
};

TEST(ReplicaLinkTest, AnswersAReplicasHandshakeWithAFullResync) {
  auto link = ReplicaLink::listen("127.0.0.1", "127.0.0.1", 5000ms);
  ASSERT_TRUE(link.ok()) << link.status().message();
  std::string got;
  std::thread target([&] { got = replica_handshake(link->endpoint(), kTargetId); });
  Status s = link->accept_full_sync(kMasterId, 12345, kTarget, Clock::now() + 10s);
  target.join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(got.rfind("+PONG\r\n+OK\r\n+OK\r\n+FULLRESYNC " + std::string(kMasterId) +
                          " 12345\r\n$EOF:",
                      0),
            0u)
      << got;
  EXPECT_EQ(link->psync_request(), "PSYNC " + std::string(kTargetId) + " 1");
}

TEST(ReplicaLinkTest, ConnectionsThatAreNotTheTargetAreDropped) {
  auto link = ReplicaLink::listen("127.0.0.1", "127.0.0.1", 5000ms);
  ASSERT_TRUE(link.ok()) << link.status().message();
  std::string anyone, impostor, quitter, got;
  std::thread peers([&] {
    // Any local process, first, asking for a full sync as a replica that
    // never synced does: it must get nothing (it would get the keyspace).
    anyone = replica_handshake(link->endpoint(), "?", false, "-1");
    // Another local process, first: it names a history that is not the
    // target's, and gets nothing but the PING's answer.
    impostor = replica_handshake(link->endpoint(), "3333333333333333333333333333333333333333");
    // One that hangs up after its PING.
    quitter = replica_handshake(link->endpoint(), kTargetId, true);
    got = replica_handshake(link->endpoint(), kTargetId);
  });
  Status s = link->accept_full_sync(kMasterId, 7, kTarget, Clock::now() + 10s);
  peers.join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(anyone.find("FULLRESYNC"), std::string::npos) << anyone;
  EXPECT_EQ(anyone.find("$EOF:"), std::string::npos) << anyone;
  EXPECT_EQ(impostor.find("FULLRESYNC"), std::string::npos) << impostor;
  EXPECT_EQ(impostor.find("$EOF:"), std::string::npos) << impostor;
  EXPECT_NE(got.find("+FULLRESYNC " + std::string(kMasterId) + " 7\r\n$EOF:"), std::string::npos)
      << got;
}

TEST(ReplicaLinkTest, ATargetWithoutCapaEofIsRefused) {
  auto link = ReplicaLink::listen("127.0.0.1", "127.0.0.1", 5000ms);
  ASSERT_TRUE(link.ok()) << link.status().message();
  std::thread old([&] {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(link->endpoint().port);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
      std::string out = resp_command({"PING"}) + resp_command({"PSYNC", kTargetId, "1"});
      (void)!::write(fd, out.data(), out.size());
      char buf[256];
      while (::read(fd, buf, sizeof buf) > 0) {
      }
    }
    ::close(fd);
  });
  Status s = link->accept_full_sync(kMasterId, 7, kTarget, Clock::now() + 10s);
  link->close();
  old.join();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("capa eof"), std::string::npos) << s.message();
}

// A peer whose PSYNC names another history is dropped while the target's
// handshake goes on alongside it: the target's PING is answered while the
// impostor is halfway through its own, which one connection at a time would
// leave unanswered until the impostor finished or timed out. A peer that
// sends SYNC (no target does: it is Redis 4.0 or later) is dropped too,
// without ending the wait.
TEST(ReplicaLinkTest, AWrongPsyncIsDroppedWhileTheTargetGoesOn) {
  auto link = ReplicaLink::listen("127.0.0.1", "127.0.0.1", 30000ms);
  ASSERT_TRUE(link.ok()) << link.status().message();
  Status s;
  std::jthread waiting(
      [&] { s = link->accept_full_sync(kMasterId, 7, kTarget, Clock::now() + 20s); });
  {
    LinkPeer impostor(link->endpoint());
    ASSERT_TRUE(impostor.connected());
    impostor.send({"PING"});
    impostor.send({"REPLCONF", "capa", "eof"});
    EXPECT_TRUE(impostor.read_until("+PONG\r\n+OK\r\n", 5s)) << impostor.got();

    LinkPeer target(link->endpoint());
    ASSERT_TRUE(target.connected());
    target.send({"PING"});
    EXPECT_TRUE(target.read_until("+PONG\r\n", 5s)) << target.got();
    LinkPeer old(link->endpoint());
    ASSERT_TRUE(old.connected());
    old.send({"SYNC"});
    EXPECT_TRUE(old.closed_within(5s));
    EXPECT_EQ(old.got(), "");

    impostor.send({"PSYNC", "3333333333333333333333333333333333333333", "1"});
    EXPECT_TRUE(impostor.closed_within(5s));
    EXPECT_EQ(impostor.got(), "+PONG\r\n+OK\r\n");

    target.send({"REPLCONF", "capa", "eof"});
    target.send({"PSYNC", kTargetId, "5"});
    EXPECT_TRUE(target.read_until("$EOF:", 5s)) << target.got();
    EXPECT_EQ(target.got().rfind(
                  "+PONG\r\n+OK\r\n+FULLRESYNC " + std::string(kMasterId) + " 7\r\n$EOF:", 0),
              0u)
        << target.got();
  }
  waiting.join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(link->psync_request(), "PSYNC " + std::string(kTargetId) + " 5");
}

// A connection silent for the I/O timeout is dropped without a byte, and the
// link goes on waiting for the target.
TEST(ReplicaLinkTest, ASilentPeerIsDroppedAfterTheIoTimeout) {
  auto link = ReplicaLink::listen("127.0.0.1", "127.0.0.1", 300ms);
  ASSERT_TRUE(link.ok()) << link.status().message();
  Status s;
  std::jthread waiting(
      [&] { s = link->accept_full_sync(kMasterId, 7, kTarget, Clock::now() + 20s); });
  std::string got;
  {
    LinkPeer silent(link->endpoint());
    ASSERT_TRUE(silent.connected());
    const auto t0 = Clock::now();
    EXPECT_TRUE(silent.closed_within(5s));
    EXPECT_GE(Clock::now() - t0, 200ms);
    EXPECT_EQ(silent.got(), "");
    got = replica_handshake(link->endpoint(), kTargetId);
  }
  waiting.join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_NE(got.find("+FULLRESYNC " + std::string(kMasterId) + " 7\r\n$EOF:"), std::string::npos)
      << got;
}

// Another local process on the link before the target (connected, its
// whole handshake sent: PSYNC ? -1 and an ACK of any offset), then a real
// target of each engine told REPLICAOF the link: the impostor gets nothing,
// the target syncs, and the target's own INFO says so.
class ImpostorFirst : public ::testing::TestWithParam<std::string> {};

TEST_P(ImpostorFirst, OnlyTheRealTargetSyncs) {
  test::TestServer version;
  RRS_NEED_SERVER(version, GetParam());
  test::RedisProcess redis(test::RedisOptions().with_server(version));
  ASSERT_TRUE(redis.started()) << redis.start_error();
  auto client = RedisClient::connect(Endpoint{"127.0.0.1", redis.port()}, {}, 5000ms);
  ASSERT_TRUE(client.ok()) << client.status().message();
  auto server = target_server(*client);
  ASSERT_TRUE(server.ok()) << server.status().message();
  ReplicaTarget target(std::move(*client), *server);
  auto link = ReplicaLink::listen("127.0.0.1", "127.0.0.1", 5000ms);
  ASSERT_TRUE(link.ok()) << link.status().message();

  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(link->endpoint().port);
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  const std::string out = resp_command({"PING"}) + resp_command({"REPLCONF", "capa", "eof"}) +
                          resp_command({"PSYNC", "?", "-1"}) +
                          resp_command({"REPLCONF", "ACK", "999999999"});
  ASSERT_EQ(::write(fd, out.data(), out.size()), static_cast<ssize_t>(out.size()));

  auto history = target.replicate_from(link->endpoint());
  ASSERT_TRUE(history.ok()) << history.status().message();
  Status s = link->accept_full_sync(kMasterId, 100, *history, Clock::now() + 10s);
  ASSERT_TRUE(s.ok()) << s.message();
  rdb::RdbWriter rdb(9);
  rdb.end();
  ASSERT_TRUE(link->send(rdb.take()).ok());
  ASSERT_TRUE(link->end_rdb().ok());
  Status loaded = target.wait_loaded(*link, 100, 10000ms);
  EXPECT_TRUE(loaded.ok()) << loaded.message();
  Status synced = target.verify_synced(kMasterId, 100);
  EXPECT_TRUE(synced.ok()) << synced.message();
  // What an impostor's ACK would have left: a target not at that history.
  EXPECT_FALSE(target.verify_synced("4444444444444444444444444444444444444444", 100).ok());
  EXPECT_FALSE(target.verify_synced(kMasterId, 101).ok());

  std::string impostor;
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
    impostor.append(buf, static_cast<size_t>(n));
  ::close(fd);
  EXPECT_EQ(impostor.find("FULLRESYNC"), std::string::npos) << impostor;
  link->close();
  (void)target.detach();
}

INSTANTIATE_TEST_SUITE_P(Engines, ImpostorFirst, ::testing::Values("redis-7.0", "valkey-9.1"));

// The rest of a sync once the link took the target: an empty RDB as a full
// resync to kMasterId at `offset`; the target's own INFO must then say so.
void finish_sync(ReplicaTarget& target, ReplicaLink& link, uint64_t offset) {
  rdb::RdbWriter rdb(9);
  rdb.end();
  ASSERT_TRUE(link.send(rdb.take()).ok());
  ASSERT_TRUE(link.end_rdb().ok());
  Status loaded = target.wait_loaded(link, offset, 10000ms);
  EXPECT_TRUE(loaded.ok()) << loaded.message();
  Status synced = target.verify_synced(kMasterId, offset);
  EXPECT_TRUE(synced.ok()) << synced.message();
}

// Silent connections from the target's own address (any local process can
// open them) on the link before a real target of each engine, with a 30 s
// I/O timeout: served one at a time, they would keep the target in the
// listen backlog until each timed out. The target must sync within seconds.
class SilentPeersFirst : public ::testing::TestWithParam<std::string> {
 protected:
  static constexpr std::chrono::milliseconds kIoTimeout = 30000ms;
  static constexpr std::chrono::milliseconds kQuick = 5000ms;  // well before kIoTimeout

  void SetUp() override {
    RRS_NEED_SERVER(version_, GetParam());
    redis_ = std::make_unique<test::RedisProcess>(test::RedisOptions().with_server(version_));
    ASSERT_TRUE(redis_->started()) << redis_->start_error();
    auto client = RedisClient::connect(Endpoint{"127.0.0.1", redis_->port()}, {}, 5000ms);
    ASSERT_TRUE(client.ok()) << client.status().message();
    auto server = target_server(*client);
    ASSERT_TRUE(server.ok()) << server.status().message();
    target_.emplace(std::move(*client), *server);
  }
  void TearDown() override {
    if (target_) (void)target_->detach();
  }

  test::TestServer version_;
  std::unique_ptr<test::RedisProcess> redis_;
  std::optional<ReplicaTarget> target_;
};

TEST_P(SilentPeersFirst, DoNotDelayTheTarget) {
  auto link = ReplicaLink::listen("127.0.0.1", "127.0.0.1", kIoTimeout);
  ASSERT_TRUE(link.ok()) << link.status().message();
  std::deque<LinkPeer> silent;  // in the backlog before the wait starts
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(silent.emplace_back(link->endpoint()).connected());

  const auto t0 = Clock::now();
  auto history = target_->replicate_from(link->endpoint());
  ASSERT_TRUE(history.ok()) << history.status().message();
  Status s = link->accept_full_sync(kMasterId, 100, *history, Clock::now() + 2 * kIoTimeout);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_LT(Clock::now() - t0, kQuick);
  finish_sync(*target_, *link, 100);
  // They got nothing, and were closed when the target won.
  for (LinkPeer& p : silent) {
    EXPECT_TRUE(p.closed_within(kQuick));
    EXPECT_EQ(p.got(), "");
  }
  link->close();
}

TEST_P(SilentPeersFirst, MoreThanThePendingLimitDoNotBlockTheTarget) {
  auto link = ReplicaLink::listen("127.0.0.1", "127.0.0.1", kIoTimeout);
  ASSERT_TRUE(link.ok()) << link.status().message();
  // The wait starts before they connect (the backlog holds fewer than
  // them), so with the history replicate_from will read: a master's, which
  // REPLICAOF does not change.
  auto repl = target_->redis().info("replication");
  ASSERT_TRUE(repl.ok()) << repl.status().message();
  const TargetHistory expected{info_field(*repl, "master_replid"),
                               std::stoull(info_field(*repl, "master_repl_offset"))};
  constexpr size_t kSilent = ReplicaLink::kMaxPendingPeers + 4;
  Status s;
  Clock::time_point t0;
  Clock::time_point took;
  std::deque<LinkPeer> silent;  // open until the wait is over
  {
    std::jthread waiting([&] {
      s = link->accept_full_sync(kMasterId, 100, expected, Clock::now() + 2 * kIoTimeout);
      took = Clock::now();
    });
    for (size_t i = 0; i < kSilent; ++i)
      ASSERT_TRUE(silent.emplace_back(link->endpoint()).connected()) << i;
    // The oldest made room for the newer ones, without a byte.
    for (size_t i = 0; i < kSilent - ReplicaLink::kMaxPendingPeers; ++i) {
      EXPECT_TRUE(silent[i].closed_within(kQuick)) << i;
      EXPECT_EQ(silent[i].got(), "") << i;
    }
    t0 = Clock::now();
    auto history = target_->replicate_from(link->endpoint());
    ASSERT_TRUE(history.ok()) << history.status().message();
    EXPECT_EQ(history->replid, expected.replid);
    EXPECT_EQ(history->offset, expected.offset);
  }
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_LT(took - t0, kQuick);
  finish_sync(*target_, *link, 100);
  link->close();
}

INSTANTIATE_TEST_SUITE_P(Engines, SilentPeersFirst, ::testing::Values("redis-7.0", "valkey-9.1"));

}  // namespace
}  // namespace rrs
