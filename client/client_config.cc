#include "client/client_config.h"

#include <cstdint>
#include <vector>

#include "client/client_flags.h"
#include "common/cli/shared_flags.h"

namespace rrs {

namespace {

// Flags that cannot go together, or need another: the first such problem.
Status check_combinations(const ClientConfig& c) {
  const auto bad = [](std::string why) { return Status::error("arguments", std::move(why)); };
  const bool replica = c.mode == IngestMode::kReplica;
  if (c.verify) return {};  // check_verify()
  if (c.follow && c.no_load) return bad("--follow needs a target: drop --no-load");
  if (c.follow && c.policy == TargetPolicy::kMerge)
    return bad("--follow replaces the target's data when it must resync, which --merge "
               "promises not to do: use --flush or an empty target");
  if (c.atomic && c.no_load) return bad("--atomic needs a target: drop --no-load");
  if (c.atomic && c.policy == TargetPolicy::kMerge)
    return bad("--atomic swaps whole DBs in, which --merge promises not to do (it keeps "
               "the target's other keys): use --atomic --flush, or --merge alone");
  if (replica && c.no_load) return bad("--mode replica loads a target: drop --no-load");
  if (replica && c.policy == TargetPolicy::kMerge)
    return bad("--mode replica replaces the target's data (it becomes a replica), "
               "which --merge promises not to do: use --flush, an empty target, or "
               "--mode restore --merge");
  if (c.handoff && !replica)
    return bad("--handoff needs --mode replica: only a target that holds the master's "
               "replication ID and offset can continue with a partial resync");
  if (c.handoff && c.master.port == 0)
    return bad("--handoff needs --master HOST:PORT: the real master, as the target can reach it");
  if (c.cluster && replica)
    return bad("--cluster loads with RESTORE: a cluster node cannot be a replica of the "
               "client (REPLICAOF is refused in cluster mode); drop --mode replica");
  if (c.cluster && c.atomic)
    return bad("--cluster cannot be --atomic: a cluster has only DB 0, so there is no DB to "
               "stage into and no SWAPDB; drop --atomic");
  if (c.cluster && c.handoff)
    return bad("--cluster cannot --handoff: a cluster node cannot be a replica of the "
               "client, so there is no replica link to hand off");
  if (c.linger && c.follow)
    return bad("--linger keeps a finished run answering its probes; --follow runs until "
               "stopped anyway: drop --linger");
  if (c.master.port != 0 && !c.handoff)
    return bad("--master is the address --handoff points the target at: add --handoff, or "
               "drop --master");
  return {};
}

// --verify reads two Redis servers and nothing else: no sidecar, no load.
Status check_verify(const ClientConfig& c, const std::vector<std::string>& positional) {
  const auto bad = [](std::string why) { return Status::error("arguments", std::move(why)); };
  if (!c.verify) {
    if (c.source_redis.port != 0 || !c.source_redis_auth_file.empty() || c.verify_sample != 0)
      return bad("--source-redis, --source-redis-auth-file and --sample go with --verify");
    return {};
  }
  if (c.source_redis.port == 0)
    return bad("--verify needs --source-redis HOST:PORT: the Redis the target was synced from");
  if (!positional.empty()) return bad("--verify reads no sidecar: drop the positional arguments");
  if (c.cluster || c.follow || c.handoff || c.no_load || c.atomic || c.mode_given ||
      c.policy != TargetPolicy::kRequireEmpty)
    return bad("--verify only compares: drop --cluster, --follow, --handoff, --no-load, "
               "--atomic, --mode, --flush and --merge");
  return {};
}

// The positional arguments: <server-ip> <server-port>, or with --cluster
// one HOST:PORT per sidecar.
Status take_sidecars(const std::vector<std::string>& positional, ClientConfig& c) {
  RRS_RETURN_IF_ERROR(check_verify(c, positional));
  if (c.verify) return {};
  if (c.cluster) {
    if (positional.empty())
      return Status::error("arguments", "--cluster needs the sidecars, HOST:PORT each");
    for (const std::string& p : positional) {
      auto at = parse_endpoint(p);
      if (!at.ok()) return at.status().wrap("--cluster sidecar '" + p + "'");
      c.sidecars.push_back(*at);
    }
    c.server = c.sidecars.front();
    return {};
  }
  if (positional.size() != 2)
    return Status::error("arguments", "expected <server-ip> <server-port>, got " +
                                          std::to_string(positional.size()) +
                                          " positional arguments");
  auto port = parse_port(positional[1]);
  if (!port.ok()) return port.status().wrap("<server-port>");
  c.server = {positional[0], *port};
  return {};
}

}  // namespace

Result<ClientConfig> parse_client_args(int argc, char** argv) {
  ClientConfig c;
  std::vector<std::string> positional;
  std::string error = parse_flags(argc, argv, client_flags(c), &positional);
  if (error.empty()) error = check_tls_flags(c.redis_tls);
  if (error.empty()) error = check_tls_flags(c.tls);
  if (error.empty() && c.tls.enabled && c.transport == "verbs")
    error = "--tls with --transport verbs: RDMA traffic is not encrypted (docs/tls.md); use "
            "--transport tcp for TLS, or keep the fabric isolated and drop --tls";
  if (!error.empty()) return Status::error("arguments", error);
  if (c.help != HelpKind::kNone || c.version) return c;
  RRS_RETURN_IF_ERROR(check_combinations(c));
  RRS_RETURN_IF_ERROR(take_sidecars(positional, c));
  return c;
}

}  // namespace rrs
