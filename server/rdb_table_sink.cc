#include "server/rdb_table_sink.h"

#include "common/base/log.h"
#include "proto/dump_payload.h"

namespace rrs {

RdbTableSink::RdbTableSink(TableBuilder& into, const rdb::RdbParser& parser,
                           SlotImportReport slot_import, std::function<uint64_t()> rdb_size)
    : into_(into),
      parser_(parser),
      slot_import_(std::move(slot_import)),
      rdb_size_(std::move(rdb_size)) {}

Status RdbTableSink::on_event(const rdb::Event& ev) {
  switch (ev.kind) {
    case rdb::EventKind::kRecord:
      if (stats_.keys == 0 && describe_) hand_over(describe_());
      into_.add_rdb_value(ev.db, ev.key, ev.type, ev.value, parser_.version(), ev.expire_at_ms);
      if (into_.out_of_room())
        return Status::error("build the table",
                             "the RDB holds more than the room reserved from the master's INFO "
                             "(keyspace, used_memory) and its RESIZEDB counts; the snapshot is "
                             "taken again with more room")
            .as(ErrorKind::kUnavailable);
      if ((++stats_.keys & 4095) == 0 && seconds_since(last_report_) >= 1.0) report_progress();
      break;
    case rdb::EventKind::kResizeDb: into_.expect_keys(ev.db_size); break;
    case rdb::EventKind::kAux: on_aux(ev); break;
    case rdb::EventKind::kFunction: libraries_.emplace_back(ev.function_code); break;
    case rdb::EventKind::kModuleAux:
      stats_.module_aux++;
      log::warn("the RDB holds module data that is not a key (module id " +
                std::to_string(ev.module_id) +
                "); the table cannot carry it, and rdma-client refuses such a table unless "
                "told to drop it");
      break;
    case rdb::EventKind::kSlotImport:
      // Keys of slots being imported are in the RDB but not yet the
      // node's: a copy taken now would hold keys the source may drop.
      return Status::error(slot_import_.rdb, "it was importing " + std::to_string(ev.slot_ranges) +
                                                 " slot ranges (atomic slot migration job " +
                                                 log::printable(ev.aux_value) + "); " +
                                                 slot_import_.what_then)
          .as(slot_import_.kind);
    default: break;
  }
  return {};
}

void RdbTableSink::on_aux(const rdb::Event& ev) {
  if (ev.aux_key == "redis-ver") redis_version_ = ev.aux_value;
  if (ev.aux_key == "valkey-ver") valkey_version_ = ev.aux_value;
  if (ev.aux_key == "repl-id") repl_.replid = ev.aux_value;
  if (ev.aux_key == "repl-offset") repl_.offset = ev.aux_value;
  if (ev.aux_key == "repl-stream-db") repl_.stream_db = ev.aux_value;
  if (ev.aux_key == "lua") {  // Redis < 7.0 ships its script cache this way
    into_.add_lua_script(std::string(ev.aux_value));
    stats_.scripts++;
  }
}

void RdbTableSink::report_progress() {
  last_report_ = Clock::now();
  const uint64_t total = rdb_size_();
  log::info("snapshot: " + mib(parser_.consumed()) + " of the RDB" +
            (total ? " (" + std::to_string(parser_.consumed() * 100 / total) + "%)" : "") + ", " +
            std::to_string(stats_.keys) + " keys, " +
            std::to_string(static_cast<int>(static_cast<double>(parser_.consumed()) / 1e6 /
                                            seconds_since(t0_))) +
            " MB/s");
}

SnapshotStats RdbTableSink::finish(SourceInfo source) {
  stats_.rdb_bytes = parser_.consumed();
  stats_.functions = libraries_.size();
  hand_over(std::move(source));
  return stats_;
}

void RdbTableSink::hand_over(SourceInfo source) {
  if (!libraries_.empty())
    into_.set_function_payload(dump::function_restore_payload(libraries_, parser_.version()),
                               static_cast<uint32_t>(libraries_.size()));
  const auto server = valkey_version_.empty()
                          ? ServerVersion::parse(Engine::kRedis, redis_version_)
                          : ServerVersion::parse(Engine::kValkey, valkey_version_);
  source.server = server.value_or(ServerVersion{});
  source.rdb_version = parser_.version();
  source.module_aux = static_cast<uint32_t>(stats_.module_aux);
  into_.set_source(std::move(source));
}

}  // namespace rrs
