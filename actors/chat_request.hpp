// A chat request read and checked once, where it arrives: which agent it
// wants (a change of profile, model, provider, harness or workspace replaces
// the session's agent, as in the seed), how the run is to go, and what the
// agent is given for its turn. The session actor decides what to do with it.
#pragma once

#include "protocol/json_text.hpp"

#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>

#include <string>

namespace hb::actors {

// What a session's agent is built from. Empty fields: as the session has it
// (an empty harness: the session's, or the daemon's default for a new one).
struct agent_recipe {
  std::string profile, model, provider;
  std::string harness;   // "embedded", "native" or empty
  std::string workspace; // the tools' (native: the TUI's) directory; resolved to a real path
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_recipe& x) {
  return f(caf::meta::type_name("agent_recipe"), x.profile, x.model, x.provider, x.harness, x.workspace);
}

// What the agent reads for its turn. The client's request goes on as it was
// sent (the agent reads fields the daemon knows nothing of), less the two
// members the session decides: the workspace and the conversation so far.
struct turn_input {
  std::string fields;       // the request object, JSON text, without those two members
  std::string history;      // the client's conversation_history (JSON text); empty: it sent none
  std::string message_text; // the message as text (the native TUI's command check reads it)
  bool tui_command = false; // `!cmd` and `/cmd` are meant for the TUI itself
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, turn_input& x) {
  return f(caf::meta::type_name("turn_input"), x.fields, x.history, x.message_text, x.tui_command);
}

// The agent's request: the client's fields with the session's workspace and
// history put in (each left out when empty). The one place it is assembled.
std::string agent_request(const turn_input& turn, const std::string& workspace, const std::string& history);

struct chat_plan {
  std::string user_message; // its message (JSON text) for the log; empty for a replay
  bool wait = false;        // answer with the get_result shape once the run ends
  double timeout = 0;       // for wait; 0: none
  std::string replay;       // a recorded run to stream back instead of a turn
  double replay_speed = 1.0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, chat_plan& x) {
  return f(caf::meta::type_name("chat_plan"), x.user_message, x.wait, x.timeout, x.replay, x.replay_speed);
}

struct chat_request {
  std::string session_id; // stripped; empty: a new session
  agent_recipe recipe;
  chat_plan plan;
  turn_input turn;
  // A field the session refuses, but only after "already running": a busy
  // session answers that first, as the seed does.
  caf::error invalid;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, chat_request& x) {
  return f(caf::meta::type_name("chat_request"), x.session_id, x.recipe, x.plan, x.turn, x.invalid);
}

// Throws protocol::wire_error for what is refused before any session is
// asked (a history or message of the wrong type); a field its session would
// refuse goes into `invalid`.
chat_request read_chat(const protocol::json& req);

// The recipe fields of a request that builds an agent without a chat
// (context_estimate): as read_chat reads them; throws protocol::wire_error.
agent_recipe read_recipe(const protocol::json& req);

// The config a session gets when a replay creates it: there is no agent.
std::string replay_session_config(const std::string& session_id);

// A stored config marked as resumed with `message_count` messages.
std::string resumed_config(const std::string& config, int64_t message_count);

} // namespace hb::actors
