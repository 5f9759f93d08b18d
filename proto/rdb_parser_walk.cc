// RdbParser::walk: one value, element by element, from a checkpoint, so a
// value split across feeds resumes where the bytes ran out (rdb_parser.h).
#include <cstdint>

#include "proto/rdb_cursor.h"
#include "proto/rdb_format.h"
#include "proto/rdb_parser.h"

namespace rrs::rdb {
namespace {

using detail::Cursor;
using detail::kModuleAuxWalk;

// A value that is one RDB string (a ziplist, listpack, intset or zipmap).
bool is_blob_type(uint8_t t, uint16_t version) {
  if (t == kHashListpackExPreGa) return !is_valkey_numbering(version);
  switch (t) {
    case kHashZipmap:
    case kListZiplist:
    case kSetIntset:
    case kZsetZiplist:
    case kHashZiplist:
    case kHashListpack:
    case kZsetListpack:
    case kSetListpack: return true;
    default: return false;
  }
}

bool is_stream_type(uint8_t t) {
  return t == kStreamListpacks || t == kStreamListpacks2 || t == kStreamListpacks3;
}

}  // namespace

// Walks the value from the checkpoint in progress_, moving the checkpoint
// after every complete element, so bytes that arrive later resume there.
// The type switch, one branch per value encoding, all sharing the cursor,
// the checkpoint and the two lambdas at its top: exempt from the 80-line
// limit like parse_item().
// NOLINTNEXTLINE(readability-function-size): the parser's type switch
Result<RdbParser::Step> RdbParser::walk(Event& ev) {
  ValueProgress& p = progress_;
  const char* item = buf_.get() + begin_;
  Cursor c(item, end_ - begin_, p.pos, limits_);
  const uint8_t t = p.type;

  // One element per call; the checkpoint moves only after a complete one.
  auto elements = [&](auto&& element) {
    while (p.remaining > 0) {
      element();
      if (!c.ok()) return;
      --p.remaining;
      p.pos = c.pos();
    }
  };
  // Phase 0 to 1: read the element count (after `prefix_bytes` fixed bytes).
  auto start = [&](uint64_t prefix_bytes) {
    if (p.phase != 0) return;
    c.skip(prefix_bytes);
    uint64_t n = c.length();
    if (!c.ok()) return;
    p.remaining = n;
    p.phase = 1;
    p.pos = c.pos();
  };

  const bool valkey = is_valkey_numbering(version_);
  if (t == kString || is_blob_type(t, version_)) {
    c.skip_string();
  } else if (t == kHashListpackEx) {
    c.skip(8);  // the smallest field TTL
    c.skip_string();
  } else if (t == kList || t == kSet || t == kListQuicklist) {
    start(0);
    elements([&] { c.skip_string(); });
  } else if (t == kHash) {
    start(0);
    elements([&] {
      c.skip_string();
      c.skip_string();
    });
  } else if (t == kZset) {
    start(0);
    elements([&] {
      c.skip_string();
      c.skip_double_string();
    });
  } else if (t == kZset2) {
    start(0);
    elements([&] {
      c.skip_string();
      c.skip(8);  // binary double score
    });
  } else if (t == kListQuicklist2) {
    start(0);
    elements([&] {
      uint64_t container = c.length();
      if (c.ok() && container != kQuicklistPlain && container != kQuicklistPacked)
        c.bad("quicklist node container " + std::to_string(container));
      c.skip_string();
    });
  } else if (valkey && t == kValkeyHash2) {
    start(0);
    elements([&] {
      c.skip_string();  // field
      c.skip_string();  // value
      c.skip(8);        // its expiry, ms (-1: none)
    });
  } else if (t == kHashMetadata || t == kHashMetadataPreGa) {
    start(t == kHashMetadata ? 8 : 0);  // GA: the smallest field TTL first
    elements([&] {
      c.length();  // field TTL (0: none)
      c.skip_string();
      c.skip_string();
    });
  } else if (t == kModule2 || t == kModuleAuxWalk) {
    if (p.phase == 0) {
      c.length();  // module id
      if (c.ok()) p.phase = 1, p.pos = c.pos();
    }
    while (c.ok() && !c.module_opcode()) {
      if (c.ok()) p.pos = c.pos();
    }
  } else if (is_stream_type(t)) {
    const bool v2 = t != kStreamListpacks, v3 = t == kStreamListpacks3;
    // Phases: 1 listpacks, 2 metadata, 3 group header, 4 group PEL,
    // 5 consumer header, 6 consumer PEL.
    start(0);
    while (c.ok()) {
      if (p.phase == 1) {
        elements([&] {
          c.skip_string();  // master ID
          c.skip_string();  // listpack
        });
        if (!c.ok()) break;
        p.phase = 2;
      } else if (p.phase == 2) {
        for (int i = 0; i < (v2 ? 8 : 3); ++i) c.length();  // length, IDs, entries added
        uint64_t groups = c.length();
        if (!c.ok()) break;
        p.groups = groups, p.phase = 3, p.pos = c.pos();
      } else if (p.phase == 3) {
        if (p.groups == 0) break;
        c.skip_string();     // group name
        c.length();          // last delivered ID: ms
        c.length();          //   and sequence
        if (v2) c.length();  // entries read
        uint64_t pel = c.length();
        if (!c.ok()) break;
        p.remaining = pel, p.phase = 4, p.pos = c.pos();
      } else if (p.phase == 4) {
        elements([&] {
          c.skip(16 + 8);  // entry ID, delivery time
          c.length();      // delivery count
        });
        uint64_t consumers = c.length();
        if (!c.ok()) break;
        p.consumers = consumers, p.phase = 5, p.pos = c.pos();
      } else if (p.phase == 5) {
        if (p.consumers == 0) {
          --p.groups, p.phase = 3;
          continue;
        }
        c.skip_string();      // consumer name
        c.skip(v3 ? 16 : 8);  // seen time (and active time, v3)
        uint64_t pel = c.length();
        if (!c.ok()) break;
        p.remaining = pel, p.phase = 6, p.pos = c.pos();
      } else {
        elements([&] { c.skip(16); });
        if (!c.ok()) break;
        --p.consumers, p.phase = 5;
      }
    }
  } else {
    return Status::error("RDB at byte " + std::to_string(consumed_ + p.value_start),
                         std::string("no walker for ") + type_name(t, version_));
  }

  // Checked while the value is still arriving, so it is never all buffered.
  uint64_t value_bytes_at_least = (c.is_short() ? c.need() : c.pos()) - p.value_start;
  if (value_bytes_at_least > limits_.max_value_bytes)
    return Status::error("RDB at byte " + std::to_string(consumed_),
                         "the value of key '" + key_.substr(0, 64) + "' is larger than " +
                             std::to_string(limits_.max_value_bytes) +
                             " bytes (rdb::Limits::max_value_bytes)");
  if (c.is_short()) {
    need_ = c.need();
    return Step::kNeedMore;
  }
  if (!c.ok())
    return Status::error("RDB at byte " + std::to_string(consumed_ + c.pos()),
                         std::string(t == kModuleAuxWalk ? "module aux data"
                                                         : type_name(t, version_)) +
                             ": " + c.error());

  size_t end = c.pos();
  p.active = false;
  if (t == kModuleAuxWalk) {
    ev.kind = EventKind::kModuleAux;
    ev.module_id = p.module_id;
  } else {
    ev.kind = EventKind::kRecord;
    ev.db = db_;
    ev.key = key_;
    ev.type = t;
    ev.value = std::string_view(item + p.value_start, end - p.value_start);
    ev.expire_at_ms = pending_expire_;
    pending_expire_ = -1;
  }
  finish_item(end);
  return Step::kEvent;
}

}  // namespace rrs::rdb
