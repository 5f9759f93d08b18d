#include "common/base/log.h"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/base/clock.h"
#include "common/base/log_limiter.h"

namespace rrs::log {
namespace {

struct State {
  std::mutex mu;
  std::condition_variable wake;  // a new interval with lines held back
  const char* program = "rrs";
  Format format = Format::kText;
  LogLimiter limiter{LogLimiter::Budget{}};
  bool flusher_started = false;
};

// Never destroyed: the flusher thread may still wait on it during exit.
State& state() {
  static State* s = new State;
  return *s;
}

// One write(2) per line, so lines from several threads (and processes
// sharing the file) never interleave.
void write_line(const std::string& line) {
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Under s.mu.
void emit_locked(State& s, Level level, std::string_view msg) {
  write_line(format_line(s.format, std::chrono::system_clock::now(), s.program, level, msg));
}

void emit(Level level, const std::string& msg) {
  State& s = state();
  std::lock_guard lock(s.mu);
  emit_locked(s, level, msg);
}

// Writes each summary as its interval ends, even if no line of its category
// comes after it.
void flusher() {
  State& s = state();
  std::unique_lock lock(s.mu);
  while (true) {
    if (auto due = s.limiter.next_due())
      s.wake.wait_until(lock, *due);
    else
      s.wake.wait(lock);
    for (const auto& summary : s.limiter.take_due(Clock::now()))
      emit_locked(s, summary.level, summary.msg);
  }
}

void emit_limited(std::string_view category, Level level, const std::string& msg) {
  State& s = state();
  std::lock_guard lock(s.mu);
  const auto v = s.limiter.admit(category, level, Clock::now());
  if (v.summary) emit_locked(s, v.summary->level, v.summary->msg);
  if (v.write) return emit_locked(s, level, msg);
  if (!s.flusher_started) {
    s.flusher_started = true;
    std::thread(flusher).detach();
  }
  s.wake.notify_one();
}

}  // namespace

void set_program(const char* name) { state().program = name; }
void set_format(Format format) { state().format = format; }
Format format() { return state().format; }

void info(const std::string& msg) { emit(Level::kInfo, msg); }
void warn(const std::string& msg) { emit(Level::kWarn, msg); }
void error(const std::string& msg) { emit(Level::kError, msg); }

void info_limited(std::string_view category, const std::string& msg) {
  emit_limited(category, Level::kInfo, msg);
}
void warn_limited(std::string_view category, const std::string& msg) {
  emit_limited(category, Level::kWarn, msg);
}

void flush_limited() {
  State& s = state();
  std::lock_guard lock(s.mu);
  for (const auto& summary : s.limiter.take_all()) emit_locked(s, summary.level, summary.msg);
}

std::string printable(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes.substr(0, 64)) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return bytes.size() > 64 ? out + "..." : out;
}

}  // namespace rrs::log
