// A run actor drives one chat turn. It begins the turn on its agent host
// and waits for the host's reports as messages (the host's threads, not the
// actor's, block in Python or wait for a worker); its sink turns the agent's
// callbacks into messages for the log writer and questions for the broker.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>

#include <atomic>
#include <cstdint>
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
  // The run was live when the last daemon stopped and its turn went on in a
  // worker this daemon re-attached to: it is followed, not started.
  bool continuing = false;
};

// Run -> session, in this order: an interrupt would stop the turn now
// (run_armed), the turn returned with the conversation it leaves
// (run_closing), its terminal status is committed (run_finished).
struct run_armed {
  std::string run_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_armed& x) {
  return f(caf::meta::type_name("run_armed"), x.run_id);
}

struct run_closing {
  std::string run_id;
  bool has_history = false; // false: the agent left no history to keep (the session's stays)
  std::string history;      // JSON array
  int64_t message_count = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_closing& x) {
  return f(caf::meta::type_name("run_closing"), x.run_id, x.has_history, x.history, x.message_count);
}

struct run_finished {
  std::string run_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_finished& x) {
  return f(caf::meta::type_name("run_finished"), x.run_id);
}

// Host -> run (bridge::turn_reports, from the host's threads): the turn is
// armed; the turn ended, with its outcome (bridge::turn_outcome's parts).
struct host_armed {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, host_armed&) {
  return f(caf::meta::type_name("host_armed"));
}

struct host_ended {
  std::string status;
  std::string result; // JSON text; empty: none
  bool has_error = false;
  std::string error;
  bool has_history = false;
  std::string history; // JSON array
  int64_t message_count = 0;
  uint64_t last_seq = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, host_ended& x) {
  return f(caf::meta::type_name("host_ended"), x.status, x.result, x.has_error, x.error, x.has_history, x.history,
           x.message_count, x.last_seq);
}

inline void add_run_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<run_armed>("hb::run_armed")
    .add_message_type<run_closing>("hb::run_closing")
    .add_message_type<run_finished>("hb::run_finished")
    .add_message_type<host_armed>("hb::host_armed")
    .add_message_type<host_ended>("hb::host_ended");
}

// Its actor, which ends once the run's end is committed (or refused).
caf::actor spawn_run(caf::actor_system& sys, run_spec spec);

} // namespace hb::actors
