// The control session with no transport at all: a ServerSession and a
// ClientSession talk through encoded frames, as TCP and verbs carry them.
#include "common/transport/control_session.h"

#include <gtest/gtest.h>

#include "server/table_builder.h"

namespace rrs {
namespace {

using control::ErrorCode;

constexpr const char* kSecret = "control-session-secret-0123";

std::span<const std::byte> body_of(const std::string& frame) {
  return std::as_bytes(std::span(frame)).subspan(control::kFrameHeaderSize);
}

TablePtr small_table() {
  TableBuilder b;
  b.set_source({{Engine::kRedis, 7, 0, 15}, table::SourceKind::kScan, 0, {}});
  b.add(0, "k", "v", -1);
  auto t = b.build(5);
  EXPECT_TRUE(t.ok());
  return *t;
}

// HELLO from `client`, HELLO_OK from `server`: the client's AUTH proof (its
// frame body), or nullopt when the server asks for none or either side fails.
std::optional<std::string> hello_then_auth(ServerSession& server, ClientSession& client) {
  std::string f;
  control::append_hello(f, 0, *client.start());
  auto hello_ok = server.on_hello(body_of(f));
  EXPECT_TRUE(hello_ok.ok());
  if (!hello_ok.ok()) return std::nullopt;
  f.clear();
  control::append_hello_ok(f, 0, *hello_ok);
  auto proof = client.on_hello_ok(body_of(f));
  EXPECT_TRUE(proof.ok() && *proof);
  if (!proof.ok() || !*proof) return std::nullopt;
  f.clear();
  control::append_auth(f, 0, control::MsgType::kAuth, **proof);
  return f;
}

TEST(ControlSession, HandshakeWithASecretThenDescriptorAndRead) {
  ServerTerms terms;
  terms.access.secret = kSecret;
  ServerSession server(terms);
  ClientSession client(std::string{kSecret});
  std::string f;
  control::append_hello(f, 0, *client.start());
  auto hello_ok = server.on_hello(body_of(f));
  ASSERT_TRUE(hello_ok.ok());
  EXPECT_EQ(server.state(), ServerSession::State::kAwaitAuth);

  TablePtr t = small_table();
  auto early = server.on_get_descriptor({}, t);  // before AUTH: refused, closes
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.refusal().code, ErrorCode::kAuthFailed);

  ServerSession again(terms);
  auto auth = hello_then_auth(again, client);
  ASSERT_TRUE(auth);
  auto server_proof = again.on_auth(body_of(*auth));
  ASSERT_TRUE(server_proof.ok());
  f.clear();
  control::append_auth(f, 0, control::MsgType::kAuthOk, *server_proof);
  ASSERT_TRUE(client.on_auth_ok(body_of(f)).ok());

  auto d = again.on_get_descriptor({}, t);
  ASSERT_TRUE(d.ok());
  f.clear();
  control::append_descriptor(f, 0, *d);
  ASSERT_TRUE(client.on_descriptor(body_of(f), control::TransportKind::kTcp).ok());
  EXPECT_EQ(client.descriptor().epoch, 5u);

  f.clear();
  control::append_read(f, 1, {5, 0, 16, control::Region::kTable});
  auto read = again.on_read(body_of(f), t);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->bytes.size(), 16u);
  f.clear();
  control::append_read(f, 2, {4, 0, 16, control::Region::kTable});
  auto gone = again.on_read(body_of(f), t);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.refusal().code, ErrorCode::kEpochGone);
  EXPECT_FALSE(again.closing()) << "epoch gone keeps the session open";
}

TEST(ControlSession, WrongProofAndFullServerAreRefused) {
  ServerTerms terms;
  terms.access.secret = kSecret;
  terms.access.max_clients = 2;
  EXPECT_FALSE(ServerSession::admit(1, terms.access));
  auto full = ServerSession::admit(2, terms.access);
  ASSERT_TRUE(full);
  EXPECT_EQ(full->code, ErrorCode::kServerFull);

  ServerSession server(terms);
  ClientSession client(std::string("another-secret-0123456789"));
  auto auth = hello_then_auth(server, client);
  ASSERT_TRUE(auth);
  auto refused = server.on_auth(body_of(*auth));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.refusal().code, ErrorCode::kAuthFailed);
  EXPECT_TRUE(server.closing());
}

TEST(ControlSession, ClientChecksBatchesAndMapsErrors) {
  ClientSession client(std::nullopt);
  std::vector<std::byte> buf(64);
  TableRead past{1, 0, buf};  // the descriptor is empty: nothing is in range
  Status s = client.check_batch({&past, 1}, 0, 1024, 4);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("outside"), std::string::npos) << s.message();
  std::string e;
  control::append_error(e, 0, {ErrorCode::kNotReady, "no table published yet"});
  Status err = ClientSession::server_error_frame(std::as_bytes(std::span(e)));
  EXPECT_EQ(err.kind(), ErrorKind::kUnavailable);
}

