// What `--version` prints, the same for both programs: the release and the
// commit it was built from, the wire formats it speaks, the RDB versions it
// reads, and whether this host has an RDMA device to use.
#pragma once

#include <string>
#include <string_view>

namespace rrs {

// `verbs`: what the caller found about the host's RDMA devices (rdma-core
// lives in the transport layer, below the programs but beside this one).
std::string version_text(std::string_view program, std::string_view verbs);

}  // namespace rrs
