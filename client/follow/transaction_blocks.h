// MULTI ... EXEC in the master's replication stream, held until its EXEC so
// the target gets the block whole (a batch boundary or a stop never splits
// it). Both followers cut the stream with it: the standalone one
// (stream_applier.h) and the cluster's (client/cluster/stream_units.h).
// PING and REPLCONF are the master talking to its replica, not data. No I/O.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"

namespace rrs {

class TransactionBlocks {
 public:
  enum class Next {
    kHeld,     // inside an open block: nothing to apply yet
    kChatter,  // PING or REPLCONF outside a block: applied as it stands
    kCommand,  // one command to apply: the args as given
    kBlock,    // EXEC closed a block: take_block() has its commands
  };

  // Takes the next command; `end` is the stream position after it (for the
  // error a MULTI inside a block gets).
  Result<Next> add(std::span<const std::string_view> args, uint64_t end);
  // The block kBlock closed, in order (none for an empty MULTI ... EXEC).
  std::vector<std::vector<std::string>> take_block() { return std::move(block_); }
  bool open() const { return open_; }

 private:
  bool open_ = false;
  // Owned copies: the parser's views die with its next feed.
  std::vector<std::vector<std::string>> block_;
};

// `arg` is the command `name` (lowercase), in any case.
bool is_command(std::string_view arg, std::string_view name);

}  // namespace rrs
