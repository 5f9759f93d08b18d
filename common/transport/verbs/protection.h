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
  // An epoch still being written is registered in growing prefixes (the
  // room it may never fill is not pinned): `mr` is the newest, and the
  // earlier ones stay while clients may still READ under their rkeys (or
  // windows bound to them). The same pages, pinned again: no more memory.
  std::vector<MemoryRegion> outgrown;
  // The change log continuing the table, if any: registered with each
  // epoch that shares it (one memory, several MRs), so a follower keeps
  // reading it under its epoch's rkey and, once that epoch retires,
  // reconnects to find the same log under the new one.
  MemoryRegion log_mr;
  Clock::time_point retired_at{};  // zero while current

  // The bytes from 0 its clients may read now.
  uint64_t readable() const { return mr ? mr->length : 0; }
};

// Under kSharedMr and kWindowPerClient, what of `t` to register next: 0 when
// what is registered (`registered` bytes from 0) still has room ahead of the
// writer, else a longer prefix: ahead of what is written by a step that
// grows with the table (so the prefixes registered add up to a few times
// the table, however big), never past the room; once complete, the table.
// `min_step`: VerbsServerLimits::grow_step.
uint64_t prefix_to_register(const Table& t, uint64_t registered, uint64_t min_step);

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
  // kWindowPerClient, a streamed epoch: windows onto its outgrown prefixes,
  // bound before table_window (READs under them may still be in flight).
  std::vector<MemoryWindow> outgrown_windows;
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

// kWindowPerClient: a window onto `r`'s grown prefix for a client whose
// grant is bound to an earlier one, its rkey put in `d` (as grant_access).
Status grant_grown(const Registration& r, ibv_qp* qp, Grant& grant, control::Descriptor& d,
                   uint32_t& posted);

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
  EpochRegistry(bool has_secret, bool test_no_memory_windows, uint64_t grow_step)
      : has_secret_(has_secret),
        test_no_memory_windows_(test_no_memory_windows),
        grow_step_(grow_step) {}

  // The protection for clients on `device`: decided and logged on first use.
  Protection protection_for(ibv_context* device);
  // The device's PD, shared by every client except under kPdPerClient.
  Result<ibv_pd*> pd_for(ibv_context* device);
  // `table`'s registration on `device`, made on first use; `table` is
  // current from now on (a retired registration of it is current again).
  Result<const Registration*> registration_for(ibv_context* device, const TablePtr& table);
  // `table`'s registration on `device` if it still has one (a retired epoch's
  // goes when its grace ends), else nullptr.
  const Registration* find(ibv_context* device, const TablePtr& table) const;
  // A streamed epoch: registers a longer prefix of `table` on each device
  // where prefix_to_register() asks for one. Returns how many grew.
  Result<size_t> grow(const TablePtr& table);
  // Whether every registration of `table` covers all of it.
  bool covers(const TablePtr& table) const;

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
  // The first `bytes` of a streamed epoch's table to register now.
  uint64_t prefix_to_register(const Table& t, uint64_t registered) const {
    return verbs::prefix_to_register(t, registered, grow_step_);
  }

  bool has_secret_;
  bool test_no_memory_windows_;
  uint64_t grow_step_;
  // Declared in creation order: registrations go before the PDs they use.
  std::map<ibv_context*, ProtectionDomain> pds_;
  std::map<ibv_context*, Protection> protection_;
  std::vector<Registration> registrations_;
};

}  // namespace rrs::verbs
