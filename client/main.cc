// rdma-client <server-ip> <server-port>: full sync of a replica from the
// sidecar (RESTORE, or --mode replica: an RDB down a replica link), and with
// --follow or --handoff, the master's stream after it.
#include <csignal>
#include <cstdio>

#include "client/client_config.h"
#include "client/follow.h"
#include "client/full_sync.h"
#include "client/replica_sync.h"
#include "common/auth/auth.h"
#include "common/cli/exit_codes.h"
#include "common/base/log.h"

using namespace rrs;

int main(int argc, char** argv) {
  log::set_program("rdma-client");
  auto config = parse_client_args(argc, argv);
  if (!config.ok()) {
    log::error(config.status().message() + " (see rdma-client --help)");
    return exit_code::kUsage;
  }
  if (config->help) {
    std::fputs(client_usage(), stdout);
    return exit_code::kOk;
  }
  std::signal(SIGPIPE, SIG_IGN);
  auto secret = auth::load_secret(config->auth_file);
  if (!secret.ok()) {
    log::error(secret.status().message());
    return exit_code::kUsage;
  }
  config->secret = *secret;
  if (config->atomic && config->mode == IngestMode::kReplica)
    log::info("--atomic: nothing to add in replica mode: the target loads the table as a full "
              "sync, which keeps its old data until the new copy is complete (a transfer that "
              "fails leaves it as it was)");
  if (config->follow || config->handoff) return run_follow(*config);
  return config->mode == IngestMode::kReplica ? run_replica_sync(*config) : run_full_sync(*config);
}
