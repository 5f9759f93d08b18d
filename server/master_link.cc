#include "server/master_link.h"

#include <poll.h>
#include <sys/socket.h>

#include <charconv>
#include <cstring>

#include "common/base/clock.h"
#include "proto/resp_writer.h"

namespace rrs {
namespace {

constexpr size_t kEofMarkLen = 40;  // a diskless RDB ends with this random mark
constexpr size_t kRecvChunk = 1u << 20;
constexpr auto kAckEvery = std::chrono::seconds(1);

std::chrono::milliseconds ms_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return std::max(left, std::chrono::milliseconds(0));
}

}  // namespace

Result<MasterLink> MasterLink::connect(const Endpoint& master, const RedisCredentials& creds,
                                       MasterLinkOptions opts) {
  auto stream = connect_stream(master, creds, opts.timeout);
  if (!stream.ok()) return stream.status();
  MasterLink link(std::move(*stream), master, opts);

  if (!creds.password.empty()) {
    Status s = creds.user.empty() ? link.send_command({"AUTH", creds.password})
                                  : link.send_command({"AUTH", creds.user, creds.password});
    RRS_RETURN_IF_ERROR(s);
    RRS_RETURN_IF_ERROR(link.expect_ok("AUTH", "check the credentials in " + creds.origin));
  }
  std::string port = std::to_string(opts.announce_port);
  RRS_RETURN_IF_ERROR(link.send_command({"REPLCONF", "listening-port", port}));
  RRS_RETURN_IF_ERROR(link.expect_ok(
      "REPLCONF listening-port",
      "the master does not let this user act as a replica (it needs +replconf +psync, or "
      "the default user); a managed Redis that forbids replication needs --source scan"));
  // eof: we take a diskless RDB; psync2: we understand +CONTINUE <new replid>.
  RRS_RETURN_IF_ERROR(link.send_command({"REPLCONF", "capa", "eof", "capa", "psync2"}));
  RRS_RETURN_IF_ERROR(link.expect_ok("REPLCONF capa", "use --source scan"));
  // A Valkey master writes the newest RDB format the replica says it knows
  // (an older one, assumed for a replica that says nothing, may not hold
  // every value: field TTLs need RDB 80). Redis has no such option and
  // answers an error, which changes nothing.
  RRS_RETURN_IF_ERROR(link.send_command({"REPLCONF", "version", kAnnouncedValkeyVersion}));
  auto answer = link.read_line(opts.timeout, nullptr);
  if (!answer.ok()) return answer.status().wrap("REPLCONF version");
  return link;
}

Status MasterLink::send_command(std::initializer_list<std::string_view> argv) {
  Status s = write_all(*stream_, resp::command(argv), opts_.timeout, "send");
  if (!s.ok()) return s.wrap("master " + master_.to_string()).as(ErrorKind::kUnavailable);
  return {};
}

Result<bool> MasterLink::wait_readable(std::chrono::milliseconds wait) {
  if (stream_->buffered()) return true;
  pollfd p{stream_->fd(), poll_events(*stream_, false), 0};
  const int n = ::poll(&p, 1, static_cast<int>(wait.count()));
  if (n < 0 && errno != EINTR) return Status::from_errno("poll the master link");
  return n > 0;
}

Result<size_t> MasterLink::read_some(std::chrono::milliseconds wait) {
  RRS_ASSIGN_OR_RETURN(const bool ready, wait_readable(wait));
  if (!ready) return size_t{0};
  char buf[64 * 1024];
  auto got = stream_->read_some(buf);
  if (!got.ok()) return got.status().wrap("master " + master_.to_string());
  if (got->closed)
    return Status::error("read from master " + master_.to_string(),
                         "the master closed the connection")
        .as(ErrorKind::kUnavailable);
  inbuf_.append(buf, got->bytes);
  return got->bytes;
}

Result<std::string> MasterLink::read_line(std::chrono::milliseconds timeout,
                                          const std::atomic<bool>* stop) {
  auto deadline = Clock::now() + timeout;
  while (true) {
    size_t nl = inbuf_.find('\n');
    if (nl != std::string::npos) {
      std::string line = inbuf_.substr(0, nl);
      inbuf_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) {
        deadline = Clock::now() + timeout;  // a keepalive newline: the master is alive
        continue;
      }
      return line;
    }
    if (inbuf_.size() > size_t{64} * 1024)
      return Status::error("read from master " + master_.to_string(),
                           "a reply line longer than 64 KiB")
          .as(ErrorKind::kBadData);
    if (stop && stop->load()) return Status::error("master link", "stopping");
    if (Clock::now() >= deadline)
      return Status::error("read from master " + master_.to_string(),
                           "no answer within " + std::to_string(timeout.count() / 1000) + " s")
          .as(ErrorKind::kUnavailable);
    auto got = read_some(std::min(ms_until(deadline), std::chrono::milliseconds(1000)));
    if (!got.ok()) return got.status();
  }
}

