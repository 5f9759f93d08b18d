#include "client/fetch/remote_table.h"

#include "client/fetch/transport_choice.h"
#include "common/base/log.h"

namespace rrs {
namespace {

FetchOptions fetch_options(const ClientConfig& config) {
  FetchOptions fetch;
  fetch.chunk_size = config.chunk_size;
  fetch.in_flight = config.in_flight;
  fetch.io_timeout = std::chrono::milliseconds(config.io_timeout);
  fetch.retries = config.retries;
  fetch.reconnect_timeout = std::chrono::milliseconds(config.connect_timeout);
  return fetch;
}

void log_table(const table::Header& h, const table::Scripts& scripts) {
  const bool complete = h.state == table::State::kReady;
  const std::string keys = complete ? std::to_string(h.record_count) + " keys in " +
                                          std::to_string(h.db_count) + " DBs, "
                                    : "being written, " + std::to_string(h.record_count) +
                                          " keys so far (read as they are written), ";
  log::info("table epoch " + std::to_string(h.epoch) + ": " + keys +
            std::to_string(scripts.function_libraries) + " function libraries, " +
            std::to_string(scripts.lua_scripts.size()) + " Lua scripts, " +
            (complete ? std::to_string(h.total_size) + " bytes, " : "") + "slot size " +
            std::to_string(h.slot_size) + ", from " + engine_name(h.engine) + " " +
            h.server_version + " (RDB " + std::to_string(h.rdb_version) + ")" +
            (h.empty_skipped ? "; " + std::to_string(h.empty_skipped) +
                                   " empty collections were left out, as servers drop them"
                             : ""));
}

}  // namespace

Result<std::unique_ptr<RemoteTable>> open_remote_table(const ClientConfig& config,
                                                       Clock::time_point t0) {
  for (uint32_t restarts = 0;; ++restarts) {
    auto t = std::make_unique<RemoteTable>();
    auto reader = connect_transport(config,
                                    (restarts ? Clock::now() : t0) + config.connect_timeout);
    if (!reader.ok()) return reader.status();
    t->reader = std::move(*reader);
    t->fetcher = std::make_unique<TableFetcher>(*t->reader, fetch_options(config), t->queue);
    auto info = t->fetcher->open();
    if (!info.ok()) {
      // Replaced while its header was read: nothing of it was used yet.
      const std::optional<uint64_t> next = t->fetcher->replaced_by();
      if (!next || restarts >= config.retries) return info.status();
      log::warn(info.status().message() + "; opening epoch " + std::to_string(*next) + " instead");
      continue;
    }
    t->info = std::move(*info);
    log_table(t->info.header, t->info.scripts);
    return t;
  }
}

}  // namespace rrs
