// rdma-server's /readyz: ready when it can give a client a table (one is
// served) or take one for it (its source can be snapshotted). Three things
// decide it, set from different threads: what the epoch keeper serves, the
// PSYNC link to the master, and whether the program is starting or stopping.
#pragma once

#include <mutex>
#include <optional>
#include <string>

namespace rrs {

class ServerReadiness {
 public:
  // What the keeper serves now: "serving epoch E" (`held`: a table a client
  // can read) or "no table yet: ..." (a snapshot is taken on request).
  void serving(std::string what, bool held);
  // Not ready whatever else holds, until serving() is next called (taking
  // the first snapshot) or for good (stopping).
  void not_ready(std::string why);
  // The PSYNC link (or a snapshot's attempt) reached the master or failed
  // to, and why. Without a table held, a master out of reach means a
  // client's request cannot be answered: not ready.
  void master_link(bool up, std::string why = "");

 private:
  void publish();  // with mu_ held

  std::mutex mu_;
  std::string serving_ = "starting";
  bool held_ = false;
  std::optional<std::string> blocked_;
  bool link_up_ = true;
  std::string link_why_;
};

ServerReadiness& server_readiness();

}  // namespace rrs
