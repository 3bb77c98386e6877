// The broker actor itself: what it does when it starts, the messages it
// takes besides its connections' (questions, commit notices), idle
// collection and the stop. Requests: broker_intake.cpp and broker_router.cpp.
#include "actors/broker.hpp"

#include "actors/broker_state.hpp"
#include "actors/daemon_log.hpp"
#include "actors/log_messages.hpp"
#include "actors/session_messages.hpp"
#include "actors/studio_messages.hpp"

#include <caf/io/network/default_multiplexer.hpp>

#include <unistd.h>

namespace hb::actors {

using protocol::json;

namespace {

// `keep_socket`: a successor accepts on it now (handing over).
void stop_serving(broker_actor* self, bool keep_socket = false) {
  auto& st = self->state;
  if (st.stopping)
    return;
  st.stopping = true;
  self->close(st.acceptor);
  if (!keep_socket && !st.settings->socket_path.empty())
    ::unlink(st.settings->socket_path.c_str());
}

caf::result<bool> hand_over(broker_actor* self) {
  auto& st = self->state;
  share_listening_socket();
  stop_serving(self, true);
  st.hub->end_all("hermes-bridge handed over to a new daemon: connect again and go on from the cursors given");
  st.handover = self->make_response_promise();
  st.handover_deadline = std::chrono::steady_clock::now() + st.settings->drain_timeout;
  self->send(self, handover_due{});
  return *st.handover;
}

void look_at_handover(broker_actor* self) {
  auto& st = self->state;
  auto now = std::chrono::steady_clock::now();
  if (close_quiet_connections(self, now) || now >= st.handover_deadline) {
    log_event(log_level::info, "daemon.handover_drained", "",
              {{"connections_left", std::to_string(st.connections.size())}});
    st.handover->deliver(true);
    return;
  }
  self->delayed_send(self, std::chrono::milliseconds(20), handover_due{});
}

void collect_idle_sessions(broker_actor* self) {
  auto idle = static_cast<int64_t>(self->state.settings->idle_timeout.count());
  for (auto& [id, session] : self->state.sessions) {
    std::string sid = id;
    caf::actor which = session;
    self->request(which, session_reply_limit, collect_idle{idle})
      .then([=](bool collected) {
              if (collected)
                log_event(log_level::info, "session.idle_released", "", {{"session", sid}});
            },
            [](caf::error&) {});
  }
  self->delayed_send(self, self->state.settings->gc_interval, idle_sweep_due{});
}

caf::behavior broker_behavior(broker_actor* self, listener listen,
                              std::shared_ptr<const daemon_settings> settings, broker_links links,
                              std::shared_ptr<const known_sessions> dormant) {
  auto& st = self->state;
  st.settings = std::move(settings);
  st.links = std::move(links);
  self->link_to(st.links.questions); // the questions die with the broker, and it with them
  self->send(st.links.questions, questions_watch{}); // health counts the open ones
  start_output_hub(self);
  for (const auto& row : *dormant) {
    auto session = new_session(self, row.session_id, &row);
    st.sessions.emplace(row.session_id, session);
    // Counted from the start, before the session actor first runs (and says so itself).
    auto config = json::parse(row.config, nullptr, false);
    std::string profile = config.is_object() ? config.value("profile", "") : "";
    st.activity->put(session.id(), {row.session_id, profile.empty() ? "default" : profile, false});
  }
  st.acceptor = listen(self);
  st.direct_sends = dynamic_cast<caf::io::network::default_multiplexer*>(&self->backend()) != nullptr;
  st.pid = ::getpid();
  self->send(st.links.writer, log_watch{}); // commits are reported back for pushes
  self->delayed_send(self, st.settings->gc_interval, idle_sweep_due{});
  return {
    [=](const caf::io::new_connection_msg& msg) { on_new_connection(self, msg.handle); },
    [=](const caf::io::new_data_msg& msg) { on_data(self, msg); },
    [=](const caf::io::connection_closed_msg& msg) { on_connection_closed(self, msg.handle); },
    [=](const caf::io::data_transferred_msg& msg) { on_transferred(self, msg); },
    [=](const caf::io::acceptor_closed_msg&) {},
    [=](connection_sweep_due) {
      auto& st = self->state;
      st.sweep_armed = false;
      sweep_connections(self);
      if (!st.connections.empty() || st.hub->size() > 0)
        arm_sweep(self);
    },
    [=](log_committed& touched) { on_committed(self, touched); },
    [=](const questions_open& open) { self->state.open_questions = open.count; },
    [=](const poll_due& due) { on_wait_due(self, due.when); },
    [=](const connection_drained& d) { on_drained(self, handle::from_int(d.connection)); },
    [=](question_asked& asked) { return self->delegate(self->state.links.questions, std::move(asked)); },
    [=](const session_unlisted& gone) {
      forget_session_actor(self, gone.session_id, caf::actor_cast<caf::actor>(self->current_sender()));
    },
    [=](gateway_approval_asked& asked) { self->send(self->state.links.questions, std::move(asked)); },
    [=](session_questions_cancelled& cancelled) { self->send(self->state.links.questions, std::move(cancelled)); },
    [=](questions_withdrawn& gone) { self->send(self->state.links.questions, std::move(gone)); },
    [=](run_questions_end& end) { return self->delegate(self->state.links.questions, std::move(end)); },
    [=](idle_sweep_due) { collect_idle_sessions(self); },
    [=](broker_hand_over) { return hand_over(self); },
    [=](handover_due) { look_at_handover(self); },
    [=](broker_stop) {
      stop_serving(self);
      auto rp = self->make_response_promise();
      auto& sessions = self->state.sessions;
      auto left = std::make_shared<size_t>(sessions.size());
      if (sessions.empty()) {
        rp.deliver(true);
        return rp;
      }
      for (auto& [id, session] : sessions)
        self->request(session, self->state.settings->drain_timeout, drain_session{})
          .then([=](bool) mutable { if (--*left == 0) rp.deliver(true); },
                [=](caf::error&) mutable { if (--*left == 0) rp.deliver(true); });
      return rp;
    },
  };
}

} // namespace

const caf::actor& next_reader(broker_actor* self) {
  auto& st = self->state;
  return st.links.readers[st.next_reader++ % st.links.readers.size()];
}

caf::actor spawn_broker(caf::actor_system& sys, listener listen,
                        std::shared_ptr<const daemon_settings> settings, broker_links links,
                        const known_sessions& dormant) {
  return sys.middleman().spawn_broker(broker_behavior, std::move(listen), std::move(settings), std::move(links),
                                      std::make_shared<const known_sessions>(dormant));
}

} // namespace hb::actors
