// What GET /readyz answers on the metrics port (http_endpoint.h): whether
// the program can do its job right now, and in a few words why or why not.
// Each program sets it as its state changes; any thread may read it.
// GET /healthz needs nothing of the kind: an answer at all says the
// process is up and serving.
#pragma once

#include <string>

namespace rrs::metrics {

struct Readiness {
  bool ready = false;
  std::string why = "starting";
};

void set_readiness(bool ready, std::string why);
Readiness readiness();

}  // namespace rrs::metrics
