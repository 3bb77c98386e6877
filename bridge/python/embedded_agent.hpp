// The small C++ face of embedded hermes-agent sessions. pybind11 stays behind
// this header so the actor translation units never parse it. Every function
// that calls Python takes the GIL itself and blocks: call them from detached
// actors or threads, never from the CAF scheduler.
#pragma once

#include "bridge/agent_host.hpp"
#include "bridge/agent_hosting.hpp" // resolve_gateway_approval, for the broker
#include "protocol/wire_error.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace hb::bridge {

// The process's one interpreter. start() runs on the main thread before any
// actor exists; afterwards the main thread holds no GIL.
class python_runtime {
public:
  // Returns str(agent root) ("None" for a package install); throws
  // protocol::wire_error when hermes-agent cannot be found.
  // `site_dirs`: the agent's own site-packages (a venv of this same Python
  // version), put ahead of the system's so the installer's layout works.
  static std::string start(const std::string& agent_root, const std::string& hermes_home,
                           const std::vector<std::string>& site_dirs = {});
  // "3.11": the version linked into the daemon (no interpreter needed).
  static std::string version();
  // {"python", "python_version", "agent_version"} of the started interpreter
  // (bridge_profiles.environment), for ping, health and status.
  static std::string environment_json();
  // Finalizing with agent threads alive can hang: the interpreter is never
  // finalized, the daemon exits without it.
  static void release_main_thread();
  // start() failed and the daemon serves native sessions only: embedded
  // chats fail with `reason`.
  static void mark_unavailable(std::string reason);
};

// One AIAgent. Destroying it takes the GIL, so drop the last reference off
// the scheduler too.
class agent_session final : public agent_host {
public:
  // Builds the agent; config_json receives the session's config object.
  static std::shared_ptr<agent_session> create(const std::string& session_id,
                                               const std::string& profile,
                                               const std::string& model,
                                               const std::string& provider,
                                               std::string& config_json);
  ~agent_session() override;

  void prepare_turn() override;
  turn_outcome run_turn(const std::shared_ptr<turn_sink>& sink, const std::string& request_json) override;
  void interrupt(const std::string& message_json) override;
  bool steer(const std::string& text) override;
  std::string call(const std::string& op, const std::string& args_json) override;

  struct impl;

private:
  explicit agent_session(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

// Profile operations (bridge_ops.profile_call) in this process's interpreter.
class embedded_profiles final : public profile_host {
public:
  std::string call(const std::string& profile, const std::string& op,
                   const std::string& args_json) override;
};

// The embedded host's resolve_gateway_approval (see bridge/agent_hosting.hpp,
// which picks the host): answers one waiting gateway approval in this
// process, the one with the agent's `request_id` (hermes-agent 0.20+), else
// the queue entry the adapter remembers under `token`; how many it released.
// `while_holding_gil` runs with that count before the GIL is released, i.e.
// before the woken agent thread can run: what it records is ordered before
// anything the agent does next.
int embedded_resolve_gateway_approval(const std::string& session_id, const std::string& choice,
                                      const std::string& request_id, const std::string& token,
                                      const std::function<void(int, const std::string&)>& while_holding_gil);

} // namespace hb::bridge
