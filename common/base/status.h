// Error convention for every layer: a [[nodiscard]] Status that names the step
// that failed and, where the failure came from the OS, its errno.
// Result<T> is a value or a Status. No exceptions cross layer boundaries.
#pragma once

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace rrs {

// What kind of failure: what the caller (and in the end the operator) should
// do about it. Only the programs' main() turn a kind into an exit code.
enum class ErrorKind {
  kFailed,       // anything else: the work was done in part (see what was said)
  kUnavailable,  // a peer could not be reached, went away, or timed out: retry later
  kBadData,      // bytes from a peer failed validation: corruption, or a peer that lies
  kDenied,       // a peer refused our credentials (or we refused its): retrying will not help
  kRefused,      // the target cannot take the data as it is (not empty, too old, ...):
                 // nothing was changed; the user must act (a flag, a setting) first
  kUsage,        // the flags, files or environment we were given cannot work as asked
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok

  // A failure of `step` (what we were doing, e.g. "connect to 10.0.0.1:12345")
  // with a human explanation. `sys_errno` is 0 when the OS was not involved.
  static Status error(std::string step, std::string reason, int sys_errno = 0) {
    Status s;
    s.failed_ = true;
    s.step_ = std::move(step);
    s.reason_ = std::move(reason);
    s.errno_ = sys_errno;
    return s;
  }
  // Failure reported by the OS through errno: the reason is strerror(errno).
  static Status from_errno(std::string step, int sys_errno = errno) {
    return error(std::move(step), std::strerror(sys_errno), sys_errno);
  }

  // Same failure, classified.
  Status as(ErrorKind kind) const {
    Status s = *this;
    s.kind_ = kind;
    return s;
  }

  bool ok() const { return !failed_; }
  ErrorKind kind() const { return kind_; }
  explicit operator bool() const { return ok(); }
  const std::string& step() const { return step_; }
  const std::string& reason() const { return reason_; }
  int sys_errno() const { return errno_; }

  // "step: reason" — what an operator reads.
  std::string message() const { return ok() ? "ok" : step_ + ": " + reason_; }

  // Adds outer context: "outer: step: reason".
  Status wrap(const std::string& outer) const {
    if (ok()) return *this;
    Status s = *this;
    s.step_ = outer + ": " + step_;
    return s;
  }

 private:
  bool failed_ = false;
  ErrorKind kind_ = ErrorKind::kFailed;
  std::string step_;
  std::string reason_;
  int errno_ = 0;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: must be a failure

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace rrs

#define RRS_STATUS_CONCAT_INNER(a, b) a##b
#define RRS_STATUS_CONCAT(a, b) RRS_STATUS_CONCAT_INNER(a, b)

// `RRS_ASSIGN_OR_RETURN(auto x, make_x());`: declares (or assigns) `lhs` from
// a Result's value, or returns its Status from the enclosing function.
#define RRS_ASSIGN_OR_RETURN(lhs, expr) \
  RRS_ASSIGN_OR_RETURN_IMPL(RRS_STATUS_CONCAT(rrs_result_, __LINE__), lhs, expr)
// NOLINTBEGIN(bugprone-macro-parentheses): `result` is a name being declared
// and `lhs` a declaration (`auto x`); neither can take parentheses.
#define RRS_ASSIGN_OR_RETURN_IMPL(result, lhs, expr) \
  auto result = (expr);                              \
  if (!result.ok()) return result.status();          \
  lhs = std::move(result).value()
// NOLINTEND(bugprone-macro-parentheses)

// Propagate a failed Status from an expression returning Status.
#define RRS_RETURN_IF_ERROR(expr)    \
  do {                               \
    ::rrs::Status rrs_s_ = (expr);   \
    if (!rrs_s_.ok()) return rrs_s_; \
  } while (0)
