// rdma-client's flags, declared once: the parser, --help, --help-all (and so
// the man page) and docs/usage.md's table come from this table.
#pragma once

#include <string>
#include <vector>

#include "client/client_config.h"
#include "common/cli/flag_table.h"

namespace rrs {

// The table, its setters writing into `c`.
std::vector<Flag> client_flags(ClientConfig& c);
std::string client_help(HelpKind kind);

}  // namespace rrs
