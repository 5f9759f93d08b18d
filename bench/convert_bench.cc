// Throughput of rdb::convert_value (proto/rdb_convert.h) on one core, per
// conversion the sidecar makes for an older target, over synthetic values
// built with the real encoders (deterministic: the same bytes every run):
//   - Redis 8 hashes with field TTLs in a listpack (type 25) into RDB 11
//     (a listpack hash without the TTLs), and into Valkey 9 (HASH_2);
//   - Redis 8 hash-table hashes with field TTLs (type 24) into RDB 11 (a
//     plain hash), and into Valkey 9 (HASH_2);
//   - Valkey 9 HASH_2 into Redis 8 (HASH_METADATA);
//   - set listpacks (type 20) into RDB 10 (a plain set);
//   - and what every other value costs: its payload copied out and
//     restamped (dump::restamp: version and CRC-64), 1000-byte strings.
// MB/s is of input value bytes, wall time from CLOCK_MONOTONIC around a pass
// over the whole data set; each line gives the median of the runs (min-max).
//   convert_bench [runs]   (default 7)
#include <time.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "proto/dump_payload.h"
#include "proto/listpack.h"
#include "proto/rdb_convert.h"
#include "proto/rdb_format.h"

namespace {

using namespace rrs::rdb;

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string le64(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}
std::string len(uint64_t n) {
  std::string s;
  append_length(s, n);
  return s;
}
std::string str(const std::string& s) { return len(s.size()) + s; }

// Printable bytes from a seeded generator: values as an application writes
// them, which LZF barely compresses (DUMP stores them plain).
class Bytes {
 public:
  explicit Bytes(uint64_t seed) : rng_(seed) {}
  std::string text(size_t n) {
    std::string s(n, ' ');
    for (char& c : s) c = static_cast<char>('!' + rng_() % 94);
    return s;
  }
  uint64_t below(uint64_t n) { return rng_() % n; }

