#include "client/cluster/slot_msets.h"

#include "client/restore/restore_command.h"
#include "proto/resp_parser.h"
#include "proto/resp_writer.h"

namespace rrs {

namespace {

// The fewest arena bytes a pair takes: "$0\r\n\r\n" twice; the most a
// gathered one takes.
constexpr size_t kMinPairBytes = 12;
constexpr size_t kMaxPairArenaBytes = SlotMsets::kMaxPairBytes + 2 * sizeof("$512\r\n\r\n");

}  // namespace

bool SlotMsets::add(uint16_t slot, uint64_t index, std::string_view key, std::string_view value) {
  if (arena_.capacity() < budget_) {
    arena_.reserve(budget_ + kMaxPairArenaBytes);
    entries_.reserve(budget_ / (sizeof(Entry) + kMinPairBytes) + 1);
  }
  Group& g = groups_[slot];
  Entry e{};
  e.index = index;
  e.at = static_cast<uint32_t>(arena_.size());
  resp::append_bulk(arena_, key);
  e.key_at = static_cast<uint32_t>(arena_.size() - key.size() - 2);
  e.key_len = static_cast<uint32_t>(key.size());
  resp::append_bulk(arena_, value);
  e.size = static_cast<uint32_t>(arena_.size() - e.at);
  e.next = kNone;
  const auto at = static_cast<uint32_t>(entries_.size());
  entries_.push_back(e);
  if (g.keys == 0) {
    g.first = at;
    live_++;
  } else {
    entries_[g.last].next = at;
  }
  g.last = at;
  g.keys++;
  g.bytes += key.size() + value.size();
  return g.keys >= kMaxKeys;
}

std::vector<uint16_t> SlotMsets::filled() const {
  std::vector<uint16_t> slots;
  for (uint16_t slot = 0; slot < kHashSlots; ++slot)
    if (groups_[slot].keys > 0) slots.push_back(slot);
  return slots;
}

RoutedCommand SlotMsets::flush(uint16_t slot, std::string& out) {
  Group& g = groups_[slot];
  RoutedCommand c;
  c.slot = slot;
  c.bytes = g.bytes;
  c.indices.reserve(g.keys);
  resp::append_array_header(out, 1 + 2 * size_t{g.keys});
  resp::append_bulk(out, "MSET");
  for (uint32_t i = g.first; i != kNone; i = entries_[i].next) {
    const Entry& e = entries_[i];
    if (c.indices.empty()) c.key.assign(arena_, e.key_at, e.key_len);
    c.indices.push_back(e.index);
    out.append(arena_, e.at, e.size);
  }
  c.index = c.indices.front();
  g = Group{};
  if (--live_ == 0) {  // nothing refers to the arena: reuse it from the start
    arena_.clear();
    entries_.clear();
  }
  return c;
}

Result<std::vector<RoutedCommand>> split_mset(const RoutedCommand& mset) {
  auto bad = [&](const std::string& why) {
    return Status::error("split the MSET of slot " + std::to_string(mset.slot), why)
        .as(ErrorKind::kFailed);
  };
  resp::CommandParser parser;
  parser.feed(mset.wire);
  auto parsed = parser.next();
  if (!parsed.ok()) return bad(parsed.status().message());
  if (!*parsed || parser.buffered() != 0) return bad("not exactly one command");
  const std::span<const std::string_view> args = (*parsed)->args;
  if (args.empty() || args[0] != "MSET" || args.size() != 1 + 2 * mset.indices.size())
    return bad("not an MSET of " + std::to_string(mset.indices.size()) + " keys");
  std::vector<RoutedCommand> sets;
  sets.reserve(mset.indices.size());
  for (size_t i = 0; i < mset.indices.size(); ++i) {
    const std::string_view key = args[1 + 2 * i], value = args[2 + 2 * i];
    RoutedCommand c;
    c.slot = mset.slot;
    c.index = mset.indices[i];
    c.bytes = key.size() + value.size();
    c.hops = mset.hops;
    c.key = key;
    append_set(c.wire, key, -1, value);
    sets.push_back(std::move(c));
  }
  return sets;
}

}  // namespace rrs
