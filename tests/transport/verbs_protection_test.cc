// How the verbs server keeps each authenticated client to rkeys of its own,
// in both per-client protections: type-2 memory windows bound to the
// client's QP (rxe has them), and the fallback for devices without windows, a
// protection domain per client (forced on rxe with the server's test hook).
// Each case runs in both: rkeys work only from their own QP and die with
// their client; the whole table and the change log read through them; an
// epoch retiring under a connected client revokes its grant, now or when its
// grace ends, and leaves nothing behind. Plus the READ depth a client is
// granted at the accept.
//
// Verbs only: tests/vm/verbs-suite.sh runs these on Soft-RoCE; elsewhere they
// skip (and fail under RRS_REQUIRE_VERBS=1).
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <thread>

#include "client/fetch/table_fetcher.h"
#include "client/follow/log_tail.h"
#include "common/transport/verbs/table_reader.h"
#include "common/transport/verbs/table_server.h"
#include "server/table_builder.h"
#include "tests/support/fake_payload.h"
#include "tests/support/server_loop.h"

namespace rrs {

// The server's bookkeeping, for the checks that nothing outlives its client
// or its epoch. Loop thread only.
class VerbsTableServerTestPeer {
 public:
  using Protection = VerbsTableServer::Protection;
  explicit VerbsTableServerTestPeer(const VerbsTableServer& s) : s_(s) {}

  std::set<Protection> protections() const {
    std::set<Protection> p;
    for (const auto& [device, protection] : s_.registry_.protections()) p.insert(protection);
    return p;
  }
  size_t registrations() const { return s_.registry_.registrations(); }
  struct Held {
    size_t own_pds = 0;  // clients whose QP has a PD of its own
    size_t own_mrs = 0;  // clients holding MRs of their own (kPdPerClient)
    size_t windows = 0;  // clients holding windows (kWindowPerClient)
  };
  Held held() const {
    Held h;
    for (const auto& [id, c] : s_.connections_) {
      h.own_pds += c->own_pd != nullptr;
      h.own_mrs += c->grant && c->grant->table_mr != nullptr;
      h.windows += c->grant && c->grant->table_window != nullptr;
    }
    return h;
  }
  std::vector<ibv_qp*> qps() const {
    std::vector<ibv_qp*> q;
    for (const auto& [id, c] : s_.connections_) q.push_back(c->qp.get());
    return q;
  }

