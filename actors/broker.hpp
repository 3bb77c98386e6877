// The socket face of the daemon: accepts connections, frames and parses
// requests, routes them to sessions and log readers, and writes each answer
// back on its own connection. It also holds the open questions (approvals,
// compression requests) between the agent that asks and the client that
// answers, and answers them itself when their deadline passes.
#pragma once

#include "actors/vocabulary.hpp"
#include "bridge/agent_host.hpp"
#include "storage/finished_runs.hpp"
#include "storage/log_writer.hpp"

#include <caf/actor.hpp>

#include <functional>
#include <memory>
#include <vector>

namespace hb::actors {

struct broker_links {
  caf::actor writer;
  std::vector<caf::actor> readers;
  // Finished runs in memory: their tail reads are answered without a hop.
  std::shared_ptr<storage::finished_run_cache> finished;
  std::function<void()> request_stop; // the `shutdown` action
};

// Sessions the event log knows from before this start, served as dormant.
using known_sessions = std::vector<storage::session_row>;

caf::actor spawn_broker(caf::actor_system& sys, int listen_fd,
                        std::shared_ptr<const daemon_settings> settings, broker_links links,
                        const known_sessions& dormant);

} // namespace hb::actors
