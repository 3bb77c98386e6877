// serve --agent-host worker: its flags, its runtime directory, and the pool
// of agent worker processes it sets up before the daemon serves.
#pragma once

#include "actors/vocabulary.hpp"
#include "bridge/agent_env.hpp"

#include <CLI/CLI.hpp>

#include <string>

namespace hb::app {

struct worker_flags {
  std::string per_profile = "auto"; // or a fixed count (docs/workers.md)
  double idle_timeout_s = 300;
  double max_rss_mb = 0;
  size_t max_workers = 16;
  double heartbeat_s = 2;
  double unresponsive_s = 10;
};

void add_worker_flags(CLI::App& serve, worker_flags& flags);

// $XDG_RUNTIME_DIR/hermes-bridge/workers, else $TMPDIR (or /tmp)/hermes-bridge-<uid>/workers.
std::string default_worker_dir();

// Checks (and makes) the runtime directory, chooses the interpreter, starts
// the pool. Returns non-zero, having said why, when the daemon must not start.
int host_in_workers(const worker_flags& flags, const std::string& home, const bridge::agent_env& env,
                    actors::daemon_settings& settings);

} // namespace hb::app