 private:
  const VerbsTableServer& s_;
};

// For gtest's messages (found by ADL on VerbsTableServer's namespace).
void PrintTo(VerbsTableServer::Protection p, std::ostream* os) {
  *os << (p == VerbsTableServer::Protection::kPdPerClient       ? "kPdPerClient"
          : p == VerbsTableServer::Protection::kWindowPerClient ? "kWindowPerClient"
                                                                : "kSharedMr");
}

namespace {

using Protection = VerbsTableServer::Protection;
constexpr const char* kSecret = "protection-secret-0123456789";

std::shared_ptr<Table> sample_table(uint64_t epoch, int records = 50) {
  TableBuilder b;
  b.set_source({{Engine::kRedis, 7, 0, 15}, table::SourceKind::kScan, 0, {}});
  for (int i = 0; i < records; ++i)
    b.add(0, "key:" + std::to_string(i),
          test::fake_payload(200 + i, static_cast<char>('a' + i % 26)), -1);
  b.add(1, "big", test::fake_payload(2u << 20, 'B'), -1);  // bigger than a 1 MiB read
  auto t = b.build(epoch);
  EXPECT_TRUE(t.ok());
  return *t;
}

// A VerbsTableServer with its bookkeeping in reach.
class VerbsServerLoop : public test::ServerLoop {
 public:
  Status start(const VerbsServerLimits& limits) {
    return ServerLoop::start([&](event_base* base) {
      return VerbsTableServer::listen(base, {test::verbs_address(), 0}, limits);
    });
  }
  template <typename F>
  auto with_peer(F f) {
    return on_loop(
        [&] { return f(VerbsTableServerTestPeer(static_cast<VerbsTableServer&>(server()))); });
  }
  std::unique_ptr<VerbsTableReader> make_reader(std::optional<std::string> secret = kSecret) {
    return std::make_unique<VerbsTableReader>(Endpoint{test::verbs_address(), port()},
                                              std::chrono::milliseconds(5000), std::move(secret));
  }
};

Status connect(TableReader& r) { return r.connect(Clock::now() + std::chrono::seconds(5)); }

// Posts one read and waits for it; the first failure of either step.
Status read_once(TableReader& reader, uint64_t offset, std::span<std::byte> buf,
                 control::Region region = control::Region::kTable) {
  RRS_RETURN_IF_ERROR(reader.register_buffer(buf));
  TableRead read{1, offset, buf, region};
  Status s = reader.post_reads({&read, 1});
  std::vector<uint64_t> done;
  if (s.ok()) s = reader.poll(done, std::chrono::milliseconds(5000));
  reader.unregister_buffer(buf);
  return s;
}

// Fetches the whole table with TableFetcher; every record, or why not.
struct Fetched {
  Status status;
  std::vector<std::pair<std::string, std::string>> records;  // key, payload
};
Fetched fetch_all(TableReader& reader) {
  Fetched f;
  BlockingQueue<RecordBatch> q(4);
  FetchOptions opts;
  opts.chunk_size = 1u << 20;
  opts.in_flight = 4;
  opts.io_timeout = std::chrono::milliseconds(5000);
  opts.reconnect_timeout = std::chrono::milliseconds(5000);
  TableFetcher fetcher(reader, opts, q);
  if (f.status = connect(reader); !f.status.ok()) return f;
  if (auto info = fetcher.open(); !info.ok()) {
    f.status = info.status();
    return f;
  }
  Status run;
  std::thread t([&] { run = fetcher.run(); });
  while (auto b = q.pop())
    for (const Record& r : b->records) f.records.emplace_back(r.key, r.payload);
  t.join();
  f.status = run;
  if (f.status.ok() && !fetcher.failures().empty())
    f.status = Status::error("fetch", fetcher.failures()[0].reason);
  return f;
}

std::span<const std::byte> as_bytes(const std::string& s) { return std::as_bytes(std::span(s)); }

// Each case runs under one protection; kPdPerClient is forced with the test hook.
class VerbsProtection : public ::testing::TestWithParam<Protection> {
 protected:
  void SetUp() override {
    RRS_SKIP_WITHOUT_VERBS();
    VerbsServerLimits limits;
    limits.retire_grace = retire_grace_;
    limits.access.secret = kSecret;
    limits.access.max_clients = 4;
    limits.test_no_memory_windows = GetParam() == Protection::kPdPerClient;
    Status s = loop_.start(limits);
    ASSERT_TRUE(s.ok()) << s.message();
    auto chosen = loop_.with_peer([](const auto& p) { return p.protections(); });
    ASSERT_EQ(chosen.size(), 1u) << "the server decides at listen on a device's address";
    if (*chosen.begin() != GetParam()) {
      // Only a device without type-2 windows makes the server fall back.
      ASSERT_EQ(GetParam(), Protection::kWindowPerClient);
      if (std::getenv("RRS_REQUIRE_VERBS")) FAIL() << "rxe has type-2 memory windows";
      GTEST_SKIP() << "this RDMA device has no type-2 memory windows";
    }
  }
  // Checks what the server holds: `clients` connected, `granted` of them
  // with rkeys of their own, `registrations` epochs registered.
  void expect_held(size_t clients, size_t granted, size_t registrations) {
    auto [held, regs, count] = loop_.with_peer(
        [](const auto& p) { return std::tuple(p.held(), p.registrations(), p.qps().size()); });
    EXPECT_EQ(count, clients);
    EXPECT_EQ(regs, registrations);
    const bool own_pd = GetParam() == Protection::kPdPerClient;
    EXPECT_EQ(held.own_pds, own_pd ? clients : 0u);
    EXPECT_EQ(held.own_mrs, own_pd ? granted : 0u);
    EXPECT_EQ(held.windows, own_pd ? 0u : granted);
  }
  bool clients_become(size_t n) {
    for (auto until = Clock::now() + std::chrono::seconds(5); Clock::now() < until;) {
      if (loop_.client_count() == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  // Grace 0: a replaced epoch is unregistered at once, even while read.
  std::chrono::seconds retire_grace_{0};
  VerbsServerLoop loop_;
};

TEST_P(VerbsProtection, RkeysWorkOnlyFromTheirOwnQueuePairAndDieWithTheirClient) {
  loop_.publish(sample_table(100));
  auto a = loop_.make_reader(), b = loop_.make_reader();
  ASSERT_TRUE(connect(*a).ok());
  ASSERT_TRUE(connect(*b).ok());
  expect_held(2, 2, 1);
  const uint32_t a_rkey = a->descriptor().rkey;
  ASSERT_NE(a_rkey, b->descriptor().rkey);
  std::vector<std::byte> buf(256);
  ASSERT_TRUE(read_once(*b, 0, buf).ok());
  // A's rkey from B's QP: refused by B's own connection.
  b->use_rkeys_for_test(a_rkey, a->descriptor().log_rkey);
  Status s = read_once(*b, 0, buf);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("remote access"), std::string::npos) << s.message();
  // A still reads with it.
  ASSERT_TRUE(read_once(*a, 0, buf).ok());
  // Once A is gone, a newcomer cannot use A's rkey either.
  a.reset();
  b.reset();
  ASSERT_TRUE(clients_become(0));
  expect_held(0, 0, 1);
  auto c = loop_.make_reader();
  ASSERT_TRUE(connect(*c).ok());
  EXPECT_NE(c->descriptor().rkey, a_rkey);
  c->use_rkeys_for_test(a_rkey, 0);
  EXPECT_FALSE(read_once(*c, 0, buf).ok());
}

TEST_P(VerbsProtection, ReadsTheWholeTableAndTheChangeLog) {
  auto log = ChangeLog::create(4096, 7, "0123456789abcdef0123456789abcdef01234567", 500);
  ASSERT_TRUE(log.ok()) << log.status().message();
  auto t = sample_table(110);
  t->log = *log;
  loop_.publish(t);
  const std::string stream = "*1\r\n$4\r\nPING\r\n";
  (*log)->append(as_bytes(stream));

  auto reader = loop_.make_reader();
  Fetched f = fetch_all(*reader);
  ASSERT_TRUE(f.status.ok()) << f.status.message();
  ASSERT_EQ(f.records.size(), 51u);
  for (const auto& [key, payload] : f.records) {
    if (key == "big") {
      EXPECT_EQ(payload, test::fake_payload(2u << 20, 'B'));
    } else {
      const int i = std::stoi(key.substr(4));
      EXPECT_EQ(payload, test::fake_payload(200 + i, static_cast<char>('a' + i % 26))) << key;
    }
  }
  expect_held(1, 1, 1);

  EXPECT_EQ(reader->descriptor().log_id, 7u);
  EXPECT_NE(reader->descriptor().log_rkey, 0u);
  LogTail tail(*reader, std::chrono::milliseconds(5000), 1u << 20);
  ASSERT_TRUE(tail.attach().ok());
  auto h = tail.read_header();
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->start, 500u);
  ASSERT_EQ(h->end, 500u + stream.size());
  auto copy = tail.read(*h, 500, h->end);
  ASSERT_TRUE(copy.ok()) << copy.status().message();
  EXPECT_TRUE(copy->intact);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(copy->bytes.data()), copy->bytes.size()),
            stream);
}

// Grace 0: the old epoch goes at once, its client's grant with it (before
// the registration: no MR or window left over, nothing read after free).
TEST_P(VerbsProtection, RetiringAnEpochRevokesItsClientsRkeysAtOnce) {
  auto log = ChangeLog::create(4096, 8, "r", 0);
  ASSERT_TRUE(log.ok());
  auto first = sample_table(120);
  first->log = *log;
  loop_.publish(first);
  auto a = loop_.make_reader();
  ASSERT_TRUE(connect(*a).ok());
  std::vector<std::byte> buf(256);
  ASSERT_TRUE(read_once(*a, 0, buf).ok());
  ASSERT_TRUE(read_once(*a, 0, buf, control::Region::kChangeLog).ok());
  expect_held(1, 1, 1);

  auto second = sample_table(121);
  second->log = *log;
  loop_.publish(second);
  first.reset();  // the server's references are the only ones left
  expect_held(1, 0, 1);
  Status s = read_once(*a, 0, buf);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("epoch gone"), std::string::npos) << s.message();

