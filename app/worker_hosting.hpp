// serve --agent-host worker: its flags, its runtime directory, and the pool
// of agent worker processes it sets up before the daemon serves.
#pragma once

#include "actors/vocabulary.hpp"
#include "bridge/agent_env.hpp"
#include "bridge/worker/worker_attach.hpp"
#include "storage/log_startup.hpp"

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
  double orphan_timeout_s = 180;
};

void add_worker_flags(CLI::App& serve, worker_flags& flags);

// $XDG_RUNTIME_DIR/hermes-bridge/workers, else $TMPDIR (or /tmp)/hermes-bridge-<uid>/workers.
std::string default_worker_dir();

// Before the event log is recovered: the workers an earlier daemon left
// running, attached to (bridge/worker/worker_attach.hpp). Throws
// std::runtime_error when the worker directory cannot be trusted.
// `db_path`: this daemon's event log; only workers of a daemon of the same
// log are taken over.
std::vector<bridge::worker::found_worker> attach_to_surviving_workers(const std::string& db_path);

// Checks (and makes) the runtime directory, chooses the interpreter, starts
// the pool, takes `survivors` into it (their sessions' agents and the runs
// `log` left running for them; runs left running that no survivor took are
// recovered by the caller, as any other). Returns non-zero, having said why, when the
// daemon must not start.
int host_in_workers(const worker_flags& flags, const std::string& home, const bridge::agent_env& env,
                    actors::daemon_settings& settings, std::vector<bridge::worker::found_worker> survivors,
                    storage::opened_log& log);

} // namespace hb::app
