// Driving the streaming RDB parser in tests: the bytes fed in fragments of
// the sizes a test chooses (1 byte, random, whole), every event handed on.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "proto/rdb_parser.h"

namespace rrs::test {

// Feeds `rdb` to `p` in fragments of the sizes `next_size` returns (at least
// one byte), handing each event to `on_event` as it comes. Returns the first
// error's message, empty when there was none.
template <typename SizeFn, typename EventFn>
std::string feed_in_fragments(rdb::RdbParser& p, std::string_view rdb, SizeFn next_size,
                              EventFn on_event) {
  size_t at = 0;
  while (true) {
    while (true) {
      auto ev = p.next();
      if (!ev.ok()) return ev.status().message();
      if (!*ev) break;
      on_event(**ev);
    }
    if (at == rdb.size()) return "";
    const size_t n = std::min(rdb.size() - at, std::max<size_t>(1, next_size()));
    p.feed(rdb.substr(at, n));
    at += n;
  }
}

}  // namespace rrs::test
