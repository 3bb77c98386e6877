// Questions between an agent and the client: approvals (the terminal
// callback path and the gateway path), compression requests and the clarify
// tool's questions. Each is
// logged when asked, answered exactly once (by the client, its deadline, an
// interrupt or the end of its run) and the answer is logged too.
#include "actors/broker_state.hpp"

#include "actors/blocking_call.hpp"
#include "actors/daemon_log.hpp"
#include "actors/log_actors.hpp"
#include "bridge/agent_hosting.hpp"
#include "protocol/request.hpp"

namespace hb::actors {

using protocol::error_line;
using protocol::json;
using protocol::object_writer;

namespace {

json question_event(const char* name, const char* id_key, const std::string& id,
                    const std::string& request_json) {
  json event;
  event["event"] = name;
  event[id_key] = id;
  auto request = json::parse(request_json, nullptr, false);
  if (request.is_object())
    for (auto it = request.begin(); it != request.end(); ++it)
      event[it.key()] = it.value();
  return event;
}

json resolved_event(const std::string& approval_id, const std::string& choice,
                    const std::string& reason = {}) {
  json event;
  event["event"] = "approval.resolved";
  event["approval_id"] = approval_id;
  event["choice"] = choice;
  if (!reason.empty())
    event["reason"] = reason;
  return event;
}

json clarify_resolved(const std::string& id, const std::string* response, const std::string& reason) {
  json event;
  event["event"] = "clarify.resolved";
  event["clarify_id"] = id;
  event["response"] = response ? json(*response) : json();
  if (!reason.empty())
    event["reason"] = reason;
  return event;
}

std::string compression_failure(const std::string& request_id, const std::string& why) {
  json reply;
  reply["request_id"] = request_id;
  reply["failure"] = why;
  return protocol::dumps(reply);
}

std::string approval_line(const std::string& id, bool resolved, const std::string& choice) {
  return object_writer{}
    .boolean("ok", true)
    .str("approval_id", id)
    .boolean("resolved", resolved)
    .str("choice", choice)
    .finish();
}

} // namespace

// Through the run's queue, behind everything the agent sent before it.
void emit(broker_actor* self, const std::string& run_id, const json& event) {
  send_run_output(self->state.links.writer, run_id, nullptr, true, protocol::dumps(event), now_seconds());
}

// Answers a question nobody answered: approvals are denied (fail closed),
// compression fails. The log says why.
void settle_unanswered(broker_actor* self, question& q, const std::string& reason, bool timed_out) {
  switch (q.what) {
    case question::kind::terminal_approval:
      emit(self, q.run_id, resolved_event(q.id, "deny", reason));
      q.answer.deliver(std::string("deny"));
      break;
    case question::kind::gateway_approval:
      emit(self, q.run_id, resolved_event(q.id, "deny", reason));
      break;
    case question::kind::compression:
      q.answer.deliver(compression_failure(
        q.id, timed_out ? "bridge compression timed out" : "bridge compression cancelled: " + reason));
      break;
    case question::kind::clarify:
      // The adapter tells the agent nobody answered.
      emit(self, q.run_id, clarify_resolved(q.id, nullptr, reason));
      q.answer.deliver(std::string());
      break;
  }
}

// A person answered at the TUI itself (an approval or a clarify panel), or
// the worker that asked died: what was chosen is not ours to know; the log
// says the question is closed and why, and the asker stands down.
void withdraw_questions(broker_actor* self, const questions_withdrawn& gone) {
  const std::string& reason = gone.reason;
  for (auto& q : self->state.questions.take_all([&](const question& q) {
         return q.run_id == gone.run_id &&
                (q.what == question::kind::terminal_approval || q.what == question::kind::clarify);
       })) {
    json event = q.what == question::kind::clarify ? clarify_resolved(q.id, nullptr, reason)
                                                   : resolved_event(q.id, "", reason);
    if (q.what == question::kind::terminal_approval)
      event["choice"] = nullptr;
    emit(self, q.run_id, event);
    q.answer.deliver(std::string());
  }
}

std::string to_string(question_topic topic) {
  switch (topic) {
    case question_topic::approval:
      return "approval";
    case question_topic::compression:
      return "compression";
    case question_topic::clarify:
      return "clarify";
  }
  return "unknown";
}

caf::response_promise open_question(broker_actor* self, question_asked& asked) {
  auto rp = self->make_response_promise();
  std::string id = new_id();
  auto what = asked.topic == question_topic::compression ? question::kind::compression
              : asked.topic == question_topic::clarify   ? question::kind::clarify
                                                         : question::kind::terminal_approval;
  auto [name, id_key] = what == question::kind::compression ? std::pair{"bridge.compression.requested", "request_id"}
                        : what == question::kind::clarify   ? std::pair{"clarify.requested", "clarify_id"}
                                                            : std::pair{"approval.requested", "approval_id"};
  emit(self, asked.run_id, question_event(name, id_key, id, asked.request));
  self->state.questions.add(question{what, id, asked.run_id, std::move(asked.session_id), rp, {}, {}});
  self->delayed_send(self, std::chrono::milliseconds(asked.timeout_ms), question_due{id});
  return rp;
}

void cancel_questions(broker_actor* self, const session_questions_cancelled& cancelled) {
  for (auto& q : self->state.questions.take_all(
         [&](const question& q) { return q.session_id == cancelled.session_id; }))
    settle_unanswered(self, q, cancelled.reason, false);
}

bool end_run_questions(broker_actor* self, const run_questions_end& end) {
  for (auto& q : self->state.questions.take_all([&](const question& q) { return q.run_id == end.run_id; }))
    settle_unanswered(self, q, "run ended", false);
  return true;
}

void question_deadline(broker_actor* self, const question_due& due) {
  question q;
  if (self->state.questions.take(due.id, q))
    settle_unanswered(self, q, "timeout", true);
}

void on_request(broker_actor* self, const reply_to& to, requests::approval_respond& r) {
  const std::string& id = r.approval_id;
  const std::string& choice = r.choice;
  const question* open = self->state.questions.find(id);
  if (!open || open->what == question::kind::compression)
    return respond(self, to, approval_line(id, false, choice));
  question q;
  self->state.questions.take(id, q);
  if (q.what == question::kind::terminal_approval) {
    // Logged before the agent gets the answer, so it precedes what it does next.
    emit(self, q.run_id, resolved_event(id, choice));
    q.answer.deliver(choice);
    return respond(self, to, approval_line(id, true, choice));
  }
  // hermes-agent waits for gateway answers itself and may have given up
  // already; only its own verdict says whether this answer counted. The
  // verdict is logged while the GIL still holds the woken agent back.
  std::string session_id = q.session_id, run_id = q.run_id;
  std::string request_id = q.agent_request_id, token = q.bridge_token;
  caf::actor writer = self->state.links.writer;
  blocking_call(self, [=] {
    return bridge::resolve_gateway_approval(
             session_id, choice, request_id, token, [&](int released, const std::string& failure) {
               json event;
               if (released > 0) {
                 event = resolved_event(id, choice);
               } else if (failure.empty()) {
                 event = resolved_event(id, "deny", "timeout"); // the agent had given up waiting
               } else {
                 // Still waiting, and its own deadline denies it: say why
                 // the answer did not count, not that time ran out.
                 log_event(log_level::error, "approval.route_failed", failure,
                           {{"approval_id", id}, {"run_id", run_id}, {"choice", choice}});
                 event = resolved_event(id, "deny", "answer not delivered to the agent: " + failure);
               }
               send_run_output(writer, run_id, nullptr, true, protocol::dumps(event), now_seconds());
             }) > 0;
  }).then([=](bool resolved) { respond(self, to, approval_line(id, resolved, choice)); },
          [=](caf::error& err) { respond_failure(self, to, err); });
}

void on_request(broker_actor* self, const reply_to& to, requests::clarify_respond& r) {
  const std::string& id = r.clarify_id;
  const std::string& response = r.response;
  auto answer = [&](bool resolved) {
    return object_writer{}.boolean("ok", true).str("clarify_id", id).boolean("resolved", resolved).finish();
  };
  const question* open = self->state.questions.find(id);
  if (!open || open->what != question::kind::clarify) {
    if (self->state.questions.was_closed(id))
      return respond(self, to, answer(false)); // answered, timed out or its run ended
    throw protocol::key_error("unknown clarify request: " + id);
  }
  question q;
  self->state.questions.take(id, q);
  emit(self, q.run_id, clarify_resolved(id, &response, ""));
  q.answer.deliver(response);
  respond(self, to, answer(true));
}

void on_request(broker_actor* self, const reply_to& to, requests::compression_respond& r) {
  const std::string& id = r.request_id;
  const question* open = self->state.questions.find(id);
  if (!open || open->what != question::kind::compression)
    throw protocol::runtime_error("compression request " + id + " not found");
  question q;
  self->state.questions.take(id, q);
  q.answer.deliver(r.reply);
  respond(self, to, object_writer{}.boolean("ok", true).str("request_id", id).boolean("handled", true).finish());
}


void open_gateway_question(broker_actor* self, gateway_approval_asked& asked) {
  const std::string& run_id = asked.run_id;
  const std::string& session_id = asked.session_id;
  const std::string& request_json = asked.request;
  std::string id = new_id();
  json event = question_event("approval.requested", "approval_id", id, request_json);
  // How to answer exactly this request is the daemon's business, not the client's.
  auto take = [&](const char* key) {
    std::string value = event.contains(key) && event[key].is_string() ? event[key].get<std::string>() : "";
    event.erase(key);
    return value;
  };
  question q{question::kind::gateway_approval, id, run_id, session_id, {}, take("agent_request_id"),
             take("bridge_token")};
  emit(self, run_id, event);
  self->state.questions.add(std::move(q));
  // hermes-agent gives up at timeout_ms by itself; the log says so then.
  self->delayed_send(self, std::chrono::milliseconds(asked.timeout_ms), question_due{id});
}

} // namespace hb::actors
