#include "common/transport/verbs/protection.h"

#include <algorithm>
#include <vector>

#include "common/base/log.h"
#include "common/transport/control_session.h"
#include "common/transport/verbs/work_request.h"

namespace rrs::verbs {
namespace {

bool has_type2_windows(ibv_context* device) {
  ibv_device_attr attr{};
  return ibv_query_device(device, &attr) == 0 &&
         (attr.device_cap_flags &
          (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B)) != 0;
}

// An epoch's table and its change log (if any), registered in one PD.
struct EpochMrs {
  MemoryRegion table, log;
};

// Remote read only: no peer can ever write the table. With windows, not
// even that: only the windows bound for each authenticated client's QP
// grant it.
int table_access(Protection p) {
  return p == Protection::kWindowPerClient ? IBV_ACCESS_MW_BIND : IBV_ACCESS_REMOTE_READ;
}

// The first `bytes` of `t`'s table, for `access`.
Result<MemoryRegion> register_table(ibv_pd* pd, const Table& t, uint64_t bytes, int access,
                                    const std::string& where) {
  MemoryRegion mr(ibv_reg_mr(pd, const_cast<std::byte*>(t.bytes.data()), bytes, access));
  if (!mr)
    return Status::from_errno("register " + std::to_string(bytes >> 20) + " MiB of epoch " +
                              std::to_string(t.epoch()) + "'s table " + where);
  return mr;
}

// `table_bytes`: the table's length, or a streamed epoch's first prefix
// (its room is address space, mostly unwritten).
Result<EpochMrs> register_epoch(ibv_pd* pd, const Table& t, uint64_t table_bytes, int access,
                                const std::string& where) {
  EpochMrs mrs;
  if (!t.empty()) {  // an epoch without a table has only its log to serve
    const uint64_t bytes = table_bytes;
    RRS_ASSIGN_OR_RETURN(mrs.table, register_table(pd, t, bytes, access, where));
  }
  if (const ChangeLogPtr& log = t.log) {
    // The sidecar writes the log with the CPU; peers may only read it.
    mrs.log.reset(
        ibv_reg_mr(pd, const_cast<std::byte*>(log->memory().data()), log->memory().size(), access));
    if (!mrs.log)
      return Status::from_errno("register the " + std::to_string(log->memory().size() >> 20) +
                                " MiB change log " + where);
  }
  return mrs;
}

// kWindowPerClient: a window onto `mr`, bound to the client's QP with a
// BIND_MW work request ahead of the SEND that reveals its rkey.
Status bind_window(MemoryWindow& window, ibv_mr* mr, ibv_qp* qp, uint32_t& rkey, uint32_t& posted) {
  window.reset(ibv_alloc_mw(qp->pd, IBV_MW_TYPE_2));
  if (!window) return Status::from_errno("allocate a memory window");
  ibv_send_wr wr{};
  wr.wr_id = wr_id::kBind;
  wr.opcode = IBV_WR_BIND_MW;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.bind_mw.mw = window.get();
  wr.bind_mw.rkey = ibv_inc_rkey(window->rkey);
  wr.bind_mw.bind_info.mr = mr;
  wr.bind_mw.bind_info.addr = reinterpret_cast<uint64_t>(mr->addr);
  wr.bind_mw.bind_info.length = mr->length;
  wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(qp, &wr, &bad); rc != 0)
    return Status::from_errno("bind a memory window", rc);
  ++posted;
  rkey = wr.bind_mw.rkey;
  return {};
}

// Windows onto r's table and change log.
Status bind_windows(const Registration& r, ibv_qp* qp, Grant& grant, control::Descriptor& d,
                    uint32_t& posted) {
  if (r.mr) RRS_RETURN_IF_ERROR(bind_window(grant.table_window, r.mr.get(), qp, d.rkey, posted));
  if (r.log_mr)  // else no change log
    RRS_RETURN_IF_ERROR(bind_window(grant.log_window, r.log_mr.get(), qp, d.log_rkey, posted));
  return {};
}

}  // namespace

uint64_t pinned_bytes(const Grant& g) {
  return (g.table_mr ? g.table_mr->length : 0) + (g.log_mr ? g.log_mr->length : 0);
}

