// The socket face of the daemon: accepts connections, frames and parses
// requests, routes them to sessions and log readers, and writes each answer
// back on its own connection. Questions an agent asks (approvals, clarify,
// compression) pass through it to the questions actor (questions.hpp), and
// clients' answers to them likewise.
#pragma once

#include "actors/vocabulary.hpp"
#include "bridge/agent_host.hpp"
#include "storage/finished_runs.hpp"
#include "storage/log_rows.hpp"
#include "storage/log_writer.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/abstract_broker.hpp>
#include <caf/io/accept_handle.hpp>
#include <caf/meta/type_name.hpp>

#include <functional>
#include <memory>
#include <vector>

namespace hb::actors {

class shared_run_windows; // shared_run_windows.hpp: only its users need the lock and the windows

// main -> broker: stop accepting, drain the sessions; answered true when done.
struct broker_stop {
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, broker_stop&) {
  return f(caf::meta::type_name("broker_stop"));
}

// main -> broker: a successor accepts from now on (app/handover.hpp): stop
// accepting (the socket stays, it is the successor's), end long-polls and
// subscriptions, answer what connections asked, close the rest; answered
// true when no connection is left (or 5 s later: drain_timeout).
struct broker_hand_over {
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, broker_hand_over&) {
  return f(caf::meta::type_name("broker_hand_over"));
}

// Broker -> itself: look again at the connections left while handing over.
struct handover_due {
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, handover_due&) {
  return f(caf::meta::type_name("handover_due"));
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

// Broker -> itself: the earliest long-poll's wait_ms is over; `when`: the
// steady clock's count it was armed for.
struct poll_due {
  int64_t when = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, poll_due& x) {
  return f(caf::meta::type_name("poll_due"), x.when);
}

// Broker -> itself: the client of a subscription has taken everything
// written to it. Handled as a message of its own, after CAF's write has
// returned: CAF delivers data_transferred_msg from within its write, before
// it decides whether to keep writing, and the next line is not written from
// there.
struct connection_drained {
  int64_t connection = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, connection_drained& x) {
  return f(caf::meta::type_name("connection_drained"), x.connection);
}

inline void add_broker_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<broker_stop>("hb::broker_stop")
    .add_message_type<broker_hand_over>("hb::broker_hand_over")
    .add_message_type<handover_due>("hb::handover_due")
    .add_message_type<idle_sweep_due>("hb::idle_sweep_due")
    .add_message_type<connection_sweep_due>("hb::connection_sweep_due")
    .add_message_type<poll_due>("hb::poll_due")
    .add_message_type<connection_drained>("hb::connection_drained");
}

// How the broker makes a session actor: spawn_session or
// spawn_dormant_session (`dormant`: a session known from the log), or
// stand-ins in the broker's actor tests.
using session_spawner = std::function<caf::actor(caf::actor_system& sys, const std::string& session_id,
                                                 std::shared_ptr<const struct session_links> links,
                                                 const storage::session_row* dormant)>;

struct broker_links {
  caf::actor writer;
  caf::actor questions; // questions.hpp: the broker passes questions and clients' answers to it
  std::vector<caf::actor> readers;
  // Finished runs in memory: their tail reads are answered without a hop.
  std::shared_ptr<storage::finished_run_cache> finished;
  // Live runs' last output, kept by the writer: polls are answered from
  // there (none: the broker makes its own, which nothing fills).
  std::shared_ptr<shared_run_windows> windows;
  std::function<void()> request_stop; // the `shutdown` action
  session_spawner spawn_session;       // empty: the daemon's own sessions
};

// Where the broker's connections come from: a listening socket (listen_on),
// or a test multiplexer's acceptor in the actor tests.
using listener = std::function<caf::io::accept_handle(caf::io::abstract_broker* self)>;

// Listens on `listen_fd` with connections that keep answering after the
// client's EOF (a request line without its newline, then shutdown(SHUT_WR),
// is answered like the seed answers it).
listener listen_on(int listen_fd);

// Sessions the event log knows from before this start, served as dormant.
using known_sessions = std::vector<storage::session_row>;

caf::actor spawn_broker(caf::actor_system& sys, listener listen,
                        std::shared_ptr<const daemon_settings> settings, broker_links links,
                        const known_sessions& dormant);

} // namespace hb::actors
