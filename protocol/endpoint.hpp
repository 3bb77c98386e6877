// Endpoints as the seed bridge spells them: ipc://PATH (unix socket) and
// tcp://HOST:PORT, with the seed's validation messages.
#pragma once

#include <string>

namespace hb::protocol {

struct endpoint {
  enum class kind { ipc, tcp } type = kind::ipc;
  std::string path; // ipc
  std::string host; // tcp
  int port = 0;     // tcp
};

// Throws std::runtime_error with the seed's message for a bad endpoint.
endpoint parse_endpoint(const std::string& text);

// A listening socket (non-blocking, close-on-exec). For ipc:// the socket is
// created 0600, a parent directory we create is 0700, a stale socket file is
// replaced, and a socket some live daemon still answers on is never touched.
// Throws std::runtime_error on failure.
int listen_on(const endpoint& ep, int backlog = 4096);

// Per user, so two users on one host never share (or unlink) a socket:
// $XDG_RUNTIME_DIR/hermes-bridge/bridge.sock, else /tmp/hermes-bridge-<uid>/bridge.sock.
std::string default_endpoint();

} // namespace hb::protocol
