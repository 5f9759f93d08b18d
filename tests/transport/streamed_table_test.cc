// A table read while it is being written (layout 6, state building): a
// thread hands out a complete table's records in steps, rewriting the header
// after each, while a TableFetcher reads it through the transport. The room
// not written yet is 0xFF bytes, so a read past what the header counts as
// complete fails its CRC (and shows as a re-read). Over verbs the server
// registers the table in growing prefixes (a small step here, so a read
// often waits for the next), and a READ past one would fail the connection.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "client/fetch/table_fetcher.h"
#include "common/transport/tcp/table_reader.h"
#include "common/transport/tcp/table_server.h"
#include "common/transport/verbs/table_reader.h"
#include "common/transport/verbs/table_server.h"
#include "proto/byte_order.h"
#include "proto/crc32c.h"
#include "server/table_builder.h"
#include "tests/support/fake_payload.h"
#include "tests/support/server_loop.h"

namespace rrs {
namespace {

constexpr uint64_t kEpoch = 31;
// Over verbs: the table (about 4 MiB) is registered in many prefixes.
constexpr uint64_t kGrowStep = 64 << 10;
constexpr int kRecords = 2000;

struct Expected {
  uint32_t db;
  std::string payload;
};

// Records in DBs 0, 1 and 3; every 50th too big for its slot (the heap), and
// one bigger than a read, last.
std::map<std::string, Expected> sample_records() {
  std::map<std::string, Expected> out;
  for (int i = 0; i < kRecords; ++i) {
    const uint32_t db = i < 900 ? 0 : i < 1500 ? 1 : 3;
    const size_t len = i % 50 == 7 ? 5000 + i : 100 + i % 200;
    out["key:" + std::to_string(i)] = {db,
                                       test::fake_payload(len, static_cast<char>('a' + i % 26))};
  }
  out["zz:huge"] = {3, test::fake_payload(3u << 20, 'H')};
  return out;
}

std::shared_ptr<Table> complete_table(const std::map<std::string, Expected>& records) {
  // Sorted by DB, as the builder needs: the map's order, within each DB.
  TableBuilder b;
  b.set_source({{Engine::kRedis, 7, 2, 4}, table::SourceKind::kScan, 0, {}});
  for (uint32_t db : {0u, 1u, 3u})
    for (const auto& [key, e] : records)
      if (e.db == db) b.add(db, key, e.payload, -1);
  b.set_function_payload(test::fake_payload(5000, 'F'), 1);
  auto t = b.build(kEpoch);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return *t;
}

// The complete table `src` written again into room of its own, as a sidecar
// streams it: records handed out in steps (slots, then their heap bytes,
// then the header that counts them), then the DB directory and the final
// header.
class GrowingTable {
 public:
  explicit GrowingTable(const Table& src) : src_(src) {
    table::Header h = src.header;
    h.state = table::State::kBuilding;
    h.dbdir_crc32c = 0;
    EXPECT_TRUE(table::plan_streamed(h, src.header.scripts_size, src.header.record_count + 500,
                                     src.header.heap_size + (1u << 20))
                    .ok());
    EXPECT_EQ(h.slots_offset, src.header.slots_offset);
    auto bytes = PageBuffer::allocate(h.total_size);
    EXPECT_TRUE(bytes.ok());
    table_ = std::make_shared<Table>();
    table_->bytes = std::move(*bytes);
    std::memset(table_->bytes.data(), 0xFF, h.total_size);
    std::memcpy(at(h.scripts_offset), src.bytes.data() + src.header.scripts_offset, h.scripts_size);
    table_->header = h;
    header_ = h;
    write_header(header_);
  }

  std::shared_ptr<Table> table() const { return table_; }
  uint64_t records() const { return src_.header.record_count; }

