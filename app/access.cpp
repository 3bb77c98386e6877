#include "app/access.hpp"

#include "actors/daemon_log.hpp"
#include "protocol/trust.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace hb::app {

int inherited_listener() {
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  if (!pid || !fds || std::atol(pid) != static_cast<long>(::getpid()) || std::atoi(fds) < 1)
    return -1;
  constexpr int first_fd = 3; // SD_LISTEN_FDS_START
  int listening = 0;
  socklen_t size = sizeof listening;
  if (::getsockopt(first_fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || !listening)
    throw std::runtime_error("LISTEN_FDS is set but fd 3 is not a listening socket");
  ::fcntl(first_fd, F_SETFD, FD_CLOEXEC);
  ::fcntl(first_fd, F_SETFL, ::fcntl(first_fd, F_GETFL) | O_NONBLOCK);
  ::unsetenv("LISTEN_PID"); // not for the agent's child processes
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  return first_fd;
}

void check_listener_reach(int listen_fd, bool inherited, bool has_token) {
  auto bound = protocol::reach_of(listen_fd);
  std::string which = inherited ? "the socket handed over by systemd (LISTEN_FDS)" : "tcp endpoint";
  if (bound.who == protocol::reach::network && !has_token)
    throw std::runtime_error(which + " is bound to " + bound.address +
                             ", reachable from other machines; give --token-file so that only clients with "
                             "the token are served");
  if (bound.who == protocol::reach::loopback && !has_token)
    actors::log_event(actors::log_level::warn, "access.no_token",
                      "tcp on loopback without --token-file: any local user can connect, run agents and "
                      "answer their approvals",
                      {{"address", bound.address}});
}

std::string read_token_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw std::runtime_error("cannot read token file " + path);
  if (st.st_mode & (S_IRWXG | S_IRWXO))
    throw std::runtime_error("token file " + path + " is readable by others; chmod 600 it");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  auto first = token.find_first_not_of(" \t\r\n");
  auto last = token.find_last_not_of(" \t\r\n");
  if (!in || first == std::string::npos)
    throw std::runtime_error("token file " + path + " is empty");
  return token.substr(first, last - first + 1);
}

} // namespace hb::app