Status MasterLink::expect_ok(std::string_view what, std::string_view hint) {
  auto line = read_line(opts_.timeout, nullptr);
  if (!line.ok()) return line.status().wrap(std::string(what));
  if (*line == "+OK") return {};
  return Status::error(std::string(what) + " on master " + master_.to_string(),
                       "the master answered '" + line->substr(0, 200) + "'; " + std::string(hint))
      .as(ErrorKind::kUnavailable);
}

Result<PsyncReply> MasterLink::psync(std::string_view replid, int64_t next_offset) {
  RRS_RETURN_IF_ERROR(send_command({"PSYNC", replid, std::to_string(next_offset)}));
  auto line = read_line(opts_.timeout, nullptr);
  if (!line.ok()) return line.status().wrap("PSYNC");
  const std::string step = "PSYNC on master " + master_.to_string();
  PsyncReply r;
  std::string_view l = *line;
  if (l.starts_with("+FULLRESYNC ")) {
    // +FULLRESYNC <40-char replid> <offset>
    size_t sp = l.find(' ', 12);
    std::string_view id = l.substr(12, sp == std::string_view::npos ? 0 : sp - 12);
    std::string_view off = sp == std::string_view::npos ? "" : l.substr(sp + 1);
    auto [p, ec] = std::from_chars(off.data(), off.data() + off.size(), r.offset);
    if (id.size() != 40 || ec != std::errc() || p != off.data() + off.size())
      return Status::error(step, "malformed reply '" + line->substr(0, 100) + "'")
          .as(ErrorKind::kBadData);
    r.kind = PsyncReply::kFull;
    r.replid = std::string(id);
  } else if ((l == "+CONTINUE" || l.starts_with("+CONTINUE ")) && next_offset > 0) {
    // The stream resumes where we asked; psync2 may announce a new replid.
    r.kind = PsyncReply::kContinue;
    r.replid = l.size() > 10 ? std::string(l.substr(10)) : std::string(replid);
    if (r.replid.size() != 40)
      return Status::error(step, "malformed reply '" + line->substr(0, 100) + "'")
          .as(ErrorKind::kBadData);
    r.offset = static_cast<uint64_t>(next_offset) - 1;
  } else if (l.starts_with("-NOMASTERLINK") || l.starts_with("-LOADING")) {
    r.kind = PsyncReply::kNotReady;
    r.why = "the master cannot serve a sync yet ('" + line->substr(0, 200) + "')";
    return r;
  } else {
    return Status::error(step, "the master refused PSYNC: '" + line->substr(0, 200) +
                                   "'. Where the master forbids replication (managed Redis, "
                                   "or an ACL without +psync), use --source scan")
        .as(ErrorKind::kUnavailable);
  }
  replid_ = r.replid;
  offset_ = r.offset;
  return r;
}

Status MasterLink::receive_rdb(rdb::RdbParser& parser, const OnEvent& on_event,
                               const std::atomic<bool>& stop) {
  RRS_ASSIGN_OR_RETURN(const std::string mark, read_rdb_preamble(stop));
  RRS_RETURN_IF_ERROR(pump_rdb(parser, on_event, stop));
  return check_rdb_end(parser, mark);
}

Result<std::string> MasterLink::read_rdb_preamble(const std::atomic<bool>& stop) {
  // $<len> (RDB written to disk first) or $EOF:<40-byte mark> (diskless).
  auto line = read_line(opts_.repl_timeout, &stop);
  if (!line.ok()) return line.status().wrap("wait for the master's RDB");
  std::string mark;
  rdb_size_ = 0;
  if (line->starts_with("$EOF:") && line->size() == 5 + kEofMarkLen) {
    mark = line->substr(5);
  } else if (line->starts_with("$")) {
    std::string_view n = std::string_view(*line).substr(1);
    auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), rdb_size_);
    if (ec != std::errc() || p != n.data() + n.size() || rdb_size_ == 0)
      return Status::error("RDB preamble", "malformed: '" + line->substr(0, 100) + "'")
          .as(ErrorKind::kBadData);
  } else {
    return Status::error("RDB preamble",
                         "expected $<len> or $EOF:<mark>, got '" + line->substr(0, 100) + "'")
        .as(ErrorKind::kBadData);
  }
  return mark;
}

