// paced_load: a steady open-loop client for storm_bench.py. Request i is due at
// t0 + i / rate; GET and SET take turns on 1000 keys (storm:lat:N, 100-byte
// values) over one connection. Each latency runs from the request's due time
// to its reply (CLOCK_MONOTONIC), so a stall of the server counts for every
// request it delayed, not once. Runs until SIGTERM or SIGINT, then writes
// int64 count, count due times, count latencies (ns, native byte order) to
// --out and prints `latency requests=N`. The Python client in storm_bench.py
// does the same more slowly; this one keeps its own overhead out of the tail.
//
//   paced_load --port P --rate R --out FILE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

constexpr int kKeys = 1000;                     // storm_bench.py's LOAD_KEYS
constexpr size_t kValueSize = 100;              // bytes per SET value
constexpr size_t kMaxReply = size_t{1} << 20;   // a longer bulk reply is not ours: give up
constexpr size_t kReadSize = size_t{64} << 10;  // bytes per recv
volatile std::sig_atomic_t g_stop = 0;

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void sleep_until(int64_t due_ns) {
  timespec ts{};
  ts.tv_sec = due_ns / 1'000'000'000;
  ts.tv_nsec = due_ns % 1'000'000'000;
  // EINTR (SIGTERM) returns early: the caller checks g_stop.
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
}

// Reads one RESP2 reply of the kinds GET and SET give (+status, -error,
// $bulk, $-1); false on a closed connection or anything else.
class ReplyReader {
 public:
  explicit ReplyReader(int fd) : fd_(fd) {}

  bool read_reply() {
    std::string line;
    if (!read_line(line) || line.empty()) return false;
    if (line[0] == '+') return true;
    if (line[0] == '-') {
      std::fprintf(stderr, "paced_load: error reply: %s\n", line.c_str());
      return false;
    }
    if (line[0] != '$') return false;
    const long len = std::strtol(line.c_str() + 1, nullptr, 10);
    if (len < 0) return true;  // $-1: no such key
    if (static_cast<size_t>(len) > kMaxReply) return false;
    return skip(static_cast<size_t>(len) + 2);  // the value and its CRLF
  }

 private:
  bool fill() {
    if (pos_ < buf_.size()) return true;
    buf_.resize(kReadSize);
    ssize_t n = 0;
    do {
      n = recv(fd_, buf_.data(), buf_.size(), 0);
    } while (n < 0 && errno == EINTR && g_stop == 0);
    if (n <= 0) return false;
    buf_.resize(static_cast<size_t>(n));
    pos_ = 0;
    return true;
  }

  bool read_line(std::string& line) {
    line.clear();
    while (line.size() < 512) {
      if (!fill()) return false;
      const char c = buf_[pos_++];
      if (c == '\n') {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return true;
      }
      line.push_back(c);
    }
    return false;
  }

  bool skip(size_t n) {
    while (n > 0) {
      if (!fill()) return false;
      const size_t take = std::min(n, buf_.size() - pos_);
      pos_ += take;
      n -= take;
    }
    return true;
  }

  int fd_;
  std::vector<char> buf_;
  size_t pos_ = 0;
};

std::string command(bool set, int key) {
  const std::string name = "storm:lat:" + std::to_string(key);
  std::string out = set ? "*3\r\n$3\r\nSET\r\n" : "*2\r\n$3\r\nGET\r\n";
  out += "$" + std::to_string(name.size()) + "\r\n" + name + "\r\n";
  if (set) out += "$" + std::to_string(kValueSize) + "\r\n" + std::string(kValueSize, 'v') + "\r\n";
  return out;
}

bool send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

int connect_loopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool write_samples(const char* path, const std::vector<int64_t>& due,
                   const std::vector<int64_t>& lat) {
  FILE* f = std::fopen(path, "wb");
  if (f == nullptr) return false;
  const int64_t n = static_cast<int64_t>(due.size());
  bool ok = std::fwrite(&n, sizeof n, 1, f) == 1;
  ok = ok && std::fwrite(due.data(), sizeof(int64_t), due.size(), f) == due.size();
  ok = ok && std::fwrite(lat.data(), sizeof(int64_t), lat.size(), f) == lat.size();
  return std::fclose(f) == 0 && ok;
}

struct Args {
  int port = 0;
  long rate = 0;
  const char* out = nullptr;
};

bool parse(int argc, char** argv, Args& a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--port")
      a.port = std::atoi(argv[i + 1]);
    else if (flag == "--rate")
      a.rate = std::atol(argv[i + 1]);
    else if (flag == "--out")
      a.out = argv[i + 1];
    else
      return false;
  }
  return argc % 2 == 1 && a.port > 0 && a.port < 65536 && a.rate > 0 && a.out != nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, a)) {
    std::fprintf(stderr, "usage: paced_load --port P --rate R --out FILE\n");
    return 2;
  }
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  std::signal(SIGINT, [](int) { g_stop = 1; });
  const int fd = connect_loopback(a.port);
  if (fd < 0) {
    std::fprintf(stderr, "paced_load: connect to 127.0.0.1:%d: %s\n", a.port, std::strerror(errno));
    return 1;
  }
  ReplyReader reader(fd);
  std::vector<int64_t> due;
  std::vector<int64_t> lat;
  const double interval_ns = 1e9 / static_cast<double>(a.rate);
  const int64_t t0 = now_ns();
  int failed = 0;
  for (int64_t i = 0; g_stop == 0; ++i) {
    const int64_t at = t0 + static_cast<int64_t>(static_cast<double>(i) * interval_ns);
    if (now_ns() < at) sleep_until(at);
    if (g_stop != 0) break;
    if (!send_all(fd, command(i % 2 == 1, static_cast<int>(i % kKeys))) || !reader.read_reply()) {
      failed = g_stop == 0 ? 1 : 0;  // a reply cut short by SIGTERM is not a failure
      break;
    }
    due.push_back(at);
    lat.push_back(now_ns() - at);
  }
  close(fd);
  if (failed != 0) std::fprintf(stderr, "paced_load: the connection failed\n");
  if (!write_samples(a.out, due, lat)) {
    std::fprintf(stderr, "paced_load: cannot write %s\n", a.out);
    return 1;
  }
  std::printf("latency requests=%zu\n", due.size());
  return failed;
}
