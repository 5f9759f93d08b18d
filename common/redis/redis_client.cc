#include "common/redis/redis_client.h"

#include <charconv>
#include <cstdlib>
#include <fstream>

#include "common/base/clock.h"
#include "common/net/socket.h"
#include "common/tls/tls_stream.h"

namespace rrs {
namespace {

std::string reply_text(const redisReply* r) { return std::string(r->str, r->len); }

Result<RedisCredentials> parse_credentials(std::string line, std::string origin) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  RedisCredentials c;
  c.origin = std::move(origin);
  size_t space = line.find(' ');
  if (space == std::string::npos) {
    c.password = line;
  } else {
    c.user = line.substr(0, space);
    c.password = line.substr(space + 1);
  }
  if (c.password.empty())
    return Status::error("read Redis credentials from " + c.origin,
                         "empty password; expected \"password\" or \"user password\"")
        .as(ErrorKind::kUsage);
  return c;
}

}  // namespace

Result<RedisCredentials> load_credentials(const std::string& file, const char* env_var) {
  if (!file.empty()) {
    std::ifstream in(file);
    if (!in) return Status::from_errno("open Redis credentials file " + file).as(ErrorKind::kUsage);
    std::string line;
    std::getline(in, line);
    return parse_credentials(line, file);
  }
  if (const char* v = std::getenv(env_var); v && *v)
    return parse_credentials(v, std::string("$") + env_var);
  return RedisCredentials{};
}

Result<RedisCredentials> load_credentials(const std::string& file, const char* env_var,
                                          const TlsOptions& tls) {
  RRS_ASSIGN_OR_RETURN(RedisCredentials creds, load_credentials(file, env_var));
  creds.tls_flag = tls.flag;
  if (!tls.enabled) return creds;
  RRS_ASSIGN_OR_RETURN(TlsContext ctx, TlsContext::make(tls, TlsRole::kClient, TlsWire::kRedis));
  creds.tls = std::make_shared<const TlsContext>(std::move(ctx));
  return creds;
}

Result<std::unique_ptr<Stream>> connect_stream(const Endpoint& at, const RedisCredentials& creds,
                                               std::chrono::milliseconds timeout) {
  const std::string step = "connect to Redis at " + at.to_string();
  auto fd = tcp_connect(at, timeout);
  if (!fd.ok())
    return Status::error(step, fd.status().reason() + " (is redis-server running there?)",
                         fd.status().sys_errno())
        .as(ErrorKind::kUnavailable);
  if (!creds.tls) return std::unique_ptr<Stream>(std::make_unique<SocketStream>(std::move(*fd)));
  auto tls = TlsStream::connect(std::move(*fd), *creds.tls, at.host, "Redis at " + at.to_string(),
                                Clock::now() + timeout);
  if (!tls.ok()) return tls.status();
  return std::unique_ptr<Stream>(std::move(*tls));
}

RedisClient::RedisClient(Endpoint at, std::unique_ptr<Stream> stream,
                         std::chrono::milliseconds timeout)
    : at_(std::move(at)),
      stream_(std::move(stream)),
      reader_(redisReaderCreate()),
      timeout_(timeout) {}

Result<RedisClient> RedisClient::connect(const Endpoint& at, const RedisCredentials& creds,
                                         std::chrono::milliseconds timeout) {
  auto stream = connect_stream(at, creds, timeout);
  if (!stream.ok()) return stream.status();
  RedisClient client(at, std::move(*stream), timeout);
  if (!client.reader_)
    return Status::error("connect to Redis at " + at.to_string(), "out of memory");
  const std::string step = "authenticate to Redis at " + at.to_string();
  // The connection failed before any answer: a TLS port drops a plain
  // client's first command unanswered.
  const auto lost = [&](const Status& s) {
    std::string hint = " (does it serve TLS only? then give " + creds.tls_flag + ")";
    if (creds.tls)
      hint = creds.tls->options().cert_file.empty()
                 ? " (does it want a client certificate, tls-auth-clients yes? then give " +
                       creds.tls_flag + "-cert and " + creds.tls_flag + "-key)"
                 : " (did it refuse our client certificate? is " + creds.tls_flag +
                       "-cert signed by a CA in its tls-ca-cert-file?)";
    return Status::error(step, s.reason() + hint, s.sys_errno()).as(s.kind());
  };
  if (!creds.password.empty()) {
    std::vector<std::string_view> argv{"AUTH"};
    if (!creds.user.empty()) argv.push_back(creds.user);
    argv.push_back(creds.password);
    auto r = client.command(argv);
    if (!r.ok() && r.status().kind() != ErrorKind::kFailed) return lost(r.status());
    if (!r.ok())
      return Status::error(step, r.status().reason() + " (credentials from " + creds.origin + ")")
          .as(ErrorKind::kDenied);
  }
  // Fail early, and clearly, if the server wants a password we don't have.
  // A server loading its data answers -LOADING, but only after its auth
  // check: the connection is good, and INFO works on it meanwhile.
  auto ping = client.command({"PING"});
  if (!ping.ok() && ping.status().kind() != ErrorKind::kFailed) return lost(ping.status());
  if (!ping.ok() && !ping.status().reason().starts_with("LOADING")) {
    std::string why = ping.status().reason();
    if (why.find("NOAUTH") != std::string::npos)
      why += " (set the password with --redis-auth-file or the environment variable)";
    return Status::error(step, why).as(ErrorKind::kDenied);
  }
  return client;
}

