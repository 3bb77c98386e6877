// hb_loadgen: a native load generator for the bridge protocol (a benchmark
// tool, not a test). N clients send one fixed request line, either on a fresh
// connection per request (what the seed and Hermes Studio do) or many
// requests on one keepalive connection per client, for a duration or a
// count, and print one JSON object: requests/s and latency percentiles (us).
// The clients are driven by epoll event loops (--threads, default 1), the
// way a Node.js client such as Hermes Studio drives its connections: with a
// blocking thread per client, 16 clients spent about as much CPU on context
// switches as the bridge under test had (measured: 52k ping/s per
// connection that way, 62k/s with one event loop, same bridge).
//
//   hb_loadgen --endpoint ipc:///tmp/x.sock --clients 16 --duration 2
//              --request '{"action": "ping"}' [--keepalive] [--count N]
//              [--warmup S] [--threads N] [--timeout-ms MS] [--expect PREFIX]
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
#include <sys/epoll.h>
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
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

clock_type::duration seconds_of(double s) {
  return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(s));
}

struct options {
  std::string endpoint;
  std::string request = "{\"action\": \"ping\"}";
  std::string expect = "{\"ok\": true";
  int clients = 1;
  int threads = 1;        // event loops the clients are spread over
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
               "                  [--keepalive] [--threads N] [--timeout-ms MS] [--expect PREFIX]\n",
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
    else if (a == "--threads")
      o.threads = std::atoi(value().c_str());
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
  if (o.threads < 1)
    usage("--threads must be at least 1");
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

// What every event loop shares: when to stop, and the requests left in
// --count mode.
struct schedule {
  bool by_count = false;
  std::atomic<long long> remaining{0};
  clock_type::time_point record_from, deadline;

  // Claims the next request; false once the run is over.
  bool next(clock_type::time_point now) {
    if (by_count)
      return remaining.fetch_sub(1) > 0;
    return now < deadline;
  }
  bool recorded(clock_type::time_point t0) const { return by_count || t0 >= record_from; }
};

// One client: a connection and the request under way on it.
struct client {
  // reconnect: the same request, connected again shortly; next: the next
  // request, started on the loop's next turn (after a failure).
  enum class phase { idle, connecting, sending, reading, reconnect, next, finished };
  int fd = -1;
  phase at = phase::idle;
  uint32_t events = 0; // what fd is registered for in the epoll set (0: not in it)
  size_t sent = 0;
  size_t scanned = 0; // bytes of buffer already searched for the newline
  std::string buffer;
  clock_type::time_point started, deadline;
};

// Drives its share of the clients on one thread with epoll: a slow answer
// never blocks another client, and no thread per client competes with the
// bridge for the CPU (Hermes Studio's clients are one event loop too).
class event_loop {
public:
  event_loop(const options& o, const target& t, schedule& s, int clients)
    : opt_(o), target_(t), sched_(s), clients_(static_cast<size_t>(clients)) {
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0)
      usage("epoll_create1 failed");
    res_.latencies_us.reserve(sched_.by_count ? static_cast<size_t>(opt_.count) : 1u << 18);
  }
  ~event_loop() {
    for (auto& c : clients_)
      drop(c);
    ::close(ep_);
  }

  void run() {
    for (auto& c : clients_)
      begin(c);
    std::vector<epoll_event> ready(clients_.size());
    auto next_timeout_scan = clock_type::now();
    while (active_ > 0) {
      int wait_ms = pending_ > 0 ? 1 : 10;
      int n = ::epoll_wait(ep_, ready.data(), static_cast<int>(ready.size()), wait_ms);
      if (n < 0 && errno != EINTR)
        usage("epoll_wait failed");
      for (int i = 0; i < n; ++i) {
        client& c = clients_[ready[i].data.u32];
        if (c.at == client::phase::connecting)
          connected(c);
        else if (c.at == client::phase::sending)
          send_rest(c);
        else if (c.at == client::phase::reading)
          receive(c);
      }
      auto now = clock_type::now();
      if (pending_ > 0)
        for (auto& c : clients_) {
          if (c.at == client::phase::reconnect) {
            --pending_;
            open(c);
          } else if (c.at == client::phase::next) {
            --pending_;
            begin(c);
          }
        }
      if (now >= next_timeout_scan) {
        next_timeout_scan = now + std::chrono::milliseconds(10);
        for (auto& c : clients_) {
          bool waiting = c.at == client::phase::connecting || c.at == client::phase::sending ||
                         c.at == client::phase::reading || c.at == client::phase::reconnect;
          if (!waiting || now < c.deadline)
            continue;
          if (c.at == client::phase::reconnect)
            --pending_; // fail() counts it again, as a client to start afresh
          fail(c, "timeout");
        }
      }
    }
  }

  worker_result& result() { return res_; }

private:
  // Starts the client's next request, or retires it when the run is over.
  void begin(client& c) {
    auto now = clock_type::now();
    if (!sched_.next(now)) {
      drop(c);
      c.at = client::phase::finished;
      --active_;
      return;
    }
    c.started = now;
    c.deadline = now + std::chrono::milliseconds(opt_.timeout_ms);
    c.sent = 0;
    if (c.fd >= 0)
      return send_rest(c); // keepalive
    open(c);
  }

