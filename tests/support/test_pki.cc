#include "tests/support/test_pki.h"

#include <gtest/gtest.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <memory>

namespace rrs::test {
namespace {

struct Free {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  void operator()(X509* x) const { X509_free(x); }
  void operator()(FILE* f) const { std::fclose(f); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Free>;
using CertPtr = std::unique_ptr<X509, Free>;

void write_pem(const std::string& path, EVP_PKEY* key, X509* cert) {
  std::unique_ptr<FILE, Free> f(std::fopen(path.c_str(), "w"));
  ASSERT_TRUE(f) << path;
  if (key) {
    ASSERT_EQ(PEM_write_PrivateKey(f.get(), key, nullptr, nullptr, 0, nullptr, nullptr), 1);
  }
  if (cert) {
    ASSERT_EQ(PEM_write_X509(f.get(), cert), 1);
  }
}

KeyPtr read_key(const std::string& path) {
  std::unique_ptr<FILE, Free> f(std::fopen(path.c_str(), "r"));
  if (!f) return nullptr;
  return KeyPtr(PEM_read_PrivateKey(f.get(), nullptr, nullptr, nullptr));
}

CertPtr read_cert(const std::string& path) {
  std::unique_ptr<FILE, Free> f(std::fopen(path.c_str(), "r"));
  if (!f) return nullptr;
  return CertPtr(PEM_read_X509(f.get(), nullptr, nullptr, nullptr));
}

void add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  ASSERT_NE(ext, nullptr) << value;
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key`, signed by `issuer_key` (itself when self-signed).
CertPtr make(const CertSpec& spec, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, bool ca) {
  static long serial = 1;
  CertPtr cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), long{spec.valid_from_days} * 86400);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), long{spec.valid_to_days} * 86400);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1,
                             -1, 0);
  X509* signer = issuer ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  add_extension(cert.get(), signer, NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
  if (ca) add_extension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  std::string sans;
  for (const std::string& d : spec.dns_names) sans += (sans.empty() ? "DNS:" : ",DNS:") + d;
  for (const std::string& ip : spec.ips) sans += (sans.empty() ? "IP:" : ",IP:") + ip;
  if (!sans.empty()) add_extension(cert.get(), signer, NID_subject_alt_name, sans);
  EXPECT_GT(X509_sign(cert.get(), issuer_key, EVP_sha256()), 0);
  return cert;
}

}  // namespace

void TestPki::make_ca(const std::string& name) {
  KeyPtr ca_key(EVP_EC_gen("P-256"));
  ASSERT_TRUE(ca_key);
  CertPtr cert = make(CertSpec{name, {}, {}, -1, 365}, ca_key.get(), nullptr, ca_key.get(), true);
  write_pem(key(name), ca_key.get(), nullptr);
  write_pem(crt(name), nullptr, cert.get());
}

void TestPki::make_cert(const std::string& name, const std::string& ca, const CertSpec& spec) {
  KeyPtr ca_key = read_key(key(ca));
  CertPtr ca_cert = read_cert(crt(ca));
  ASSERT_TRUE(ca_key && ca_cert) << "make_ca(\"" << ca << "\") first";
  KeyPtr leaf(EVP_EC_gen("P-256"));
  ASSERT_TRUE(leaf);
  CertPtr cert = make(spec, leaf.get(), ca_cert.get(), ca_key.get(), false);
  write_pem(key(name), leaf.get(), nullptr);
  write_pem(crt(name), nullptr, cert.get());
}

}  // namespace rrs::test
