// doctor's checks of who can reach the daemon (the socket directory, a TCP
// port and its token), of what native sessions need, and of how Hermes
// Studio finds this binary.
#include "app/access.hpp"
#include "app/doctor_checks.hpp"
#include "app/worker_hosting.hpp"

#include "bridge/tmux/command_line.hpp"
#include "bridge/tmux/subprocess.hpp"
#include "bridge/tmux/tmux_server.hpp"
#include "protocol/endpoint.hpp"
#include "protocol/trust.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace hb::app {

namespace {

check_result result(std::string check, check_status status, std::string detail, std::string fix = {}) {
  return {std::move(check), status, std::move(detail), std::move(fix)};
}

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

bool is_loopback(const sockaddr* a) {
  if (a->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
  if (a->sa_family == AF_INET6) {
    const auto& addr = reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&addr))
      return true;
    return IN6_IS_ADDR_V4MAPPED(&addr) && addr.s6_addr[12] == 127;
  }
  return false;
}

// What serve's listener would be bound to, by the addresses the host
// resolves to (serve decides on the bound address; nothing is bound here,
// so that a daemon already serving is not disturbed): loopback only when
// every one of them is.
bool resolves_to_loopback_only(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), nullptr, &hints, &found) != 0)
    return false;
  bool loopback = found != nullptr;
  for (auto* a = found; a; a = a->ai_next)
    loopback = loopback && is_loopback(a->ai_addr);
  ::freeaddrinfo(found);
  return loopback;
}

// A directory serve keeps sockets in: every directory on its way (and with
// `tree`, every one right in it) must be this user's (or root's) and
// writable by nobody else, as serve checks it (protocol/trust.hpp), or
// serve refuses to start.
void check_private_dir(const std::string& check, const std::string& dir, const std::string& what, bool tree,
                       const std::string& elsewhere, check_list& out) {
  struct stat st {};
  bool exists = ::stat(dir.c_str(), &st) == 0;
  std::string found = exists ? dir + " (owner uid " + std::to_string(st.st_uid) + ", mode " +
                                 mode_text(st.st_mode) + ")"
                             : dir + " (not there yet: serve creates it 0700)";
  try {
    if (tree)
      protocol::require_trusted_tree(dir, what);
    else
      protocol::require_trusted_path(dir, what);
    out.push_back(result(check, check_status::ok, found));
  } catch (const std::exception& e) {
    out.push_back(result(check, check_status::fail, found + ": " + e.what(),
                         "chmod 700 " + dir + " (or remove it: serve makes it 0700), or " + elsewhere));
  }
}

} // namespace

void check_endpoint(const doctor_inputs& in, check_list& out) {
  protocol::endpoint endpoint;
  try {
    endpoint = protocol::parse_endpoint(in.endpoint);
  } catch (const std::exception& e) {
    out.push_back(result("endpoint", check_status::fail, in.endpoint + ": " + e.what(),
                         "--endpoint ipc://PATH or tcp://HOST:PORT"));
    return;
  }
  bool has_token = false;
  if (!in.token_file.empty()) {
    try {
      read_token_file(in.token_file);
      has_token = true;
      out.push_back(result("token", check_status::ok, in.token_file + " holds a token, readable by this user only"));
    } catch (const std::exception& e) {
      out.push_back(result("token", check_status::fail, e.what(),
                           "write the token into " + in.token_file + " and chmod 600 it"));
    }
  }
  if (endpoint.type == protocol::endpoint::kind::ipc) {
    out.push_back(result("endpoint", check_status::ok, in.endpoint + ": a unix socket only this user can open"));
    std::string dir = std::filesystem::path(endpoint.path).parent_path().string();
    check_private_dir("socket_dir", dir, "socket directory", false,
                      "pass another --endpoint ipc://PATH in a directory of your own", out);
    return;
  }
  const std::string token_fix = "pass --token-file FILE (a 0600 file holding a secret) and give clients the token";
  if (resolves_to_loopback_only(endpoint.host)) {
    if (has_token)
      out.push_back(result("endpoint", check_status::ok, in.endpoint + ": TCP on loopback, a token required"));
    else
      out.push_back(result("endpoint", check_status::warn,
                           in.endpoint + ": TCP on loopback without a token: every local user can drive the agent",
                           token_fix + ", or serve on ipc://PATH"));
  } else if (has_token) {
    out.push_back(
      result("endpoint", check_status::ok, in.endpoint + ": TCP reachable from the network, a token required"));
  } else {
    out.push_back(result("endpoint", check_status::fail,
                         in.endpoint + ": TCP reachable from the network without a token (serve refuses it)",
                         token_fix + ", or bind to 127.0.0.1"));
  }
}

void check_runtime_dirs(const doctor_inputs& in, check_list& out) {
  check_private_dir("worker_dir", default_worker_dir(), "agent worker directory", false,
                    "set XDG_RUNTIME_DIR (or TMPDIR) to a directory of your own", out);
  check_private_dir("native_dir", in.native_dir, "native session directory", true,
                    "pass --native-dir DIR of your own", out);
}

void check_native(const doctor_inputs& in, check_list& out) {
  std::string tmux = bridge::find_executable("tmux");
  if (tmux.empty()) {
    out.push_back(result("tmux", check_status::warn, "tmux not found on PATH",
                         std::string("install tmux ") + bridge::minimum_tmux +
                           " or newer (apt-get install tmux): native sessions need it"));
  } else if (auto problem = bridge::tmux_version_problem(tmux)) {
    out.push_back(result("tmux", check_status::warn, tmux + ": " + *problem,
                         std::string("install tmux ") + bridge::minimum_tmux + " or newer for native sessions"));
  } else {
    std::string version;
    try {
      version = bridge::run_process({tmux, "-V"}, {}, std::chrono::seconds(5)).out;
    } catch (const std::exception&) {
    }
    while (!version.empty() && (version.back() == '\n' || version.back() == '\r'))
      version.pop_back();
    out.push_back(result("tmux", check_status::ok, tmux + (version.empty() ? "" : " (" + version + ")")));
  }
  // A command line (serve's --hermes-bin): its program is what must exist.
  std::string hermes;
  try {
    const char* home = std::getenv("HOME");
    auto words = bridge::split_command_line(in.hermes_bin, home ? home : "");
    if (!words.empty())
      hermes = bridge::find_executable(words.front());
  } catch (const std::exception&) {
  }
  if (hermes.empty())
    out.push_back(result("hermes_command", check_status::warn, in.hermes_bin + " not found (the hermes TUI)",
                         "install hermes-agent's `hermes` command or pass --hermes-bin PATH; only native "
                         "sessions need it"));
  else
    out.push_back(result("hermes_command", check_status::ok, hermes + " (the hermes TUI, for native sessions)"));
}

void check_studio(const doctor_inputs&, check_list& out) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::string binary = ec ? std::string("/path/to/hermes-bridge") : self.string();
  out.push_back(result("studio", check_status::ok, "Hermes Studio can start this daemon as its bridge",
                       "export HERMES_AGENT_BRIDGE_PYTHON=" + binary +
                         " before starting Hermes Studio (it then runs `" + binary +
                         " hermes_bridge.py --endpoint ...`, whose *.py argument is ignored)"));
}

} // namespace hb::app