  // A newcomer reads the new epoch, the same log included.
  auto b = loop_.make_reader();
  ASSERT_TRUE(connect(*b).ok());
  EXPECT_EQ(b->descriptor().epoch, 121u);
  ASSERT_TRUE(read_once(*b, 0, buf).ok());
  ASSERT_TRUE(read_once(*b, 0, buf, control::Region::kChangeLog).ok());
  a.reset();
  ASSERT_TRUE(clients_become(1));
  expect_held(1, 1, 1);
  b.reset();
  ASSERT_TRUE(clients_become(0));
  expect_held(0, 0, 1);
}

class VerbsProtectionWithGrace : public VerbsProtection {
 protected:
  void SetUp() override {
    retire_grace_ = std::chrono::seconds(1);
    VerbsProtection::SetUp();
  }
};

// Within the grace a connected client keeps reading the old epoch; its
// registration goes with the last such client, or when the grace ends (the
// retire timer), whichever is first.
TEST_P(VerbsProtectionWithGrace, ARetiredEpochLastsWhileReadUntilTheGraceEnds) {
  loop_.publish(sample_table(130));
  auto leaves = loop_.make_reader(), stays = loop_.make_reader();
  ASSERT_TRUE(connect(*leaves).ok());
  ASSERT_TRUE(connect(*stays).ok());
  loop_.publish(sample_table(131));
  std::vector<std::byte> buf(256);
  ASSERT_TRUE(read_once(*leaves, 0, buf).ok());
  ASSERT_TRUE(read_once(*stays, 0, buf).ok());
  expect_held(2, 2, 2);
  leaves.reset();
  ASSERT_TRUE(clients_become(1));
  expect_held(1, 1, 2);  // still read by `stays`

  // The grace ends while `stays` is connected: the timer revokes its grant
  // and drops the registration.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  expect_held(1, 0, 1);
  Status s = read_once(*stays, 0, buf);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("epoch gone"), std::string::npos) << s.message();
  stays.reset();
  ASSERT_TRUE(clients_become(0));
  expect_held(0, 0, 1);
}

