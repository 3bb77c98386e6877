// How this daemon hosts its (non-native) agents, chosen once at start-up by
// `serve --agent-host`: in worker processes running the agent's own Python
// (bridge/worker), or embedded in this process (bridge/python). The actors
// build agents, resolve gateway approvals and reach profiles through these
// functions only, so they never know which host it is.
#pragma once

#include "bridge/agent_host.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <string>

namespace hb::bridge {

namespace worker {
class worker_pool;
}

// `agent_json`: what health reports about the agent's environment (a JSON
// object); `hermes_home`: where the profiles are (absolute).
void host_agents_embedded(std::string agent_json, std::string hermes_home);
// `available`: false when no interpreter can run the agent (health is then degraded).
void host_agents_in_workers(std::shared_ptr<worker::worker_pool> pool, std::string agent_json,
                            std::string hermes_home, bool available = true);
bool agents_available();

// Refuses a profile that is not a plain name or has no directory under the
// hermes home (bridge/profile_dirs.hpp): every profile an agent or a
// profile operation is given passes here first. Throws protocol::wire_error.
void check_profile(const std::string& profile);

// Builds a session's agent; config_json receives the session's config.
// Blocks; throws protocol::wire_error (check_profile's first).
std::shared_ptr<agent_host> create_agent(const std::string& session_id, const std::string& profile,
                                         const std::string& model, const std::string& provider,
                                         std::string& config_json);

// tools.approval.resolve_gateway_approval(session_id, choice) where that
// session's agent runs: how many waiting requests it released.
// `while_holding_gil` runs with that count before the woken agent can do
// anything else, so what it records is ordered before what the agent does
// next (with 0 and why, when the answer could not be routed: the agent
// cannot be reached or its approval module failed; 0 and no reason: the
// agent no longer waited). Blocks.
// `request_id` / `token` name the request exactly (see embedded_agent.hpp).
int resolve_gateway_approval(const std::string& session_id, const std::string& choice,
                             const std::string& request_id, const std::string& token,
                             const std::function<void(int, const std::string&)>& while_holding_gil);

// Operations on a profile's agent environment, wherever its agents run.
profile_host& profiles();

// {"host": "worker"|"embedded", ...the environment..., "workers": [...]}. Cheap.
std::string agents_json();
// The same without the workers: {"host", "python", "python_version",
// "agent_version", ...}, for ping and status. Never blocks.
std::string agent_summary_json();
// Hermes Studio's broker ping reports its workers by key: {key: running}
// and {key: {running, pid, endpoint, profile, last_used_at}} (both "{}" on
// the embedded host). Never blocks on a worker.
struct studio_worker_maps {
  std::string workers = "{}";
  std::string details = "{}";
};
studio_worker_maps studio_workers();
// `status`'s "agent": the summary plus where `agent` (null: not loaded) runs.
std::string agent_status_json(const agent_host* agent);

// Agents that outlived the last daemon (worker_pool::adopt, native TUIs),
// offered at start before any session exists (each call adds to the
// offer); each session known from the log takes its own when it is made
// (at most once).
void offer_adopted_agents(std::map<std::string, adopted_agent> agents);
// The runs the agents on offer go on with.
std::set<std::string> adopted_live_runs();
std::optional<adopted_agent> take_adopted_agent(const std::string& session_id);

// Housekeeping between requests: idle and oversized workers are retired. Blocks briefly.
void collect_idle_agents();

// The daemon stops: workers are asked to exit, killed after `grace`.
void stop_agents(std::chrono::milliseconds grace);

} // namespace hb::bridge
