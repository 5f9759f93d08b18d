#include "server/source_role.h"

#include <chrono>

#include "common/base/log.h"

namespace rrs {

const char* SourceRole::name() const {
  switch (kind) {
    case kMaster: return "master";
    case kReplica: return "replica";
    case kUnknown: break;
  }
  return "-";
}

namespace {

// The master's address goes into the ready line as one key=value token: a
// peer's bytes that are not plain printable ASCII, or a space, become '?'.
constexpr size_t kMaxAddress = 300;
std::string printable_token(std::string text) {
  if (text.size() > kMaxAddress) text.resize(kMaxAddress);
  for (char& c : text)
    if (c <= ' ' || c > '~') c = '?';
  return text;
}

}  // namespace

SourceRole parse_source_role(std::string_view info) {
  SourceRole role;
  const std::string r = info_field(info, "role");
  if (r == "master") {
    role.kind = SourceRole::kMaster;
  } else if (r == "slave") {
    role.kind = SourceRole::kReplica;
    const std::string host = info_field(info, "master_host");
    role.master = printable_token(host.empty() ? "?"
                                               : host + ":" + info_field(info, "master_port"));
    role.link_status = info_field(info, "master_link_status");
    role.syncing = info_field(info, "master_sync_in_progress") == "1";
  }
  return role;
}

Result<SourceRole> read_source_role(const Endpoint& source, const RedisCredentials& creds) {
  const std::string step = "INFO replication of the source " + source.to_string();
  auto client = RedisClient::connect(source, creds, std::chrono::seconds(10));
  if (!client.ok()) return client.status().wrap(step);
  auto info = client->info("replication");
  if (info.ok()) return parse_source_role(*info);
  const std::string& why = info.status().message();
  // Without +info (the minimal psync user) the sidecar still works; it only
  // cannot tell a replica whose link is down before PSYNC says -NOMASTERLINK.
  if (why.find("NOPERM") != std::string::npos || why.find("unknown command") != std::string::npos) {
    log::info(step + " refused (" + why +
              "); the source's role cannot be checked (give the sidecar's user +info)");
    return SourceRole{};
  }
  return info.status().wrap(step).as(ErrorKind::kUnavailable);
}

Status check_snapshot_source(const Endpoint& source, const SourceRole& role) {
  if (role.kind != SourceRole::kReplica) return {};
  if (role.link_status == "up" && !role.syncing) {
    log::info("the source " + source.to_string() + " is a replica of " + role.master +
              " (link up): the table is the master's history as the replica has it, and "
              "the master does not fork for it");
    return {};
  }
  const std::string state = "master_link_status:" +
                            (role.link_status.empty() ? "?" : role.link_status) +
                            (role.syncing ? ", still syncing with its master" : "");
  return Status::error("snapshot the source " + source.to_string(),
                       "it is a replica of " + role.master +
                           " and its link to that master is not up (" + state +
                           "), so it has no current copy to give; wait for the replica's link, "
                           "or point --redis at the master")
      .as(ErrorKind::kUnavailable);
}

}  // namespace rrs
