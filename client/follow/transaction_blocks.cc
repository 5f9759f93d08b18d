#include "client/follow/transaction_blocks.h"

#include <strings.h>

namespace rrs {

bool is_command(std::string_view arg, std::string_view name) {
  return arg.size() == name.size() && strncasecmp(arg.data(), name.data(), arg.size()) == 0;
}

Result<TransactionBlocks::Next> TransactionBlocks::add(std::span<const std::string_view> args,
                                                       uint64_t end) {
  if (args.empty()) return open_ ? Next::kHeld : Next::kChatter;
  if (is_command(args[0], "ping") || is_command(args[0], "replconf"))
    return open_ ? Next::kHeld : Next::kChatter;
  if (is_command(args[0], "multi")) {
    if (open_)
      return Status::error("apply the replication stream",
                           "MULTI inside a MULTI block at stream offset " + std::to_string(end))
          .as(ErrorKind::kBadData);
    open_ = true;
    block_.clear();
    return Next::kHeld;
  }
  if (!open_) return Next::kCommand;
  if (is_command(args[0], "exec")) {
    open_ = false;
    return Next::kBlock;
  }
  block_.emplace_back(args.begin(), args.end());
  return Next::kHeld;
}

}  // namespace rrs
