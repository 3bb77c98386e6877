#include "protocol/endpoint.hpp"

#include "protocol/trust.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace hb::protocol {

namespace {

std::runtime_error os_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

} // namespace

endpoint parse_endpoint(const std::string& text) {
  endpoint ep;
  if (text.rfind("ipc://", 0) == 0) {
    ep.type = endpoint::kind::ipc;
    ep.path = text.substr(6);
    if (ep.path.empty())
      throw std::runtime_error("ipc endpoint requires a path: " + text);
    return ep;
  }
  if (text.rfind("tcp://", 0) != 0)
    throw std::runtime_error("unsupported endpoint scheme: " + text);
  ep.type = endpoint::kind::tcp;
  std::string rest = text.substr(6);
  if (auto slash = rest.find('/'); slash != std::string::npos)
    rest = rest.substr(0, slash);
  std::string port_text;
  if (!rest.empty() && rest.front() == '[') { // [::1]:port
    auto close = rest.find(']');
    if (close == std::string::npos)
      throw std::runtime_error("invalid tcp endpoint: " + text);
    ep.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':')
      port_text = rest.substr(close + 2);
  } else if (auto colon = rest.rfind(':'); colon != std::string::npos) {
    ep.host = rest.substr(0, colon);
    port_text = rest.substr(colon + 1);
  } else {
    ep.host = rest;
  }
  if (ep.host.empty())
    ep.host = "127.0.0.1";
  if (!port_text.empty()) {
    for (char c : port_text)
      if (c < '0' || c > '9')
        throw std::runtime_error("Port could not be cast to integer value as '" + port_text + "'");
    if (port_text.size() > 5 || std::stoi(port_text) > 65535)
      throw std::runtime_error("Port out of range 0-65535");
    ep.port = std::stoi(port_text);
  }
  if (ep.port <= 0)
    throw std::runtime_error("tcp endpoint requires a port: " + text);
  return ep;
}

namespace {

// True when something accepts connections on the socket file: a live
// daemon, whose socket must not be pulled from under it.
bool someone_listens(const sockaddr_un& addr) {
  int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0)
    return false;
  bool live = ::connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(probe);
  return live;
}

int listen_on_unix(const endpoint& ep, int backlog) {
  sockaddr_un addr{};
  if (ep.path.size() >= sizeof(addr.sun_path))
    throw std::runtime_error("AF_UNIX path too long (" + std::to_string(ep.path.size()) +
                             " bytes, at most " + std::to_string(sizeof(addr.sun_path) - 1) +
                             "): " + ep.path);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, ep.path.c_str(), ep.path.size() + 1);
  // A directory another user can write to would let them swap the socket
  // for their own; one we create is ours alone.
  auto parent = std::filesystem::path(ep.path).parent_path().string();
  if (parent.empty())
    parent = ".";
  std::error_code ec;
  if (std::filesystem::exists(parent, ec))
    require_trusted_dir(parent, "socket directory");
  else
    make_trusted_dir(parent, "socket directory");
  struct stat existing {};
  if (::lstat(ep.path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode))
      throw std::runtime_error(ep.path + " exists and is not a socket; refusing to replace it");
    if (someone_listens(addr))
      throw std::runtime_error("another bridge is already serving " + ep.path +
                               "; stop it first (its `shutdown` action or SIGTERM) or choose another --endpoint");
    ::unlink(ep.path.c_str()); // a stale socket from a daemon that died
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    throw os_error("socket");
  // The socket is born 0600, only its owner may connect: Linux gives the
  // socket file the unbound socket's own mode (less the umask). Not by
  // narrowing the umask around bind(): that is process-wide, and a thread
  // making a directory meanwhile, or a worker spawned then (for life),
  // would get 0600 too.
  ::fchmod(fd, 0600);
  int bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  if (bound == 0) {
    struct stat made {};
    if (::lstat(ep.path.c_str(), &made) != 0 || (made.st_mode & 077))
      ::chmod(ep.path.c_str(), 0600); // a kernel that ignored the socket's mode
  }
  if (bound != 0) {
    auto err = os_error("bind " + ep.path);
    ::close(fd);
    throw err;
  }
  if (::listen(fd, backlog) != 0) {
    auto err = os_error("listen " + ep.path);
    ::close(fd);
    throw err;
  }
  return fd;
}

} // namespace

std::string default_endpoint() {
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime && *runtime)
    return std::string("ipc://") + runtime + "/hermes-bridge/bridge.sock";
  return "ipc:///tmp/hermes-bridge-" + std::to_string(::getuid()) + "/bridge.sock";
}

int listen_on(const endpoint& ep, int backlog) {
  if (ep.type == endpoint::kind::ipc)
    return listen_on_unix(ep, backlog);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(ep.host.c_str(), std::to_string(ep.port).c_str(), &hints, &found);
  if (rc != 0)
    throw std::runtime_error("cannot resolve " + ep.host + ": " + ::gai_strerror(rc));
  std::string last_error = "no address";
  for (auto* ai = found; ai; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0)
      continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, backlog) == 0) {
      ::freeaddrinfo(found);
      return fd;
    }
    last_error = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  throw std::runtime_error("cannot listen on " + ep.host + ":" + std::to_string(ep.port) + ": " +
                           last_error);
}

} // namespace hb::protocol
