// The daemon's open-file limit and the connection cap that fits under it.
// A cap above what the process may open is no cap: accept() fails with
// EMFILE before the cap is reached, and the client that should have been
// told "too many connections" hears nothing.
#pragma once

#include <cstddef>

namespace hb::app {

struct connection_budget {
  size_t max_connections = 0; // what the daemon will serve
  size_t open_file_limit = 0; // RLIMIT_NOFILE after raising it
  bool lowered = false;       // the cap asked for did not fit
};

// Raises the soft RLIMIT_NOFILE to the hard limit, then keeps `wanted` far
// enough below it for the files the daemon itself opens (log readers,
// agents and their tools, tmux clients, a connection being refused).
// Throws std::runtime_error when the limit leaves no room to serve.
connection_budget fit_connections(size_t wanted);

} // namespace hb::app
