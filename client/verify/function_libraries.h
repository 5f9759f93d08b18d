// A target's function libraries against its source's: FUNCTION LIST
// WITHCODE on both sides, compared by name and code (a library's code
// declares its functions, so the same code is the same library). Parsing
// and comparing are pure; reading is one command.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client/verify/key_compare.h"
#include "common/redis/redis_client.h"

namespace rrs::verify {

using Libraries = std::map<std::string, std::string>;  // name -> code

// From a FUNCTION LIST WITHCODE reply (RESP2: one flat name/value array per
// library); kBadData for a reply of another shape.
Result<Libraries> parse_libraries(const redisReply& reply);

// A Difference ("library-missing", "library-extra", "library-code") per
// library name that is not the same on both sides, in name order.
std::vector<std::pair<std::string, Difference>> compare_libraries(const Libraries& source,
                                                                  const Libraries& target);

// The server's libraries; nullopt, with `why`, when it refuses FUNCTION
// LIST (a user without +function): the keys are still worth comparing.
Result<std::optional<Libraries>> read_libraries(RedisClient& client, std::string& why);

}  // namespace rrs::verify
