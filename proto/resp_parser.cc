#include "proto/resp_parser.h"

#include <algorithm>
#include <cstring>

namespace rrs::resp {
namespace {

// The buffer starts at this size (and doubles), and one that has grown past
// kShrinkAbove for a large command is given back once it is mostly idle.
constexpr size_t kMinCapacity = 4 << 10;
constexpr size_t kShrinkAbove = 1 << 20;
// Command::args capacity kept from one command to the next (16 B each).
constexpr size_t kKeepArgs = 1 << 16;

// UINT64_MAX instead of wrapping: declared lengths are untrusted.
uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
uint64_t sat_mul(uint64_t a, uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

// Stream bytes for an operator to read: quoted, cut, non-printables escaped.
std::string quote(std::string_view s) {
  static const char* digits = "0123456789abcdef";
  std::string out = "'";
  for (char ch : s.substr(0, kMaxLineBytes)) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '\r')
      out += "\\r";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\\' || c == '\'')
      out += {'\\', ch};
    else if (c >= 0x20 && c < 0x7f)
      out += ch;
    else
      out += {'\\', 'x', digits[c >> 4], digits[c & 15]};
  }
  if (s.size() > kMaxLineBytes) out += "...";
  return out + "'";
}

// Plain decimal: digits only, no sign, no leading zero, fits in 64 bits.
std::optional<uint64_t> parse_decimal(std::string_view s) {
  if (s.empty() || (s[0] == '0' && s.size() > 1)) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    auto d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

}  // namespace

// A line of the current item, once it is complete (or too long to be one).
struct CommandParser::Line {
  enum End {
    kCrLf,     // ends in \r\n
    kBareLf,   // ends in \n alone
    kCrNoLf,   // a \r followed by something else
    kTooLong,  // no end within kMaxLineBytes
  };
  End end = kCrLf;
  std::string_view content;  // before the line end
  std::string_view shown;    // what an error quotes: content and a bad end
  size_t next = 0;           // item offset after the line (kCrLf, kBareLf)
};

void CommandParser::feed(std::string_view bytes) {
  if (error_ || bytes.empty()) return;  // after an error nothing is parsed
  const size_t n = bytes.size();
  const size_t live = end_ - begin_;
  const size_t want = live + n;
  const bool grow = want > capacity_;
  const bool shrink = capacity_ > kShrinkAbove && want <= capacity_ / 4;
  if (grow || shrink) {
    size_t cap = grow ? std::max({kMinCapacity, 2 * capacity_, want})
                      : std::max(kMinCapacity, 2 * want);
    auto fresh = std::make_unique_for_overwrite<char[]>(cap);
    if (live) std::memcpy(fresh.get(), buf_.get() + begin_, live);
    buf_ = std::move(fresh);
    capacity_ = cap;
    begin_ = 0, end_ = live;
  } else if (capacity_ - end_ < n) {
    // Consumed bytes go; a command in progress moves at most once, since
    // begin_ stays 0 until it completes.
    std::memmove(buf_.get(), buf_.get() + begin_, live);
    begin_ = 0, end_ = live;
  }
  std::memcpy(buf_.get() + end_, bytes.data(), n);
  end_ += n;
}

Result<std::optional<Command>> CommandParser::next() {
  while (!error_ && end_ - begin_ >= need_) {
    Command cmd;
    auto step = parse_item(cmd);
    if (!step.ok()) {
      error_ = step.status().as(ErrorKind::kBadData);
      break;
    }
    if (*step == Step::kCommand) return std::optional<Command>(cmd);
    if (*step == Step::kNeedMore) break;
  }
  if (error_) return *error_;
  return std::optional<Command>();
}

std::string CommandParser::at(size_t offset) const {
  return "at stream byte " + std::to_string(consumed_ + offset);
}

void CommandParser::finish_item(size_t len) {
  consumed_ += len;
  begin_ += len;
  if (begin_ == end_) begin_ = end_ = 0;  // nothing to move on the next feed
  need_ = 1;
  progress_ = {};
}

// Reads the line at item offset `at`. False when more bytes are needed
// (need_ is set): a line is judged only once it is complete or too long, so
// the verdict does not depend on where the feeds split it.
bool CommandParser::read_line(size_t at, Line& line) {
  const char* p = buf_.get() + begin_ + at;
  const size_t avail = end_ - begin_ - at;
  const size_t scan = std::min(avail, kMaxLineBytes + 1);
  size_t i = 0;
  while (i < scan && p[i] != '\r' && p[i] != '\n') ++i;
  if (i == scan) {
    if (avail <= kMaxLineBytes) {
      need_ = at + avail + 1;
      return false;
    }
    line.end = Line::kTooLong;
    line.content = line.shown = std::string_view(p, kMaxLineBytes + 1);
    return true;
  }
  line.content = std::string_view(p, i);
  if (p[i] == '\n') {
    line.end = Line::kBareLf;
    line.shown = std::string_view(p, i + 1);
    line.next = at + i + 1;
    return true;
  }
  if (i + 1 == avail) {
    need_ = at + i + 2;
    return false;
  }
  line.end = p[i + 1] == '\n' ? Line::kCrLf : Line::kCrNoLf;
  // An empty line is quoted with its end, so it shows as '\r\n', not ''.
  line.shown = line.end == Line::kCrLf && i > 0 ? line.content : std::string_view(p, i + 2);
  line.next = at + i + 2;
  return true;
}

