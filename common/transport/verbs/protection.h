// The server's policy for who may read what (docs/transports.md, "Server"):
// each device's shared PD, how its clients are kept to rkeys of their own
// (Protection, decided once per device), each epoch's registration, and the
// per-client access granted after AUTH. Setup, not data path: nothing here
// runs per READ. Loop thread only, but for register_in_own_pd(), which the
// registration worker runs (verbs/registration_worker.h).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/base/clock.h"
#include "common/base/status.h"
#include "common/table/table.h"
#include "common/transport/verbs/owners.h"
#include "proto/control.h"

namespace rrs::verbs {

// How a client is kept to rkeys of its own.
enum class Protection {
  // No shared secret: one MR per epoch, IBV_ACCESS_REMOTE_READ; every
  // client of the epoch gets its rkey, which dies when the epoch retires.
  kSharedMr,
  // A secret and type-2 memory windows: the epoch's MR grants nothing
  // remote (IBV_ACCESS_MW_BIND only); after AUTH two windows (table, log)
  // are bound to the client's QP, so their rkeys work only from that QP and
  // die with the client or the epoch.
  kWindowPerClient,
  // A secret and no type-2 windows: each client's QP lives in a protection
  // domain of its own, and after AUTH the epoch's table and log are
  // registered again in it (remote READ): the same guarantees as windows,
  // but every client pins the table once more, so registration time and
  // locked memory grow with table size times clients. A fallback; its
  // registrations run on a worker thread, never on the event loop.
  kPdPerClient,
};

// One registration of one epoch's table on one device.
struct Registration {
  TablePtr table;
  ibv_context* device = nullptr;
  Protection protection = Protection::kSharedMr;
  // In the device's shared PD: remote READ (kSharedMr) or MW_BIND only
  // (kWindowPerClient). None under kPdPerClient: each client registers its own.
  MemoryRegion mr;
  // The change log continuing the table, if any: registered with each
  // epoch that shares it (one memory, several MRs), so a follower keeps
  // reading it under its epoch's rkey and, once that epoch retires,
  // reconnects to find the same log under the new one.
  MemoryRegion log_mr;
  Clock::time_point retired_at{};  // zero while current
};

// What one authenticated client reads its epoch through, unless the epoch's
// rkeys are shared (kSharedMr). Dropped when the client goes or the epoch
// retires (before the registration and the client's QP and PD).
struct Grant {
  TablePtr table;  // the memory the MRs below pin; released after them
  // kPdPerClient: the client's own PD, released after the MRs in it (and
  // after the client's QP, which holds it too).
  SharedProtectionDomain pd;
  // kPdPerClient: the table and log registered in the client's own PD.
  MemoryRegion table_mr, log_mr;
  // kWindowPerClient: type-2 windows onto the registration's MRs, bound to
  // the client's QP (dropped first, as windows must be).
  MemoryWindow table_window, log_window;
};

// Bytes a client's grant pins (its own MRs under kPdPerClient; 0 for windows).
uint64_t pinned_bytes(const Grant& g);

// The descriptor of `r` as its clients get it: the rkeys are the epoch's own
// under kSharedMr; otherwise grant_access() fills in the client's.
control::Descriptor describe(const Registration& r);

// Gives an authenticated client its own rkeys onto `r` under kWindowPerClient,
// and puts them in `d`: binds windows to `qp` (BIND work requests, signaled,
// ahead of the SEND that reveals their rkeys; `posted` counts them). Nothing
// under kSharedMr. Not for kPdPerClient: see register_in_own_pd().
Status grant_access(const Registration& r, ibv_qp* qp, std::optional<Grant>& grant,
                    control::Descriptor& d, uint32_t& posted);

// kPdPerClient: registers `table` and its log again in a client's own `pd`
// (remote READ). Pins every page: slow for a big table, so the registration
// worker runs it, off the loop. Touches nothing but its arguments.
Result<Grant> register_in_own_pd(const TablePtr& table, SharedProtectionDomain pd);
// Puts a grant's own rkeys (kPdPerClient) into `d`.
void put_rkeys(const Grant& grant, control::Descriptor& d);

// Bytes one more client's copy of `table` and its log pins under kPdPerClient.
uint64_t copy_bytes(const Table& table);

// Per device: the shared PD, the protection, the epochs' registrations.
class EpochRegistry {
 public:
  EpochRegistry(bool has_secret, bool test_no_memory_windows)
      : has_secret_(has_secret), test_no_memory_windows_(test_no_memory_windows) {}

  // The protection for clients on `device`: decided and logged on first use.
  Protection protection_for(ibv_context* device);
  // The device's PD, shared by every client except under kPdPerClient.
  Result<ibv_pd*> pd_for(ibv_context* device);
  // `table`'s registration on `device`, made on first use.
  Result<const Registration*> registration_for(ibv_context* device, const TablePtr& table);
  // `table`'s registration on `device` if it still has one (a retired epoch's
  // goes when its grace ends), else nullptr.
  const Registration* find(ibv_context* device, const TablePtr& table) const;

  // A new epoch is published: every current registration starts its grace.
  void retire_current(Clock::time_point now);
  // Drops each retired registration that no client uses (`in_use`) or whose
  // `grace` is over, calling `release` first (its clients' grants go before
  // the MRs they are bound to). Returns when the next grace ends, if any.
  std::optional<Clock::time_point> prune(Clock::time_point now, std::chrono::seconds grace,
                                         const std::function<bool(const Registration&)>& in_use,
                                         const std::function<void(const Registration&)>& release);
  // The device went away: forget everything (registrations before PDs).
  void clear();

  const std::map<ibv_context*, Protection>& protections() const { return protection_; }
  size_t registrations() const { return registrations_.size(); }
  // Bytes the registrations pin (their MRs in the shared PDs).
  uint64_t pinned_bytes() const;

 private:
  bool has_secret_;
  bool test_no_memory_windows_;
  // Declared in creation order: registrations go before the PDs they use.
  std::map<ibv_context*, ProtectionDomain> pds_;
  std::map<ibv_context*, Protection> protection_;
  std::vector<Registration> registrations_;
};

}  // namespace rrs::verbs
