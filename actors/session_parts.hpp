// The session actor's insides, shared by its two files: session.cpp (chat,
// the turn's lifecycle, interrupt, destroy) and session_studio.cpp (what
// Hermes Studio asks of a session besides chat: estimates, model switches).
// Not for other actors: they talk to a session through its messages.
#pragma once

#include "actors/chat_request.hpp"
#include "actors/session.hpp"
#include "actors/studio_messages.hpp"
#include "bridge/agent_host.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hb::actors::session_parts {

using agent_ptr = std::shared_ptr<bridge::agent_host>;

struct session_state {
  std::string id;
  session_links links;
  agent_ptr agent;
  bool created = false;   // an agent was built and the session is listed
  bool busy = false;      // building the agent or running a turn
  bool destroyed = false; // dropped by the broker; lives on only to finish its run
  bool dormant = false;   // known from the log or idle-collected: listed, no agent yet
  bool history_loaded = true; // false for dormant sessions until someone needs it
  std::string run_id;     // the live run, empty when idle
  // A run whose turn returned but whose end is not committed yet: the
  // session still shows it as running, so that what `list` and `status` say
  // never runs ahead of what get_output says (the seed's order).
  std::string finishing_run;
  double created_at = 0;
  double last_used_at = 0;
  std::string config = "{}";
  std::string profile, model, provider;
  std::string harness = "embedded"; // or "native": the hermes TUI in tmux
  std::string workspace;            // where the agent's tools run (native: the TUI)
  std::optional<switch_model> pending_switch; // asked for during a turn: applied after it
  std::string history = "[]";
  int64_t message_count = 0;
  // Steers accepted while idle: clear_interrupt() before the next turn would
  // drop them, so they are handed to that turn again once it is armed.
  std::string idle_steer;
  std::shared_ptr<std::atomic<bool>> replay_stop; // the live run is a replay
  std::map<std::string, caf::response_promise> starting; // chat replies due when armed
  std::map<std::string, caf::response_promise> waiting;  // chat {wait:true} replies due at the end
  std::map<uint64_t, caf::response_promise> syncing;     // interrupt replies due when idle
  std::vector<caf::response_promise> draining;           // daemon shutdown
  uint64_t next_sync = 0;
  static inline const char* name = "session";
};

using session_actor = caf::stateful_actor<session_state>;

// Tells the broker (listing, profile gates) and the log what the session is now.
void persist(session_actor* self);

// What to do once the agent is built: `resumed` when it came back from the log.
using after_build = std::function<void(session_actor*, bool resumed, caf::response_promise&)>;

// Builds (or rebuilds, replacing the old one) the session's agent on a thread
// of its own; failures are answered on `rp`.
void build_agent(session_actor* self, agent_recipe recipe, caf::response_promise rp, after_build then);

// Switches the live agent's model in place; `why` is empty when it worked.
using switch_done = std::function<void(session_actor*, const caf::error& why)>;
void apply_switch(session_actor* self, switch_model want, bool announce, switch_done done);

void on_switch_model(session_actor* self, switch_model want, caf::response_promise rp);
void on_estimate(session_actor* self, estimate_context msg, caf::response_promise rp);

} // namespace hb::actors::session_parts