  // Records [0, n) complete (never fewer than before). `torn`: the header is
  // first left for a moment with a CRC that does not verify, as a reader may
  // catch it mid-rewrite.
  void grow_to(uint64_t n, bool torn = false) {
    n = std::max(n, header_.record_count);
    const table::Header& s = src_.header;
    for (uint64_t i = header_.record_count; i < n; ++i) {
      const std::byte* slot = src_.bytes.data() + s.slot_offset(i);
      std::memcpy(at(header_.slot_offset(i)), slot, s.slot_size);
      if (static_cast<table::SlotKind>(slot[table::slot::kKind]) != table::SlotKind::kHeap)
        continue;
      const uint64_t ref = wire::load_u64(slot + table::slot::kHeapRef);
      const uint64_t end = ref +
                           table::heap_footprint(wire::load_u32(slot + table::slot::kKeyLen),
                                                 wire::load_u64(slot + table::slot::kPayloadLen));
      std::memcpy(at(header_.heap_offset + header_.heap_size),
                  src_.bytes.data() + s.heap_offset + header_.heap_size, end - header_.heap_size);
      header_.heap_size = end;
    }
    header_.record_count = header_.slot_count = n;
    header_.slots_size = n * header_.slot_size;
    if (torn) {
      write_header(header_, /*torn=*/true);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    write_header(header_);
  }

  // The DB directory (`dbs`, the source's when empty) and the final header.
  void complete(std::vector<table::DbEntry> dbs = {}) {
    grow_to(records());
    if (dbs.empty()) dbs = source_dbs();
    table::Header h = header_;
    h.state = table::State::kReady;
    h.db_count = static_cast<uint32_t>(dbs.size());
    table::plan_completion(h);
    for (size_t i = 0; i < dbs.size(); ++i)
      table::encode_db_entry(dbs[i], std::span<std::byte, table::kDbEntrySize>(
                                         at(h.dbdir_offset + i * table::kDbEntrySize),
                                         table::kDbEntrySize));
    h.dbdir_crc32c = crc_of(h.dbdir_offset, h.dbdir_size);
    header_ = h;
    table_->completed_header = h;
    write_header(h);
    table_->completed_size.store(h.total_size, std::memory_order_release);
  }

  void break_off(const std::string& why) {
    header_.state = table::State::kBroken;
    header_.broken_reason = why;
    write_header(header_);
  }

  std::vector<table::DbEntry> source_dbs() const {
    const table::Header& s = src_.header;
    auto dbs = table::decode_db_directory(s, {src_.bytes.data() + s.dbdir_offset,
                                              static_cast<size_t>(s.dbdir_size)});
    EXPECT_TRUE(dbs.ok());
    return *dbs;
  }

 private:
  std::byte* at(uint64_t offset) { return table_->bytes.data() + offset; }
  uint32_t crc_of(uint64_t offset, uint64_t len) { return crc32c(0, at(offset), len); }

  void write_header(const table::Header& h, bool torn = false) {
    std::array<std::byte, table::kHeaderSize> bytes{};
    table::encode_header(h, bytes);
    if (torn) bytes[table::hdr::kHeaderCrc] ^= std::byte{0x5a};
    // The records before the header that counts them.
    std::atomic_thread_fence(std::memory_order_release);
    table_->written.store(h.state == table::State::kReady ? h.total_size
                                                          : h.heap_offset + h.heap_size,
                          std::memory_order_release);
    std::memcpy(at(0), bytes.data(), bytes.size());
  }

  const Table& src_;
  std::shared_ptr<Table> table_;
  table::Header header_;
};

class ServerHarness : public test::ServerLoop {
 public:
  Status start(const std::string& transport) {
    transport_ = transport;
    if (transport == "tcp") {
      host_ = "127.0.0.1";
      return ServerLoop::start([&](event_base* base) {
        return TcpTableServer::listen(base, {host_, 0}, {});
      });
    }
    host_ = test::verbs_address();
    return ServerLoop::start([&](event_base* base) {
      VerbsServerLimits limits;
      limits.grow_step = kGrowStep;
      return VerbsTableServer::listen(base, {host_, 0}, limits);
    });
  }
  void disconnect_all() {
    on_loop([this] {
      server().disconnect_all();
      return 0;
    });
  }
  std::unique_ptr<TableReader> make_reader() {
    const Endpoint at{host_, port()};
    const auto io = std::chrono::milliseconds(5000);
    if (transport_ == "tcp") return std::make_unique<TcpTableReader>(at, io, std::nullopt);
    return std::make_unique<VerbsTableReader>(at, io, std::nullopt);
  }