uint64_t EpochRegistry::pinned_bytes() const {
  uint64_t n = 0;
  // RLIMIT_MEMLOCK counts each MR, though outgrown prefixes pin the same pages.
  for (const Registration& r : registrations_) {
    n += (r.mr ? r.mr->length : 0) + (r.log_mr ? r.log_mr->length : 0);
    for (const MemoryRegion& mr : r.outgrown) n += mr->length;
  }
  return n;
}

uint64_t prefix_to_register(const Table& t, uint64_t registered, uint64_t min_step) {
  if (t.complete()) return registered < t.length() ? t.length() : 0;
  // Registering pins (and zero-fills) what it covers: a step ahead of the
  // writer, half of what is registered and at least `min_step`, so a client
  // rarely waits.
  const uint64_t kAlign = min_step >= (uint64_t{2} << 20) ? uint64_t{2} << 20 : 4096;
  const uint64_t step = std::max(min_step, registered / 2);
  const uint64_t written = t.written.load(std::memory_order_acquire);
  if (registered != 0 && written + step / 2 <= registered) return 0;
  const uint64_t room = t.bytes.size();
  // Each prefix half as long again as the last: they add up to three times
  // the last, which is less than twice what was written when it came.
  const uint64_t end = std::max(registered, written) + step;
  const uint64_t want = std::min(room, (end + kAlign - 1) / kAlign * kAlign);
  return want > registered ? want : 0;
}

control::Descriptor describe(const Registration& r) {
  const bool shared = r.protection == Protection::kSharedMr;
  control::Descriptor d = *ServerSession::describe(r.table, control::TransportKind::kVerbs);
  d.remote_addr = reinterpret_cast<uint64_t>(r.table->bytes.data());
  d.rkey = shared && r.mr ? r.mr->rkey : 0;
  // Under kPdPerClient (complete epochs only) the client's own MR covers all.
  // A prefix registered while the epoch was written may run past the
  // complete table's end.
  if (r.mr) d.readable_length = std::min(r.readable(), d.table_length);
  if (const ChangeLogPtr& log = r.table->log) {
    d.log_addr = reinterpret_cast<uint64_t>(log->memory().data());
    d.log_rkey = shared ? r.log_mr->rkey : 0;
  }
  return d;
}

Status grant_access(const Registration& r, ibv_qp* qp, std::optional<Grant>& grant,
                    control::Descriptor& d, uint32_t& posted) {
  if (r.protection != Protection::kWindowPerClient) return {};
  grant.emplace();
  grant->table = r.table;
  return bind_windows(r, qp, *grant, d, posted);
}

Status grant_grown(const Registration& r, ibv_qp* qp, Grant& grant, control::Descriptor& d,
                   uint32_t& posted) {
  if (r.protection != Protection::kWindowPerClient) return {};
  if (grant.table_window) grant.outgrown_windows.push_back(std::move(grant.table_window));
  return bind_window(grant.table_window, r.mr.get(), qp, d.rkey, posted);
}

// The fallback's cost: every page of the table (and log) is pinned again,
// once per client on top of the others' copies, and the time that takes
// grows with the table. Runs on the registration worker's thread.
Result<Grant> register_in_own_pd(const TablePtr& table, SharedProtectionDomain pd) {
  auto mrs = register_epoch(pd.get(), *table, table->length(), IBV_ACCESS_REMOTE_READ,
                            "in a client's own protection domain (each client pins it again: "
                            "RLIMIT_MEMLOCK must cover it once per client)");
  if (!mrs.ok()) return mrs.status();
  Grant g;
  g.table = table;
  g.pd = std::move(pd);
  g.table_mr = std::move(mrs->table);
  g.log_mr = std::move(mrs->log);
  return g;
}

void put_rkeys(const Grant& grant, control::Descriptor& d) {
  if (grant.table_mr) d.rkey = grant.table_mr->rkey;
  if (grant.log_mr) d.log_rkey = grant.log_mr->rkey;
}

uint64_t copy_bytes(const Table& table) {
  return table.length() + (table.log ? table.log->memory().size() : 0);
}

