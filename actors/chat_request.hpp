// A chat request read and checked before its session acts on it: which agent
// it wants (a change of profile, model, provider, harness or workspace
// replaces the session's agent, as in the seed) and how the run is to go.
// No CAF here: the session actor decides what to do with it.
#pragma once

#include <string>

namespace hb::actors {

// What a session's agent is built from. Empty fields: as the session has it.
struct agent_recipe {
  std::string profile, model, provider;
  std::string harness;   // "embedded" or "native"
  std::string workspace; // the tools' (native: the TUI's) directory; resolved to a real path
};

struct chat_plan {
  std::string request;  // the line as the client sent it: the agent reads it too
  std::string user_message; // its message (JSON text) for the log; empty for a replay
  bool wait = false;    // answer with the get_result shape once the run ends
  double timeout = 0;   // for wait; 0: none
  std::string replay;   // a recorded run to stream back instead of a turn
  double replay_speed = 1.0;
};

struct chat_request {
  agent_recipe recipe;
  chat_plan plan;
};

// `harness_if_unset`: the session's harness, or the daemon's default for a
// new session. Throws protocol::wire_error (ValueError and the like, as the
// seed would raise them) for a request it cannot run.
chat_request read_chat(const std::string& request_line, const std::string& harness_if_unset);

// The config a session gets when a replay creates it: there is no agent.
std::string replay_session_config(const std::string& session_id);

// A stored config marked as resumed with `message_count` messages.
std::string resumed_config(const std::string& config, int64_t message_count);

} // namespace hb::actors
