// Certificates for the TLS tests, made at test time (never committed): CAs
// and certificates they sign, with chosen names and validity, written as PEM
// files into a directory. EC P-256 keys: quick to make, also under ASan.
#pragma once

#include <string>
#include <vector>

namespace rrs::test {

struct CertSpec {
  std::string common_name;
  std::vector<std::string> dns_names;  // subjectAltName DNS entries
  std::vector<std::string> ips;        // subjectAltName IP entries
  int valid_from_days = -1;            // relative to now
  int valid_to_days = 30;
};

class TestPki {
 public:
  explicit TestPki(std::string dir) : dir_(std::move(dir)) {}

  // A self-signed CA: <name>.crt and <name>.key. Fails the test on error.
  void make_ca(const std::string& name);
  // A certificate `ca` signs (made first with make_ca).
  void make_cert(const std::string& name, const std::string& ca, const CertSpec& spec);
  // A server certificate for localhost and 127.0.0.1, valid now.
  void make_localhost_cert(const std::string& name, const std::string& ca) {
    make_cert(name, ca, CertSpec{"localhost", {"localhost"}, {"127.0.0.1", "::1"}, -1, 30});
  }
  // A client certificate (for mutual TLS), valid now.
  void make_client_cert(const std::string& name, const std::string& ca) {
    make_cert(name, ca, CertSpec{"rdma-client", {}, {}, -1, 30});
  }

  std::string crt(const std::string& name) const { return dir_ + "/" + name + ".crt"; }
  std::string key(const std::string& name) const { return dir_ + "/" + name + ".key"; }

 private:
  std::string dir_;
};

}  // namespace rrs::test
