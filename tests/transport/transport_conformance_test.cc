// The same cases against every transport: a server publishes a table built
// in-process, a reader fetches it through TableFetcher: TCP, TCP with TLS
// ("tcp-tls") and verbs.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "client/fetch/table_fetcher.h"
#include "client/follow/log_tail.h"
#include "common/net/socket.h"
#include "common/tls/tls_context.h"
#include "common/transport/tcp/table_reader.h"
#include "common/transport/tcp/table_server.h"
#include "common/transport/verbs/table_reader.h"
#include "common/transport/verbs/table_server.h"
#include "proto/byte_order.h"
#include "server/table_builder.h"
#include "tests/support/fake_payload.h"
#include "tests/support/localhost_tls.h"
#include "tests/support/server_loop.h"

namespace rrs {
namespace {

// Function payload and Lua script of sample_table(): the payload spans several
// 4 KiB reads.
std::string sample_functions() { return test::fake_payload(10000, 'F'); }
const char* const kSampleScript = "return redis.call('GET', KEYS[1])";

std::shared_ptr<Table> sample_table(uint64_t epoch, int records = 300) {
  TableBuilder b;
  b.set_source({{Engine::kRedis, 7, 0, 15}, table::SourceKind::kScan, 0, {}});
  for (int i = 0; i < records; ++i)
    b.add(i < records / 2 ? 0 : 1, "key:" + std::to_string(i),
          test::fake_payload(200 + i % 50, static_cast<char>('a' + i % 26)), -1);
  b.add(3, "huge", test::fake_payload(3u << 20, 'H'), -1);  // bigger than a 1 MiB read
  b.set_function_payload(sample_functions(), 3);
  b.add_lua_script(kSampleScript);
  auto t = b.build(epoch);
  EXPECT_TRUE(t.ok());
  return *t;
}

// A TableServer of either transport; the verbs cases need an RDMA device with
// an active port and an address on it: tests/vm/run-in-vm.sh provides both
// (rxe on a veth, RRS_VERBS_ADDR).
// "tcp-tls": TCP with TLS 1.3, certificates made for the test.
bool is_tcp(const std::string& transport) { return transport.starts_with("tcp"); }

class ServerHarness : public test::ServerLoop {
 public:
  Status start(const std::string& transport, std::chrono::seconds retire_grace,
               std::chrono::milliseconds keepalive = std::chrono::milliseconds(2000),
               const AccessPolicy& access = {}) {
    transport_ = transport;
    if (is_tcp(transport)) {
      host_ = "127.0.0.1";
      TcpServerLimits limits;
      limits.access = access;
      if (transport == "tcp-tls") {
        tls_.emplace();
        limits.tls = tls_->server;
      }
      return ServerLoop::start([&](event_base* base) {
        return TcpTableServer::listen(base, {host_, 0}, limits);
      });
    }
    host_ = test::verbs_address();
    VerbsServerLimits limits;
    limits.retire_grace = retire_grace;
    limits.keepalive_interval = keepalive;
    limits.access = access;
    return ServerLoop::start([&](event_base* base) {
      return VerbsTableServer::listen(base, {host_, 0}, limits);
    });
  }
  void disconnect_all() {
    on_loop([this] {
      server().disconnect_all();
      return 0;
    });
  }
  // Blocks the server's loop for `d`: a server that is alive but not answering.
  void stall(std::chrono::milliseconds d) {
    on_loop([d] {
      std::this_thread::sleep_for(d);
      return 0;
    });
  }
  std::unique_ptr<TableReader> make_reader(uint16_t port = 0,
                                           std::optional<std::string> secret = std::nullopt) {
    Endpoint at{host_, port ? port : this->port()};
    auto io = std::chrono::milliseconds(5000);
    if (is_tcp(transport_))
      return std::make_unique<TcpTableReader>(at, io, std::move(secret),
                                              tls_ ? tls_->client : nullptr);
    return std::make_unique<VerbsTableReader>(at, io, std::move(secret));
  }

