// hb_loadgen: a native load generator for the bridge protocol (a benchmark
// tool, not a test). N client threads send one fixed request line, either on
// a fresh connection per request (what the seed and Hermes Studio do) or many
// requests on one keepalive connection per thread, for a duration or a count,
// and print one JSON object: requests/s and latency percentiles (us).
//
//   hb_loadgen --endpoint ipc:///tmp/x.sock --clients 16 --duration 2
//              --request '{"action": "ping"}' [--keepalive] [--count N]
//              [--warmup S] [--timeout-ms MS] [--expect PREFIX]
//
// A request counts as an error when the connection fails, times out, closes
// before a whole line came back, or the line does not start with --expect
// (default `{"ok": true`). With --keepalive, `"keepalive": true` is inserted
// into the request when it has no "keepalive" key. Latency is measured from
// connect (per-connection mode) or write (keepalive) to the answer's newline.
// Build: g++ -O2 -std=c++17 -pthread tests/bench/loadgen.cpp -o hb_loadgen
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
  std::string endpoint;
  std::string request = "{\"action\": \"ping\"}";
  std::string expect = "{\"ok\": true";
  int clients = 1;
  double duration = 0;   // seconds; 0: use count
  long long count = 0;    // total requests; 0: use duration
  double warmup = 0;      // seconds not recorded at the start (duration mode)
  int timeout_ms = 30000; // per request
  bool keepalive = false;
};

struct target {
  int family = AF_UNIX;
  sockaddr_storage addr{};
  socklen_t len = 0;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "hb_loadgen: %s\n"
               "usage: hb_loadgen --endpoint ipc://PATH|tcp://HOST:PORT [--clients N]\n"
               "                  [--request LINE] [--duration S | --count N] [--warmup S]\n"
               "                  [--keepalive] [--timeout-ms MS] [--expect PREFIX]\n",
               msg);
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--endpoint")
      o.endpoint = value();
    else if (a == "--request")
      o.request = value();
    else if (a == "--expect")
      o.expect = value();
    else if (a == "--clients")
      o.clients = std::atoi(value().c_str());
    else if (a == "--duration")
      o.duration = std::atof(value().c_str());
    else if (a == "--count")
      o.count = std::atoll(value().c_str());
    else if (a == "--warmup")
      o.warmup = std::atof(value().c_str());
    else if (a == "--timeout-ms")
      o.timeout_ms = std::atoi(value().c_str());
    else if (a == "--keepalive")
      o.keepalive = true;
    else if (a == "-h" || a == "--help")
      usage("help");
    else
      usage(("unknown argument " + a).c_str());
  }
  if (o.endpoint.empty())
    usage("--endpoint is required");
  if (o.clients < 1)
    usage("--clients must be at least 1");
  if (o.duration <= 0 && o.count <= 0)
    o.duration = 1.0;
  while (!o.request.empty() && (o.request.back() == '\n' || o.request.back() == '\r'))
    o.request.pop_back();
  if (o.keepalive && o.request.find("\"keepalive\"") == std::string::npos) {
    auto brace = o.request.find('{');
    if (brace == std::string::npos)
      usage("--keepalive needs a JSON object request");
    bool empty_object = o.request.find_first_not_of(" \t", brace + 1) != std::string::npos &&
                        o.request[o.request.find_first_not_of(" \t", brace + 1)] == '}';
    o.request.insert(brace + 1, empty_object ? "\"keepalive\": true" : "\"keepalive\": true, ");
  }
  o.request += '\n';
  return o;
}

target resolve(const std::string& endpoint) {
  target t;
  if (endpoint.rfind("ipc://", 0) == 0) {
    std::string path = endpoint.substr(6);
    auto* un = reinterpret_cast<sockaddr_un*>(&t.addr);
    if (path.size() >= sizeof(un->sun_path))
      usage("socket path too long");
    un->sun_family = AF_UNIX;
    std::memcpy(un->sun_path, path.c_str(), path.size() + 1);
    t.family = AF_UNIX;
    t.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
    return t;
  }
  if (endpoint.rfind("tcp://", 0) == 0) {
    std::string rest = endpoint.substr(6);
    auto colon = rest.rfind(':');
    if (colon == std::string::npos)
      usage("tcp endpoint needs a port");
    std::string host = rest.substr(0, colon), port = rest.substr(colon + 1);
    addrinfo hints{}, *res = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host.empty() ? "127.0.0.1" : host.c_str(), port.c_str(), &hints, &res) != 0 || !res)
      usage("cannot resolve tcp endpoint");
    std::memcpy(&t.addr, res->ai_addr, res->ai_addrlen);
    t.len = res->ai_addrlen;
    t.family = res->ai_family;
    freeaddrinfo(res);
    return t;
  }
  usage("endpoint must be ipc://PATH or tcp://HOST:PORT");
}

struct worker_result {
  std::vector<double> latencies_us; // recorded requests only
  long long errors = 0;
  long long bytes_in = 0;
  std::string first_error;
};

class client {
public:
  client(const options& o, const target& t) : opt_(o), target_(t) {}
  ~client() { disconnect(); }

  // One request/answer; returns an empty string on success, else the error.
  std::string exchange(std::string& line) {
    if (fd_ < 0) {
      std::string err = connect_now();
      if (!err.empty())
        return err;
    }
    std::string err = send_all(opt_.request);
    if (err.empty())
      err = read_line(line);
    if (!err.empty() || !opt_.keepalive)
      disconnect();
    return err;
  }

