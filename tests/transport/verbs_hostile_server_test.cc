// A server that lies, over real verbs: a scripted rdmacm listener
// (tests/support/raw_verbs.h) answers VerbsTableReader::connect with malformed
// accept private data, a descriptor without an RDMA region, garbage, silence
// or a wrong proof where AUTH_OK belongs. Each must fail connect() with a
// clear error within its deadline, never be trusted, never hang. The verbs
// twin of hostile_server_test (TCP). Skips without an RDMA device.
#include <gtest/gtest.h>

#include "common/auth/auth.h"
#include "common/transport/verbs/table_reader.h"
#include "proto/control.h"
#include "tests/support/raw_verbs.h"

namespace rrs {
namespace {

using namespace std::chrono_literals;
using test::ScriptedVerbsServer;
using Answer = ScriptedVerbsServer::Answer;

constexpr const char* kSecret = "hostile-server-test-secret-0123456";
const control::Nonce kServerNonce{std::byte{7}, std::byte{7}, std::byte{7}};
constexpr auto kIoTimeout = 1500ms;
constexpr auto kConnectFor = 3s;

std::string hello_ok(bool auth_required, uint16_t version = control::kProtocolVersion) {
  std::string s;
  control::append_hello_ok(s, 0,
                           {.version = version,
                            .auth_required = auth_required,
                            .server_nonce = kServerNonce,
                            .max_in_flight = 16,
                            .keepalive_interval_ms = 2000});
  return s;
}

control::Descriptor descriptor(uint64_t addr, uint32_t rkey) {
  return {.epoch = 1,
          .table_length = 4096,
          .remote_addr = addr,
          .rkey = rkey,
          .layout_version = 1,
          .transport = control::TransportKind::kVerbs,
          .readable_length = 4096};
}

// Accepts every connect with `data`.
ScriptedVerbsServer::OnConnect accept_with(std::string data) {
  return [data = std::move(data)](const std::string&) {
    return Answer{Answer::Kind::kAccept, data};
  };
}

// Takes the client's AUTH and answers with `reply(the client's nonce, the connection)`.
using Reply = std::function<std::string(const control::Nonce& client_nonce,
                                        ScriptedVerbsServer::Connection&)>;
ScriptedVerbsServer::AfterEstablished answer_auth_with(Reply reply) {
  return [reply = std::move(reply)](ScriptedVerbsServer::Connection& c) {
    auto auth = c.qp.receive(5s);
    if (!auth.ok()) return;
    auto hello = control::decode_connect(std::as_bytes(std::span(c.connect_data)));
    (void)c.qp.send(reply(hello.ok() ? hello->client_nonce : control::Nonce{}, c), 3s);
    c.hold();
  };
}

struct Outcome {
  Status status;
  std::chrono::milliseconds took;
};

Outcome connect_to(const ScriptedVerbsServer& server,
                   std::optional<std::string> secret = std::nullopt) {
  VerbsTableReader reader(server.endpoint(), kIoTimeout, std::move(secret));
  const auto t0 = Clock::now();
  Status s = reader.connect(t0 + kConnectFor);
  return {s, std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0)};
}

class VerbsHostileServer : public ::testing::Test {
 protected:
  void SetUp() override { RRS_SKIP_WITHOUT_VERBS(); }
  // Fails the test unless `o` failed as `kind`, with `text` in its message,
  // within the connect deadline (plus the io timeout and slack).
  static void expect_refused(const Outcome& o, ErrorKind kind, const std::string& text) {
    ASSERT_FALSE(o.status.ok()) << "connect() trusted the server";
    EXPECT_EQ(o.status.kind(), kind) << o.status.message();
    EXPECT_NE(o.status.message().find(text), std::string::npos) << o.status.message();
    EXPECT_LT(o.took, kConnectFor + kIoTimeout + 3s) << o.status.message();
  }
};

// The positive control: a scripted server that does everything right
// (proves the secret, gives a descriptor of its own registered memory) is
// accepted and read, so the refusals below come from what the lying servers
// send, not from the scripted server.
TEST_F(VerbsHostileServer, WellBehavedScriptedServerIsAccepted) {
  const std::string content = "the scripted server's fake table";
  ScriptedVerbsServer server(
      accept_with(hello_ok(true)),
      answer_auth_with([&](const control::Nonce& client_nonce, ScriptedVerbsServer::Connection& c) {
        c.qp.fill_exposed(content);
        return control::encode_auth_granted(
            {auth::server_proof(kSecret, client_nonce, kServerNonce),
             descriptor(c.qp.exposed_addr(), c.qp.exposed_rkey())});
      }));
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  VerbsTableReader reader(server.endpoint(), kIoTimeout, std::string(kSecret));
  Status s = reader.connect(Clock::now() + kConnectFor);
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<std::byte> buf(content.size());
  ASSERT_TRUE(reader.register_buffer(buf).ok());
  TableRead read{1, 0, buf};
  s = reader.post_reads({&read, 1});
  std::vector<uint64_t> done;
  if (s.ok()) s = reader.poll(done, 5000ms);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(buf.data()), buf.size()), content);
  reader.unregister_buffer(buf);
}

