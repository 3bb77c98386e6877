// Zero-downtime upgrade (docs/configuration.md, "Upgrading"): a daemon of
// an event log hands its listening socket to a successor started with
// `serve --take-over`, stops accepting, answers what it was asked and exits
// without stopping its workers; the successor then recovers the log,
// attaches to the workers and accepts on the same socket. Connections that
// arrive meanwhile wait in the socket's backlog: none is refused.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace hb::app {

// Where the daemon serving the event log `db_path` waits for its successor:
// a socket in the private directory `dir`, named after the log.
std::string handover_socket_path(const std::string& dir, const std::string& db_path);

// The running daemon's side. Listens at `path` (0600) on a thread of its
// own. The first peer of this user that asks gets `listen_fd` and
// `handed_over` is called; the connection then stays open until this process
// exits, which is how the successor learns that the log and the workers are
// free. The socket file goes with the offer (or the hand-over).
class handover_offer {
public:
  // Throws std::runtime_error when it cannot listen at `path`.
  handover_offer(std::string path, int listen_fd, std::function<void()> handed_over);
  ~handover_offer();
  handover_offer(const handover_offer&) = delete;
  handover_offer& operator=(const handover_offer&) = delete;

  struct state;

private:
  std::shared_ptr<state> state_;
};

// The successor's side: the listening socket of the daemon that waits at
// `path`, returned once that daemon has exited; nullopt when no daemon
// waits there. Throws std::runtime_error when one answers but does not hand
// over or does not exit within `deadline`.
std::optional<int> take_over(const std::string& path, std::chrono::milliseconds deadline);

// The path a unix listening socket is bound to; "" for another kind.
std::string unix_path_of(int listen_fd);

} // namespace hb::app
