// libFuzzer target: the streaming RDB parser (proto/rdb_parser.h), fed the
// way a replication link feeds it, in fragments of any size.
//
// Input: 8 bytes that seed the fragment sizes (little-endian), then the RDB.
// corpus/rdb holds real RDBs from redis-server behind such a prefix
// (make-rdb-corpus.sh). An input shorter than 8 bytes is all RDB, seed 0.
//
// Each input is parsed twice: fed whole, and fed in fragments of 1..4096
// bytes (mostly tiny) through writable()/commit(), draining next() after
// every fragment. A value split across feeds resumes mid-walk, so both runs
// must give the same events, the same error and the same end state.
// Checked after every call to next():
//   - an error is sticky (next() returns it again, also after more bytes)
//     and is classified kBadData;
//   - consumed() never decreases; consumed() + rest().size() is what was fed,
//     and at the end rest() is exactly the unconsumed tail of the input;
//   - done() is true exactly when a kEnd event has been seen, and no event
//     follows kEnd.
// Every record becomes a DUMP payload (dump::write_payload into a heap buffer
// of exactly dump::payload_size bytes, so ASan sees any overrun) and every
// view an event carries is read through.
//
// Limits are small (1 MiB strings, 4 MiB values), so no input makes the
// parser hold much more than the input itself; run.sh adds -malloc_limit_mb
// to catch any allocation that does. One seed in four (seed & 3 == 3) uses
// tiny limits instead (strings of 16 B to 2 KiB, values 4x that) to reach
// the limit checks, which must also trip the same way whole and split.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/crc64.h"
#include "proto/dump_payload.h"
#include "proto/rdb_format.h"
#include "proto/rdb_parser.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using rrs::rdb::Event;
using rrs::rdb::EventKind;
using rrs::rdb::Limits;
using rrs::rdb::RdbParser;

constexpr Limits kLimits{.max_string_bytes = 1ull << 20, .max_value_bytes = 4ull << 20};

uint64_t crc(uint64_t c, std::string_view s) { return rrs::crc64(c, s.data(), s.size()); }

// An event reduced to what identifies it, to compare two runs.
struct Seen {
  EventKind kind = EventKind::kEnd;
  uint64_t a = 0, b = 0, c = 0;  // kind-specific numbers
  uint64_t digest = 0;           // CRC-64 over the event's bytes
  bool operator==(const Seen&) const = default;
};

std::string describe(const Seen& s) {
  return "{kind " + std::to_string(static_cast<int>(s.kind)) + ", " + std::to_string(s.a) + ", " +
         std::to_string(s.b) + ", " + std::to_string(s.c) + ", digest " + std::to_string(s.digest) +
         "}";
}

// Reads every byte the event points at; a record also becomes a DUMP payload.
Seen take(const Event& e, uint16_t version, const Limits& limits) {
  Seen s{e.kind};
  switch (e.kind) {
    case EventKind::kAux:
      FUZZ_CHECK(e.aux_key.size() <= limits.max_string_bytes &&
                     e.aux_value.size() <= limits.max_string_bytes,
                 "AUX field above max_string_bytes");
      s.a = e.aux_key.size();
      s.digest = crc(crc(0, e.aux_key), e.aux_value);
      break;
    case EventKind::kSelectDb: s.a = e.db; break;
    case EventKind::kResizeDb: s.a = e.db, s.b = e.db_size, s.c = e.expires_size; break;
    case EventKind::kRecord: {
      FUZZ_CHECK(e.type < rrs::rdb::kOpValkeySlotImport && rrs::rdb::is_in_format(e.type, version),
                 "record of type " + std::to_string(e.type));
      FUZZ_CHECK(e.key.size() <= limits.max_string_bytes,
                 "key of " + std::to_string(e.key.size()) + " bytes");
      const size_t n = rrs::dump::payload_size(e.value.size());
      auto payload = std::make_unique_for_overwrite<char[]>(n);
      rrs::dump::write_payload(e.type, e.value, version, payload.get());
      std::string_view p(payload.get(), n);
      FUZZ_CHECK(static_cast<uint8_t>(p[0]) == e.type && p.substr(1, e.value.size()) == e.value,
                 "the payload does not hold the type and value");
      FUZZ_CHECK(rrs::dump::rdb_version(p) == version, "the payload's trailer lost the version");
      s.a = e.db | (uint64_t{e.type} << 32), s.b = static_cast<uint64_t>(e.expire_at_ms);
      s.c = e.key.size();
      s.digest = crc(crc(0, e.key), p);
      break;
    }
    case EventKind::kFunction: s.digest = crc(0, e.function_code); break;
    case EventKind::kModuleAux: s.a = e.module_id; break;
    case EventKind::kSlotImport:
      s.a = e.slot_ranges;
      s.digest = crc(0, e.aux_value);
      break;
    case EventKind::kEnd: s.a = e.checksum; break;
  }
  return s;
}

