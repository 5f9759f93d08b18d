// rdma-server's flags, declared once: the parser, --help, --help-all (and so
// the man page) and docs/usage.md's table come from this table.
#pragma once

#include <string>
#include <vector>

#include "common/cli/flag_table.h"
#include "server/server_config.h"

namespace rrs {

// The table, its setters writing into `c`; `master_flag` is set to the last
// flag given that names a master (--source rdb refuses it).
std::vector<Flag> server_flags(ServerConfig& c, std::string& master_flag);
std::string server_help(HelpKind kind);

}  // namespace rrs