 private:
  std::mt19937_64 rng_;
};

constexpr uint64_t kBaseMs = 1'900'000'000'000;  // 2030

struct DataSet {
  std::string name;  // what the line says
  uint8_t type;
  uint16_t from, to;
  std::vector<std::string> values;
  uint64_t bytes = 0;
};

// `hashes` listpack hashes of `fields` fields, TTLs on one field in two.
DataSet listpack_ex(uint16_t to, int hashes, int fields) {
  DataSet d{"", kHashListpackEx, 12, to, {}, 0};
  Bytes b(1);
  for (int h = 0; h < hashes; ++h) {
    rrs::listpack::Writer w;
    for (int f = 0; f < fields; ++f) {
      w.add("field:" + std::to_string(f));
      w.add(b.text(32));
      w.add_int(f % 2 ? 0 : static_cast<int64_t>(kBaseMs + b.below(1'000'000)));
    }
    d.values.push_back(le64(kBaseMs) + str(*std::move(w).finish()));
  }
  d.name = std::to_string(hashes) + " Redis 8 listpack hashes (type 25) x " +
           std::to_string(fields) + " fields (~8 B names, 32 B values, TTL on 1 in 2)";
  return d;
}

// `hashes` hash-table hashes with field TTLs (HASH_METADATA) of `fields`
// fields, TTLs on one field in two; or the same as Valkey's HASH_2.
DataSet metadata(uint16_t to, int hashes, int fields, bool valkey) {
  DataSet d{"",
            valkey ? kValkeyHash2 : uint8_t{kHashMetadata},
            valkey ? uint16_t{80} : uint16_t{12},
            to,
            {},
            0};
  Bytes b(2);
  for (int h = 0; h < hashes; ++h) {
    std::string v = valkey ? "" : le64(kBaseMs);
    v += len(static_cast<uint64_t>(fields));
    for (int f = 0; f < fields; ++f) {
      const uint64_t at = f % 2 ? 0 : kBaseMs + b.below(1'000'000);
      const std::string field = str("field:" + std::to_string(f)), value = str(b.text(32));
      if (valkey)
        v += field + value + le64(at ? at : ~uint64_t{0});
      else
        v += len(at ? at - kBaseMs + 1 : 0) + field + value;
    }
    d.values.push_back(std::move(v));
  }
  d.name = std::to_string(hashes) +
           (valkey ? " Valkey 9 HASH_2 hashes (type 22) x "
                   : " Redis 8 hash-table hashes (type 24) x ") +
           std::to_string(fields) + " fields (~8 B names, 32 B values, TTL on 1 in 2)";
  return d;
}

// `sets` set listpacks of `members` members, half integers, half 12-byte strings.
DataSet set_listpacks(int sets, int members) {
  DataSet d{"", kSetListpack, 11, 10, {}, 0};
  Bytes b(3);
  for (int s = 0; s < sets; ++s) {
    rrs::listpack::Writer w;
    for (int m = 0; m < members; ++m) {
      if (m % 2)
        w.add_int(static_cast<int64_t>(b.below(10'000'000'000)));
      else
        w.add_string(b.text(12));
    }
    d.values.push_back(str(*std::move(w).finish()));
  }
  d.name = std::to_string(sets) + " set listpacks (type 20) x " + std::to_string(members) +
           " members (half integers up to 10^10, half 12 B strings)";
  return d;
}

int run(DataSet& d, int runs) {
  for (const std::string& v : d.values) d.bytes += v.size();
  std::vector<double> rates;
  uint64_t out_bytes = 0;
  uint8_t out_type = 0;
  for (int r = 0; r < runs; ++r) {
    out_bytes = 0;
    const double t0 = now_s();
    for (const std::string& v : d.values) {
      auto c = convert_value(d.type, v, d.from, d.to);
      if (!c.ok()) {
        std::fprintf(stderr, "convert_bench: %s\n", c.status().message().c_str());
        return 1;
      }
      out_bytes += c->value.size();
      out_type = c->type;
    }
    rates.push_back(static_cast<double>(d.bytes) / (now_s() - t0) / 1e6);
  }
  std::sort(rates.begin(), rates.end());
  std::printf("convert %2u->%-2u RDB %2u->%-2u %7.1f MB/s (%.1f-%.1f) median of %d: %s, %.1f MB "
              "in, %.1f MB out\n",
              d.type, out_type, d.from, d.to, rates[rates.size() / 2], rates.front(), rates.back(),
              runs, d.name.c_str(), static_cast<double>(d.bytes) / 1e6,
              static_cast<double>(out_bytes) / 1e6);
  std::fflush(stdout);
  return 0;
}

// What every value the rules leave as it is costs the client (its
// Conversion): the DUMP payload copied out and restamped (version, CRC-64),
// over `count` string payloads of `size` bytes.
void run_restamp(int runs, int count, size_t size) {
  Bytes b(4);
  std::vector<std::string> payloads;
  for (int i = 0; i < count; ++i) {
    const std::string value = str(b.text(size));
    std::string p(rrs::dump::payload_size(value.size()), '\0');
    rrs::dump::write_payload(kString, value, 12, p.data());
    payloads.push_back(std::move(p));
  }
  const double mb = static_cast<double>(payloads.size() * payloads.front().size()) / 1e6;
  std::vector<double> rates;
  std::string out;
  for (int r = 0; r < runs; ++r) {
    out.clear();
    const double t0 = now_s();
    for (const std::string& p : payloads) {
      const size_t at = out.size();
      out.append(p);
      rrs::dump::restamp(std::span<char>(out).subspan(at), 10);
    }
    rates.push_back(mb / (now_s() - t0));
  }
  std::sort(rates.begin(), rates.end());
  std::printf("restamp RDB 12->10    %7.1f MB/s (%.1f-%.1f) median of %d: %d string payloads of "
              "%zu B (copied out, version and CRC-64 rewritten), %.1f MB\n",
              rates[rates.size() / 2], rates.front(), rates.back(), runs, count, size, mb);
  std::fflush(stdout);
}

}  // namespace

// Allocation failure (std::bad_alloc) ends the run, as anywhere in a benchmark.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  std::vector<DataSet> sets;
  sets.push_back(listpack_ex(11, 20000, 100));
  sets.push_back(listpack_ex(80, 20000, 100));
  sets.push_back(metadata(11, 1000, 2000, false));
  sets.push_back(metadata(80, 1000, 2000, false));
  sets.push_back(metadata(12, 1000, 2000, true));
  sets.push_back(set_listpacks(50000, 100));
  for (DataSet& d : sets)
    if (run(d, runs) != 0) return 1;
  run_restamp(runs, 200000, 1000);
  return 0;
}
