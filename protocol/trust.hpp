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

// `path`, if it exists, and every directory directly in it.
void require_trusted_tree(const std::string& path, const std::string& what);

// Creates `path` and its missing parents 0700; checks each directory it
// created, and `path` itself, with require_trusted_dir.
void make_trusted_dir(const std::string& path, const std::string& what);

} // namespace hb::protocol
