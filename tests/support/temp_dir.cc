#include "tests/support/temp_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace rrs::test {

TempDir::TempDir(const std::string& tag) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/rrs-" + tag + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    std::fprintf(stderr, "mkdtemp %s: %s\n", tmpl.c_str(), std::strerror(errno));
    std::abort();
  }
  path_ = buf.data();
}

TempDir::~TempDir() { remove(); }

TempDir::TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

std::string TempDir::write_file(const std::string& name, const std::string& contents) const {
  std::string p = file(name);
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::fprintf(stderr, "open %s: %s\n", p.c_str(), std::strerror(errno));
    std::abort();
  }
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::fprintf(stderr, "write %s: %s\n", p.c_str(), std::strerror(errno));
      std::abort();
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return p;
}

void TempDir::remove() noexcept {
  if (path_.empty()) return;
  std::error_code ec;  // best effort: a leftover dir must not fail a test
  std::filesystem::remove_all(path_, ec);
  path_.clear();
}

}  // namespace rrs::test
