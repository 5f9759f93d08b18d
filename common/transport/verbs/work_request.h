// What a completion is for: one work-request id scheme for both sides.
//
//    63   62   61 ........................................ 0
//   +----+----+--------------------------------------------+
//   | R  | C  | R: message slot   C: kind   else: READ id  |
//   +----+----+--------------------------------------------+
//
// R (receive): a RECV into message slot `low bits`. C (control): one of our
// own SENDs or memory-window BINDs (kAuth, kKeepalive, kMessage, kBind).
// Neither: an RDMA READ, under the caller's TableRead::id (below 2^62).
#pragma once

#include <cstdint>

namespace rrs::verbs::wr_id {

inline constexpr uint64_t kRecvBit = uint64_t{1} << 63;
inline constexpr uint64_t kControlBit = uint64_t{1} << 62;
// A READ's id must leave both marks clear.
inline constexpr uint64_t kMaxReadId = kControlBit - 1;

inline constexpr uint64_t kAuth = kControlBit | 1;       // client: the AUTH SEND
inline constexpr uint64_t kKeepalive = kControlBit | 2;  // client: a KEEPALIVE SEND
inline constexpr uint64_t kMessage = kControlBit | 3;    // server: an answer SEND
inline constexpr uint64_t kBind = kControlBit | 4;       // server: a window BIND

constexpr uint64_t recv(uint32_t slot) { return kRecvBit | slot; }
constexpr bool is_recv(uint64_t id) { return (id & kRecvBit) != 0; }
constexpr bool is_control(uint64_t id) { return !is_recv(id) && (id & kControlBit) != 0; }
constexpr uint32_t slot_of(uint64_t id) { return static_cast<uint32_t>(id & ~kRecvBit); }

}  // namespace rrs::verbs::wr_id
