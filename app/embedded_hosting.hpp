// serve --agent-host embedded: hermes-agent in this process, on the Python
// linked into it, borrowing the agent venv's site-packages when that venv is
// of the same Python version.
#pragma once

#include "actors/vocabulary.hpp"
#include "bridge/agent_env.hpp"

#include <string>

namespace hb::app {

// Starts the embedded interpreter and hosts the agents on it. `agent_root`
// is --agent-root, used when the search found no root. With `native_default`
// (--harness native) a daemon whose agent cannot start still serves, its
// embedded chats failing with the reason. Returns non-zero, having said why,
// when the daemon must not start.
int host_embedded(const std::string& agent_root, bool native_default, const std::string& home,
                  const bridge::agent_env& env, actors::daemon_settings& settings);

} // namespace hb::app