 private:
  std::string transport_, host_;
  std::optional<test::LocalhostTls> tls_;
};

struct Fetched {
  Status open, run;
  TableInfo info;
  std::vector<Record> records;
  std::vector<std::shared_ptr<void>> keep;
  std::vector<RecordFailure> failures;
  std::optional<uint64_t> replaced_by;
};

// Fetches a whole table; `after_first_batch` runs once, when the first batch
// arrives (while reads are still in flight).
Fetched fetch(TableReader& reader, uint32_t chunk = 1u << 20,
              const std::function<void()>& after_first_batch = {}) {
  Fetched f;
  BlockingQueue<RecordBatch> q(4);
  FetchOptions opts;
  opts.chunk_size = chunk;
  opts.in_flight = 4;
  opts.io_timeout = std::chrono::milliseconds(5000);
  opts.queue_depth = 4;
  opts.reconnect_timeout = std::chrono::milliseconds(5000);
  TableFetcher fetcher(reader, opts, q);
  if (Status s = reader.connect(Clock::now() + std::chrono::seconds(5)); !s.ok()) {
    f.open = s;
    return f;
  }
  auto info = fetcher.open();
  if (!info.ok()) {
    f.open = info.status();
    return f;
  }
  f.info = *info;
  std::thread t([&] { f.run = fetcher.run(); });
  bool first = true;
  while (auto b = q.pop()) {
    if (first && after_first_batch) after_first_batch();
    first = false;
    // Copy out: the batch's buffers return to the pool when it is dropped.
    for (const Record& r : b->records) {
      auto key = std::make_shared<std::string>(r.key);
      auto payload = std::make_shared<std::string>(r.payload);
      f.records.push_back({r.index, r.db, r.expire_at_ms, *key, *payload});
      f.keep.push_back(key);
      f.keep.push_back(payload);
    }
  }
  t.join();
  f.failures = fetcher.failures();
  f.replaced_by = fetcher.replaced_by();
  return f;
}

class TransportConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "verbs") RRS_SKIP_WITHOUT_VERBS();
    harness_ = std::make_unique<ServerHarness>();
    // Grace 0: a replaced epoch is unregistered at once, even while read.
    Status s = harness_->start(GetParam(), std::chrono::seconds(0), keepalive_interval_, access_);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  std::chrono::milliseconds keepalive_interval_{2000};
  AccessPolicy access_;
  std::unique_ptr<ServerHarness> harness_;
};

TEST_P(TransportConformance, FetchesEveryRecordIntact) {
  auto t = sample_table(11);
  harness_->publish(t);
  for (uint32_t chunk : {4096u, 1u << 20}) {
    auto reader = harness_->make_reader();
    Fetched f = fetch(*reader, chunk);
    ASSERT_TRUE(f.open.ok()) << f.open.message();
    ASSERT_TRUE(f.run.ok()) << f.run.message();
    EXPECT_EQ(f.info.header.epoch, 11u);
    EXPECT_EQ(f.info.scripts.function_payload, sample_functions());
    EXPECT_EQ(f.info.scripts.function_libraries, 3u);
    EXPECT_EQ(f.info.scripts.lua_scripts, std::vector<std::string>{kSampleScript});
    EXPECT_TRUE(f.failures.empty());
    ASSERT_EQ(f.records.size(), 301u);
    size_t huge = 0;
    for (const Record& r : f.records) {
      if (r.key == "huge") {
        ++huge;
        EXPECT_EQ(r.payload, test::fake_payload(3u << 20, 'H'));
      }
    }
    EXPECT_EQ(huge, 1u);
  }
}

