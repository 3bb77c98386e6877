// What the actors see of a session's agent, whichever way it is hosted:
// embedded in this process (bridge/python) or the hermes TUI in a private
// tmux server (bridge/tmux), or a worker process (bridge/worker). Every call
// may block (call them from detached actors or threads, never from the CAF
// scheduler) but start_turn and start_continued_turn of a host that
// reports_turns(), which return at once, and the getters that say so.
#pragma once

#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hb::bridge {

// A question a turn's agent asked before the daemon restarted and still
// waits on (a worker that outlived the daemon reports it when attached to).
struct waiting_question {
  uint64_t ask = 0;     // the host's number for it
  std::string kind;     // "approval", "gateway", "compression" or "clarify"
  std::string request;  // JSON, as first asked
  double timeout_s = 0; // what is left of its deadline
};

// Where a running turn reports. Implemented by the actor layer; called on
// the host's threads (hermes-agent's stream workers, the turn thread, the
// native harness's poller).
class turn_sink {
public:
  virtual ~turn_sink() = default;
  // The daemon's id of the run this turn is (a worker keeps it to name the
  // turn to a daemon that re-attaches); empty when there is none.
  virtual std::string run_id() const { return {}; }
  virtual void delta(std::string text) = 0;
  virtual void event(std::string json) = 0;
  // A host that numbers its output (a worker: each frame's `seq`) hands the
  // number along, and is told through on_committed the highest number the
  // event log holds, so that it may let go of what is written
  // (bridge/worker/FRAMES.md, `committed`). Hosts that keep nothing use the
  // plain calls above.
  virtual void numbered_delta(std::string text, uint64_t seq) { (void)seq; delta(std::move(text)); }
  virtual void numbered_event(std::string json, uint64_t seq) { (void)seq; event(std::move(json)); }
  // Deltas numbered first_seq, first_seq + 1, ... (a worker's `texts` frame).
  virtual void numbered_deltas(std::vector<std::string> texts, uint64_t first_seq) {
    for (auto& text : texts)
      numbered_delta(std::move(text), first_seq++);
  }
  virtual void on_committed(std::function<void(uint64_t seq)> told) { (void)told; }
  // True while the daemon has more of this host's output to write than it
  // wants to hold; the host then calls wait_for_room() (without any lock the
  // rest of the daemon needs, e.g. the GIL) before sending more.
  virtual bool backlogged() const { return false; }
  virtual void wait_for_room() {}
  // Block until a client answers or the deadline passes; return the answer.
  // An empty answer means the question was withdrawn (see below).
  virtual std::string ask_approval(std::string request_json, double timeout_s) = 0;
  virtual std::string ask_compression(std::string request_json, double timeout_s) = 0;
  // The agent's clarify tool asks the user a question (Hermes Studio's
  // clarify.requested); the answer text, or empty when nobody answered.
  virtual std::string ask_clarify(std::string request_json, double timeout_s) = 0;
  // The gateway path: hermes-agent waits by itself, we only announce it.
  virtual void gateway_notify(std::string request_json, double timeout_s) = 0;
  // A question asked before a restart of the daemon (waiting_question),
  // open again, blocking like the calls above; a gateway approval returns
  // at once (its agent waits by itself). The actor layer opens it again
  // under the id the log announced it with; this plain version asks anew.
  virtual std::string ask_again(const waiting_question& q) {
    if (q.kind == "gateway") {
      gateway_notify(q.request, q.timeout_s);
      return {};
    }
    if (q.kind == "compression")
      return ask_compression(q.request, q.timeout_s);
    if (q.kind == "clarify")
      return ask_clarify(q.request, q.timeout_s);
    return ask_approval(q.request, q.timeout_s);
  }
  // Questions of this run were answered elsewhere (a person at the TUI):
  // they are settled with `reason` and their askers get an empty answer.
  virtual void withdraw_questions(std::string reason) = 0;
};

// How a turn ended, its parts already JSON text. Kept apart (not one JSON
// document to parse again): a 100 MB turn's outcome is several hundred MB
// of text, and every extra copy of it was a copy the daemon held at once.
struct turn_outcome {
  std::string status = "error";        // complete, interrupted or error
  std::string result;                  // get_output's "result" as JSON text; empty for none
  std::optional<std::string> error;
  std::optional<std::string> history;  // the conversation so far, a JSON array
  int64_t message_count = 0;           // its length
  uint64_t last_seq = 0;               // a numbering host's last number for the turn (its turn_end's)
};

// A turn that ended without the agent's own outcome (it could not begin, its
// thread or its worker failed): `why` as its error and its result.
turn_outcome failed_turn(std::string why);

// How a turn begun by agent_host::start_turn reports, each call once and on
// a thread of the host's: `armed` when interrupt() would stop the turn,
// `ended` with its outcome (after `armed`, or without it when the turn
// never began).
struct turn_reports {
  std::function<void()> armed;
  std::function<void(turn_outcome)> ended;
};