Status MasterLink::pump_rdb(rdb::RdbParser& parser, const OnEvent& on_event,
                            const std::atomic<bool>& stop) {
  // Bytes that came with the preamble, then straight into the parser's buffer.
  uint64_t received = inbuf_.size();
  parser.feed(inbuf_);
  inbuf_.clear();
  auto last_byte = Clock::now();
  while (true) {
    while (true) {
      auto ev = parser.next();
      if (!ev.ok()) return ev.status().wrap("parse the master's RDB");
      if (!*ev) break;
      RRS_RETURN_IF_ERROR(on_event(**ev));
    }
    if (parser.done()) return {};
    if (rdb_size_ && received >= rdb_size_)
      return Status::error("RDB from " + master_.to_string(),
                           "ended (" + std::to_string(rdb_size_) +
                               " bytes announced) before its EOF opcode")
          .as(ErrorKind::kBadData);
    if (stop.load()) return Status::error("receive the RDB", "stopping");

    RRS_ASSIGN_OR_RETURN(const bool ready, wait_readable(std::chrono::milliseconds(1000)));
    if (!ready) {
      if (Clock::now() - last_byte > opts_.repl_timeout)
        return Status::error("receive the RDB from " + master_.to_string(),
                             "the master sent nothing for " +
                                 std::to_string(opts_.repl_timeout.count() / 1000) + " s after " +
                                 std::to_string(received) + " bytes")
            .as(ErrorKind::kUnavailable);
      continue;
    }
    std::span<char> room = parser.writable(kRecvChunk);
    auto got = stream_->read_some(room);
    if (!got.ok()) return got.status().wrap("receive the RDB from " + master_.to_string());
    if (got->closed)
      return Status::error("receive the RDB from " + master_.to_string(),
                           "the master closed the connection after " + std::to_string(received) +
                               " bytes")
          .as(ErrorKind::kUnavailable);
    if (got->bytes == 0) continue;
    parser.commit(got->bytes);
    received += got->bytes;
    last_byte = Clock::now();
  }
}

Status MasterLink::check_rdb_end(const rdb::RdbParser& parser, const std::string& mark) {
  // What followed the RDB: the mark (diskless), then the replication stream.
  inbuf_.assign(parser.rest());
  if (rdb_size_ && parser.consumed() != rdb_size_)
    return Status::error("RDB from " + master_.to_string(),
                         "its EOF came after " + std::to_string(parser.consumed()) + " bytes, " +
                             std::to_string(rdb_size_) + " were announced")
        .as(ErrorKind::kBadData);
  if (!mark.empty()) {
    auto deadline = Clock::now() + opts_.repl_timeout;
    while (inbuf_.size() < kEofMarkLen) {
      if (Clock::now() >= deadline)
        return Status::error("RDB from " + master_.to_string(), "no end mark after the EOF opcode")
            .as(ErrorKind::kUnavailable);
      auto got = read_some(std::min(ms_until(deadline), std::chrono::milliseconds(1000)));
      if (!got.ok()) return got.status();
    }
    if (inbuf_.compare(0, kEofMarkLen, mark) != 0)
      return Status::error("RDB from " + master_.to_string(),
                           "the end mark does not match the one announced")
          .as(ErrorKind::kBadData);
    inbuf_.erase(0, kEofMarkLen);
  }
  return {};
}

Status MasterLink::send_ack() { return send_command({"REPLCONF", "ACK", std::to_string(offset_)}); }

Status MasterLink::follow(const std::atomic<bool>& stop, const OnBytes& on_bytes) {
  auto take = [&] {
    on_bytes(std::as_bytes(std::span(inbuf_)));
    offset_ += inbuf_.size();
    inbuf_.clear();
  };
  take();  // what came right after the RDB
  // A diskless master starts the stream only after the first ACK.
  RRS_RETURN_IF_ERROR(send_ack());
  auto last_ack = Clock::now(), last_byte = Clock::now();
  while (!stop.load()) {
    auto got = read_some(std::chrono::milliseconds(250));
    if (!got.ok()) return got.status();
    if (*got) {
      take();
      last_byte = Clock::now();
    } else if (Clock::now() - last_byte > opts_.repl_timeout) {
      return Status::error("replication stream from " + master_.to_string(),
                           "the master sent nothing for " +
                               std::to_string(opts_.repl_timeout.count() / 1000) +
                               " s (it PINGs every repl-ping-replica-period)")
          .as(ErrorKind::kUnavailable);
    }
    if (Clock::now() - last_ack >= kAckEvery) {
      RRS_RETURN_IF_ERROR(send_ack());
      last_ack = Clock::now();
    }
  }
  return {};
}

}  // namespace rrs