 private:
  std::string transport_, host_;
};

struct Fetched {
  Status open, run;
  TableInfo at_open, at_end;
  std::vector<Record> records;
  std::vector<std::shared_ptr<void>> keep;
  std::vector<RecordFailure> failures;
  uint64_t rereads = 0;
};

// Connects and opens; `after_open` runs then (it may start `writer` and wait
// for the table), before run(); `after_first_batch` once the first batch is
// in. `writer` is joined before the fetcher goes.
Fetched fetch(TableReader& reader, std::thread& writer,
              const std::function<void(TableFetcher&)>& after_open = {},
              const std::function<void()>& after_first_batch = {}) {
  Fetched f;
  BlockingQueue<RecordBatch> q(4);
  FetchOptions opts;
  opts.chunk_size = 4096;  // many reads, several in flight
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
  f.at_open = *info;
  if (after_open) after_open(fetcher);
  std::thread t([&] { f.run = fetcher.run(); });
  bool first = true;
  while (auto b = q.pop()) {
    if (first && after_first_batch) after_first_batch();
    first = false;
    for (const Record& r : b->records) {  // copied out: the buffers go back to the pool
      auto key = std::make_shared<std::string>(r.key);
      auto payload = std::make_shared<std::string>(r.payload);
      f.records.push_back({r.index, r.db, r.expire_at_ms, *key, *payload});
      f.keep.push_back(key);
      f.keep.push_back(payload);
    }
  }
  t.join();
  if (writer.joinable()) writer.join();
  f.at_end = fetcher.table();
  f.failures = fetcher.failures();
  f.rereads = fetcher.rereads();
  return f;
}

class StreamedTable : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "verbs") RRS_SKIP_WITHOUT_VERBS();
    expected_ = sample_records();
    src_ = complete_table(expected_);
    growing_ = std::make_unique<GrowingTable>(*src_);
    Status s = harness_.start(GetParam());
    ASSERT_TRUE(s.ok()) << s.message();
  }
  void TearDown() override {
    if (writer_.joinable()) writer_.join();
  }
  // Hands out the records in `steps` steps a few ms apart, each header first
  // torn for a moment, then `last` (complete() by default).
  void grow_in_steps(int steps, std::function<void()> last = {}) {
    writer_ = std::thread([this, steps, last = std::move(last)] {
      const uint64_t n = growing_->records();
      for (int k = 1; k <= steps; ++k) {
        growing_->grow_to(n * k / (steps + 1), /*torn=*/true);
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
      }
      if (last)
        last();
      else
        growing_->complete();
    });
  }
  // Every record exactly once, intact, in its DB; nothing read twice.
  void expect_every_record(const Fetched& f) {
    EXPECT_TRUE(f.failures.empty());
    EXPECT_EQ(f.rereads, 0u) << "a record was read before the header counted it complete";
    std::set<uint64_t> indexes;
    for (const Record& r : f.records) {
      indexes.insert(r.index);
      auto e = expected_.find(std::string(r.key));
      ASSERT_NE(e, expected_.end()) << r.key;
      EXPECT_EQ(r.db, e->second.db) << r.key;
      EXPECT_TRUE(r.payload == e->second.payload) << r.key;
    }
    EXPECT_EQ(f.records.size(), expected_.size());
    EXPECT_EQ(indexes.size(), expected_.size());
  }

  std::map<std::string, Expected> expected_;
  std::shared_ptr<Table> src_;
  std::unique_ptr<GrowingTable> growing_;
  ServerHarness harness_;
  std::thread writer_;
};