TEST_P(TransportConformance, ResumesAfterALostConnectionWithoutLosingOrRepeatingRecords) {
  harness_->publish(sample_table(14, 3000));
  auto reader = harness_->make_reader();
  Fetched f = fetch(*reader, 4096, [&] { harness_->disconnect_all(); });
  ASSERT_TRUE(f.open.ok()) << f.open.message();
  ASSERT_TRUE(f.run.ok()) << f.run.message();
  ASSERT_EQ(f.records.size(), 3001u);
  std::set<uint64_t> indexes;
  for (const Record& r : f.records) indexes.insert(r.index);
  EXPECT_EQ(indexes.size(), 3001u);
}

// The server restarted (or took a newer snapshot) while the fetch went on:
// the lost connection cannot be resumed, and the fetcher says which epoch
// replaced the one it read, so that the sync can start over on it.
TEST_P(TransportConformance, ALostConnectionToANewEpochNamesTheNewOne) {
  harness_->publish(sample_table(16, 3000));
  auto reader = harness_->make_reader();
  Fetched f = fetch(*reader, 4096, [&] {
    harness_->publish(sample_table(17, 3000));
    harness_->disconnect_all();
  });
  ASSERT_TRUE(f.open.ok()) << f.open.message();
  ASSERT_FALSE(f.run.ok());
  EXPECT_EQ(f.run.kind(), ErrorKind::kUnavailable);
  EXPECT_NE(f.run.message().find("now serves epoch 17, not 16"), std::string::npos)
      << f.run.message();
  EXPECT_EQ(f.replaced_by, std::optional<uint64_t>(17));
}

TEST_P(TransportConformance, CorruptRecordIsReportedNeverDelivered) {
  auto t = sample_table(12);
  // Flip one payload byte of slot 5 after the CRC was computed.
  t->bytes.data()[t->header.slot_offset(5) + table::kSlotHeaderSize + 20] ^= std::byte{0x40};
  harness_->publish(t);
  auto reader = harness_->make_reader();
  Fetched f = fetch(*reader);
  ASSERT_TRUE(f.run.ok()) << f.run.message();
  ASSERT_EQ(f.failures.size(), 1u);
  EXPECT_EQ(f.failures[0].index, 5u);
  EXPECT_NE(f.failures[0].reason.find("checksum"), std::string::npos);
  EXPECT_EQ(f.records.size(), 300u);
  for (const Record& r : f.records) EXPECT_NE(r.index, 5u);
}

TEST_P(TransportConformance, CorruptHeaderFailsOpenAsBadData) {
  auto t = sample_table(13);
  t->bytes.data()[table::hdr::kRecordCount] ^= std::byte{1};
  harness_->publish(t);
  auto reader = harness_->make_reader();
  Fetched f = fetch(*reader);
  ASSERT_FALSE(f.open.ok());
  EXPECT_EQ(f.open.kind(), ErrorKind::kBadData);
  EXPECT_NE(f.open.message().find("checksum"), std::string::npos);
}

TEST_P(TransportConformance, CorruptScriptsRegionFailsOpenAsBadData) {
  auto t = sample_table(15);
  t->bytes.data()[t->header.scripts_offset + 100] ^= std::byte{1};
  harness_->publish(t);
  auto reader = harness_->make_reader();
  Fetched f = fetch(*reader);
  ASSERT_FALSE(f.open.ok());
  EXPECT_EQ(f.open.kind(), ErrorKind::kBadData);
  EXPECT_NE(f.open.message().find("scripts region: checksum"), std::string::npos)
      << f.open.message();
}

// Posts one read and waits for it; the first failure of either step.
Status read_once(TableReader& reader, uint64_t offset, std::span<std::byte> buf) {
  RRS_RETURN_IF_ERROR(reader.register_buffer(buf));
  TableRead read{1, offset, buf};
  Status s = reader.post_reads({&read, 1});
  std::vector<uint64_t> done;
  if (s.ok()) s = reader.poll(done, std::chrono::milliseconds(5000));
  reader.unregister_buffer(buf);
  return s;
}

