// What a session is asked about its turn and its agent besides chat:
// interrupt, steer, its history, and stopping the turn when it is destroyed
// or the daemon stops.
#include "actors/session_state.hpp"

#include "actors/blocking_call.hpp"
#include "actors/errors.hpp"
#include "actors/log_messages.hpp"
#include "actors/question_messages.hpp"
#include "actors/responses.hpp"

namespace hb::actors::session_parts {

using protocol::json;

namespace {

constexpr std::chrono::seconds interrupt_sync_limit{10};

} // namespace

caf::error log_failure(const char* what, const caf::error& err) {
  return make_error(errc::failed, std::string("event log ") + what + ": " + caf::to_string(err));
}

namespace {

// The reply to an interrupt once its turn has stopped (or after
// interrupt_sync_limit, unsynced). A turn blocked on a client's answer
// would not notice the interrupt: its questions are settled now.
void sync_interrupt(session_actor* self, caf::response_promise& rp) {
  auto& st = self->state;
  self->send(st.links->broker, session_questions_cancelled{st.id, "interrupted"});
  uint64_t ticket = ++st.next_sync;
  st.syncing.emplace(ticket, rp);
  self->delayed_send(self, interrupt_sync_limit, sync_due{ticket});
}

} // namespace

// A session with an agent (the phases without one refuse: session.cpp).
void on_interrupt(session_actor* self, const std::string& message, caf::response_promise rp) {
  auto& st = self->state;
  if (st.busy() && st.replay_stop) { // a replay stops at its next event
    *st.replay_stop = true;
    return sync_interrupt(self, rp);
  }
  auto agent = st.agent;
  blocking_call(self, [agent, message]() -> expected<bool> {
    return catch_wire([&] {
      agent->interrupt(message);
      return true;
    });
  }).then([=](bool) mutable {
            if (!self->state.busy())
              return rp.deliver(interrupt_reply{self->state.id, true});
            sync_interrupt(self, rp);
          },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); }); // the broker encodes it
}

void on_steer(session_actor* self, const std::string& text, caf::response_promise rp) {
  auto agent = self->state.agent;
  blocking_call(self, [agent, text]() -> expected<bool> {
    return catch_wire([&] { return agent->steer(text); });
  }).then([=](bool accepted) mutable {
            auto& st = self->state;
            if (accepted && !st.busy())
              st.idle_steer += (st.idle_steer.empty() ? "" : "\n") + text;
            rp.deliver(steer_reply{accepted, text});
          },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
}

void on_history(session_actor* self, caf::response_promise rp) {
  auto& st = self->state;
  auto answer = [id = st.id](std::string history) { return history_reply{id, std::move(history)}; };
  if (!st.listed)
    return rp.deliver(make_error(errc::not_found, "unknown session: " + st.id));
  if (st.history)
    return rp.deliver(answer(*st.history));
  self->request(st.links->reader, caf::infinite, history_query{st.id})
    .then([=](std::string& history) mutable { rp.deliver(answer(std::move(history))); },
          [=](caf::error& err) mutable { rp.deliver(log_failure("read failed", err)); });
}

void stop_turn(session_actor* self, const std::string& why, bool daemon_stops) {
  auto& st = self->state;
  if (st.busy() && st.replay_stop) {
    *st.replay_stop = true;
    self->send(st.links->broker, session_questions_cancelled{st.id, why});
    return;
  }
  if (!st.busy() || !st.agent)
    return;
  auto agent = st.agent;
  std::string message = protocol::dumps(json(why));
  blocking_detach(self, [agent, message, daemon_stops, broker = st.links->broker, id = st.id, why] {
    try {
      if (daemon_stops)
        agent->let_go(message);
      else
        agent->interrupt(message);
    } catch (const protocol::wire_error&) {
      // An agent that cannot be interrupted finishes its turn on its own.
    }
    // Its questions are settled only now: an approval denied before the
    // agent knew of the interrupt let it go on with the rest of its turn.
    caf::anon_send(broker, session_questions_cancelled{id, why});
  });
}

void release_agent(session_actor* self, bool close) {
  if (auto agent = std::move(self->state.agent))
    blocking_detach(self, [agent, close]() mutable {
      if (close)
        agent->close();
      agent.reset();
    });
}

} // namespace hb::actors::session_parts