Result<CommandParser::Step> CommandParser::parse_item(Command& cmd) {
  if (progress_.argc > 0 || buf_[begin_] == '*') return parse_command(cmd);
  Line line;
  if (!read_line(0, line)) return Step::kNeedMore;
  if (line.content.empty() && (line.end == Line::kCrLf || line.end == Line::kBareLf)) {
    skipped_ += line.next;
    finish_item(line.next);
    return Step::kSkipped;
  }
  return Status::error("RESP command stream",
                       "a line that is not a command " + at(0) + ": " + quote(line.shown) +
                           " (only '*' multibulk commands belong in a replication stream, "
                           "with empty lines between them)");
}

Result<CommandParser::Step> CommandParser::parse_command(Command& cmd) {
  Progress& g = progress_;
  const char* item = buf_.get() + begin_;
  const size_t avail = end_ - begin_;
  auto error = [](std::string what) {
    return Status::error("RESP command stream", std::move(what));
  };
  // Checked as soon as a header shows the command cannot fit, so a lying
  // length fails at once rather than after its bytes were buffered.
  auto too_big = [&](uint64_t at_least) -> std::optional<Status> {
    if (at_least <= limits_.max_command_bytes) return std::nullopt;
    return error("a command " + at(0) + " of at least " + std::to_string(at_least) +
                 " bytes is above resp::Limits::max_command_bytes (" +
                 std::to_string(limits_.max_command_bytes) + ")");
  };

  if (g.argc == 0) {
    Line line;
    if (!read_line(0, line)) return Step::kNeedMore;
    auto n = line.end == Line::kCrLf ? parse_decimal(line.content.substr(1)) : std::nullopt;
    if (!n || *n == 0) return error("bad multibulk count " + at(0) + ": " + quote(line.shown));
    if (*n > limits_.max_args)
      return error("multibulk count " + std::to_string(*n) + " " + at(0) +
                   " is above resp::Limits::max_args (" + std::to_string(limits_.max_args) + ")");
    if (auto s = too_big(sat_add(line.next, sat_mul(*n, kMinArgBytes)))) return *s;
    g.argc = *n;
    g.pos = g.first_arg = line.next;
  }

  while (g.done < g.argc) {
    if (!g.in_bulk) {
      Line line;
      if (!read_line(g.pos, line)) return Step::kNeedMore;
      if (line.content.empty() || line.content[0] != '$')
        return error("expected a bulk string ('$') " + at(g.pos) + ": " + quote(line.shown));
      auto len = line.end == Line::kCrLf ? parse_decimal(line.content.substr(1)) : std::nullopt;
      if (!len) return error("bad bulk length " + at(g.pos) + ": " + quote(line.shown));
      if (*len > limits_.max_bulk_bytes)
        return error("bulk length " + std::to_string(*len) + " " + at(g.pos) +
                     " is above resp::Limits::max_bulk_bytes (" +
                     std::to_string(limits_.max_bulk_bytes) + ")");
      uint64_t rest = sat_mul(g.argc - g.done - 1, kMinArgBytes);
      if (auto s = too_big(sat_add(sat_add(line.next, sat_add(*len, 2)), rest))) return *s;
      g.pos = line.next;
      g.bulk_len = *len;
      g.in_bulk = true;
    }
    // The bulk's bytes are not looked at: only its terminator, once all arrived.
    const uint64_t body_end = sat_add(g.pos, g.bulk_len);
    if (sat_add(body_end, 2) > avail) {
      need_ = static_cast<size_t>(sat_add(body_end, 2));
      return Step::kNeedMore;
    }
    if (item[body_end] != '\r' || item[body_end + 1] != '\n')
      return error("missing \\r\\n after a bulk string of " + std::to_string(g.bulk_len) +
                   " bytes " + at(body_end) + ": " + quote({item + body_end, 2}));
    g.pos = body_end + 2;
    g.in_bulk = false;
    ++g.done;
  }

  build_args();
  cmd.args = args_;
  cmd.stream_bytes = g.pos;
  finish_item(g.pos);
  return Step::kCommand;
}

// Collects the views of the complete command at begin_, walking its
// already-validated headers once (cheaper than keeping offsets while the
// command arrives, when the buffer may still move).
void CommandParser::build_args() {
  const char* item = buf_.get() + begin_;
  if (args_.capacity() > kKeepArgs && progress_.argc < args_.capacity() / 4)
    std::vector<std::string_view>().swap(args_);
  args_.clear();
  args_.reserve(progress_.argc);  // all present: this is not a declared length
  size_t p = progress_.first_arg;
  for (uint64_t i = 0; i < progress_.argc; ++i) {
    size_t len = 0;
    for (++p; item[p] != '\r'; ++p) len = len * 10 + static_cast<size_t>(item[p] - '0');
    p += 2;
    args_.emplace_back(item + p, len);
    p += len + 2;
  }
}

}  // namespace rrs::resp
