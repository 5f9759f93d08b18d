#include "server/server_config.h"

#include <string>

#include "common/cli/shared_flags.h"
#include "server/server_flags.h"

namespace rrs {

Result<TransportChoice> parse_transport(std::string_view text) {
  if (text == "auto") return TransportChoice::kAuto;
  if (text == "tcp") return TransportChoice::kTcp;
  if (text == "verbs") return TransportChoice::kVerbs;
  return Status::error("--transport",
                       "expected auto, tcp or verbs, got '" + std::string(text) + "'");
}

namespace {

// --source rdb reads a file instead of a master: it needs --rdb-file, and a
// flag naming a master would be ignored, so it is refused; --rdb-file is
// read by --source rdb only.
Status check_source(const ServerConfig& c, const std::string& master_flag) {
  if (c.source == "rdb" && c.rdb_file.empty())
    return Status::error("arguments", "--source rdb needs --rdb-file FILE: the RDB file to serve");
  if (c.source == "rdb" && !master_flag.empty())
    return Status::error("arguments",
                         "--source rdb reads no master, only --rdb-file: drop " + master_flag);
  if (c.source != "rdb" && !c.rdb_file.empty())
    return Status::error("arguments", "--rdb-file is read by --source rdb only (the source is " +
                                          c.source + "): add --source rdb, or drop --rdb-file");
  return {};
}

}  // namespace

Result<ServerConfig> parse_server_args(int argc, char** argv) {
  ServerConfig c;
  std::string master_flag;  // the last flag that names a master, if any
  std::string error = parse_flags(argc, argv, server_flags(c, master_flag), nullptr);
  if (error.empty()) error = check_tls_flags(c.redis_tls);
  if (error.empty()) error = check_tls_flags(c.tls);
  if (error.empty() && c.tls.enabled && c.transport == TransportChoice::kVerbs)
    error = "--tls with --transport verbs: RDMA traffic is not encrypted (docs/tls.md); use "
            "--transport tcp for TLS, or keep the fabric isolated and drop --tls";
  if (!error.empty()) return Status::error("arguments", error);
  RRS_RETURN_IF_ERROR(check_source(c, master_flag));
  if (c.log_size && c.snapshot_every >= c.log_size)
    return Status::error("arguments", "--snapshot-every must be below --log-size (" +
                                          std::to_string(c.log_size) +
                                          "), or new replicas could find the newest table older "
                                          "than the log reaches");
  return c;
}

}  // namespace rrs
