// A private directory for one test's files, removed with everything in it when
// the owner goes away, so parallel tests never share state on disk.
#pragma once

#include <string>

namespace rrs::test {

class TempDir {
 public:
  // Creates "$TMPDIR/rrs-<tag>-XXXXXX" (or under /tmp). Aborts the test
  // binary if that fails: nothing after it could work.
  explicit TempDir(const std::string& tag);
  ~TempDir();
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Writes `contents` to file(name) with mode 0600; returns its path.
  std::string write_file(const std::string& name, const std::string& contents) const;

 private:
  void remove() noexcept;
  std::string path_;
};

}  // namespace rrs::test