TEST_F(VerbsHostileServer, GarbageAcceptDataIsRefused) {
  ScriptedVerbsServer server(accept_with(std::string(64, 'G')));
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  expect_refused(connect_to(server), ErrorKind::kBadData, "magic");
}

// rdma_cm pads accept private data with zeros, so "nothing" arrives as
// zeros: not a frame.
TEST_F(VerbsHostileServer, EmptyAcceptDataIsRefused) {
  ScriptedVerbsServer server(accept_with(""));
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  expect_refused(connect_to(server), ErrorKind::kBadData, "magic");
}

// HELLO_OK says "no AUTH" but no descriptor follows: the padding after it is
// not taken for one.
TEST_F(VerbsHostileServer, AcceptWithoutADescriptorIsRefused) {
  ScriptedVerbsServer server(accept_with(hello_ok(false)));
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  expect_refused(connect_to(server), ErrorKind::kBadData, "magic");
}

TEST_F(VerbsHostileServer, OtherProtocolVersionIsRefused) {
  ScriptedVerbsServer server(accept_with(hello_ok(false, 2)));
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  expect_refused(connect_to(server), ErrorKind::kBadData, "upgrade them together");
}

TEST_F(VerbsHostileServer, MalformedDescriptorIsRefused) {
  std::string data = hello_ok(false);
  control::append_descriptor(data, 0, descriptor(4096, 1));
  data[2 * control::kFrameHeaderSize + control::kHelloOkSize + 30] = 7;  // transport 7
  ScriptedVerbsServer server(accept_with(data));
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  expect_refused(connect_to(server), ErrorKind::kBadData, "DESCRIPTOR");
}

// A well-formed descriptor that names no RDMA region (TCP's, rkey 0).
TEST_F(VerbsHostileServer, DescriptorWithoutAnRdmaRegionIsRefused) {
  std::string data = hello_ok(false);
  control::append_descriptor(data, 0, {.epoch = 1, .table_length = 4096});
  ScriptedVerbsServer server(accept_with(data));
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  expect_refused(connect_to(server), ErrorKind::kBadData, "did not publish an RDMA region");
}

TEST_F(VerbsHostileServer, ServerThatNeverAnswersAuthTimesOut) {
  ScriptedVerbsServer server(accept_with(hello_ok(true)),
                             [](ScriptedVerbsServer::Connection& c) { c.hold(); });
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  // The first attempt times out waiting for AUTH_OK (io timeout); a retry
  // finds no listener taking it: either way, "timed out".
  expect_refused(connect_to(server, kSecret), ErrorKind::kUnavailable, "timed out");
}

// connect()'s deadline bounds the AUTH exchange too, however long the io
// timeout: a server that accepts and then says nothing cannot hold the
// client past --connect-timeout.
TEST_F(VerbsHostileServer, SilentServerCannotHoldTheHandshakePastTheDeadline) {
  ScriptedVerbsServer server(accept_with(hello_ok(true)),
                             [](ScriptedVerbsServer::Connection& c) { c.hold(); });
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  VerbsTableReader reader(server.endpoint(), 20s, std::string(kSecret));
  const auto t0 = Clock::now();
  Status s = reader.connect(t0 + 2500ms);
  const auto took = Clock::now() - t0;
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kUnavailable) << s.message();
  EXPECT_NE(s.message().find("answer to AUTH"), std::string::npos) << s.message();
  EXPECT_LT(took, 4s) << s.message();
}