// Over verbs a streamed epoch's descriptor comes again as its registered
// prefix grows: only the rkey and readable_length may change, and the
// prefix only grows.
TEST(ControlSession, GrownDescriptorOnlyGrowsTheSameTable) {
  ClientSession client(std::nullopt);
  const control::Descriptor first{.epoch = 4,
                                  .table_length = 1 << 30,
                                  .remote_addr = 0x7000,
                                  .rkey = 11,
                                  .transport = control::TransportKind::kVerbs,
                                  .readable_length = 64 << 20};
  const std::string accept = control::encode_accept({control::HelloOk{.max_in_flight = 4}, first});
  auto accepted = client.on_accept(std::as_bytes(std::span(accept)));
  ASSERT_TRUE(accepted.ok()) << accepted.status().message();
  auto grown = [&](control::Descriptor d) {
    const std::string message = control::encode_descriptor_message(d);
    return client.on_grown(std::as_bytes(std::span(message)));
  };
  control::Descriptor next = first;
  next.rkey = 12;
  next.readable_length = 96 << 20;
  ASSERT_TRUE(grown(next).ok());
  EXPECT_EQ(client.descriptor().rkey, 12u);
  EXPECT_EQ(client.descriptor().readable_length, uint64_t{96} << 20);

  control::Descriptor shrunk = next;
  shrunk.readable_length = 32 << 20;
  EXPECT_EQ(grown(shrunk).kind(), ErrorKind::kBadData);
  control::Descriptor other = next;
  other.readable_length = 128 << 20;
  other.remote_addr = 0x9000;
  Status s = grown(other);
  EXPECT_EQ(s.kind(), ErrorKind::kBadData);
  EXPECT_NE(s.message().find("describes another table"), std::string::npos) << s.message();
  EXPECT_EQ(client.descriptor().readable_length, uint64_t{96} << 20);

  // Complete: the table's own length, shorter than the prefix registered.
  control::Descriptor done = next;
  done.table_length = done.readable_length = 80 << 20;
  ASSERT_TRUE(grown(done).ok());
  EXPECT_EQ(client.descriptor().table_length, uint64_t{80} << 20);

  // Reads wait for the furthest table byte they need; the log is not a prefix.
  std::vector<std::byte> buf(4096);
  TableRead reads[] = {
      {1, 100, buf}, {2, 8192, buf}, {3, 1 << 20, buf, control::Region::kChangeLog}};
  EXPECT_EQ(ClientSession::readable_end(reads), 8192u + 4096u);
}

// What the connect loop retries is decided by the status's kind alone: a
// server that is not ready or full is waited out, a refused secret is not.
TEST(ControlSession, ConnectRetriesOnlyWhatMayPass) {
  auto answer = [](ErrorCode code) {
    std::string e;
    control::append_error(e, 0, {code, "x"});
    return ClientSession::server_error_frame(std::as_bytes(std::span(e)));
  };
  const auto far = Clock::now() + std::chrono::seconds(30);
  for (ErrorCode passing : {ErrorCode::kNotReady, ErrorCode::kServerFull}) {
    int tries = 0;
    Status s = connect_with_backoff(far, [&](Clock::time_point) {
      return ++tries < 3 ? answer(passing) : Status();
    });
    EXPECT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(tries, 3);
  }
  int tries = 0;
  Status denied = connect_with_backoff(far, [&](Clock::time_point) {
    ++tries;
    return answer(ErrorCode::kAuthFailed);
  });
  EXPECT_EQ(denied.kind(), ErrorKind::kDenied);
  EXPECT_EQ(tries, 1);

  tries = 0;
  const auto start = Clock::now();
  Status late = connect_with_backoff(start + std::chrono::milliseconds(250),
                                     [&](Clock::time_point) {
                                       ++tries;
                                       return answer(ErrorCode::kServerFull);
                                     });
  EXPECT_EQ(late.kind(), ErrorKind::kUnavailable);
  EXPECT_NE(late.message().find('x'), std::string::npos) << late.message();
  EXPECT_GE(tries, 2);  // 100 ms, then 200 ms would pass the deadline
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(400));
}

// A full server, then a last try that only timed out (a loaded host): the
// client says the server was full, the reason it got no table.
TEST(ControlSession, ALastTryThatTimedOutKeepsTheServersRefusal) {
  std::string e;
  control::append_error(e, 0, {ErrorCode::kServerFull, "already serving 2 (--max-clients)"});
  const Status full = ClientSession::server_error_frame(std::as_bytes(std::span(e)));
  int tries = 0;
  Status s = connect_with_backoff(
      Clock::now() + std::chrono::milliseconds(250), [&](Clock::time_point) {
        return ++tries == 1 ? full
                            : Status::error("receive", "timed out").as(ErrorKind::kUnavailable);
      });
  EXPECT_EQ(s.kind(), ErrorKind::kUnavailable);
  EXPECT_NE(s.message().find("--max-clients"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("the last try: receive: timed out"), std::string::npos) << s.message();
}

// A server taking a snapshot for us is waited for past the deadline: each
// "snapshot pending" moves it on by the whole timeout, and the attempt is
// given the moved deadline.
TEST(ControlSession, SnapshotPendingMovesTheDeadlineOn) {
  auto answer = [](ErrorCode code) {
    std::string e;
    control::append_error(e, 0, {code, "12 s in"});
    return ClientSession::server_error_frame(std::as_bytes(std::span(e)));
  };
  EXPECT_TRUE(snapshot_pending(answer(ErrorCode::kSnapshotPending)));
  EXPECT_FALSE(snapshot_pending(answer(ErrorCode::kNotReady)));
  EXPECT_FALSE(snapshot_pending(Status()));
  EXPECT_EQ(answer(ErrorCode::kSnapshotPending).kind(), ErrorKind::kUnavailable);

  const auto start = Clock::now();
  const auto first_deadline = start + std::chrono::milliseconds(150);
  int tries = 0;
  Clock::time_point last_deadline;
  Status s = connect_with_backoff(first_deadline, [&](Clock::time_point deadline) {
    last_deadline = deadline;
    return ++tries < 4 ? answer(ErrorCode::kSnapshotPending) : Status();
  });
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(tries, 4);  // 100 + 200 + 400 ms of waits: well past the first deadline
  EXPECT_GT(Clock::now(), first_deadline);
  EXPECT_GT(last_deadline, first_deadline);
}

}  // namespace
}  // namespace rrs
