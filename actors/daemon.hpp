// Wires the actor system together and runs it until `shutdown`, SIGTERM or
// SIGINT, then drains: stop accepting, interrupt live runs, flush the log.
#pragma once

#include "actors/vocabulary.hpp"

#include <functional>
#include <memory>
#include <vector>

namespace hb::storage {
class log_writer;
struct session_row;
}

namespace hb::actors {

// A successor has the listening socket (app/handover.hpp): serve() stops
// accepting, answers what it was asked, flushes the log and exits, leaving
// the workers running for the successor. Callable from any thread.
void request_handover();

// Returns the process exit code. `announce_ready` runs once the socket is served.
int serve(const daemon_settings& settings, int listen_fd, std::shared_ptr<storage::log_writer> log,
          const std::vector<storage::session_row>& dormant, const std::function<void()>& announce_ready);

} // namespace hb::actors
