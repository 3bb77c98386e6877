// The socket face of the daemon: accepts connections, frames and parses
// requests, routes them to sessions and log readers, and writes each answer
// back on its own connection. Questions an agent asks (approvals, clarify,
// compression) pass through it to the questions actor (questions.hpp), and
// clients' answers to them likewise.
#pragma once

#include "actors/vocabulary.hpp"
#include "bridge/agent_host.hpp"
#include "storage/finished_runs.hpp"
#include "storage/log_writer.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>

#include <functional>
#include <memory>
#include <vector>

namespace hb::actors {

// main -> broker: stop accepting, drain the sessions; answered true when done.
struct broker_stop {
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, broker_stop&) {
  return f(caf::meta::type_name("broker_stop"));
}

// Broker -> itself: collect idle sessions (every --gc-interval-s).
struct idle_sweep_due {
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, idle_sweep_due&) {
  return f(caf::meta::type_name("idle_sweep_due"));
}

// Broker -> itself: look for connections past their deadlines.
struct connection_sweep_due {
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, connection_sweep_due&) {
  return f(caf::meta::type_name("connection_sweep_due"));
}

// Broker -> itself: a long-poll's wait_ms is over.
struct poll_due {
  uint64_t watcher = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, poll_due& x) {
  return f(caf::meta::type_name("poll_due"), x.watcher);
}

inline void add_broker_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<broker_stop>("hb::broker_stop")
    .add_message_type<idle_sweep_due>("hb::idle_sweep_due")
    .add_message_type<connection_sweep_due>("hb::connection_sweep_due")
    .add_message_type<poll_due>("hb::poll_due");
}

struct broker_links {
  caf::actor writer;
  caf::actor questions; // questions.hpp: the broker passes questions and clients' answers to it
  std::vector<caf::actor> readers;
  // Finished runs in memory: their tail reads are answered without a hop.
  std::shared_ptr<storage::finished_run_cache> finished;
  std::function<void()> request_stop; // the `shutdown` action
};

// Sessions the event log knows from before this start, served as dormant.
using known_sessions = std::vector<storage::session_row>;

caf::actor spawn_broker(caf::actor_system& sys, int listen_fd,
                        std::shared_ptr<const daemon_settings> settings, broker_links links,
                        const known_sessions& dormant);

} // namespace hb::actors
