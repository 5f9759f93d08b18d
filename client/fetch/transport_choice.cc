#include "client/fetch/transport_choice.h"

#include "common/base/log.h"
#include "common/transport/tcp/table_reader.h"
#include "common/transport/verbs/device.h"
#include "common/transport/verbs/table_reader.h"

namespace rrs {
namespace {

// How long auto mode gives an RDMA connection before trying TCP.
constexpr auto kVerbsProbe = std::chrono::seconds(3);

Result<std::unique_ptr<TableReader>> connect_with(std::unique_ptr<TableReader> reader,
                                                  Clock::time_point deadline) {
  RRS_RETURN_IF_ERROR(reader->connect(deadline));
  return reader;
}

}  // namespace

Result<std::unique_ptr<TableReader>> connect_transport(const ClientConfig& config,
                                                       Clock::time_point deadline) {
  const auto io = std::chrono::milliseconds(config.io_timeout);
  auto tcp = [&] {
    return std::make_unique<TcpTableReader>(config.server, io, config.secret, config.transport_tls);
  };
  if (config.transport == "tcp") return connect_with(tcp(), deadline);
  // RDMA is not encrypted: --tls reads over TCP only.
  if (config.transport_tls) {
    log::info("transport: tcp (--tls)");
    return connect_with(tcp(), deadline);
  }
  if (config.transport == "verbs") {
    log::info("transport: verbs (--transport verbs)");
    return connect_with(std::make_unique<VerbsTableReader>(config.server, io, config.secret),
                        deadline);
  }
  auto reach = rdma_can_reach(config.server.host, config.server.port);
  const std::string why = reach.ok() ? *reach : reach.status().reason();
  if (reach.ok()) {
    auto verbs = connect_with(std::make_unique<VerbsTableReader>(config.server, io, config.secret),
                              std::min(deadline, Clock::now() + kVerbsProbe));
    if (verbs.ok()) {
      log::info("transport: verbs (" + why + ")");
      return verbs;
    }
    // A refused secret is refused over TCP too: say so, not "trying TCP".
    if (verbs.status().kind() == ErrorKind::kDenied) return verbs.status();
    log::info("transport: tcp (" + why + ", but " + verbs.status().message() + ")");
  } else {
    log::info("transport: tcp (" + why + ")");
  }
  return connect_with(tcp(), deadline);
}

}  // namespace rrs
