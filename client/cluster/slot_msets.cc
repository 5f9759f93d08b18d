#include "client/cluster/slot_msets.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "client/restore/restore_command.h"
#include "proto/resp_parser.h"
#include "proto/resp_writer.h"

namespace rrs {

SlotMsets::SlotMsets(size_t budget)
    : chunks_(std::max<size_t>(1, budget / kChunkBytes)), groups_(kHashSlots) {
  free_.reserve(chunks_);
  for (size_t c = chunks_; c > 0; --c) free_.push_back(static_cast<uint32_t>(c - 1));
}

bool SlotMsets::add(uint16_t slot, uint64_t index, std::string_view key, std::string_view value) {
  if (!memory_) {  // not touched here: pages come as chunks are used
    memory_ = std::make_unique_for_overwrite<char[]>(chunks_ * kChunkBytes);
    next_.assign(chunks_, kNone);
    used_.assign(chunks_, 0);
  }
  const size_t key_bulk = resp::bulk_size(key);
  const size_t size = key_bulk + resp::bulk_size(value);
  static_assert(sizeof(PairHeader) + size_t{2} * (1 + 3 + 4) + kMaxPairBytes <= kChunkBytes,
                "a gathered pair fits in one chunk");
  Group& g = groups_[slot];
  if (g.last == kNone || used_[g.last] + sizeof(PairHeader) + size > kChunkBytes) {
    const uint32_t c = free_.back();  // not over_budget(): there is one
    free_.pop_back();
    next_[c] = kNone;
    used_[c] = 0;
    (g.last == kNone ? g.first : next_[g.last]) = c;
    g.last = c;
  }
  char* at = chunk(g.last) + used_[g.last];
  const PairHeader h{index, static_cast<uint32_t>(size),
                     static_cast<uint16_t>(key_bulk - key.size() - 2),
                     static_cast<uint16_t>(key.size())};
  std::memcpy(at, &h, sizeof h);
  resp::write_bulk(resp::write_bulk(at + sizeof h, key), value);
  used_[g.last] += static_cast<uint32_t>(sizeof h + size);
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
  for (uint32_t k = g.first; k != kNone; k = next_[k]) {
    const char* p = chunk(k);
    const char* end = p + used_[k];
    while (p < end) {
      PairHeader h{};
      std::memcpy(&h, p, sizeof h);
      p += sizeof h;
      if (c.indices.empty()) c.key.assign(p + h.key_at, h.key_len);
      c.indices.push_back(h.index);
      out.append(p, h.size);
      p += h.size;
    }
    free_.push_back(k);
  }
  c.index = c.indices.front();
  g = Group{};
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