TEST_P(TransportConformance, ReadsOfAReplacedEpochAreRefused) {
  harness_->publish(sample_table(20));
  auto reader = harness_->make_reader();
  ASSERT_TRUE(reader->connect(Clock::now() + std::chrono::seconds(5)).ok());
  std::vector<std::byte> buf(256);
  ASSERT_TRUE(read_once(*reader, 0, buf).ok());
  harness_->publish(sample_table(21));
  Status s = read_once(*reader, 0, buf);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("epoch gone"), std::string::npos) << s.message();
}

// The change log: an epoch that carries one announces it, and its header and
// bytes are read through the log region; copies are checked by the seqlock
// rule, and a ring that wraps keeps its bytes in order.
std::shared_ptr<Table> table_with_log(uint64_t epoch, const ChangeLogPtr& log) {
  auto t = sample_table(epoch, 10);
  t->log = log;
  return t;
}

std::span<const std::byte> as_bytes(const std::string& s) { return std::as_bytes(std::span(s)); }

std::string stream_text(size_t from, size_t n) {
  std::string s;
  for (size_t i = from; i < from + n; ++i) s += static_cast<char>('a' + i % 26);
  return s;
}

TEST_P(TransportConformance, ChangeLogIsReadThroughTheLogRegion) {
  auto log = ChangeLog::create(4096, 77, "0123456789abcdef0123456789abcdef01234567", 1000);
  ASSERT_TRUE(log.ok()) << log.status().message();
  harness_->publish(table_with_log(70, *log));
  auto reader = harness_->make_reader();
  ASSERT_TRUE(reader->connect(Clock::now() + std::chrono::seconds(5)).ok());
  EXPECT_EQ(reader->descriptor().log_id, 77u);
  LogTail tail(*reader, std::chrono::milliseconds(5000), 1u << 20);
  ASSERT_TRUE(tail.attach().ok());

  auto h = tail.read_header();
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->start, 1000u);
  EXPECT_EQ(h->end, 1000u);
  EXPECT_EQ(h->capacity, 4096u);
  EXPECT_EQ(h->replid, "0123456789abcdef0123456789abcdef01234567");

  // 3000 bytes, then 3000 more: the second write wraps the ring.
  (*log)->append(as_bytes(stream_text(0, 3000)));
  h = tail.read_header();
  ASSERT_TRUE(h.ok());
  auto copy = tail.read(*h, 1000, 4000);
  ASSERT_TRUE(copy.ok()) << copy.status().message();
  EXPECT_TRUE(copy->intact);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(copy->bytes.data()), copy->bytes.size()),
            stream_text(0, 3000));
  (*log)->append(as_bytes(stream_text(3000, 3000)));
  h = tail.read_header();
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->start, 7000u - 4096);
  copy = tail.read(*h, 4000, 7000);
  ASSERT_TRUE(copy.ok()) << copy.status().message();
  EXPECT_TRUE(copy->intact);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(copy->bytes.data()), copy->bytes.size()),
            stream_text(3000, 3000));

  // A range chosen from an old header, overwritten before it was copied: the
  // header read after the copy gives it away.
  auto before = *h;
  (*log)->append(as_bytes(stream_text(6000, 4096)));
  copy = tail.read(before, 4000, 7000);
  ASSERT_TRUE(copy.ok());
  EXPECT_FALSE(copy->intact);

  // Reads stay inside the log.
  std::vector<std::byte> buf(64);
  ASSERT_TRUE(reader->register_buffer(buf).ok());
  TableRead outside{9, change_log::memory_size(4096) - 10, buf, control::Region::kChangeLog};
  Status s = reader->post_reads({&outside, 1});
  if (s.ok()) {
    std::vector<uint64_t> done;
    s = reader->poll(done, std::chrono::milliseconds(5000));
  }
  reader->unregister_buffer(buf);
  EXPECT_FALSE(s.ok());
}

