#include "server/rdb_file_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <optional>

#include "common/base/log.h"
#include "common/net/socket.h"
#include "server/rdb_table_sink.h"

namespace rrs {
namespace {

// Where in its server's replication history the file was written.
struct FilePlace {
  std::string replid;
  uint64_t offset = 0;
  uint32_t stream_db = 0;
};

template <typename N>
std::optional<N> parse_number(std::string_view text) {
  N n{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return n;
}

bool is_replid(std::string_view id) {
  if (id.size() != table::hdr::kReplidLen) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  return true;
}

// The file's place from its repl-id, repl-offset and repl-stream-db aux
// fields; an error saying why when it has none or they do not parse (then
// the table belongs to no history: a replica of it could not continue).
Result<FilePlace> place_of(const RdbReplAux& aux) {
  if (aux.replid.empty() || aux.offset.empty())
    return Status::error("place in a replication history",
                         "it has no repl-id/repl-offset aux fields (a server saves them when it is "
                         "a replica, or a master with a replication backlog)");
  FilePlace place;
  const auto offset = parse_number<uint64_t>(aux.offset);
  // Absent: Redis before 4.0 wrote none; the stream then begins with a SELECT.
  const auto db = aux.stream_db.empty() ? std::optional<uint32_t>(0)
                                        : parse_number<uint32_t>(aux.stream_db);
  if (!is_replid(aux.replid) || !offset || !db || *db >= table::kMaxDbCount)
    return Status::error("place in a replication history",
                         "its repl-id '" + log::printable(aux.replid) + "', repl-offset '" +
                             log::printable(aux.offset) + "' or repl-stream-db '" +
                             log::printable(aux.stream_db) + "' do not parse");
  place.replid = aux.replid;
  place.offset = *offset;
  place.stream_db = *db;
  return place;
}

// Reads the file to the RDB's end, feeding the parser and each event to
// `sink`. The file must end where the RDB does.
Status feed_file(int fd, const std::string& what, rdb::RdbParser& parser, RdbTableSink& sink) {
  uint64_t read_bytes = 0;
  while (!parser.done()) {
    const std::span<char> room = parser.writable(RdbFileSource::kChunk);
    const ssize_t n = ::read(fd, room.data(), room.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::from_errno("read " + what + " at byte " + std::to_string(read_bytes));
    if (n == 0)
      return Status::error(what, "it ends at byte " + std::to_string(read_bytes) +
                                     ", inside the RDB (whole items up to byte " +
                                     std::to_string(parser.consumed()) +
                                     "): the file is truncated, a copy cut short or a save "
                                     "that did not finish")
          .as(ErrorKind::kBadData);
    parser.commit(static_cast<size_t>(n));
    read_bytes += static_cast<uint64_t>(n);
    while (true) {
      auto ev = parser.next();
      if (!ev.ok()) return ev.status().wrap(what);
      if (!*ev) break;
      RRS_RETURN_IF_ERROR(sink.on_event(**ev));
    }
  }
  char more = 0;
  if (!parser.rest().empty() || ::read(fd, &more, 1) > 0)
    return Status::error(what, "bytes follow the RDB's end (its EOF opcode, and from RDB 5 "
                               "its checksum, end at byte " +
                                   std::to_string(parser.consumed()) +
                                   "): not a plain RDB file (an AOF with an RDB preamble?), "
                                   "and a table of the RDB alone would miss what they hold")
        .as(ErrorKind::kBadData);
  return {};
}

}  // namespace

Result<SnapshotStats> RdbFileSource::snapshot(TableBuilder& into) {
  const std::string what = "RDB file " + path_;
  const UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Status::from_errno("open " + what).as(ErrorKind::kUsage);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::from_errno("stat " + what).as(ErrorKind::kUsage);
  if (S_ISDIR(st.st_mode))
    return Status::error("open " + what, "it is a directory").as(ErrorKind::kUsage);
  const uint64_t size = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
  log::info("reading " + what + " (" + std::to_string(size) + " bytes), parsing it as it is read");

  rdb::RdbParser parser(limits_);
  RdbTableSink sink(into, parser,
                    {what, "a backup taken once the migration has finished can be served",
                     ErrorKind::kFailed},
                    [size] { return size; });
  Status s = feed_file(fd.get(), what, parser, sink);
  if (!s.ok()) return s;

  const Result<FilePlace> place = place_of(sink.repl_aux());
  SourceInfo source;
  source.kind = table::SourceKind::kRdbFile;
  if (place.ok()) {
    source.replication_offset = place->offset;
    source.replid = place->replid;
    source.stream_db = place->stream_db;
  }
  const SnapshotStats stats = sink.finish(std::move(source));
  log::info("snapshot: " + what + " complete: " + mib(stats.rdb_bytes) + ", " +
            std::to_string(stats.keys) + " keys in " + std::to_string(sink.seconds()).substr(0, 5) +
            " s");
  if (place.ok())
    log::info("the file was written at offset " + std::to_string(place->offset) +
              " of replication history " + place->replid +
              ": a replica loaded from it (rdma-client --mode replica --handoff) continues from "
              "the master with a partial resync while the master's backlog still reaches back "
              "there");
  else
    log::info("the table has no place in a replication history: " + place.status().reason() +
              "; it loads as a standalone copy, and rdma-client --handoff is refused");
  return stats;
}

}  // namespace rrs