TEST_F(VerbsHostileServer, GarbageInsteadOfAuthOkIsRefused) {
  ScriptedVerbsServer server(
      accept_with(hello_ok(true)),
      answer_auth_with([](const control::Nonce&, auto&) { return std::string(100, 'G'); }));
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  expect_refused(connect_to(server, kSecret), ErrorKind::kBadData, "magic");
}

// AUTH_OK whose frame claims more than the message holds.
TEST_F(VerbsHostileServer, TruncatedAuthOkIsRefused) {
  ScriptedVerbsServer server(
      accept_with(hello_ok(true)), answer_auth_with([](const control::Nonce& n, auto&) {
        std::string m = control::encode_auth_granted(
            {auth::server_proof(kSecret, n, kServerNonce), descriptor(4096, 1)});
        return m.substr(0, control::kFrameHeaderSize + control::kAuthSize + 20);
      }));
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  expect_refused(connect_to(server, kSecret), ErrorKind::kBadData, "AUTH_OK");
}

// An impostor that does not hold the secret cannot make the right proof.
TEST_F(VerbsHostileServer, WrongServerProofIsRefused) {
  ScriptedVerbsServer server(
      accept_with(hello_ok(true)), answer_auth_with([](const control::Nonce& n, auto&) {
        return control::encode_auth_granted(
            {auth::server_proof("an-impostors-guess-0000000", n, kServerNonce),
             descriptor(4096, 1)});
      }));
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  expect_refused(connect_to(server, kSecret), ErrorKind::kDenied,
                 "proof of the shared secret is wrong");
}

// A message bigger than the reader's receive buffers (kMaxVerbsMessage).
TEST_F(VerbsHostileServer, OversizedAuthAnswerFailsCleanly) {
  ScriptedVerbsServer server(accept_with(hello_ok(true)),
                             answer_auth_with([](const control::Nonce&, auto&) {
                               return std::string(control::kMaxVerbsMessage * 2, 'G');
                             }));
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  expect_refused(connect_to(server, kSecret), ErrorKind::kUnavailable, "rdma-server");
}

// Each hang-up is noticed at once (not at the I/O timeout), and retried like
// a server that restarts, until the connect deadline.
TEST_F(VerbsHostileServer, ServerThatHangsUpAfterTheAcceptIsReported) {
  ScriptedVerbsServer server(accept_with(hello_ok(true)),
                             [](ScriptedVerbsServer::Connection& c) { c.disconnect(); });
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  Outcome o = connect_to(server, kSecret);
  ASSERT_NO_FATAL_FAILURE(expect_refused(o, ErrorKind::kUnavailable, "connection lost"));
  EXPECT_LT(o.took, kConnectFor + kIoTimeout) << "a hang-up noticed only at the I/O timeout";
  EXPECT_GE(server.connect_requests(), 3);
}

// No answer at all to the CONNECT_REQUEST: the reader gives up at its deadline.
TEST_F(VerbsHostileServer, ServerThatNeverAcceptsTimesOut) {
  ScriptedVerbsServer server([](const std::string&) { return Answer{Answer::Kind::kIgnore, ""}; });
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  expect_refused(connect_to(server), ErrorKind::kUnavailable, "ESTABLISHED");
  EXPECT_GE(server.connect_requests(), 1);
}

// A reject whose private data is not an ERROR frame is not trusted as one:
// the reader takes it for "nothing listening yet" and retries until its deadline.
TEST_F(VerbsHostileServer, RejectWithGarbageIsNotTrusted) {
  ScriptedVerbsServer server([](const std::string&) {
    return Answer{Answer::Kind::kReject, std::string(100, 'G')};
  });
  ASSERT_TRUE(server.status().ok()) << server.status().message();
  expect_refused(connect_to(server), ErrorKind::kUnavailable, "nothing is listening");
}

}  // namespace
}  // namespace rrs
