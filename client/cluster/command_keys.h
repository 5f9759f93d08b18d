// Which keys a command of the master's stream touches, by the TARGET's own
// command table: COMMAND INFO's first/last/step (cached per command name,
// subcommands by "name|sub"), and for commands whose keys move with their
// arguments (flag movablekeys) its key specs (key_specs.h), or COMMAND
// GETKEYS where they cannot be evaluated here. No table of commands is
// kept here: a server that adds a command says where its keys are.
//
// The replies are a peer's bytes: every field is checked before use.
// Parsing does no I/O; CommandKeys asks the target through `AskTarget`.
#pragma once

#include <hiredis/read.h>

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/cluster/key_specs.h"
#include "common/base/status.h"
#include "common/redis/redis_client.h"

namespace rrs {

// What the target says about one command (or subcommand).
struct CommandSpec {
  // 1-based argument positions of the keys: first..last (negative: from the
  // end, -1 the last argument) every `step`; first 0: no fixed keys.
  int first = 0, last = 0, step = 0;
  bool movable = false;  // flag movablekeys: by key_specs, else COMMAND GETKEYS
  std::optional<std::vector<KeySpec>> key_specs;  // when all can be evaluated here
  bool all_masters = false;                       // tip request_policy:all_shards or all_nodes
  bool has_subcommands = false;
};

// Every entry of a COMMAND INFO reply (nil entries: unknown commands are
// skipped), subcommands included, by lowercase name ("function|load").
Result<std::map<std::string, CommandSpec>> parse_command_info(const redisReply& reply);

// The argument indexes (0-based, into the whole command) of the keys `spec`
// places in a command of `argc` arguments; kBadData if a position is out of
// range (a command the target would refuse).
Result<std::vector<size_t>> key_positions(const CommandSpec& spec, size_t argc);

// The keys of one command, as the target sees them.
struct CommandKeysOf {
  std::vector<std::string> keys;
  bool all_masters = false;  // a keyless command meant for every master
};

class CommandKeys {
 public:
  // Sends one command to the target and returns its reply (an error reply
  // as a failed Result).
  using AskTarget = std::function<Result<ReplyPtr>(const std::vector<std::string_view>&)>;
  explicit CommandKeys(AskTarget ask) : ask_(std::move(ask)) {}

  Result<CommandKeysOf> keys_of(std::span<const std::string_view> args);
  // COMMAND GETKEYS round trips so far (movable keys no key spec covers).
  uint64_t getkeys_asked() const { return getkeys_asked_; }

 private:
  // The spec of `name` (lowercase), asked of the target on first use;
  // kRefused for a command the target does not know.
  Result<const CommandSpec*> spec(const std::string& name);
  Result<std::vector<std::string>> movable_keys(std::span<const std::string_view> args);

  AskTarget ask_;
  std::map<std::string, CommandSpec> specs_;
  uint64_t getkeys_asked_ = 0;
};

// "set", "function|load": the lowercase name the cache is keyed by.
std::string lowercase(std::string_view s);

}  // namespace rrs
