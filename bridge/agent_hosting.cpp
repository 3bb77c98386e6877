#include "bridge/agent_hosting.hpp"

#include "bridge/profile_dirs.hpp"
#include "bridge/python/embedded_agent.hpp"
#include "bridge/worker/worker_pool.hpp"
#include "protocol/json_update.hpp"

#include <mutex>

namespace hb::bridge {

namespace {
// Set once in main() before any actor exists, read-only afterwards.
struct hosting {
  std::shared_ptr<worker::worker_pool> pool; // null: embedded
  protocol::json agent = protocol::json::object(); // the agent's environment
  std::string summary = R"({"host": "embedded"})"; // agent_summary_json(): ping asks for it on every call
  std::string hermes_home;
  bool available = true;
};
hosting& the_host() {
  static hosting h;
  return h;
}

// Offered before the broker makes its sessions, taken as each is made (on
// scheduler threads): hence the lock.
std::mutex adopted_mu;
std::map<std::string, adopted_agent> adopted; // guarded by adopted_mu
} // namespace

void offer_adopted_agents(std::map<std::string, adopted_agent> agents) {
  std::lock_guard<std::mutex> lock(adopted_mu);
  for (auto& [session, agent] : agents)
    adopted.insert_or_assign(session, std::move(agent));
}

std::set<std::string> adopted_live_runs() {
  std::lock_guard<std::mutex> lock(adopted_mu);
  std::set<std::string> runs;
  for (const auto& [_, agent] : adopted)
    if (!agent.live_run.empty())
      runs.insert(agent.live_run);
  return runs;
}

std::optional<adopted_agent> take_adopted_agent(const std::string& session_id) {
  std::lock_guard<std::mutex> lock(adopted_mu);
  auto it = adopted.find(session_id);
  if (it == adopted.end())
    return std::nullopt;
  adopted_agent out = std::move(it->second);
  adopted.erase(it);
  return out;
}

namespace {

protocol::json environment_of(const std::string& agent_json) {
  auto doc = protocol::json::parse(agent_json, nullptr, false);
  return doc.is_object() ? doc : protocol::json::object();
}

// {"host": ..., <the environment's members>}
protocol::json agent_summary() {
  const auto& h = the_host();
  protocol::json out;
  out["host"] = h.pool ? "worker" : "embedded";
  protocol::update_from(out, h.agent);
  return out;
}

} // namespace

void host_agents_embedded(std::string agent_json, std::string hermes_home) {
  the_host().pool.reset();
  the_host().agent = environment_of(agent_json);
  the_host().summary = protocol::dumps(agent_summary());
  the_host().hermes_home = std::move(hermes_home);
  the_host().available = true;
}

void host_agents_in_workers(std::shared_ptr<worker::worker_pool> pool, std::string agent_json,
                            std::string hermes_home, bool available) {
  the_host().pool = std::move(pool);
  the_host().agent = environment_of(agent_json);
  the_host().summary = protocol::dumps(agent_summary());
  the_host().hermes_home = std::move(hermes_home);
  the_host().available = available;
}

bool agents_available() {
  return the_host().available;
}

void check_profile(const std::string& profile) {
  check_profile_exists(the_host().hermes_home, profile);
}

std::shared_ptr<agent_host> create_agent(const std::string& session_id, const std::string& profile,
                                         const std::string& model, const std::string& provider,
                                         std::string& config_json) {
  check_profile(profile); // before a worker is started for it
  if (auto& pool = the_host().pool)
    return pool->create_session(session_id, profile, model, provider, config_json);
  return agent_session::create(session_id, profile, model, provider, config_json);
}

int resolve_gateway_approval(const std::string& session_id, const std::string& choice,
                             const std::string& request_id, const std::string& token,
                             const std::function<void(int, const std::string&)>& while_holding_gil) {
  if (auto& pool = the_host().pool)
    return pool->resolve_gateway(session_id, choice, request_id, token, while_holding_gil);
  return embedded_resolve_gateway_approval(session_id, choice, request_id, token, while_holding_gil);
}

profile_host& profiles() {
  static embedded_profiles embedded;
  if (auto& pool = the_host().pool)
    return *pool;
  return embedded;
}

std::string agent_summary_json() {
  return the_host().summary;
}

std::string agents_json() {
  protocol::json out = agent_summary();
  if (const auto& pool = the_host().pool)
    out["workers"] = protocol::json::parse(pool->health_json(), nullptr, false);
  return protocol::dumps(out);
}

std::string agent_status_json(const agent_host* agent) {
  protocol::json out = agent_summary();
  if (agent)
    protocol::update_from(out, agent->host_members());
  out["loaded"] = agent != nullptr;
  return protocol::dumps(out);
}

studio_worker_maps studio_workers() {
  if (auto& pool = the_host().pool)
    return pool->studio_workers();
  return {};
}

void collect_idle_agents() {
  if (auto& pool = the_host().pool)
    pool->collect_idle();
}

void stop_agents(std::chrono::milliseconds grace) {
  if (auto& pool = the_host().pool)
    pool->stop_all(grace);
}

} // namespace hb::bridge