std::string protection_name(const ::testing::TestParamInfo<Protection>& p) {
  return p.param == Protection::kPdPerClient ? "PdPerClient" : "WindowPerClient";
}

INSTANTIATE_TEST_SUITE_P(Verbs, VerbsProtection,
                         ::testing::Values(Protection::kWindowPerClient, Protection::kPdPerClient),
                         protection_name);
INSTANTIATE_TEST_SUITE_P(Verbs, VerbsProtectionWithGrace,
                         ::testing::Values(Protection::kWindowPerClient, Protection::kPdPerClient),
                         protection_name);

// Under the PD-per-client fallback each client pins the table again: a
// client that RLIMIT_MEMLOCK cannot cover is refused "server full" naming the
// limit (and retries), before anything is registered for it; once a client
// leaves, its pinned memory is counted back.
TEST(VerbsPinning, PdPerClientIsRefusedWhenMemlockCannotCoverIt) {
  RRS_SKIP_WITHOUT_VERBS();
  VerbsServerLoop loop;
  VerbsServerLimits limits;
  limits.access.secret = kSecret;
  limits.test_no_memory_windows = true;
  auto table = sample_table(150);
  // Room for one client's copy, not two.
  limits.test_memlock_limit = table->bytes.size() * 3 / 2;
  ASSERT_TRUE(loop.start(limits).ok());
  loop.publish(table);
  auto a = loop.make_reader();
  ASSERT_TRUE(connect(*a).ok());
  std::vector<std::byte> buf(256);
  ASSERT_TRUE(read_once(*a, 0, buf).ok());
  auto b = loop.make_reader();
  Status s = b->connect(Clock::now() + std::chrono::milliseconds(500));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kUnavailable) << s.message();
  EXPECT_NE(s.message().find("RLIMIT_MEMLOCK"), std::string::npos) << s.message();
  a.reset();
  ASSERT_TRUE(connect(*b).ok());
  EXPECT_TRUE(read_once(*b, 0, buf).ok());
}

// The accept grants a client no more READs in flight than the server allows
// (VerbsServerLimits::max_in_flight), even when it asks for more: rdma_cm sets
// the client's QP to what was granted, so the hardware holds it there, and
// the client still reads everything.
TEST(VerbsReadDepth, ResponderResourcesAreCappedAtMaxInFlight) {
  RRS_SKIP_WITHOUT_VERBS();
  VerbsServerLoop loop;
  VerbsServerLimits limits;
  limits.max_in_flight = 2;
  ASSERT_TRUE(loop.start(limits).ok());
  loop.publish(sample_table(140));
  auto reader = loop.make_reader(std::nullopt);
  ASSERT_TRUE(connect(*reader).ok());
  EXPECT_EQ(reader->max_in_flight(), 2u);
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(reader->qp_for_test(), &attr, IBV_QP_MAX_QP_RD_ATOMIC, &init), 0);
  EXPECT_EQ(attr.max_rd_atomic, 2u);  // it asked for up to 16
  // The server's side of it: the READs its QP answers at once.
  auto dest = loop.with_peer([](const auto& p) {
    std::vector<int> depths;
    for (ibv_qp* qp : p.qps()) {
      ibv_qp_attr a{};
      ibv_qp_init_attr i{};
      depths.push_back(
          ibv_query_qp(qp, &a, IBV_QP_MAX_DEST_RD_ATOMIC, &i) == 0 ? a.max_dest_rd_atomic : -1);
    }
    return depths;
  });
  EXPECT_EQ(dest, std::vector<int>{2});
  Fetched f = fetch_all(*reader);
  ASSERT_TRUE(f.status.ok()) << f.status.message();
  EXPECT_EQ(f.records.size(), 51u);
}

}  // namespace
}  // namespace rrs