class agent_host {
public:
  virtual ~agent_host() = default;
  // Clears a stale interrupt; after this returns, interrupt() stops the next turn.
  virtual void prepare_turn() = 0;
  // Runs one turn on the calling thread; never throws.
  virtual turn_outcome run_turn(const std::shared_ptr<turn_sink>& sink, const std::string& request_json) = 0;
  // True for a host whose turns run elsewhere (a worker process): it begins
  // them with start_turn and start_continued_turn, which return at once and
  // report through callbacks, and the daemon gives its turns no thread.
  // Other hosts run a turn on the calling thread (prepare_turn, steer,
  // run_turn), which the run actor gives a thread of its own.
  virtual bool reports_turns() const { return false; }
  // Clears a stale interrupt, hands `carried_steer` (steered while no turn
  // ran; may be empty) to the agent, and begins the turn; never throws (a
  // turn that cannot begin ends, with status error). Only when reports_turns().
  virtual void start_turn(std::shared_ptr<turn_sink> sink, std::string request_json, std::string carried_steer,
                          turn_reports reports) {
    (void)sink, (void)request_json, (void)carried_steer;
    turn_outcome out;
    out.error = "this agent runs its turns on the caller's thread";
    reports.ended(std::move(out));
  }
  // A host adopted with a turn already running (a worker that outlived the
  // last daemon): its output after `logged_seq` (what the event log holds)
  // goes to `sink`; returns when the turn ends; never throws. drop_turn():
  // nobody will follow that turn (it is stopped and forgotten).
  virtual turn_outcome continue_turn(const std::shared_ptr<turn_sink>& sink, uint64_t logged_seq) {
    (void)sink, (void)logged_seq;
    turn_outcome out;
    out.error = "this agent has no turn to continue";
    return out;
  }
  virtual void drop_turn() {}
  // continue_turn begun like start_turn: `ended` when it ends. Only when reports_turns().
  virtual void start_continued_turn(std::shared_ptr<turn_sink> sink, uint64_t logged_seq,
                                    std::function<void(turn_outcome)> ended) {
    (void)sink, (void)logged_seq;
    turn_outcome out;
    out.error = "this agent has no turn to continue";
    ended(std::move(out));
  }
  // The questions that adopted turn's agent still waits on, in the order
  // asked: continue_turn asks them again through the sink's ask_again.
  virtual std::vector<waiting_question> waiting_questions() const { return {}; }
  virtual void interrupt(const std::string& message_json) = 0; // throws protocol::wire_error
  // The daemon stops: end the live turn soon. An embedded turn is
  // interrupted; a native one is only let go (the TUI, which outlives the
  // daemon, finishes what it was asked).
  virtual void let_go(const std::string& message_json) { interrupt(message_json); }
  virtual bool steer(const std::string& text) = 0;             // throws protocol::wire_error
  // False once the host can run no more turns (the TUI exited): the next
  // chat builds a new one.
  virtual bool usable() const { return true; }
  // Live facts for `status` as a JSON object, or empty for none. Cheap and
  // non-blocking: the session actor calls it on the scheduler.
  virtual std::string live_status() const { return {}; }
  // Where this agent runs (the worker's key and pid) as a JSON object,
  // empty for none; `status` adds its members to the host's environment.
  // Cheap and non-blocking, like live_status().
  virtual protocol::json host_members() const { return protocol::json::object(); }
  // Ends what lives outside this process (the tmux server). Called when the
  // session is destroyed or replaced, not when it is idle-collected or the
  // daemon stops: those leave a native TUI running to re-attach to.
  virtual void close() {}
  // A named operation on this session's agent (bridge/python/bridge_ops.py:
  // titles, slash commands, model switches, goals, context estimates), with
  // a JSON object as arguments and as answer. Blocks; throws
  // protocol::wire_error with the agent's error.
  virtual std::string call(const std::string& op, const std::string& /*args_json*/) {
    throw protocol::runtime_error(op + " is not available for this session's harness");
  }
};

// An agent that outlived the daemon that built it, taken up by this one for
// its session: idle, or still running the run `live_run`.
struct adopted_agent {
  std::shared_ptr<agent_host> agent;
  std::string live_run; // empty: no turn running
};

// Operations that need a profile's agent environment but no session (MCP
// servers, skills): where they run depends on how agents are hosted.
class profile_host {
public:
  virtual ~profile_host() = default;
  // Same contract as agent_host::call.
  virtual std::string call(const std::string& profile, const std::string& op,
                           const std::string& args_json) = 0;
  // The same for an operation of session `session_id` (a slash command, a
  // goal): run where that session's agent lives, whose skills and MCP tools
  // it concerns; where it has none, as call().
  virtual std::string call_for_session(const std::string& session_id, const std::string& profile,
                                       const std::string& op, const std::string& args_json) {
    (void)session_id;
    return call(profile, op, args_json);
  }
};

} // namespace hb::bridge
