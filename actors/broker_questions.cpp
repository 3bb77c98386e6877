// The broker's side of the questions (questions.hpp): what runs and sessions
// tell it about questions goes on to the questions actor, which answers the
// asker itself; clients' answers go there as typed messages and their
// outcomes come back to be encoded for the client.
#include "actors/broker_state.hpp"

namespace hb::actors {

void on_request(broker_actor* self, const reply_to& to, requests::approval_respond& r) {
  ask_and_answer<approval_outcome>(self, to, self->state.links.questions,
                                   approval_answer{std::move(r.approval_id), std::move(r.choice)});
}

void on_request(broker_actor* self, const reply_to& to, requests::clarify_respond& r) {
  ask_and_answer<clarify_outcome>(self, to, self->state.links.questions,
                                  clarify_answer{std::move(r.clarify_id), std::move(r.response)});
}

void on_request(broker_actor* self, const reply_to& to, requests::compression_respond& r) {
  ask_and_answer<compression_outcome>(self, to, self->state.links.questions,
                                      compression_answer{std::move(r.request_id), std::move(r.reply)});
}

} // namespace hb::actors
