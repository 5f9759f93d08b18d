#include "client/sync/conversion.h"

#include <iterator>
#include <memory>

#include "client/client_metrics.h"
#include "common/base/log.h"
#include "proto/dump_payload.h"
#include "proto/rdb_format.h"

namespace rrs {
namespace {

// Per rdb::Loss bit (entry i: bit 1 << i, as the table header counts them):
// the servers that hold it.
struct LossKind {
  uint32_t bit;
  const char* held_by;
};
constexpr LossKind kLossKinds[] = {
    {rdb::kLossFieldTtls, "Redis 7.4 or Valkey 9.0 or later"},
    {rdb::kLossConsumerActiveTime, "Redis 7.2 or Valkey 7.2 or later"},
};
static_assert(std::size(kLossKinds) == rdb::kLossKindCount);
static_assert(kLossKinds[0].bit == 1u << 0 && kLossKinds[1].bit == 1u << 1);

// "1 record", "3 records"
std::string records_text(uint64_t n) {
  return std::to_string(n) + (n == 1 ? " record" : " records");
}

std::string source_of(const table::Header& h) {
  return std::string(engine_name(h.engine)) + " " + h.server_version;
}

Status refuse_version(const table::Header& h, const ServerVersion& target) {
  const auto table_rdb = static_cast<uint16_t>(h.rdb_version);
  const std::string which = "the table's DUMP payloads are RDB version " +
                            std::to_string(table_rdb) + " (written by " + source_of(h) +
                            "), but the target runs " + target.to_string() +
                            ", which loads RDB up to version " +
                            std::to_string(target.newest_rdb());
  return Status::error("check target", which + ", and values convert only into RDB 10 (Redis " +
                                           "7.0) and newer; upgrade the target to " +
                                           first_servers_for_rdb(table_rdb))
      .as(ErrorKind::kRefused);
}

// "record 17 (key "hfe:small", a hash with field TTLs, in DB 0)", or as much
// of it as the record can be read for.
std::string describe_record(TableFetcher& fetcher, uint64_t index, uint16_t rdb_version) {
  std::string what = "record " + std::to_string(index);
  auto batch = fetcher.read_record(index);
  if (!batch.ok() || batch->records.empty()) return what;
  const Record& r = batch->records.front();
  const char* type = r.payload.empty()
                         ? nullptr
                         : rdb::type_name(static_cast<uint8_t>(r.payload[0]), rdb_version);
  return what + " (key \"" + log::printable(r.key) + "\", " + (type ? type : "unknown type") +
         ", in DB " + std::to_string(r.db) + ")";
}

}  // namespace

Result<Conversion> Conversion::plan(const ClientConfig& config, const TableInfo& table,
                                    const std::optional<ServerVersion>& target) {
  Conversion c;
  c.info_ = table;
  c.allow_lossy_ = config.allow_lossy_conversion;
  c.from_ = c.to_ = static_cast<uint16_t>(table.header.rdb_version);
  if (!target || c.from_ == 0 || target->loads_rdb(c.from_)) return c;
  c.to_ = target->newest_rdb();
  if (!rdb::can_convert(c.from_, c.to_)) return refuse_version(table.header, *target);
  if (config.follow || config.handoff)
    return Status::error(config.handoff ? "--handoff" : "--follow",
                         "the target runs " + target->to_string() + ", which does not load RDB " +
                             std::to_string(c.from_) + " (written by " + source_of(table.header) +
                             "): native replication needs a replica that reads its master's "
                             "format, and the master's commands may not exist on it. A plain "
                             "full sync works (each value converted): drop " +
                             (config.handoff ? "--handoff" : "--follow") +
                             ", or upgrade the target to " + first_servers_for_rdb(c.from_))
        .as(ErrorKind::kRefused);
  c.info_.header.rdb_version = c.to_;
  // FUNCTION RESTORE checks the version like RESTORE; library code needs no change.
  dump::restamp(c.info_.scripts.function_payload, c.to_);
  log::info("the target runs " + target->to_string() + ", which does not load RDB " +
            std::to_string(c.from_) + " (written by " + source_of(table.header) +
            "): each value is converted to RDB " + std::to_string(c.to_) + " on the way");
  return c;
}

std::string Conversion::needs_whole_table() const {
  if (!needed() || allow_lossy_ || info_.complete() || rdb::losses_into(to_) == 0) return "";
  return "the conversion to RDB " + std::to_string(to_) +
         " refuses records the target cannot hold whole before it loads anything, and the "
         "table counts them only once it is complete";
}

Status Conversion::check_losses(TableFetcher& fetcher) const {
  if (!needed()) return {};
  const uint32_t at_risk = rdb::losses_into(to_);
  std::string refusal;
  for (size_t i = 0; i < rdb::kLossKindCount; ++i) {
    const LossKind& kind = kLossKinds[i];
    const table::LossyRecords& lossy = info_.header.lossy[i];
    if (!(at_risk & kind.bit) || lossy.count == 0) continue;
    const std::string what = rdb::loss_names(kind.bit) + " in " + records_text(lossy.count);
    if (allow_lossy_) {
      log::warn("RDB " + std::to_string(to_) + " has no place for " + what +
                ": loading them without (--allow-lossy-conversion)");
      continue;
    }
    refusal += (refusal.empty() ? "" : "; nor for ") + what + ", the first " +
               describe_record(fetcher, lossy.first_slot, from_) + ", kept by " + kind.held_by;
  }
  if (refusal.empty()) return {};
  return Status::error("check target", "RDB " + std::to_string(to_) +
                                           ", which the target reads, has no place for " + refusal +
                                           ". Upgrade the target, or give "
                                           "--allow-lossy-conversion to load these values "
                                           "without them (the summary counts what was dropped)")
      .as(ErrorKind::kRefused);
}

Status Conversion::convert(RecordBatch& batch) {
  // The new payloads, back to back, with what kept the old ones alive.
  struct Converted {
    std::shared_ptr<void> original;
    std::string bytes;
  };
  auto converted = std::make_shared<Converted>();
  std::vector<size_t> ends;
  ends.reserve(batch.records.size());
  for (const Record& r : batch.records) {
    RRS_RETURN_IF_ERROR(convert_one(r, converted->bytes));
    ends.push_back(converted->bytes.size());
  }
  client_metrics().converted.add(batch.records.size());
  // Views only once the bytes stopped moving.
  size_t begin = 0;
  for (size_t i = 0; i < ends.size(); ++i) {
    batch.records[i].payload = std::string_view(converted->bytes).substr(begin, ends[i] - begin);
    begin = ends[i];
  }
  converted->original = std::move(batch.keepalive);
  batch.keepalive = std::move(converted);
  return {};
}

Status Conversion::convert_one(const Record& r, std::string& out) {
  auto where = [&] {
    return "convert record " + std::to_string(r.index) + " (key \"" + log::printable(r.key) +
           "\" in DB " + std::to_string(r.db) + ")";
  };
  const auto version = dump::rdb_version(r.payload);
  if (r.payload.size() < dump::payload_size(1) || version != from_)
    return Status::error(where(), "its payload is not a DUMP payload of RDB " +
                                      std::to_string(from_) + ", the table's version")
        .as(ErrorKind::kBadData);
  const auto type = static_cast<uint8_t>(r.payload[0]);
  const size_t at = out.size();
  if (!rdb::needs_conversion(type, from_, to_)) {  // the same bytes, another version
    out.append(r.payload);
    dump::restamp(std::span<char>(out).subspan(at), to_);
    return {};
  }
  const std::string_view value = r.payload.substr(1, r.payload.size() - 1 - dump::kTrailerSize);
  auto c = rdb::convert_value(type, value, from_, to_);
  if (!c.ok()) return c.status().wrap(where());
  for (size_t i = 0; i < rdb::kLossKindCount; ++i) {
    if (!(c->lost & kLossKinds[i].bit)) continue;
    if (!allow_lossy_)  // the header said nothing of it: a table that lies, or a bug
      return Status::error(where(), "converting it to RDB " + std::to_string(to_) + " drops its " +
                                        rdb::loss_names(kLossKinds[i].bit) +
                                        ", which the table's header did not announce; give "
                                        "--allow-lossy-conversion to load it without")
          .as(ErrorKind::kRefused);
    ++dropped_[i];
    client_metrics().lossy[i]->add();
  }
  ++reencoded_;
  client_metrics().reencoded.add();
  out.resize(at + dump::payload_size(c->value.size()));
  dump::write_payload(c->type, c->value, to_, out.data() + at);
  return {};
}

std::string Conversion::summary_fields() const {
  if (!needed()) return "";
  std::string s = " convert_rdb=" + std::to_string(from_) + ":" + std::to_string(to_) +
                  " reencoded=" + std::to_string(reencoded_);
  for (size_t i = 0; i < rdb::kLossKindCount; ++i)
    if (allow_lossy_)
      s += " dropped_" + std::string(rdb::loss_key(i)) + "=" + std::to_string(dropped_[i]);
  return s;
}

}  // namespace rrs