TEST_P(TransportConformance, ChangeLogBytesAreCheckedAgainstTheirSeals) {
  auto log = ChangeLog::create(4096, 78, "0123456789abcdef0123456789abcdef01234567", 1000);
  ASSERT_TRUE(log.ok()) << log.status().message();
  (*log)->corrupt_after_sealing_for_test(1000 + 2100);  // in the third block
  harness_->publish(table_with_log(71, *log));
  auto reader = harness_->make_reader();
  ASSERT_TRUE(reader->connect(Clock::now() + std::chrono::seconds(5)).ok());
  LogTail tail(*reader, std::chrono::milliseconds(5000), 1u << 20);
  ASSERT_TRUE(tail.attach().ok());
  (*log)->append(as_bytes(stream_text(0, 1500)));

  // A copy from the middle of a block re-reads the block from its start, to
  // check it, and hands over only the bytes asked for.
  auto h = tail.read_header();
  ASSERT_TRUE(h.ok());
  auto copy = tail.read(*h, 1700, 2500);
  ASSERT_TRUE(copy.ok()) << copy.status().message();
  ASSERT_TRUE(copy->intact);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(copy->bytes.data()), copy->bytes.size()),
            stream_text(700, 800));

  // The flipped byte: read kCorruptReads times, then refused, naming the
  // block's offsets. The blocks before it are still good.
  (*log)->append(as_bytes(stream_text(1500, 1500)));
  h = tail.read_header();
  ASSERT_TRUE(h.ok());
  copy = tail.read(*h, 2500, h->end);
  ASSERT_FALSE(copy.ok());
  EXPECT_EQ(copy.status().kind(), ErrorKind::kBadData);
  EXPECT_NE(copy.status().message().find("3 times"), std::string::npos) << copy.status().message();
  EXPECT_NE(copy.status().message().find("offsets 3048..4000"), std::string::npos)
      << copy.status().message();
  copy = tail.read(*h, 2500, 3048);
  ASSERT_TRUE(copy.ok()) << copy.status().message();
  EXPECT_EQ(copy->bytes.size(), 548u);
}

TEST_P(TransportConformance, NewEpochOfTheSameHistoryKeepsTheLog) {
  auto log = ChangeLog::create(4096, 88, "r", 0);
  ASSERT_TRUE(log.ok());
  harness_->publish(table_with_log(80, *log));
  harness_->publish(table_with_log(81, *log));
  (*log)->append(as_bytes(stream_text(0, 100)));
  auto reader = harness_->make_reader();
  ASSERT_TRUE(reader->connect(Clock::now() + std::chrono::seconds(5)).ok());
  EXPECT_EQ(reader->descriptor().epoch, 81u);
  EXPECT_EQ(reader->descriptor().log_id, 88u);
  LogTail tail(*reader, std::chrono::milliseconds(5000), 1u << 20);
  ASSERT_TRUE(tail.attach().ok());
  auto h = tail.read_header();
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->end, 100u);
}

TEST_P(TransportConformance, TableWithoutALogCannotBeFollowed) {
  harness_->publish(sample_table(90, 10));
  auto reader = harness_->make_reader();
  ASSERT_TRUE(reader->connect(Clock::now() + std::chrono::seconds(5)).ok());
  EXPECT_EQ(reader->descriptor().log_id, 0u);
  LogTail tail(*reader, std::chrono::milliseconds(5000), 1u << 20);
  Status s = tail.attach();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--source psync"), std::string::npos) << s.message();
}

TEST_P(TransportConformance, OutOfRangeReadIsRefused) {
  auto t = sample_table(30, 10);
  harness_->publish(t);
  auto reader = harness_->make_reader();
  ASSERT_TRUE(reader->connect(Clock::now() + std::chrono::seconds(5)).ok());
  std::vector<std::byte> buf(4096);
  Status s = read_once(*reader, t->header.total_size - 100, buf);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.message().find("out of range") != std::string::npos ||
              s.message().find("outside") != std::string::npos)
      << s.message();
}

