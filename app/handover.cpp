#include "app/handover.hpp"

#include "protocol/owned_fd.hpp"
#include "protocol/sha256.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <utility>

namespace hb::app {

namespace {

// What a successor asks; the answer is "ok <pid>\n" with the socket attached.
constexpr std::string_view ask_line = "take-over\n";
constexpr std::chrono::seconds ask_deadline{5};

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

std::string with_errno(const std::string& what) { return what + ": " + std::strerror(errno); }


bool peer_is_this_user(int fd) {
  ucred peer{};
  socklen_t len = sizeof peer;
  return ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0 && peer.uid == ::geteuid();
}

sockaddr_un address_of(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path)
    fail(path + " is too long for a unix socket path");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}


// One line of at most 64 bytes, or "" when none comes in time.
std::string read_line(int fd) {
  std::string line;
  char c;
  while (line.size() < 64) {
    ssize_t n = ::recv(fd, &c, 1, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return "";
    line += c;
    if (c == '\n')
      return line;
  }
  return "";
}

// A message of `size` bytes at `data`, with room for one descriptor beside it.
struct fd_message {
  iovec io;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  fd_message(void* data, size_t size) : io{data, size} {
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
  }
};

bool send_socket(int to, int listen_fd) {
  std::string answer = "ok " + std::to_string(::getpid()) + "\n";
  fd_message m(answer.data(), answer.size());
  msghdr& msg = m.msg;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &listen_fd, sizeof(int));
  for (;;) {
    ssize_t n = ::sendmsg(to, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    return n == static_cast<ssize_t>(answer.size());
  }
}

// The socket that came with the answer, and the answer's text.
std::pair<int, std::string> receive_socket(int from) {
  char text[64] = {};
  fd_message m(text, sizeof text - 1);
  msghdr& msg = m.msg;
  ssize_t n;
  do
    n = ::recvmsg(from, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n <= 0)
    return {-1, ""};
  int fd = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
      std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
  return {fd, std::string(text, static_cast<size_t>(n))};
}

} // namespace

std::string handover_socket_path(const std::string& dir, const std::string& db_path) {
  return dir + "/daemon-" + protocol::sha256_hex(db_path).substr(0, 16) + ".sock";
}

struct handover_offer::state {
  std::string path;
  int listener = -1;
  int listen_fd = -1;
  std::function<void()> handed_over;
  std::atomic<bool> done{false}; // handed over, or the offer withdrawn
};

namespace {

void wait_for_successor(const std::shared_ptr<handover_offer::state>& st) {
  while (!st->done) {
    int c = ::accept4(st->listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno != EINTR && errno != ECONNABORTED && !st->done)
        std::this_thread::sleep_for(std::chrono::milliseconds(100)); // out of descriptors, say
      continue;
    }
    protocol::owned_fd conn{c};
    if (!peer_is_this_user(c))
      continue;
    protocol::set_socket_timeouts(c, ask_deadline);
    if (read_line(c) != ask_line || !send_socket(c, st->listen_fd))
      continue;
    if (st->done.exchange(true))
      return; // withdrawn meanwhile: the successor sees EOF and starts on its own socket
    ::unlink(st->path.c_str());
    ::close(st->listener);
    // Kept open until this process exits: its EOF tells the successor that
    // the log and the workers are free.
    conn.release();
    st->handed_over();
    return;
  }
}

} // namespace

handover_offer::handover_offer(std::string path, int listen_fd, std::function<void()> handed_over)
    : state_(std::make_shared<state>()) {
  state_->path = std::move(path);
  state_->listen_fd = listen_fd;
  state_->handed_over = std::move(handed_over);
  auto addr = address_of(state_->path);
  ::unlink(state_->path.c_str()); // a dead daemon's: a live one answered take_over, or this one would not start
  protocol::owned_fd s{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (s.fd < 0)
    fail(with_errno("socket"));
  ::fchmod(s.fd, 0600); // born 0600: only this user may ask for the socket
  if (::bind(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    fail(with_errno("bind " + state_->path));
  ::chmod(state_->path.c_str(), 0600);
  if (::listen(s.fd, 4) != 0)
    fail(with_errno("listen " + state_->path));
  state_->listener = s.release();
  std::thread([st = state_] { wait_for_successor(st); }).detach();
}

handover_offer::~handover_offer() {
  if (state_->done.exchange(true))
    return;
  ::unlink(state_->path.c_str());
  ::shutdown(state_->listener, SHUT_RDWR); // wakes its accept; the thread then leaves
}

std::optional<int> take_over(const std::string& path, std::chrono::milliseconds deadline) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    return std::nullopt;
  if (!S_ISSOCK(st.st_mode) || st.st_uid != ::geteuid())
    fail(path + " is not a socket of this user's");
  auto addr = address_of(path);
  protocol::owned_fd s{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (s.fd < 0)
    fail(with_errno("socket"));
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno == ECONNREFUSED || errno == ENOENT)
      return std::nullopt; // left by a daemon that died
    fail(with_errno("cannot reach the running daemon at " + path));
  }
  if (!peer_is_this_user(s.fd))
    fail(path + " is served by another user");
  protocol::set_socket_timeouts(s.fd, ask_deadline);
  if (::send(s.fd, ask_line.data(), ask_line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(ask_line.size()))
    fail(with_errno("cannot ask the running daemon for its socket"));
  auto [fd, answer] = receive_socket(s.fd);
  protocol::owned_fd taken{fd};
  if (fd < 0 || answer.rfind("ok ", 0) != 0)
    fail("the running daemon did not hand over its socket" + (answer.empty() ? "" : ": " + answer));
  std::string who = "the running daemon (pid " + answer.substr(3, answer.find('\n') - 3) + ")";
  protocol::set_socket_timeouts(s.fd, deadline);
  char byte;
  for (;;) {
    ssize_t n = ::recv(s.fd, &byte, 1, 0);
    if (n == 0)
      return taken.release(); // it has exited
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      fail(who + " did not exit within " + std::to_string(deadline.count() / 1000) + " s of handing over");
    if (n < 0)
      fail(with_errno("waiting for " + who + " to exit"));
  }
}

std::string unix_path_of(int listen_fd) {
  sockaddr_un addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || addr.sun_family != AF_UNIX ||
      len <= offsetof(sockaddr_un, sun_path))
    return "";
  return std::string(addr.sun_path, strnlen(addr.sun_path, len - offsetof(sockaddr_un, sun_path)));
}

} // namespace hb::app
