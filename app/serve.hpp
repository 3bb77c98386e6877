// serve's start-up sequence: the log level, the event log opened (and
// recovered), the agents hosted, the socket bound, the daemon settings made
// from the flags, then the actors serve until stopped.
#pragma once

#include "app/serve_flags.hpp"

namespace hb::app {

// Returns the exit code (1, having said why on stderr, when it cannot start).
int run_serve_command(const serve_flags& flags);

} // namespace hb::app
