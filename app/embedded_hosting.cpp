#include "app/embedded_hosting.hpp"

#include "actors/daemon_log.hpp"
#include "bridge/agent_hosting.hpp"
#include "bridge/python/embedded_agent.hpp"
#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

#include <filesystem>
#include <vector>

namespace hb::app {

using actors::log_event;
using actors::log_level;

namespace {

// The agent's venv (the installer's layout) lends the embedded interpreter
// its site-packages when it is of the same Python version; another version
// cannot be loaded into this process at all.
std::vector<std::string> embedded_site_dirs(const bridge::agent_env& env) {
  std::vector<std::string> dirs;
  if (!env.agent_root)
    return dirs;
  for (const auto& python : env.interpreters) {
    if (python.source != "venv" && python.source != ".venv")
      continue;
    auto probe = bridge::probe_interpreter(python, env.agent_root);
    if (!probe.ran)
      continue;
    std::string mine = bridge::python_runtime::version();
    if (probe.version.rfind(mine + ".", 0) != 0 && probe.version != mine)
      throw protocol::runtime_error(
        "the agent's environment " + python.display() + " is Python " + probe.version +
        ", but the embedded host runs Python " + mine + "; use --agent-host worker");
    std::string venv = std::filesystem::path(python.argv[0]).parent_path().parent_path().string();
    std::string site = venv + "/lib/python" + mine + "/site-packages";
    if (std::filesystem::is_directory(site))
      dirs.push_back(site);
    break; // the first venv interpreter is the agent's
  }
  return dirs;
}

} // namespace

int host_embedded(const std::string& agent_root, bool native_default, const std::string& home,
                  const bridge::agent_env& env, actors::daemon_settings& settings) {
  bool started = false;
  try {
    auto site_dirs = embedded_site_dirs(env);
    settings.agent_root = bridge::python_runtime::start(env.agent_root.value_or(agent_root), home, site_dirs);
    started = true;
  } catch (const protocol::wire_error& e) {
    // A daemon that hosts the TUI needs no embedded hermes-agent; embedded
    // chats then fail with this reason instead.
    if (!native_default) {
      log_event(log_level::error, "daemon.start_failed", e.type + ": " + e.what());
      return 1;
    }
    bridge::python_runtime::mark_unavailable(e.type + ": " + e.what());
    settings.agent_root = "None";
    log_event(log_level::warn, "agent.unavailable", "embedded sessions are disabled", {{"reason", e.what()}});
  }
  std::string environment = protocol::object_writer{}
                              .str("python", "/usr/bin/python3")
                              .str("python_version", bridge::python_runtime::version())
                              .null("agent_version")
                              .finish();
  if (started) {
    try {
      environment = bridge::python_runtime::environment_json();
    } catch (const protocol::wire_error& e) {
      log_event(log_level::warn, "agent.environment", "cannot describe the embedded interpreter", {{"reason", e.what()}});
    }
  }
  bridge::python_runtime::release_main_thread();
  bridge::host_agents_embedded(std::move(environment), home);
  return 0;
}

} // namespace hb::app