TEST_P(StreamedTable, RecordsAreReadAsTheyAreWritten) {
  growing_->grow_to(10);
  harness_.publish(growing_->table());
  auto reader = harness_.make_reader();
  Fetched f = fetch(*reader, writer_, [&](TableFetcher&) { grow_in_steps(20); });
  ASSERT_TRUE(f.open.ok()) << f.open.message();
  ASSERT_TRUE(f.run.ok()) << f.run.message();
  EXPECT_FALSE(f.at_open.complete());
  EXPECT_EQ(f.at_open.header.record_count, 10u);
  EXPECT_TRUE(f.at_open.dbs.empty());
  EXPECT_EQ(f.at_open.scripts.function_payload, test::fake_payload(5000, 'F'));
  expect_every_record(f);
  // The final header and DB directory, for the sync driver to take.
  EXPECT_TRUE(f.at_end.complete());
  EXPECT_EQ(f.at_end.header.record_count, expected_.size());
  ASSERT_EQ(f.at_end.dbs.size(), 3u);
  EXPECT_EQ(f.at_end.dbs[2].db, 3u);
}

TEST_P(StreamedTable, ResumesAfterALostConnectionWhileWritten) {
  growing_->grow_to(100);
  harness_.publish(growing_->table());
  auto reader = harness_.make_reader();
  Fetched f = fetch(
      *reader, writer_, [&](TableFetcher&) { grow_in_steps(20); },
      [&] { harness_.disconnect_all(); });
  ASSERT_TRUE(f.open.ok()) << f.open.message();
  ASSERT_TRUE(f.run.ok()) << f.run.message();
  expect_every_record(f);
}

// A load path that needs the DB list up front (--atomic) waits for it.
TEST_P(StreamedTable, WaitsUntilCompleteWhenAskedTo) {
  harness_.publish(growing_->table());
  auto reader = harness_.make_reader();
  Status waited;
  TableInfo complete;
  Fetched f = fetch(*reader, writer_, [&](TableFetcher& fetcher) {
    grow_in_steps(5);
    auto info = fetcher.wait_until_complete();
    waited = info.status();
    if (info.ok()) complete = *info;
  });
  ASSERT_TRUE(waited.ok()) << waited.message();
  EXPECT_TRUE(complete.complete());
  EXPECT_EQ(complete.dbs.size(), 3u);
  EXPECT_EQ(complete.header.record_count, expected_.size());
  ASSERT_TRUE(f.run.ok()) << f.run.message();
  expect_every_record(f);
}

TEST_P(StreamedTable, BrokenSnapshotFailsAsUnavailableWithItsReason) {
  growing_->grow_to(10);
  harness_.publish(growing_->table());
  auto reader = harness_.make_reader();
  Fetched f = fetch(*reader, writer_, [&](TableFetcher&) {
    grow_in_steps(1, [&] {
      growing_->grow_to(1200);
      growing_->break_off("master link lost");
    });
  });
  ASSERT_TRUE(f.open.ok()) << f.open.message();
  ASSERT_FALSE(f.run.ok());
  EXPECT_EQ(f.run.kind(), ErrorKind::kUnavailable);
  EXPECT_NE(f.run.message().find("broke off after 1200 records: master link lost"),
            std::string::npos)
      << f.run.message();
  EXPECT_TRUE(f.failures.empty());
  EXPECT_LE(f.records.size(), 1200u);
}

