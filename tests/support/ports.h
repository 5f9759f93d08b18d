// Loopback ports for test processes. The kernel picks a free one when we bind
// port 0; we release it and hand the number on. Another process can grab it in
// between, so starters retry on "address in use" (see RedisProcess).
#pragma once

#include <cstdint>

namespace rrs::test {

// A port on 127.0.0.1 that nothing listened on a moment ago.
uint16_t free_loopback_port();

// A port on 127.0.0.1 where a connect() is refused: the same as above, named
// for the tests that need "nothing is listening here".
inline uint16_t closed_loopback_port() { return free_loopback_port(); }

}  // namespace rrs::test