struct Outcome {
  std::vector<Seen> events;
  std::optional<std::string> error;
  bool done = false;
  uint64_t consumed = 0;
};

// Parses `rdb` fed whole (frags == nullptr) or in fragments, checking the
// parser's invariants after every call.
Outcome parse(std::string_view rdb, const Limits& limits, rrs::fuzz::Fragments* frags) {
  RdbParser p(limits);
  Outcome out;
  size_t fed = 0;
  uint64_t last_consumed = 0;
  bool saw_end = false;

  // Takes events until the parser needs more bytes; false once it failed.
  auto drain = [&]() -> bool {
    while (true) {
      auto ev = p.next();
      if (ev.ok() && *ev) {
        FUZZ_CHECK(!saw_end, "an event after kEnd");
        FUZZ_CHECK(rrs::rdb::is_known_version(p.version()),
                   "an event with RDB version " + std::to_string(p.version()));
        out.events.push_back(take(**ev, p.version(), limits));
        saw_end = (*ev)->kind == EventKind::kEnd;
      }
      FUZZ_CHECK(p.done() == saw_end, saw_end ? "kEnd seen, not done()" : "done() without kEnd");
      FUZZ_CHECK(p.consumed() >= last_consumed, "consumed() went from " +
                                                    std::to_string(last_consumed) + " to " +
                                                    std::to_string(p.consumed()));
      last_consumed = p.consumed();
      FUZZ_CHECK(p.consumed() + p.rest().size() == fed,
                 "consumed " + std::to_string(p.consumed()) + " + rest " +
                     std::to_string(p.rest().size()) + " != fed " + std::to_string(fed));
      if (!ev.ok()) {
        const rrs::Status& st = ev.status();
        out.error = st.message();
        FUZZ_CHECK(st.kind() == rrs::ErrorKind::kBadData, "error not kBadData: " + *out.error);
        auto again = p.next();
        FUZZ_CHECK(!again.ok() && again.status().message() == *out.error,
                   "error not sticky: " + *out.error);
        p.feed(std::string_view("\0", 1));
        again = p.next();
        FUZZ_CHECK(!again.ok() && again.status().message() == *out.error,
                   "error not sticky after more bytes: " + *out.error);
        return false;
      }
      if (!*ev) return true;
    }
  };

  bool ok = drain();  // nothing fed yet
  while (ok && fed < rdb.size()) {
    const size_t n = frags ? std::min(frags->next_size(), rdb.size() - fed) : rdb.size() - fed;
    const size_t want = n + (frags ? frags->extra_room() : 0);
    std::span<char> room = p.writable(want);
    FUZZ_CHECK(room.size() >= want, "writable(" + std::to_string(want) + ") gave " +
                                        std::to_string(room.size()) + " bytes");
    std::memcpy(room.data(), rdb.data() + fed, n);
    p.commit(n);
    fed += n;
    ok = drain();
  }
  if (ok) FUZZ_CHECK(p.rest() == rdb.substr(p.consumed()), "rest() is not the unconsumed input");
  out.done = p.done();
  out.consumed = p.consumed();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint64_t seed = rrs::fuzz::take_seed(data, size);
  std::string_view rdb(reinterpret_cast<const char*>(data), size);
  rrs::fuzz::Fragments frags(seed);
  Limits limits = kLimits;
  if ((seed & 3) == 3) {
    limits.max_string_bytes = 16ull << ((seed >> 2) & 7);
    limits.max_value_bytes = 4 * limits.max_string_bytes;
  }

  Outcome whole = parse(rdb, limits, nullptr);
  Outcome split = parse(rdb, limits, &frags);
  for (size_t i = 0; i < std::min(whole.events.size(), split.events.size()); ++i)
    FUZZ_CHECK(whole.events[i] == split.events[i], "event " + std::to_string(i) + ": whole " +
                                                       describe(whole.events[i]) + ", split " +
                                                       describe(split.events[i]));
  FUZZ_CHECK(whole.events.size() == split.events.size(),
             "whole feeding gave " + std::to_string(whole.events.size()) + " events, split " +
                 std::to_string(split.events.size()));
  FUZZ_CHECK(whole.error == split.error, "whole: " + whole.error.value_or("no error") +
                                             "; split: " + split.error.value_or("no error"));
  FUZZ_CHECK(whole.done == split.done && whole.consumed == split.consumed,
             "whole: done " + std::to_string(whole.done) + " consumed " +
                 std::to_string(whole.consumed) + "; split: done " + std::to_string(split.done) +
                 " consumed " + std::to_string(split.consumed));
  return 0;
}