TEST_P(TransportConformance, UnreachableServerTimesOutAsUnavailable) {
  harness_->publish(sample_table(40, 10));
  auto reader = harness_->make_reader(1);  // nothing listens on port 1
  auto t0 = Clock::now();
  Status s = reader->connect(t0 + std::chrono::milliseconds(800));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kUnavailable);
  EXPECT_LT(seconds_since(t0), 5.0);
}

TEST_P(TransportConformance, ManyReadersAtOnce) {
  harness_->publish(sample_table(50));
  std::vector<std::thread> threads;
  std::vector<Fetched> results(4);
  for (size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] {
      auto reader = harness_->make_reader();
      results[i] = fetch(*reader);
    });
  for (auto& t : threads) t.join();
  for (const Fetched& f : results) {
    EXPECT_TRUE(f.open.ok()) << f.open.message();
    EXPECT_TRUE(f.run.ok()) << f.run.message();
    EXPECT_EQ(f.records.size(), 301u);
  }
}

// Keepalive: RDMA has no transport keepalive and the server cannot see
// one-sided READs, so a verbs client must say it is alive; TCP's own
// keepalive (enable_tcp_keepalive) does that job there.
class KeepaliveConformance : public TransportConformance {
 protected:
  static constexpr auto kInterval = std::chrono::milliseconds(100);
  static constexpr auto kSilenceLimit = kInterval * control::kKeepaliveMisses;
  void SetUp() override {
    keepalive_interval_ = kInterval;
    TransportConformance::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    harness_->publish(sample_table(60, 10));
  }
  // Calls keepalive() every few ms for `d`; the first failure.
  static Status keep_alive_for(TableReader& r, std::chrono::milliseconds d) {
    for (auto until = Clock::now() + d; Clock::now() < until;) {
      RRS_RETURN_IF_ERROR(r.keepalive());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return {};
  }
};

TEST_P(KeepaliveConformance, ReaderThatKeepsAliveStaysConnectedWhileIdle) {
  auto reader = harness_->make_reader();
  ASSERT_TRUE(reader->connect(Clock::now() + std::chrono::seconds(5)).ok());
  Status s = keep_alive_for(*reader, kSilenceLimit * 3);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(harness_->client_count(), 1u);
  std::vector<std::byte> buf(256);
  s = read_once(*reader, 0, buf);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST_P(KeepaliveConformance, SilentReaderIsDropped) {
  if (is_tcp(GetParam()))
    GTEST_SKIP() << "tcp: a live but silent TCP client is dropped by the idle timeout "
                    "(AccessConformance.IdleClientIsDropped); the kernel's keepalive notices a "
                    "dead host";
  auto reader = harness_->make_reader();
  ASSERT_TRUE(reader->connect(Clock::now() + std::chrono::seconds(5)).ok());
  EXPECT_EQ(harness_->client_count(), 1u);
  std::this_thread::sleep_for(kSilenceLimit * 3);
  EXPECT_EQ(harness_->client_count(), 0u);
  std::vector<std::byte> buf(256);
  Status s = read_once(*reader, 0, buf);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kUnavailable) << s.message();
}

TEST_P(KeepaliveConformance, ServerThatStopsAnsweringIsDeclaredGone) {
  if (is_tcp(GetParam()))
    GTEST_SKIP() << "tcp: a stalled server with a live kernel is not detected by keepalive; "
                    "reads time out after --io-timeout instead";
  auto reader = harness_->make_reader();
  ASSERT_TRUE(reader->connect(Clock::now() + std::chrono::seconds(5)).ok());
  std::thread stall([&] { harness_->stall(kSilenceLimit * 4); });
  Status s = keep_alive_for(*reader, kSilenceLimit * 3);
  stall.join();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kUnavailable);
  EXPECT_NE(s.message().find("answered no keepalive"), std::string::npos) << s.message();
}

