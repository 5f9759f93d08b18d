#include "server/dataset_hint.h"

#include <charconv>
#include <chrono>
#include <string>

#include "common/base/log.h"

namespace rrs {

DatasetHint parse_dataset_hint(std::string_view keyspace, std::string_view memory) {
  DatasetHint hint;
  for (const KeyspaceDb& db : parse_keyspace(keyspace)) hint.keys += db.keys;
  const std::string used = info_field(memory, "used_memory");
  uint64_t bytes = 0;
  auto [end, ec] = std::from_chars(used.data(), used.data() + used.size(), bytes);
  if (ec == std::errc() && end == used.data() + used.size()) hint.bytes = bytes;
  return hint;
}

DatasetHint read_dataset_hint(const Endpoint& source, const RedisCredentials& creds) {
  auto c = RedisClient::connect(source, creds, std::chrono::seconds(10));
  Result<std::string> keyspace = c.ok() ? c->info("keyspace") : Result<std::string>(c.status());
  Result<std::string> memory = c.ok() ? c->info("memory") : Result<std::string>(c.status());
  if (!keyspace.ok() || !memory.ok()) {
    log::info("could not read INFO keyspace and memory of " + source.to_string() + " (" +
              (keyspace.ok() ? memory : keyspace).status().message() +
              "): the table's room comes from the RDB's own counts");
    return {};
  }
  return parse_dataset_hint(*keyspace, *memory);
}

}  // namespace rrs