  void open(client& c) {
    c.fd = ::socket(target_.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (c.fd < 0)
      return fail(c, std::string("socket: ") + std::strerror(errno));
    if (target_.family != AF_UNIX) {
      int one = 1;
      ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (::connect(c.fd, reinterpret_cast<const sockaddr*>(&target_.addr), target_.len) == 0)
      return send_rest(c);
    if (errno == EINPROGRESS) { // TCP
      c.at = client::phase::connecting;
      return watch(c, EPOLLOUT);
    }
    if (errno == EAGAIN && target_.family == AF_UNIX) {
      // A unix socket's listen backlog is full: nothing was connected, so
      // try again shortly (the time counts towards this request).
      drop(c);
      c.at = client::phase::reconnect;
      ++pending_;
      return;
    }
    fail(c, std::string("connect: ") + std::strerror(errno));
  }

  void connected(client& c) {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
      return fail(c, std::string("connect: ") + std::strerror(err ? err : errno));
    send_rest(c);
  }

  void send_rest(client& c) {
    const std::string& req = opt_.request;
    while (c.sent < req.size()) {
      ssize_t n = ::send(c.fd, req.data() + c.sent, req.size() - c.sent, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        if (errno == EAGAIN) {
          c.at = client::phase::sending;
          return watch(c, EPOLLOUT);
        }
        return fail(c, std::string("send: ") + std::strerror(errno));
      }
      c.sent += static_cast<size_t>(n);
    }
    c.at = client::phase::reading;
    if (c.buffer.find('\n', c.scanned) != std::string::npos)
      return receive(c); // an answer already read with the previous one
    watch(c, EPOLLIN);
  }

  void receive(client& c) {
    static thread_local std::vector<char> chunk(1 << 20); // big answers are read in big pieces
    for (;;) {
      auto nl = c.buffer.find('\n', c.scanned);
      if (nl != std::string::npos) {
        std::string line = c.buffer.substr(0, nl);
        c.buffer.erase(0, nl + 1);
        c.scanned = 0;
        return complete(c, line);
      }
      c.scanned = c.buffer.size();
      ssize_t n = ::recv(c.fd, chunk.data(), chunk.size(), 0);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        if (errno == EAGAIN)
          return; // wait for more
        return fail(c, std::string("recv: ") + std::strerror(errno));
      }
      if (n == 0)
        return fail(c, "closed before a whole answer");
      c.buffer.append(chunk.data(), static_cast<size_t>(n));
    }
  }

  void complete(client& c, const std::string& line) {
    auto t1 = clock_type::now();
    if (line.compare(0, opt_.expect.size(), opt_.expect) != 0)
      return fail(c, "unexpected answer: " + line.substr(0, 200));
    if (sched_.recorded(c.started)) {
      res_.bytes_in += static_cast<long long>(line.size()) + 1;
      res_.latencies_us.push_back(std::chrono::duration<double, std::micro>(t1 - c.started).count());
    }
    if (!opt_.keepalive)
      drop(c);
    begin(c);
  }

  // The next request starts on the loop's next turn: a bridge that refuses
  // every connection costs a retry per client per millisecond, not a spin.
  void fail(client& c, const std::string& err) {
    if (sched_.recorded(c.started) && res_.errors++ == 0)
      res_.first_error = err;
    drop(c);
    c.at = client::phase::next;
    ++pending_;
  }

  void watch(client& c, uint32_t events) {
    if (c.events == events)
      return;
    epoll_event ev{};
    ev.events = events;
    ev.data.u32 = static_cast<uint32_t>(&c - clients_.data());
    ::epoll_ctl(ep_, c.events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c.fd, &ev);
    c.events = events;
  }

  void drop(client& c) {
    if (c.fd >= 0)
      ::close(c.fd); // also leaves the epoll set
    c.fd = -1;
    c.events = 0;
    c.buffer.clear();
    c.scanned = 0;
  }

  const options& opt_;
  const target& target_;
  schedule& sched_;
  std::vector<client> clients_;
  int ep_ = -1;
  size_t active_ = clients_.size();
  size_t pending_ = 0; // clients in phase reconnect or next
  worker_result res_;
};
} // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  options opt = parse(argc, argv);
  target tgt = resolve(opt.endpoint);

  const int threads = std::min(opt.threads, opt.clients);
  schedule sched;
  sched.by_count = opt.count > 0;
  sched.remaining = opt.count;
  std::vector<std::unique_ptr<event_loop>> loops;
  for (int i = 0; i < threads; ++i) // clients dealt out as evenly as they go
    loops.push_back(std::make_unique<event_loop>(opt, tgt, sched, opt.clients / threads + (i < opt.clients % threads)));
  auto start = clock_type::now();
  sched.record_from = sched.by_count ? start : start + seconds_of(opt.warmup);
  sched.deadline = sched.record_from + seconds_of(opt.duration);
  std::vector<std::thread> running;
  for (auto& loop : loops)
    running.emplace_back([&loop] { loop->run(); });
  for (auto& t : running)
    t.join();
  auto end = clock_type::now();
  std::vector<worker_result*> results;
  for (auto& loop : loops)
    results.push_back(&loop->result());

  std::vector<double> all;
  long long errors = 0, bytes = 0;
  std::string first_error;
  for (auto* r_ptr : results) {
    worker_result& r = *r_ptr;
    all.insert(all.end(), r.latencies_us.begin(), r.latencies_us.end());
    errors += r.errors;
    bytes += r.bytes_in;
    if (first_error.empty())
      first_error = r.first_error;
  }
  std::sort(all.begin(), all.end());
  double seconds = std::chrono::duration<double>(end - sched.record_from).count();
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