// The shared secret, the client limit and the idle limits.
class AccessConformance : public TransportConformance {
 protected:
  static constexpr const char* kSecret = "conformance-secret-0123456789";
  void SetUp() override {
    access_.secret = kSecret;
    access_.max_clients = 2;
    access_.idle_timeout = std::chrono::seconds(1);
    access_.handshake_timeout = std::chrono::milliseconds(500);
    TransportConformance::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    harness_->publish(sample_table(70, 50));
  }
  Status connect(TableReader& r) { return r.connect(Clock::now() + std::chrono::seconds(5)); }
  // Waits up to 5 s for the server to count `n` clients.
  bool clients_become(size_t n) {
    for (auto until = Clock::now() + std::chrono::seconds(5); Clock::now() < until;) {
      if (harness_->client_count() == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
};

TEST_P(AccessConformance, RightSecretReadsTheTable) {
  auto reader = harness_->make_reader(0, kSecret);
  Fetched f = fetch(*reader);
  ASSERT_TRUE(f.open.ok()) << f.open.message();
  ASSERT_TRUE(f.run.ok()) << f.run.message();
  EXPECT_EQ(f.records.size(), 51u);
}

TEST_P(AccessConformance, WrongOrMissingSecretIsDeniedAndGetsNoDescriptor) {
  auto wrong = harness_->make_reader(0, std::string("not-the-secret-at-all-0000"));
  Status s = connect(*wrong);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kDenied) << s.message();
  EXPECT_NE(s.message().find("wrong shared secret"), std::string::npos) << s.message();
  EXPECT_EQ(wrong->descriptor().rkey, 0u);
  EXPECT_EQ(wrong->descriptor().table_length, 0u);

  auto none = harness_->make_reader();
  s = connect(*none);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kDenied) << s.message();
  EXPECT_NE(s.message().find("--auth-file"), std::string::npos) << s.message();
  EXPECT_EQ(none->descriptor().table_length, 0u);
  EXPECT_TRUE(clients_become(0));
}

TEST_P(AccessConformance, OneClientTooManyIsRefusedOthersCarryOn) {
  auto a = harness_->make_reader(0, kSecret), b = harness_->make_reader(0, kSecret);
  ASSERT_TRUE(connect(*a).ok());
  ASSERT_TRUE(connect(*b).ok());
  auto c = harness_->make_reader(0, kSecret);
  // Shorter than the idle timeout, which would free a slot.
  Status s = c->connect(Clock::now() + std::chrono::milliseconds(300));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kUnavailable) << s.message();
  EXPECT_NE(s.message().find("--max-clients"), std::string::npos) << s.message();
  std::vector<std::byte> buf(256);
  for (TableReader* r : {a.get(), b.get()}) {
    Status read = read_once(*r, 0, buf);
    EXPECT_TRUE(read.ok()) << read.message();
  }
}

// "server full" is retried until the client's deadline: a slot that frees
// meanwhile is taken.
TEST_P(AccessConformance, AFullServerIsWaitedFor) {
  auto a = harness_->make_reader(0, kSecret), b = harness_->make_reader(0, kSecret);
  ASSERT_TRUE(connect(*a).ok());
  ASSERT_TRUE(connect(*b).ok());
  std::thread leave([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    a.reset();
  });
  auto c = harness_->make_reader(0, kSecret);
  Status s = connect(*c);
  leave.join();
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<std::byte> buf(256);
  Status read = read_once(*c, 0, buf);
  EXPECT_TRUE(read.ok()) << read.message();
}

