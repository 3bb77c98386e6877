// The session actor's insides, shared by its files: session.cpp (its
// phases as behaviours), session_turns.cpp (chat: the agent, the run, its
// end) and session_studio.cpp (estimates, model switches). Not for other
// actors: they talk to a session through its messages (session_messages.hpp).
#pragma once

#include "actors/chat_request.hpp"
#include "actors/run.hpp"
#include "actors/session.hpp"
#include "actors/session_messages.hpp"
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

// Where a session is in its life (actors/README.md draws the transitions):
//   fresh      spawned for a first chat; not listed, no agent
//   dormant    known from the log or idle-collected: listed, no agent; the
//              next chat rebuilds it as it was and resumes its history
//   idle       listed, with an agent (which may have become unusable: a TUI
//              that exited, a worker that died; the next chat rebuilds it)
//   starting   a chat is on its way to a run: the agent being built, the
//              history read, the run's row written
//   running    a run is live
//   destroyed  dropped by the broker; lives on only to end what it started
enum class phase : uint8_t { fresh, dormant, idle, starting, running, destroyed };

const char* to_string(phase p);

// An empty conversation ("[]"), one for every session that has no other.
std::shared_ptr<const std::string> no_history();

struct session_state {
  std::string id;
  session_links_ptr links;
  agent_ptr agent;
  phase now = phase::fresh;
  // A start that fails returns here (starting); what a destroyed session
  // was doing (destroyed): dormant and idle ones quit at once.
  phase before = phase::fresh;
  std::string run_id;     // the live run, empty when none
  // A run whose turn returned but whose end is not committed yet: the
  // session still shows it as running, so that what `list` and `status` say
  // never runs ahead of what get_output says (the seed's order).
  std::string finishing_run;
  bool listed = false;    // `list` shows it: it had an agent, or the log knows it
  session_activity_slot activity; // what the broker counts of it (announce())
  double created_at = 0;
  double last_used_at = 0;
  std::string config = "{}";
  std::string profile, model, provider;
  std::string harness = "embedded"; // or "native": the hermes TUI in tmux
  std::string workspace;            // where the agent's tools run (native: the TUI)
  std::unique_ptr<switch_model> pending_switch; // asked for during a turn: applied after it (rare: not inline)
  // Shared with the rows sent to the log writer, not copied: a long
  // conversation is held once. Null: in the log, not read yet.
  std::shared_ptr<const std::string> history = no_history();
  // The log's row lacks `history` as it is here: the next persist writes it.
  // Otherwise the row keeps its stored history, so a turn's start (and any
  // other change of the row alone) does not copy and rewrite a long
  // conversation.
  bool history_unsaved = true;
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

  // Building an agent or running a turn: no other chat now.
  bool busy() const {
    phase doing = now == phase::destroyed ? before : now;
    return doing == phase::starting || doing == phase::running;
  }
  bool has_live_agent() const { return agent && agent->usable() && now != phase::dormant; }

  static inline const char* name = "session";
};

using session_actor = caf::stateful_actor<session_state>;

// -- session.cpp ----------------------------------------------------------------
// Switches to `p`'s behaviour.
void enter(session_actor* self, phase p);
// The turn is over (or never began): idle with an agent, dormant without,
// fresh when it never got listed; a destroyed session ends now.
void settle(session_actor* self);
// Tells the broker (listing, profile gates) and the log what the session is now.
void persist(session_actor* self);
// persist's two halves: the broker's (the activity table), and the log's (the session's row).
void announce(session_actor* self);
void save_row(session_actor* self);
// The session was destroyed and nothing it started is left: it goes.
void finish_destroy(session_actor* self);
session_view view_of(const session_state& st);

// -- session_turns.cpp ----------------------------------------------------------
void on_chat(session_actor* self, chat_request chat, caf::response_promise rp);
void on_armed(session_actor* self, const std::string& run_id);
void on_closing(session_actor* self, run_closing& closing);
void on_run_done(session_actor* self, const std::string& run_id);
void answer_waiting(session_actor* self, const std::string& run_id);
// The session's profile, model, provider, harness and workspace as `config` says.
void adopt_config(session_state& st, const std::string& config);
// A session known from the log whose agent outlived the last daemon (a
// worker re-attached at start): idle with that agent, or running the run
// it still runs. Called while the session is made (its phase is set, not entered).
void take_adopted(session_actor* self, bridge::adopted_agent adopted);

// -- session_calls.cpp ----------------------------------------------------------
void on_interrupt(session_actor* self, const std::string& message, caf::response_promise rp);
void on_steer(session_actor* self, const std::string& text, caf::response_promise rp);
void on_history(session_actor* self, caf::response_promise rp);
// Stops the live turn, if any, on the agent's own terms and the broker's.
void stop_turn(session_actor* self, const std::string& why, bool daemon_stops = false);
// Frees the agent (`close`: also what it runs outside the daemon).
void release_agent(session_actor* self, bool close = false);
// "event log <what>: <why>", a failure of ours.
caf::error log_failure(const char* what, const caf::error& err);

// -- session_turns.cpp, the agent ------------------------------------------------
// What to do once the agent is built: `resumed` when it came back from the log.
using after_build = std::function<void(session_actor*, bool resumed, caf::response_promise&)>;
// Builds (or rebuilds, replacing the old one) the session's agent on a thread
// of its own; failures are answered on `rp`.
void build_agent(session_actor* self, agent_recipe recipe, caf::response_promise rp, after_build then);
// A start failed: the client hears why, the session goes back to where it was.
void fail_start(session_actor* self, caf::response_promise& rp, const caf::error& why);

// -- session_studio.cpp ---------------------------------------------------------
// Switches the live agent's model in place; `why` is empty when it worked.
using switch_done = std::function<void(session_actor*, const caf::error& why)>;
void apply_switch(session_actor* self, switch_model want, bool announce, switch_done done);
void on_switch_model(session_actor* self, switch_model want, caf::response_promise rp);
void on_estimate(session_actor* self, estimate_context msg, caf::response_promise rp);

} // namespace hb::actors::session_parts