// The server withdraws a table that broke off (or replaces it with a newer
// one): reads of it are "epoch gone", and reconnecting would only wait for
// the next snapshot, which this fetch cannot use. It stops at once.
TEST_P(StreamedTable, WithdrawnWhileWrittenStopsAtOnce) {
  growing_->grow_to(10);
  harness_.publish(growing_->table());
  auto reader = harness_.make_reader();
  const auto t0 = Clock::now();
  Fetched f = fetch(*reader, writer_, [&](TableFetcher&) {
    // Withdrawn, with no table to go back to: a reconnect would wait.
    grow_in_steps(2, [&] { harness_.publish(table_without_bytes(kEpoch + 1, nullptr)); });
  });
  ASSERT_TRUE(f.open.ok()) << f.open.message();
  ASSERT_FALSE(f.run.ok());
  EXPECT_EQ(f.run.kind(), ErrorKind::kUnavailable);
  EXPECT_NE(f.run.message().find("stopped serving epoch 31 while it was being written"),
            std::string::npos)
      << f.run.message();
  EXPECT_LT(seconds_since(t0), 4.0) << "it waited to reconnect";
}

TEST_P(StreamedTable, BrokenAtOpenFailsBeforeAnythingIsRead) {
  growing_->grow_to(10);
  growing_->break_off("out of room");
  harness_.publish(growing_->table());
  auto reader = harness_.make_reader();
  Fetched f = fetch(*reader, writer_);
  ASSERT_FALSE(f.open.ok());
  EXPECT_EQ(f.open.kind(), ErrorKind::kUnavailable);
  EXPECT_NE(f.open.message().find("broke off after 10 records: out of room"), std::string::npos)
      << f.open.message();
}

// Records went to the loader by their own DB before the directory existed:
// a directory that puts them elsewhere fails the fetch.
TEST_P(StreamedTable, DirectoryThatContradictsTheRecordsFailsAsBadData) {
  growing_->grow_to(10);
  harness_.publish(growing_->table());
  std::vector<table::DbEntry> lying = growing_->source_dbs();
  lying[1].db = 2;  // the records say DB 1
  auto reader = harness_.make_reader();
  Fetched f = fetch(*reader, writer_, [&](TableFetcher& fetcher) {
    grow_in_steps(3, [&, watched = &fetcher] {
      // Every DB 1 record is known, so read by its own DB, before the
      // directory exists (fetch() joins this before the fetcher goes).
      for (auto until = Clock::now() + std::chrono::seconds(10);
           watched->watermark().records < 1500 && Clock::now() < until;)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      growing_->complete(lying);
    });
  });
  ASSERT_TRUE(f.open.ok()) << f.open.message();
  ASSERT_FALSE(f.run.ok());
  EXPECT_EQ(f.run.kind(), ErrorKind::kBadData);
  EXPECT_NE(f.run.message().find("said they were in DB 1"), std::string::npos) << f.run.message();
}

// A header whose CRC never verifies is read again, a bounded number of
// times, then called corrupt.
TEST_P(StreamedTable, HeaderThatNeverVerifiesIsReadAgainThenRefused) {
  growing_->grow_to(10);
  Table& t = *growing_->table();
  t.bytes.data()[table::hdr::kHeaderCrc] ^= std::byte{1};
  harness_.publish(growing_->table());
  auto reader = harness_.make_reader();
  Fetched f = fetch(*reader, writer_);
  ASSERT_FALSE(f.open.ok());
  EXPECT_EQ(f.open.kind(), ErrorKind::kBadData);
  EXPECT_NE(f.open.message().find("header checksum mismatch in 1000 reads in a row"),
            std::string::npos)
      << f.open.message();
}

// Published once complete (as verbs always gets it): the final header in the
// streamed epoch's room, read like any table.
TEST_P(StreamedTable, CompletedTableIsReadLikeAnyOther) {
  growing_->complete();
  harness_.publish(growing_->table());
  auto reader = harness_.make_reader();
  Fetched f = fetch(*reader, writer_);
  ASSERT_TRUE(f.open.ok()) << f.open.message();
  ASSERT_TRUE(f.run.ok()) << f.run.message();
  EXPECT_TRUE(f.at_open.complete());
  EXPECT_EQ(f.at_open.dbs.size(), 3u);
  expect_every_record(f);
}

INSTANTIATE_TEST_SUITE_P(Transports, StreamedTable, ::testing::Values("tcp", "verbs"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace rrs
