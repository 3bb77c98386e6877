// A connection to a running daemon, found the way the daemon finds its
// endpoint: --endpoint, else HERMES_AGENT_BRIDGE_ENDPOINT, else the per-user
// default. Lines in, lines out.
#pragma once

#include <optional>
#include <string>

namespace hb::app {

class daemon_connection {
public:
  // Throws tool_error(exit_unreachable) when nothing answers there.
  explicit daemon_connection(const std::string& endpoint);
  ~daemon_connection();
  daemon_connection(const daemon_connection&) = delete;
  daemon_connection& operator=(const daemon_connection&) = delete;

  void send_line(const std::string& line);
  // The next line; nullopt once the daemon closed the connection, or when
  // `timeout_ms` (>= 0) passed without one (then `timed_out()` is true).
  std::optional<std::string> read_line(int timeout_ms = -1);
  bool timed_out() const { return timed_out_; }

private:
  int fd_ = -1;
  std::string buffer_;
  bool timed_out_ = false;
};

// One request, one answer (the seed's way).
std::string call_daemon(const std::string& endpoint, const std::string& request_line);

std::string endpoint_from(const std::string& flag);

} // namespace hb::app
