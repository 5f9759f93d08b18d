// One connection to a target cluster master, carrying pipelined commands:
// the load's writes (RESTORE, SET, a slot's MSET), and follow mode's stream
// commands and MULTI blocks.
// Unlike RestoreLoader (one standalone target), every command's bytes are
// kept until its reply arrives: a cluster may answer MOVED or ASK (the slot
// is elsewhere), TRYAGAIN or CLUSTERDOWN (not now), or drop the connection
// (a failover), and the command is then sent again, there or later. Each
// write replaces its key (RESTORE ... REPLACE ABSTTL, SET, MSET), so a
// second copy leaves the same key.
//
// The caller polls fd() for events() and hands the result to on_events();
// no call blocks after connect().
#pragma once

#include <hiredis/read.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client/cluster/slot_map.h"
#include "common/redis/redis_client.h"

namespace rrs {

class SlotMsets;

// A command as the sink knows it: enough to route it again and to name it.
struct RoutedCommand {
  uint16_t slot = 0;
  uint64_t index = 0;  // the table record, or the stream unit's sequence number
  // Replies it gets: 1, or a MULTI block's (MULTI, each command, EXEC),
  // whose outcome is the block's as a whole.
  uint32_t replies = 1;
  uint64_t bytes = 0;  // key + payload
  uint32_t hops = 0;   // redirections and resends so far
  std::string key;
  std::string wire;        // the RESP bytes; filled only when handed back
  bool multi_key = false;  // a stream unit with several keys (stream_units.h)
  // An MSET's table records, in order (slot_msets.h); empty: one, `index`.
  std::vector<uint64_t> indices;

  // The keys it writes.
  uint64_t keys() const { return indices.empty() ? 1 : indices.size(); }
};

// What became of a command, from its reply.
struct CommandOutcome {
  enum class What {
    kLoaded,    // any reply but an error (a block: EXEC ran every command)
    kFailed,    // refused for this record alone: `error`
    kRedirect,  // MOVED or ASK: `redirect`
    kRetry,     // TRYAGAIN, CLUSTERDOWN, or the connection was lost: send again later
  };
  What what = What::kLoaded;
  RoutedCommand command;
  std::string error;
  Redirect redirect;
};

class NodePipeline {
 public:
  static Result<NodePipeline> connect(const Endpoint& node, const RedisCredentials& creds,
                                      std::chrono::milliseconds timeout);
  NodePipeline(NodePipeline&&) noexcept;
  NodePipeline& operator=(NodePipeline&&) noexcept;
  ~NodePipeline();

  // Queues the command that writes a table record (restore_command.h:
  // append_write): SET of `value`, the record's plain string, or RESTORE.
  void write_record(uint16_t slot, uint64_t index, std::string_view key, int64_t expire_at_ms,
                    std::string_view payload, std::optional<std::string_view> value);
  // Queues the MSET gathered for `slot` (SlotMsets::flush), straight into
  // the output stream.
  void write_mset(uint16_t slot, SlotMsets& msets);
  // Queues a command handed back by some node, after ASKING when `asking`.
  void resend(RoutedCommand command, bool asking);

  int fd() const { return redis_.fd(); }
  short events();
  bool buffered() { return redis_.stream().buffered(); }
  // Writes what the socket takes and reads what has come; appends the
  // outcome of every command answered. An error: the connection is no
  // longer usable (take_unanswered() then), or an error reply that stops
  // every load (stopping_error), kind kFailed.
  Status on_events(short revents, std::vector<CommandOutcome>& outcomes);
  // The commands not answered, with their bytes: to be sent again.
  std::vector<RoutedCommand> take_unanswered();

  size_t in_flight() const { return pending_.size(); }
  // The keys those commands write (an MSET's count each).
  uint64_t keys_in_flight() const;
  size_t unsent_bytes() const { return static_cast<size_t>(appended_ - written_); }
  // Bytes held for commands not answered (sent or not).
  size_t held_bytes() const { return out_.size(); }
  const Endpoint& endpoint() const { return redis_.endpoint(); }

 private:
  struct Pending {
    bool asking = false;          // ASKING before an ASK-redirected command: its reply is dropped
    RoutedCommand command;        // wire empty: its bytes are in out_
    uint64_t start = 0, end = 0;  // in the output stream
    uint32_t replied = 0;         // a block: replies read so far
    std::string first_error;      // a block: the first error among them
  };
  explicit NodePipeline(RedisClient redis) : redis_(std::move(redis)) {}
  void push(Pending p, std::string_view wire);
  std::string_view bytes_of(const Pending& p) const;
  Status write_some();
  Status read_some(std::vector<CommandOutcome>& outcomes);
  Status on_reply(const redisReply& reply, std::vector<CommandOutcome>& outcomes);
  // A whole block's replies in: the error that decides its outcome, if any.
  static std::optional<std::string> block_error(const Pending& p, const redisReply& exec);
  void trim();

  RedisClient redis_;
  redisReader* reader_ = nullptr;
  std::string out_;        // stream bytes from out_base_ on, kept until answered
  uint64_t out_base_ = 0;  // stream offset of out_[0]
  uint64_t appended_ = 0, written_ = 0;
  std::deque<Pending> pending_;
};

// One poll over every pipeline with something to send or to hear (sleeps
// `wait` if none has): each answered command goes to `on_outcome(node, o)`,
// and a pipeline whose connection failed to `on_lost(node, why)`, which may
// remove it. `answered` is set when any reply came. An error: one that stops
// every load (stopping_error), or poll itself failing.
using PipelineMap = std::map<std::string, NodePipeline>;  // by "host:port"
Status poll_pipelines(PipelineMap& pipelines, std::chrono::milliseconds wait,
                      const std::function<void(const std::string&, CommandOutcome)>& on_outcome,
                      const std::function<void(const std::string&, const Status&)>& on_lost,
                      bool& answered);

}  // namespace rrs
