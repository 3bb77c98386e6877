#include "app/daemon_client.hpp"

#include "app/tool_support.hpp"
#include "protocol/endpoint.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace hb::app {

std::string endpoint_from(const std::string& flag) {
  if (!flag.empty())
    return flag;
  const char* env = std::getenv("HERMES_AGENT_BRIDGE_ENDPOINT");
  return env && *env ? env : protocol::default_endpoint();
}

daemon_connection::daemon_connection(const std::string& endpoint) {
  protocol::endpoint ep;
  try {
    ep = protocol::parse_endpoint(endpoint);
  } catch (const std::exception& e) {
    throw tool_error(exit_usage, e.what());
  }
  auto unreachable = [&](const std::string& why) {
    return tool_error(exit_unreachable, "no daemon answers at " + endpoint + " (" + why +
                                          "); start one with `hermes-bridge serve` or give --endpoint");
  };
  if (ep.type == protocol::endpoint::kind::ipc) {
    sockaddr_un addr{};
    if (ep.path.size() >= sizeof addr.sun_path)
      throw tool_error(exit_usage, "socket path too long: " + ep.path);
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, ep.path.c_str(), ep.path.size() + 1);
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      throw unreachable(std::strerror(errno));
    return;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(ep.host.c_str(), std::to_string(ep.port).c_str(), &hints, &found) != 0)
    throw unreachable("cannot resolve " + ep.host);
  for (auto* ai = found; ai && fd_ < 0; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd >= 0 && ::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
      fd_ = fd;
    else if (fd >= 0)
      ::close(fd);
  }
  ::freeaddrinfo(found);
  if (fd_ < 0)
    throw unreachable(std::strerror(errno));
}

daemon_connection::~daemon_connection() {
  if (fd_ >= 0)
    ::close(fd_);
}

void daemon_connection::send_line(const std::string& line) {
  std::string data = line + "\n";
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      throw tool_error(exit_unreachable, "the daemon closed the connection");
    sent += static_cast<size_t>(n);
  }
}

std::optional<std::string> daemon_connection::read_line(int timeout_ms) {
  timed_out_ = false;
  for (;;) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (timeout_ms >= 0) {
      pollfd p{fd_, POLLIN, 0};
      int ready = ::poll(&p, 1, timeout_ms);
      if (ready == 0 || (ready < 0 && errno == EINTR)) {
        timed_out_ = true;
        return std::nullopt;
      }
    }
    char chunk[65536];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) {
      timed_out_ = true; // a signal: let the caller look at it
      return std::nullopt;
    }
    if (n <= 0) {
      if (buffer_.empty())
        return std::nullopt;
      return std::exchange(buffer_, std::string()); // a last line without newline
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

std::string call_daemon(const std::string& endpoint, const std::string& request_line) {
  daemon_connection conn(endpoint);
  conn.send_line(request_line);
  auto answer = conn.read_line();
  if (!answer)
    throw tool_error(exit_unreachable, "the daemon closed the connection without an answer");
  return *answer;
}

} // namespace hb::app
