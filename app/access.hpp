// Who may talk to the daemon: the listening socket it serves (its own, or
// one inherited from systemd socket activation) and the client token.
#pragma once

#include <string>

namespace hb::app {

// A listening socket passed by systemd (LISTEN_PID/LISTEN_FDS), or -1.
// Throws std::runtime_error when LISTEN_FDS names something else.
int inherited_listener();

// The rule for any listening socket, the daemon's own or systemd's: TCP
// not bound to loopback needs a token (throws std::runtime_error naming the
// address); TCP on loopback without one is served with a warning.
void check_listener_reach(int listen_fd, bool inherited, bool has_token);

// The token in `path`, surrounding whitespace removed. Throws
// std::runtime_error when it is unreadable, empty, or readable by others.
std::string read_token_file(const std::string& path);

} // namespace hb::app
