// A run actor drives one chat turn. It lives on its own thread because the
// turn blocks inside Python; its sink turns the agent's callbacks into
// messages for the log writer and questions for the broker.
#pragma once

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <atomic>
#include <memory>
#include <string>

namespace hb::bridge {
class agent_host;
}

namespace hb::actors {

// A chat with "replay": a recorded run streamed back instead of an agent turn.
struct replay_spec {
  std::string run_id; // empty: an ordinary agent turn
  double speed = 1.0;
  std::string db_path;
  std::shared_ptr<std::atomic<bool>> stop; // set by interrupt
};

struct run_spec {
  std::string run_id;
  std::string session_id;
  std::string request; // the chat request, JSON
  std::string carried_steer; // steered while idle: given to this turn once armed
  std::shared_ptr<bridge::agent_host> agent;
  caf::actor session;
  caf::actor broker;
  caf::actor writer;
  replay_spec replay;
};

// Tells the session `armed` once an interrupt would stop the turn, `closing`
// when the turn has returned, and `run_done` once the terminal status is
// committed.
void spawn_run(caf::actor_system& sys, run_spec spec);

} // namespace hb::actors
