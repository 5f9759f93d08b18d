// The replica link alone, with hand-made peers on loopback: the handshake a
// Redis replica runs gets +FULLRESYNC and the $EOF: opener, and a connection
// that is not the target (its PSYNC is "? -1", or names another replication
// ID) or that hangs up mid-handshake is dropped while the link keeps waiting
// for the target; with real targets of both engines (ImpostorFirst), one that
// connected first gets nothing and the target's own INFO confirms the sync.
#include "client/replica/replica_link.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "client/replica/replica_target.h"
#include "client/sync/target_checks.h"
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

}  // namespace
}  // namespace rrs
