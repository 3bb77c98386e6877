// The router: a decoded request goes to the handler of its type (one
// on_request overload per request struct; a request type without one does
// not compile). The handlers that only pass a request on to one session or
// reader live here; the others with what they work on: broker_sessions.cpp
// (the registry), broker_push.cpp (output), broker_questions.cpp (answers),
// broker_studio.cpp (Hermes Studio's actions).
#include "actors/broker_state.hpp"

#include "actors/log_messages.hpp"
#include "actors/session_messages.hpp"
#include "actors/test_faults.hpp"

#include <variant>

namespace hb::actors {

void route(broker_actor* self, const reply_to& to, requests::any request) {
  std::visit([&](auto& r) { on_request(self, to, r); }, request);
}

namespace {

// get_result: the reader answers with the line as the client reads it.
void forward_line(broker_actor* self, const reply_to& to, const caf::actor& reader, result_query q) {
  self->request(reader, caf::infinite, std::move(q))
    .then([=](std::string& line) { respond(self, to, std::move(line)); },
          [=](caf::error& err) { respond_failure(self, to, err); });
}

} // namespace

void on_request(broker_actor* self, const reply_to& to, requests::ping&) {
  respond(self, to, encode(ping_of(self)));
}

void on_request(broker_actor* self, const reply_to& to, requests::shutdown&) {
  respond(self, to, encode(done_reply{"shutting_down"}));
  if (self->state.links.request_stop)
    self->state.links.request_stop();
}

void on_request(broker_actor* self, const reply_to& to, requests::test_fault& r) {
  auto why = caf::make_error(caf::sec::runtime_error, "killed by test_fault");
  if (r.fault == "kill_writer") {
    self->send_exit(self->state.links.writer, why);
  } else if (r.fault == "kill_broker") {
    return self->quit(why);
  } else {
    throw protocol::value_error("unknown fault: " + r.fault);
  }
  respond(self, to, encode(done_reply{}));
}

void on_request(broker_actor* self, const reply_to& to, requests::chat& chat) {
  if (chat.session_id.empty())
    chat.session_id = new_id();
  std::string id = chat.session_id;
  // (A session whose agent could not be built says so: session_unlisted.)
  ask_and_answer<chat_reply>(self, to, session_actor_for(self, id), std::move(chat));
}

void on_request(broker_actor* self, const reply_to& to, requests::get_result& r) {
  forward_line(self, to, next_reader(self), result_query{r.run_id});
}

void on_request(broker_actor* self, const reply_to& to, requests::interrupt& r) {
  ask_and_answer<interrupt_reply>(self, to, existing_session(self, r.session_id), interrupt_turn{r.message});
}

void on_request(broker_actor* self, const reply_to& to, requests::steer& r) {
  ask_and_answer<steer_reply>(self, to, existing_session(self, r.session_id), steer_turn{r.text});
}

void on_request(broker_actor* self, const reply_to& to, requests::get_history& r) {
  ask_and_answer<history_reply>(self, to, existing_session(self, r.session_id), history_of{});
}

} // namespace hb::actors
