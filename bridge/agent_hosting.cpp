#include "bridge/agent_hosting.hpp"

#include "bridge/profile_dirs.hpp"
#include "bridge/python/embedded_agent.hpp"
#include "bridge/worker/worker_pool.hpp"

namespace hb::bridge {

namespace {
// Set once in main() before any actor exists, read-only afterwards.
struct hosting {
  std::shared_ptr<worker::worker_pool> pool; // null: embedded
  std::string agent_json = "{}";
  std::string hermes_home;
  bool available = true;
};
hosting& the_host() {
  static hosting h;
  return h;
}
} // namespace

void host_agents_embedded(std::string agent_json, std::string hermes_home) {
  the_host().pool.reset();
  the_host().agent_json = std::move(agent_json);
  the_host().hermes_home = std::move(hermes_home);
  the_host().available = true;
}

void host_agents_in_workers(std::shared_ptr<worker::worker_pool> pool, std::string agent_json,
                            std::string hermes_home, bool available) {
  the_host().pool = std::move(pool);
  the_host().agent_json = std::move(agent_json);
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
  const auto& h = the_host();
  // {"host": ..., <the environment's fields>}
  std::string inner = h.agent_json.size() > 2 ? h.agent_json.substr(1, h.agent_json.size() - 2) : std::string();
  std::string out = std::string("{\"host\": \"") + (h.pool ? "worker" : "embedded") + "\"";
  if (!inner.empty())
    out += ", " + inner;
  return out + "}";
}

std::string agents_json() {
  const auto& h = the_host();
  std::string out = agent_summary_json();
  if (!h.pool)
    return out;
  out.pop_back();
  return out + ", \"workers\": " + h.pool->health_json() + "}";
}

std::string agent_status_json(const agent_host* agent) {
  std::string out = agent_summary_json();
  std::string members = agent ? agent->host_members() : std::string();
  out.pop_back();
  return out + (members.empty() ? "" : ", " + members) + ", \"loaded\": " + (agent ? "true" : "false") + "}";
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