Status RedisClient::io_error(const std::string& step, const Status& cause) const {
  // A Redis that went away is "unavailable" (exit 3), like an unreachable
  // one; a TLS refusal keeps its own kind.
  const ErrorKind kind = cause.kind() == ErrorKind::kFailed ? ErrorKind::kUnavailable
                                                            : cause.kind();
  return Status::error(step + " on Redis at " + at_.to_string(), cause.reason(), cause.sys_errno())
      .as(kind);
}

void RedisClient::append(std::span<const std::string_view> argv) {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  ptrs.reserve(argv.size());
  lens.reserve(argv.size());
  for (auto a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  char* cmd = nullptr;
  const int len = redisFormatCommandArgv(&cmd, static_cast<int>(argv.size()), ptrs.data(),
                                         lens.data());
  if (len > 0) out_.append(cmd, static_cast<size_t>(len));
  redisFreeCommand(cmd);
}

Result<ReplyPtr> RedisClient::get_reply() {
  void* r = nullptr;
  if (redisReaderGetReply(reader_.get(), &r) == REDIS_OK && r != nullptr)
    return ReplyPtr(static_cast<redisReply*>(r));
  RRS_RETURN_IF_ERROR(send_appended());
  char buf[16 * 1024];
  for (;;) {
    if (redisReaderGetReply(reader_.get(), &r) != REDIS_OK)
      return Status::error("read reply on Redis at " + at_.to_string(),
                           std::string("protocol error: ") + reader_->errstr)
          .as(ErrorKind::kBadData);
    if (r != nullptr) return ReplyPtr(static_cast<redisReply*>(r));
    auto got = read_by(*stream_, buf, Clock::now() + timeout_, "read");
    if (!got.ok()) return io_error("read reply", got.status());
    redisReaderFeed(reader_.get(), buf, *got);
  }
}

Status RedisClient::send_appended() {
  if (out_.empty()) return {};
  Status s = write_all(*stream_, out_, timeout_, "write");
  out_.clear();
  if (!s.ok()) return io_error("send commands", s);
  return {};
}

Result<ReplyPtr> RedisClient::command(const std::vector<std::string_view>& argv) {
  append(argv);
  auto r = get_reply();
  if (!r.ok()) return r;
  if ((*r)->type == REDIS_REPLY_ERROR)
    return Status::error(std::string(argv.empty() ? "" : argv[0]), reply_text(r->get()));
  return r;
}

Result<std::string> RedisClient::info(std::string_view section) {
  auto r = command({"INFO", section});
  if (!r.ok()) return r.status();
  if ((*r)->type != REDIS_REPLY_STRING && (*r)->type != REDIS_REPLY_STATUS)
    return Status::error("INFO", "unexpected reply type");
  return reply_text(r->get());
}

std::string info_field(std::string_view info, std::string_view field) {
  size_t pos = 0;
  while (pos < info.size()) {
    size_t eol = info.find('\n', pos);
    if (eol == std::string_view::npos) eol = info.size();
    std::string_view line = info.substr(pos, eol - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > field.size() && line.substr(0, field.size()) == field &&
        line[field.size()] == ':')
      return std::string(line.substr(field.size() + 1));
    pos = eol + 1;
  }
  return {};
}

std::vector<KeyspaceDb> parse_keyspace(std::string_view info) {
  std::vector<KeyspaceDb> out;
  size_t pos = 0;
  auto number_after = [](std::string_view s, std::string_view tag) -> uint64_t {
    size_t at = s.find(tag);
    if (at == std::string_view::npos) return 0;
    uint64_t v = 0;
    std::from_chars(s.data() + at + tag.size(), s.data() + s.size(), v);
    return v;
  };
  while ((pos = info.find("db", pos)) != std::string_view::npos) {
    if (pos > 0 && info[pos - 1] != '\n') {
      pos += 2;
      continue;
    }
    size_t eol = info.find('\n', pos);
    size_t len = eol == std::string_view::npos ? std::string_view::npos : eol - pos;
    std::string_view line = info.substr(pos, len);
    KeyspaceDb db;
    auto [end, ec] = std::from_chars(line.data() + 2, line.data() + line.size(), db.db);
    if (ec == std::errc() && end < line.data() + line.size() && *end == ':') {
      db.keys = number_after(line, "keys=");
      db.expires = number_after(line, "expires=");
      out.push_back(db);
    }
    pos += 2;
  }
  return out;
}

}  // namespace rrs
