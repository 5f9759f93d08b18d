// A streaming parser for the command stream a Redis master sends a replica
// after the RDB: feed it bytes as they arrive, in any split, take commands
// out. It does no I/O. Every command is a RESP multibulk array:
//
//   *<n>\r\n  then n times  $<len>\r\n<len bytes>\r\n
//
//   resp::CommandParser p;
//   while (link_up) {
//     p.feed(chunk);                   // any split of the stream
//     while (true) {
//       auto cmd = p.next();           // error: not a valid command stream
//       if (!cmd.ok()) return cmd.status();
//       if (!*cmd) break;              // needs more bytes
//       apply((*cmd)->args);           // views valid until the next feed() or next()
//     }
//   }
//   // The master's replication offset moved by p.consumed() - p.skipped().
//
// Every byte is untrusted, and the parser is strict: counts and lengths are
// plain decimal (no sign, no leading zeros: Redis's own string2ll rejects
// those too), every line ends in \r\n, every bulk is followed by exactly \r\n.
// Anything a master does not write is an error, so the encoding of a command
// is canonical: stream_bytes is exactly the length of re-encoding its args.
//
// Between commands, and only there, empty lines ("\r\n" or a bare "\n") are
// skipped: a master writes "\n" to a replica as a keepalive while it prepares
// the RDB, so one may sit where this stream starts. They count in consumed()
// and skipped(), not in any command (nor in the master's replication offset).
// Any other line not starting with '*' (an inline command such as "PING\r\n")
// is an error: a master never sends one, so it means a corrupt or misaligned
// stream, and guessing where the next command starts would hide that.
//
// A line (a count, a length, or what stands where a command should start) is
// judged once it is complete or longer than kMaxLineBytes, never on a prefix,
// so the same bytes give the same commands and the same error, quoted bytes
// included, however they were split across feed() calls.
//
// Linear: a command split across feeds resumes after its last complete
// element (and a bulk after its header); a bulk's bytes are never scanned,
// and next() costs O(1) while one is still arriving. The headers are walked
// once more, when the command is complete, to collect the views. Memory
// grows only with bytes actually fed, never with a declared count or length:
// the buffer holds one partial command plus what the last feed() added
// beyond it (when next() is drained after every feed); consumed bytes are
// dropped when the next feed() needs the room, and a buffer grown for a big
// command is given back once it is mostly idle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"

namespace rrs::resp {

// The longest count or length line accepted, without its \r\n. "$" and the
// 20 digits of UINT64_MAX fit; a longer line is garbage, not a slow number.
inline constexpr size_t kMaxLineBytes = 32;

// The least stream bytes one argument takes: "$0\r\n\r\n".
inline constexpr uint64_t kMinArgBytes = 6;

struct Limits {
  // Arguments in one command. A master propagates a client's variadic command
  // (SADD, MSET, DEL ...) as the client sent it, and since 7.0 Redis takes up
  // to INT_MAX arguments from a client (before, 1024*1024: redis/redis#9528),
  // so a lower limit could refuse a stream a real replica accepts. Memory is
  // bounded by max_command_bytes instead: each argument takes at least
  // kMinArgBytes of stream and 16 bytes of Command::args.
  uint64_t max_args = (1ull << 31) - 1;
  // Bytes in one argument: proto-max-bulk-len's default. A replica does not
  // apply proto-max-bulk-len to its master, so raise this where the master's
  // proto-max-bulk-len was raised.
  uint64_t max_bulk_bytes = 512ull << 20;
  // Stream bytes in one command, framing included: client-query-buffer-limit's
  // default, which bounds what a client could send the master in one command.
  // This bounds the parser's buffer.
  uint64_t max_command_bytes = 1ull << 30;
};

struct Command {
  // Views into the parser's buffer, valid until the next feed() or next().
  // The array is the parser's too, so returning a command allocates nothing.
  std::span<const std::string_view> args;
  // Stream bytes this command occupied: its exact encoded length.
  uint64_t stream_bytes = 0;
};

class CommandParser {
 public:
  explicit CommandParser(Limits limits = {}) : limits_(limits) {}

  // Appends stream bytes (copied). May move buffered bytes: views from an
  // earlier command become invalid. After an error, bytes are dropped.
  void feed(std::string_view bytes);
  void feed(std::span<const std::byte> bytes) {
    feed(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }

  // The next complete command, nullopt when more bytes are needed, or a
  // kBadData error naming what is wrong and its stream byte offset (counted
  // from the first byte ever fed), with the offending bytes quoted. Once an
  // error is returned, every later call returns it again.
  Result<std::optional<Command>> next();

  // Stream bytes parsed: returned commands and skipped empty lines.
  uint64_t consumed() const { return consumed_; }
  // Of those, the bytes of skipped empty lines.
  uint64_t skipped() const { return skipped_; }
  // Bytes fed and not yet consumed.
  size_t buffered() const { return end_ - begin_; }

 private:
  enum class Step { kCommand, kSkipped, kNeedMore };
  struct Line;
  Result<Step> parse_item(Command& cmd);
  Result<Step> parse_command(Command& cmd);
  bool read_line(size_t at, Line& line);
  std::string at(size_t offset) const;
  void build_args();
  void finish_item(size_t len);

  Limits limits_;
  std::unique_ptr<char[]> buf_;
  size_t capacity_ = 0;
  size_t begin_ = 0, end_ = 0;  // unconsumed bytes: buf_[begin_, end_)
  size_t need_ = 1;             // bytes from begin_ the current item needs at least
  uint64_t consumed_ = 0, skipped_ = 0;
  std::optional<Status> error_;

  // A command split across feeds: where its parse stopped. Offsets are
  // relative to begin_, the command's first byte.
  struct Progress {
    uint64_t argc = 0;      // declared count; 0 until the count line is read
    uint64_t done = 0;      // complete arguments
    size_t first_arg = 0;   // after the count line
    size_t pos = 0;         // after the last complete line or argument
    bool in_bulk = false;   // the current argument's $<len> line is read;
    uint64_t bulk_len = 0;  //   its bytes start at pos
  };
  Progress progress_;
  std::vector<std::string_view> args_;  // the returned command's arguments
};

}  // namespace rrs::resp
