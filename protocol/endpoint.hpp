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

// A listening socket (non-blocking, close-on-exec). For ipc:// the parent
// directory is created and a stale socket file replaced. Throws
// std::runtime_error on failure.
int listen_on(const endpoint& ep, int backlog = 4096);

} // namespace hb::protocol
