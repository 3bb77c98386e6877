// The small C++ face of embedded hermes-agent sessions. pybind11 stays behind
// this header so the actor translation units never parse it. Every function
// that calls Python takes the GIL itself and blocks: call them from detached
// actors or threads, never from the CAF scheduler.
#pragma once

#include "protocol/wire_error.hpp"

#include <functional>
#include <memory>
#include <string>

namespace hb::bridge {

// Where a running turn reports. Implemented by the actor layer; called on
// hermes-agent's threads (stream workers, the turn thread) without the GIL.
class turn_sink {
public:
  virtual ~turn_sink() = default;
  virtual void delta(std::string text) = 0;
  virtual void event(std::string json) = 0;
  // Block until a client answers or the deadline passes; return the answer.
  virtual std::string ask_approval(std::string request_json, double timeout_s) = 0;
  virtual std::string ask_compression(std::string request_json, double timeout_s) = 0;
  // The gateway path: hermes-agent waits by itself, we only announce it.
  virtual void gateway_notify(std::string request_json, double timeout_s) = 0;
};

// The process's one interpreter. start() runs on the main thread before any
// actor exists; afterwards the main thread holds no GIL.
class python_runtime {
public:
  // Returns str(agent root) ("None" for a package install); throws
  // protocol::wire_error when hermes-agent cannot be found.
  static std::string start(const std::string& agent_root, const std::string& hermes_home);
  // Finalizing with agent threads alive can hang: the interpreter is never
  // finalized, the daemon exits without it.
  static void release_main_thread();
};

// One AIAgent. Destroying it takes the GIL, so drop the last reference off
// the scheduler too.
class agent_session {
public:
  // Builds the agent; config_json receives the session's config object.
  static std::shared_ptr<agent_session> create(const std::string& session_id,
                                               const std::string& profile,
                                               const std::string& model,
                                               const std::string& provider,
                                               std::string& config_json);
  ~agent_session();

  // Clears a stale interrupt; after this returns, interrupt() stops the next turn.
  void prepare_turn();
  // Runs one turn on the calling thread. Returns the adapter's outcome JSON
  // ({status, result, error, history}); never throws.
  std::string run_turn(const std::shared_ptr<turn_sink>& sink, const std::string& request_json);
  void interrupt(const std::string& message_json); // throws protocol::wire_error
  bool steer(const std::string& text);             // throws protocol::wire_error

  struct impl;

private:
  explicit agent_session(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

// tools.approval.resolve_gateway_approval(session_id, choice): how many
// waiting requests it released. `while_holding_gil` runs with that count
// before the GIL is released, i.e. before the woken agent thread can run:
// what it records is ordered before anything the agent does next.
int resolve_gateway_approval(const std::string& session_id, const std::string& choice,
                             const std::function<void(int)>& while_holding_gil);

} // namespace hb::bridge