Protection EpochRegistry::protection_for(ibv_context* device) {
  if (auto it = protection_.find(device); it != protection_.end()) return it->second;
  const std::string on = std::string("verbs on ") + ibv_get_device_name(device->device) + ": ";
  Protection p = Protection::kSharedMr;
  if (!has_secret_) {
    log::info(on + "no shared secret, so the clients of an epoch share its rkey");
  } else if (!test_no_memory_windows_ && has_type2_windows(device)) {
    p = Protection::kWindowPerClient;
    log::info(on + "each client reads through memory windows bound to its own queue pair");
  } else {
    p = Protection::kPdPerClient;
    log::warn(on +
              (test_no_memory_windows_ ? "memory windows turned off by a test hook"
                                       : "no type-2 memory windows") +
              ": each client gets a protection domain of its own, and the table and log are "
              "registered again in it for every client (time and locked memory grow with "
              "the table, per client)");
  }
  protection_.emplace(device, p);
  return p;
}

Result<ibv_pd*> EpochRegistry::pd_for(ibv_context* device) {
  auto& pd = pds_[device];
  if (!pd) {
    pd.reset(ibv_alloc_pd(device));
    if (!pd) return Status::from_errno("ibv_alloc_pd");
  }
  return pd.get();
}

const Registration* EpochRegistry::find(ibv_context* device, const TablePtr& table) const {
  for (const Registration& r : registrations_)
    if (r.table == table && r.device == device) return &r;
  return nullptr;
}

Result<size_t> EpochRegistry::grow(const TablePtr& table) {
  size_t grown = 0;
  for (Registration& r : registrations_) {
    if (r.table != table || !r.mr) continue;
    const uint64_t bytes = prefix_to_register(*table, r.readable());
    if (bytes == 0) continue;
    RRS_ASSIGN_OR_RETURN(MemoryRegion mr,
                         register_table(r.mr->pd, *table, bytes, table_access(r.protection),
                                        std::string("with ") +
                                            ibv_get_device_name(r.device->device)));
    r.outgrown.push_back(std::move(r.mr));
    r.mr = std::move(mr);
    ++grown;
  }
  return grown;
}

bool EpochRegistry::covers(const TablePtr& table) const {
  for (const Registration& r : registrations_)
    if (r.table == table && r.mr && prefix_to_register(*table, r.readable()) != 0) return false;
  return true;
}

Result<const Registration*> EpochRegistry::registration_for(ibv_context* device,
                                                            const TablePtr& table) {
  for (Registration& r : registrations_)
    if (r.table == table && r.device == device) {
      // Current again (a table served once more after the epoch that
      // replaced it broke off): no longer counting down its grace.
      r.retired_at = {};
      return &r;
    }
  Registration r;
  r.table = table;
  r.device = device;
  r.protection = protection_for(device);
  // With a PD per client, nothing to register here: each client's AUTH
  // registers the epoch in its own PD.
  if (r.protection != Protection::kPdPerClient) {
    auto pd = pd_for(device);
    if (!pd.ok()) return pd.status();
    const uint64_t bytes = table->complete() ? table->length() : prefix_to_register(*table, 0);
    auto mrs = register_epoch(*pd, *table, bytes, table_access(r.protection),
                              std::string("with ") + ibv_get_device_name(device->device));
    if (!mrs.ok()) return mrs.status();
    r.mr = std::move(mrs->table);
    r.log_mr = std::move(mrs->log);
  }
  registrations_.push_back(std::move(r));
  return &registrations_.back();
}

void EpochRegistry::retire_current(Clock::time_point now) {
  for (Registration& r : registrations_)
    if (r.retired_at == Clock::time_point{}) r.retired_at = now;
}

std::optional<Clock::time_point> EpochRegistry::prune(
    Clock::time_point now, std::chrono::seconds grace,
    const std::function<bool(const Registration&)>& in_use,
    const std::function<void(const Registration&)>& release) {
  std::erase_if(registrations_, [&](const Registration& r) {
    if (r.retired_at == Clock::time_point{}) return false;
    if (in_use(r) && now - r.retired_at < grace) return false;
    release(r);
    return true;
  });
  std::optional<Clock::time_point> next;
  for (const Registration& r : registrations_)
    if (r.retired_at != Clock::time_point{})
      next = std::min(next.value_or(Clock::time_point::max()), r.retired_at + grace);
  return next;
}

void EpochRegistry::clear() {
  registrations_.clear();
  pds_.clear();
  protection_.clear();
}

}  // namespace rrs::verbs
