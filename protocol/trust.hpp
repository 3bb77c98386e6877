// What the daemon trusts before it serves: who can reach its listening
// socket (decided by the address the socket is bound to, never by how a
// host name is spelled), and which directories may hold its sockets (one
// another user can write to lets that user replace a socket with their own).
#pragma once

#include <string>

namespace hb::protocol {

enum class reach { unix_socket, loopback, network };

struct listener_reach {
  reach who = reach::network;
  std::string address; // as bound: "127.0.0.1:18765", "[::1]:80", a unix path
};

// From getsockname(): 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104 are
// loopback; anything else on TCP (0.0.0.0 and :: included) is the network.
listener_reach reach_of(int listen_fd);

// Throws std::runtime_error naming `path` unless it is a directory owned
// by this user (or root) and writable by nobody else. A root-owned
// directory with the sticky bit (/tmp) passes too: there only a file's
// owner can remove or rename it, so nobody can swap the socket.
// `what` says what the directory is for, in the message.
void require_trusted_dir(const std::string& path, const std::string& what);

// Every directory of `path` that exists, from the root down, passes
// require_trusted_dir: a directory another user controls anywhere on the way
// lets that user swap what lies below it (a root-owned sticky /tmp passes,
// a /tmp/hermes-bridge-<uid> someone else made first does not). A symlink on
// the way must belong to this user or root, and what it points to is
// checked the same way. `path` is made absolute against the current directory.
void require_trusted_path(const std::string& path, const std::string& what);

// `path`'s existing directories (require_trusted_path) and every directory
// directly in `path`.
void require_trusted_tree(const std::string& path, const std::string& what);

// Creates `path` and its missing parents 0700, and checks every directory
// on it, pre-existing or made here, with require_trusted_path.
void make_trusted_dir(const std::string& path, const std::string& what);

} // namespace hb::protocol
