#include "bridge/worker/worker_attach.hpp"

#include "bridge/worker/worker_events.hpp"
#include "protocol/owned_fd.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace hb::bridge::worker {

namespace {


[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

// The worker said no (`attach_refused`): most often because it has not yet
// read the end of the daemon that died a moment ago.
struct refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};
constexpr int refusal_retries = 10;
constexpr std::chrono::milliseconds refusal_pause{100};

// A record holds the worker's secret: only a file of this user's that nobody
// else can read or write is believed.
std::string read_private_file(const std::string& path) {
  protocol::owned_fd f{::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0)
    fail("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode))
    fail(path + " is not a regular file");
  if (st.st_uid != ::geteuid())
    fail(path + " belongs to another user (uid " + std::to_string(st.st_uid) + ")");
  if ((st.st_mode & 077) != 0)
    fail(path + " is readable or writable by others");
  if (st.st_size > 64 * 1024)
    fail(path + " is too big for a worker record");
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = ::read(f.fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  return text;
}

std::string file_of(const std::string& dir, pid_t pid, const char* suffix) {
  return dir + "/worker-" + std::to_string(pid) + suffix;
}

void forget_dead_worker(const std::string& dir, pid_t pid) {
  for (const char* suffix : {".json", ".sock", ".log"})
    ::unlink(file_of(dir, pid, suffix).c_str());
}


// The socket must be this user's, and so must the process behind it, which
// must be the record's: another user can neither plant a worker nor be one.
int connect_checked(const worker_record& r, std::chrono::milliseconds deadline) {
  struct stat st {};
  if (::lstat(r.socket.c_str(), &st) != 0)
    fail("no socket at " + r.socket);
  if (!S_ISSOCK(st.st_mode))
    fail(r.socket + " is not a socket");
  if (st.st_uid != ::geteuid())
    fail(r.socket + " belongs to another user (uid " + std::to_string(st.st_uid) + ")");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (r.socket.size() >= sizeof addr.sun_path)
    fail(r.socket + " is too long for a unix socket path");
  std::memcpy(addr.sun_path, r.socket.c_str(), r.socket.size() + 1);
  protocol::owned_fd s{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (s.fd < 0)
    fail(std::string("socket: ") + std::strerror(errno));
  protocol::set_socket_timeouts(s.fd, deadline);
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    fail("cannot connect to " + r.socket + ": " + std::strerror(errno));
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(s.fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0)
    fail(std::string("cannot read the worker's credentials: ") + std::strerror(errno));
  if (peer.uid != ::geteuid())
    fail(r.socket + " is served by another user (uid " + std::to_string(peer.uid) + ")");
  if (peer.pid != r.pid)
    fail(r.socket + " is served by pid " + std::to_string(peer.pid) + ", not the record's " + std::to_string(r.pid));
  return s.release();
}

// One frame sent on a fresh connection and the worker's one answer.
from_worker exchange(int fd, const to_worker& first) {
  std::string hello = encode(first);
  size_t sent = 0;
  while (sent < hello.size()) {
    ssize_t n = ::send(fd, hello.data() + sent, hello.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      fail(std::string("cannot send its first frame: ") + std::strerror(errno));
    sent += static_cast<size_t>(n);
  }
  frame_reader frames;
  char buffer[65536];
  for (;;) {
    if (auto body = frames.next())
      return decode_from_worker(*body);
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      fail("it did not answer in time");
    if (n <= 0)
      fail("it closed the connection");
    frames.feed(buffer, static_cast<size_t>(n));
  }
}

attached handshake(int fd, const worker_record& r) {
  auto answer = exchange(fd, attach{r.secret, r.version}); // spoken in the worker's own version
  if (auto* ok = std::get_if<attached>(&answer))
    return std::move(*ok);
  if (auto* no = std::get_if<attach_refused>(&answer))
    throw refused("it refused: " + no->reason);
  fail("it answered attach with another frame");
}

// A worker of a version this daemon cannot drive: its turns cannot be
// followed, but they need not be cut either; it finishes them on its own.
drained drain_checked(const worker_record& r, std::chrono::milliseconds deadline) {
  protocol::owned_fd fd{connect_checked(r, deadline)};
  auto answer = exchange(fd.fd, drain{r.secret});
  if (auto* ok = std::get_if<drained>(&answer))
    return *ok;
  if (auto* no = std::get_if<attach_refused>(&answer))
    fail("it refused: " + no->reason);
  fail("it answered drain with another frame");
}

void tell(bool warning, const char* name, const std::string& message, const worker_record& r, const std::string& path) {
  report_worker_event({warning, name, message,
                       {{"pid", std::to_string(r.pid)}, {"profile", r.profile}, {"record", path}}});
}

} // namespace

bool process_alive(pid_t pid) {
  if (pid <= 0 || (::kill(pid, 0) != 0 && errno != EPERM))
    return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto close = line.rfind(')');
  return close == std::string::npos || line.size() < close + 3 || line[close + 2] != 'Z';
}

worker_record parse_worker_record(const std::string& text, const std::string& dir) {
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object())
    fail("not a JSON object");
  auto need = [&](const char* key, auto check, const char* what) -> const nlohmann::json& {
    auto it = doc.find(key);
    if (it == doc.end() || !check(*it))
      fail(std::string(key) + " missing or not " + what);
    return *it;
  };
  auto is_text = [](const nlohmann::json& j) { return j.is_string(); };
  auto is_int = [](const nlohmann::json& j) { return j.is_number_integer(); };
  auto is_number = [](const nlohmann::json& j) { return j.is_number(); };
  worker_record r;
  int64_t pid = need("pid", is_int, "an integer").get<int64_t>();
  if (pid <= 1 || pid > 1 << 30)
    fail("pid out of range");
  r.pid = static_cast<pid_t>(pid);
  r.profile = need("profile", is_text, "a string").get<std::string>();
  r.socket = need("socket", is_text, "a string").get<std::string>();
  r.secret = need("secret", is_text, "a string").get<std::string>();
  r.version = need("version", is_int, "an integer").get<int64_t>();
  r.started_at = need("started_at", is_number, "a number").get<double>();
  r.daemon = need("daemon", is_text, "a string").get<std::string>();
  if (auto it = doc.find("modules"); it != doc.end() && it->is_string())
    r.modules = it->get<std::string>();
  // Only where this daemon would look for it: a record cannot point the
  // daemon at a socket or directory elsewhere.
  if (r.socket != file_of(dir, r.pid, ".sock"))
    fail("its socket is not " + file_of(dir, r.pid, ".sock"));
  if (!r.modules.empty() &&
      (std::filesystem::path(r.modules).parent_path() != std::filesystem::path(dir) ||
       std::filesystem::path(r.modules).filename().string().rfind("worker-", 0) != 0))
    fail("its module directory is not one of " + dir);
  if (r.secret.size() < 32)
    fail("its secret is too short");
  return r;
}

std::vector<found_worker> attach_to_live_workers(const std::string& dir, const std::string& daemon,
                                                 std::chrono::milliseconds deadline) {
  std::vector<found_worker> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    char* end = nullptr;
    if (name.rfind("worker-", 0) != 0)
      continue;
    long pid = std::strtol(name.c_str() + 7, &end, 10);
    if (pid <= 0 || !end || std::string(end) != ".json")
      continue;
    std::string path = entry.path().string();
    worker_record r;
    r.pid = static_cast<pid_t>(pid);
    try {
      r = parse_worker_record(read_private_file(path), dir);
      if (r.pid != pid)
        fail("its pid is not its file's");
    } catch (const std::exception& e) {
      tell(true, "worker.record_refused", std::string("a worker record that is not believed: ") + e.what(), r, path);
      continue;
    }
    if (!process_alive(r.pid)) {
      forget_dead_worker(dir, r.pid);
      tell(false, "worker.record_stale", "a worker that is gone left its record; removed", r, path);
      continue;
    }
    if (!daemon.empty() && r.daemon != daemon)
      continue; // another daemon's (another event log): its to take over
    if (!compatible_version(r.version)) {
      std::string versions = "frame version " + std::to_string(r.version) + ", this daemon's " +
                             std::to_string(frames_version);
      try {
        auto done = drain_checked(r, deadline);
        tell(true, "worker.drained",
             "a live worker speaks " + versions + ": it finishes its " + std::to_string(done.turns) +
               " live turn(s) on its own and exits; their runs end here",
             r, path);
      } catch (const std::exception& e) {
        tell(true, "worker.incompatible", "a live worker speaks " + versions +
                                            " and could not be told to drain (" + e.what() +
                                            "): left to its orphan timeout", r, path);
      }
      continue;
    }
    for (int attempt = 0;; ++attempt) {
      try {
        protocol::owned_fd fd{connect_checked(r, deadline)};
        attached held = handshake(fd.fd, r);
        if (held.who.pid != r.pid)
          fail("it says it is pid " + std::to_string(held.who.pid));
        protocol::set_socket_timeouts(fd.fd, std::chrono::milliseconds(0)); // from here its reader blocks as on any worker
        found.push_back(found_worker{std::move(r), fd.release(), std::move(held)});
      } catch (const refused& e) {
        if (attempt < refusal_retries) {
          std::this_thread::sleep_for(refusal_pause);
          continue;
        }
        tell(true, "worker.attach_failed", std::string("cannot attach to a live worker: ") + e.what(), r, path);
      } catch (const std::exception& e) {
        tell(true, "worker.attach_failed", std::string("cannot attach to a live worker: ") + e.what(), r, path);
      }
      break;
    }
  }
  return found;
}

} // namespace hb::bridge::worker