TEST_P(AccessConformance, IdleClientIsDropped) {
  if (GetParam() == "verbs")
    GTEST_SKIP() << "verbs: one-sided READs are invisible to the server, so idleness cannot be "
                    "seen; the keepalive drops a silent client (KeepaliveConformance)";
  auto reader = harness_->make_reader(0, kSecret);
  ASSERT_TRUE(connect(*reader).ok());
  EXPECT_EQ(harness_->client_count(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_TRUE(clients_become(0));
  std::vector<std::byte> buf(256);
  EXPECT_FALSE(read_once(*reader, 0, buf).ok());
}

TEST_P(AccessConformance, PeerThatNeverSaysHelloIsDropped) {
  if (GetParam() == "verbs")
    GTEST_SKIP() << "verbs: a peer is only counted once its CONNECT_REQUEST carried a HELLO; "
                    "one that then never sends AUTH is dropped by the same handshake timer";
  auto fd = tcp_connect({"127.0.0.1", harness_->port()}, std::chrono::milliseconds(2000));
  ASSERT_TRUE(fd.ok()) << fd.status().message();
  EXPECT_TRUE(clients_become(1));
  EXPECT_TRUE(clients_become(0));  // after the 500 ms handshake timeout
}

// Over verbs each authenticated client reads through type-2 memory windows
// bound to its own QP: its rkeys are its own, useless from another client's
// QP, and dead once it disconnects.
TEST_P(AccessConformance, EachVerbsClientGetsItsOwnWindow) {
  if (is_tcp(GetParam())) GTEST_SKIP() << "tcp: no rkeys";
  auto a = harness_->make_reader(0, kSecret), b = harness_->make_reader(0, kSecret);
  ASSERT_TRUE(connect(*a).ok());
  ASSERT_TRUE(connect(*b).ok());
  const uint32_t a_rkey = a->descriptor().rkey;
  if (a_rkey == b->descriptor().rkey) {
    if (std::getenv("RRS_REQUIRE_VERBS")) FAIL() << "clients share rkey " << a_rkey;
    GTEST_SKIP() << "this RDMA device has no type-2 memory windows";
  }
  std::vector<std::byte> buf(256);
  ASSERT_TRUE(read_once(*b, 0, buf).ok());
  // A's rkey from B's QP: refused by B's own connection.
  auto* b_verbs = static_cast<VerbsTableReader*>(b.get());
  b_verbs->use_rkeys_for_test(a_rkey, a->descriptor().log_rkey);
  Status s = read_once(*b, 0, buf);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("remote access"), std::string::npos) << s.message();
  // A still reads with it.
  ASSERT_TRUE(read_once(*a, 0, buf).ok());
  // Once A is gone, a newcomer cannot use A's rkey either.
  a.reset();
  b.reset();
  ASSERT_TRUE(clients_become(0));
  auto c = harness_->make_reader(0, kSecret);
  ASSERT_TRUE(connect(*c).ok());
  EXPECT_NE(c->descriptor().rkey, a_rkey);
  static_cast<VerbsTableReader*>(c.get())->use_rkeys_for_test(a_rkey, 0);
  EXPECT_FALSE(read_once(*c, 0, buf).ok());
}

TEST_P(TransportConformance, ClientWithASecretRefusesAServerWithout) {
  harness_->publish(sample_table(71, 5));
  auto reader = harness_->make_reader(0, std::string("a-secret-the-server-lacks"));
  Status s = reader->connect(Clock::now() + std::chrono::seconds(5));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kDenied) << s.message();
  EXPECT_NE(s.message().find("does not ask for the shared secret"), std::string::npos)
      << s.message();
}

// gtest names: "tcp_tls".
std::string name_of(std::string transport) {
  std::replace(transport.begin(), transport.end(), '-', '_');
  return transport;
}

INSTANTIATE_TEST_SUITE_P(Transports, AccessConformance,
                         ::testing::Values("tcp", "tcp-tls", "verbs"),
                         [](const auto& p) { return name_of(p.param); });

INSTANTIATE_TEST_SUITE_P(Transports, KeepaliveConformance,
                         ::testing::Values("tcp", "tcp-tls", "verbs"),
                         [](const auto& p) { return name_of(p.param); });

INSTANTIATE_TEST_SUITE_P(Transports, TransportConformance,
                         ::testing::Values("tcp", "tcp-tls", "verbs"),
                         [](const auto& p) { return name_of(p.param); });

}  // namespace
}  // namespace rrs
