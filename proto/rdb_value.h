// Facts about one RDB-encoded value (rdb::Event::value) that the sidecar needs
// without decoding it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rrs::rdb {

// Whether `value` (the raw RDB encoding of a value of `type`, without the type
// byte, as rdb::Event::value carries it; `rdb_version` from the RDB header
// decides what a type number means) is a collection with no elements, which
// Redis and Valkey drop when they load it ("empty keys skipped") and refuse
// in RESTORE. Untrusted bytes: never reads out of bounds; a value too short
// or malformed to tell is reported as not empty (the parser or the target
// rejects it later).
//
// Types 0-13 mean the same in every RDB version, 1 (Redis 1.0) to 80: an
// RDB 2 ziplist or zipmap is checked as a newer one would be (an older
// ziplist only lacks some integer entry kinds, which changes nothing here).
//
// Empty, per type (what rdbLoadObject jumps to `emptykey` for):
//   list, set, zset, zset2, hash (1-5)    an element count of 0
//   quicklist, quicklist2 (14, 18)        0 nodes, or only nodes that are
//                                         empty ziplists (14) / listpacks (18)
//   list/zset/hash ziplist (10, 12, 13)   an empty ziplist
//   hash/zset/set listpack (16, 17, 20)   an empty listpack
//   RDB <= 12 (Redis numbering):
//     22 hash with field TTLs, 7.4 RC     an element count of 0
//     23 hash listpack with TTLs, 7.4 RC  an empty listpack
//     24 hash with field TTLs             8-byte minimum TTL, a count of 0
//     25 hash listpack with TTLs          8-byte minimum TTL, an empty listpack
//   RDB >= 80 (Valkey numbering):
//     22 hash with field expiry (HASH_2)  an element count of 0
// An empty ziplist is exactly the form the loaders accept and then find no
// element in (they walk every ziplist): 11 bytes, zlbytes 11, zltail <= 10,
// zllen 0 or 0xffff, the end marker. An empty listpack is one that passes the
// checks the loaders always make (total bytes is its size, it ends with the
// end marker) and whose lpLength() is 0: a count of 0, or 0xffff and the end
// marker right after the header. (Only Valkey 9.1, not 8.0, and Redis with
// sanitize-dump-payload yes also walk the entries, and reject a count of 0
// over entries instead of dropping the key.) Either may be stored plain or
// LZF-compressed; LZF is decoded in a fixed 8 KiB window, never into a buffer
// of the declared size, and for a listpack only past its header when that
// says empty. The value must hold nothing after what is described here.
//
// Never empty: strings (0; "" is a value), streams (15, 19, 21; an empty
// stream is a valid key), modules (6, 7), zipmaps (9) and intsets (11) (the
// loaders reject empty ones as corrupt instead of dropping them: see
// zipmapValidateIntegrity and intsetValidateIntegrity), types 23-25 under
// RDB >= 80 and 22-25 under RDB 13-79 (not types there), unknown types.
bool is_empty_collection(uint8_t type, std::string_view value, uint16_t rdb_version);

// What a string value (type 0: `value` is the RDB encoding without the type
// byte) holds, as SET would take it: viewed in place when stored plain,
// decompressed into `scratch` when LZF, an integer encoding's digits in
// `scratch`. nullopt when the bytes are not exactly one well-formed string
// or it would decompress past `max_bytes`.
std::optional<std::string_view> string_value(std::string_view value, std::string& scratch,
                                             uint64_t max_bytes);

}  // namespace rrs::rdb