  void disconnect() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
    buffer_.clear();
  }

private:
  std::string connect_now() {
    fd_ = ::socket(target_.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0)
      return std::string("socket: ") + std::strerror(errno);
    timeval tv{opt_.timeout_ms / 1000, (opt_.timeout_ms % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); // bounds a blocked connect too
    if (target_.family != AF_UNIX) {
      int one = 1;
      ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&target_.addr), target_.len) != 0) {
      std::string err = std::string("connect: ") + std::strerror(errno);
      disconnect();
      return err;
    }
    return {};
  }

  std::string send_all(const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        return std::string("send: ") + std::strerror(errno);
      }
      off += static_cast<size_t>(n);
    }
    return {};
  }

  std::string read_line(std::string& line) {
    auto deadline = clock_type::now() + std::chrono::milliseconds(opt_.timeout_ms);
    size_t scanned = 0;
    static thread_local char chunk[1 << 20]; // big answers are read in big pieces, as any client would
    for (;;) {
      auto nl = buffer_.find('\n', scanned);
      if (nl != std::string::npos) {
        line.assign(buffer_, 0, nl);
        buffer_.erase(0, nl + 1);
        return {};
      }
      scanned = buffer_.size();
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
      if (left <= 0)
        return "timeout";
      pollfd p{fd_, POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(left));
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        return r == 0 ? "timeout" : std::string("poll: ") + std::strerror(errno);
      ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN)
          continue;
        return std::string("recv: ") + std::strerror(errno);
      }
      if (n == 0)
        return "closed before a whole answer";
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  const options& opt_;
  const target& target_;
  int fd_ = -1;
  std::string buffer_;
};

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty())
    return 0;
  size_t i = std::min(sorted.size() - 1, static_cast<size_t>(q * static_cast<double>(sorted.size())));
  return sorted[i];
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20)
      out += ' ';
    else
      out += c;
  }
  return out;
}

} // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  options opt = parse(argc, argv);
  target tgt = resolve(opt.endpoint);

  std::vector<worker_result> results(static_cast<size_t>(opt.clients));
  std::atomic<long long> remaining{opt.count};
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  const bool by_count = opt.count > 0;
  clock_type::time_point start, record_from, deadline;

  auto work = [&](int index) {
    worker_result& res = results[static_cast<size_t>(index)];
    res.latencies_us.reserve(by_count ? static_cast<size_t>(opt.count / opt.clients + 1) : 65536);
    client c(opt, tgt);
    std::string line;
    ready.fetch_add(1);
    while (!go.load(std::memory_order_acquire))
      std::this_thread::yield();
    for (;;) {
      if (by_count) {
        if (remaining.fetch_sub(1) <= 0)
          break;
      } else if (clock_type::now() >= deadline) {
        break;
      }
      auto t0 = clock_type::now();
      std::string err = c.exchange(line);
      auto t1 = clock_type::now();
      if (err.empty() && line.compare(0, opt.expect.size(), opt.expect) != 0)
        err = "unexpected answer: " + line.substr(0, 200);
      if (!by_count && t0 < record_from)
        continue; // warm-up
      if (!err.empty()) {
        if (res.errors++ == 0)
          res.first_error = err;
        continue;
      }
      res.bytes_in += static_cast<long long>(line.size()) + 1;
      res.latencies_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  };

  std::vector<std::thread> threads;
  for (int i = 0; i < opt.clients; ++i)
    threads.emplace_back(work, i);
  while (ready.load() < opt.clients)
    std::this_thread::yield();
  start = clock_type::now();
  record_from = start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(opt.warmup));
  deadline = record_from + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(opt.duration));
  if (by_count)
    record_from = start;
  go.store(true, std::memory_order_release);
  for (auto& t : threads)
    t.join();
  auto end = clock_type::now();

  std::vector<double> all;
  long long errors = 0, bytes = 0;
  std::string first_error;
  for (auto& r : results) {
    all.insert(all.end(), r.latencies_us.begin(), r.latencies_us.end());
    errors += r.errors;
    bytes += r.bytes_in;
    if (first_error.empty())
      first_error = r.first_error;
  }
  std::sort(all.begin(), all.end());
  double seconds = std::chrono::duration<double>(end - record_from).count();
  double mean = 0;
  for (double v : all)
    mean += v;
  mean = all.empty() ? 0 : mean / static_cast<double>(all.size());
  std::printf("{\"mode\": \"%s\", \"clients\": %d, \"requests\": %zu, \"errors\": %lld, \"seconds\": %.6f, "
              "\"rps\": %.1f, \"p50_us\": %.1f, \"p90_us\": %.1f, \"p99_us\": %.1f, \"max_us\": %.1f, "
              "\"mean_us\": %.1f, \"bytes_in\": %lld, \"first_error\": \"%s\"}\n",
              opt.keepalive ? "keepalive" : "connection", opt.clients, all.size(), errors, seconds,
              seconds > 0 ? static_cast<double>(all.size()) / seconds : 0.0, percentile(all, 0.5),
              percentile(all, 0.9), percentile(all, 0.99), all.empty() ? 0.0 : all.back(), mean, bytes,
              json_escape(first_error).c_str());
  return 0;
}
