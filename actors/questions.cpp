// The questions actor (questions.hpp): its state's methods do the work, its
// handlers only call them.
#include "actors/questions.hpp"

#include "actors/blocking_call.hpp"
#include "actors/daemon_log.hpp"
#include "actors/errors.hpp"
#include "actors/log_actors.hpp"
#include "actors/question_table.hpp"
#include "protocol/json_text.hpp"
#include "protocol/json_update.hpp"

#include <caf/all.hpp>

#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace hb::actors {

using protocol::json;

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

namespace {

// The event that announces a question: its name, its id, then the fields the
// agent sent with it.
json question_event(const char* name, const char* id_key, const std::string& id, const std::string& request_json) {
  json event;
  event["event"] = name;
  event[id_key] = id;
  protocol::update_from_text(event, request_json);
  return event;
}

json approval_resolved(const std::string& approval_id, const json& choice, const std::string& reason = {}) {
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

struct questions_state {
  caf::event_based_actor* self = nullptr;
  questions_links links;
  question_table table;
  // Answers to reopening questions that came before their question: each
  // sends its answer to this actor again, for the asker it came from.
  std::map<std::string, std::vector<std::function<void()>>> early_answers;
  caf::actor watcher; // told how many are open (questions_watch)
  uint64_t told = 0;
  static inline const char* name = "questions";

  void watch(const caf::strong_actor_ptr& who) {
    watcher = caf::actor_cast<caf::actor>(who);
    told = ~uint64_t{0};
    report();
  }

  // The watcher hears the count whenever it changed: the table changes only
  // through add, take and take_all below.
  void report() {
    if (watcher && told != table.size()) {
      told = table.size();
      self->send(watcher, questions_open{told});
    }
  }

  void add(question q) {
    std::string id = q.id;
    table.add(std::move(q));
    report();
    answer_early(id);
  }

  // An answer to a question its run has yet to open again waits for it.
  template <class Outcome, class Answer>
  std::optional<caf::result<Outcome>> wait_for_reopen(const std::string& id, Answer& a) {
    if (table.find(id) || !links.reopening.count(id))
      return std::nullopt;
    auto rp = self->make_response_promise<Outcome>();
    early_answers[id].push_back([rp, a, me = caf::actor_cast<caf::actor>(self)]() mutable {
      rp.delegate(me, std::move(a));
    });
    return caf::result<Outcome>(rp);
  }

  void answer_early(const std::string& id) {
    links.reopening.erase(id);
    auto it = early_answers.find(id);
    if (it == early_answers.end())
      return;
    auto answers = std::move(it->second);
    early_answers.erase(it);
    for (auto& again : answers)
      again();
  }

  // Those not opened again by now will not be: their answers find nothing.
  void close_reopen_window() {
    links.reopening.clear();
    auto all = std::exchange(early_answers, {});
    for (auto& [id, answers] : all)
      for (auto& again : answers)
        again();
  }

  bool take(const std::string& id, question& out) {
    bool taken = table.take(id, out);
    report();
    return taken;
  }

  template <class Pred>
  std::vector<question> take_all(Pred pred) {
    auto taken = table.take_all(pred);
    report();
    return taken;
  }

  // Through the run's queue, behind everything the agent sent before it.
  void emit(const std::string& run_id, const json& event) {
    send_run_output(links.writer, run_id, nullptr, true, protocol::dumps(event), now_seconds());
  }

  void arm_deadline(const std::string& id, int64_t timeout_ms) {
    self->delayed_send(self, std::chrono::milliseconds(timeout_ms), question_due{id});
  }

  // A question asked again after a restart is open under the id the log
  // gave it, and announced only once.
  std::string id_for(const std::string& reopen_id) const {
    return reopen_id.empty() || table.find(reopen_id) ? new_id() : reopen_id;
  }

  caf::response_promise open(question_asked& asked) {
    auto rp = self->make_response_promise();
    bool announced = !asked.reopen_id.empty() && !table.find(asked.reopen_id);
    std::string id = id_for(asked.reopen_id);
    auto what = asked.topic == question_topic::compression ? question::kind::compression
                : asked.topic == question_topic::clarify   ? question::kind::clarify
                                                           : question::kind::terminal_approval;
    auto [name, id_key] = what == question::kind::compression ? std::pair{"bridge.compression.requested", "request_id"}
                          : what == question::kind::clarify ? std::pair{"clarify.requested", "clarify_id"}
                                                            : std::pair{"approval.requested", "approval_id"};
    if (!announced)
      emit(asked.run_id, question_event(name, id_key, id, asked.request));
    add(question{what, id, asked.run_id, std::move(asked.session_id), rp, {}, {}});
    arm_deadline(id, asked.timeout_ms);
    return rp;
  }

  void open_gateway(gateway_approval_asked& asked) {
    bool announced = !asked.reopen_id.empty() && !table.find(asked.reopen_id);
    std::string id = id_for(asked.reopen_id);
    json event = question_event("approval.requested", "approval_id", id, asked.request);
    // How to answer exactly this request is the daemon's business, not the client's.
    auto withhold = [&](const char* key) {
      std::string value = event.contains(key) && event[key].is_string() ? event[key].get<std::string>() : "";
      event.erase(key);
      return value;
    };
    question q{question::kind::gateway_approval, id, asked.run_id, asked.session_id, {},
               withhold("agent_request_id"), withhold("bridge_token")};
    if (!announced)
      emit(asked.run_id, event);
    add(std::move(q));
    // hermes-agent gives up at timeout_ms by itself; the log says so then.
    arm_deadline(id, asked.timeout_ms);
  }

  // A question nobody answered: approvals are denied (fail closed),
  // compression fails, clarify hears nothing. The log says why.
  void settle_unanswered(question& q, const std::string& reason, bool timed_out) {
    switch (q.what) {
      case question::kind::terminal_approval:
        emit(q.run_id, approval_resolved(q.id, "deny", reason));
        q.answer.deliver(std::string("deny"));
        break;
      case question::kind::gateway_approval:
        emit(q.run_id, approval_resolved(q.id, "deny", reason));
        break;
      case question::kind::compression:
        q.answer.deliver(compression_failure(
          q.id, timed_out ? "bridge compression timed out" : "bridge compression cancelled: " + reason));
        break;
      case question::kind::clarify:
        emit(q.run_id, clarify_resolved(q.id, nullptr, reason));
        q.answer.deliver(std::string());
        break;
    }
  }

  template <class Pred>
  void settle_all(Pred pred, const std::string& reason) {
    for (auto& q : take_all(pred))
      settle_unanswered(q, reason, false);
  }

  void deadline(const question_due& due) {
    question q;
    if (take(due.id, q))
      settle_unanswered(q, "timeout", true);
  }

  void cancel(const session_questions_cancelled& c) {
    settle_all([&](const question& q) { return q.session_id == c.session_id; }, c.reason);
  }

  // Answered after the events are queued, so the run's end is logged after them.
  bool end_run(const run_questions_end& end) {
    for (auto& q : take_all([&](const question& q) { return q.run_id == end.run_id; })) {
      bool timed_out = q.what == question::kind::gateway_approval && !end.interrupted;
      settle_unanswered(q, timed_out ? "timeout" : "run ended", timed_out);
    }
    return true;
  }

  // A person answered at the TUI itself (an approval or a clarify panel), or
  // the worker that asked died: what was chosen is not ours to know; the log
  // says the question is closed and why, and the asker stands down.
  void withdraw(const questions_withdrawn& gone) {
    for (auto& q : take_all([&](const question& q) {
           return q.run_id == gone.run_id &&
                  (q.what == question::kind::terminal_approval || q.what == question::kind::clarify);
         })) {
      emit(q.run_id, q.what == question::kind::clarify ? clarify_resolved(q.id, nullptr, gone.reason)
                                                       : approval_resolved(q.id, nullptr, gone.reason));
      q.answer.deliver(std::string());
    }
  }

  caf::result<approval_outcome> answer(approval_answer& a) {
    if (auto later = wait_for_reopen<approval_outcome>(a.approval_id, a))
      return std::move(*later);
    const question* open = table.find(a.approval_id);
    if (!open || open->what == question::kind::compression || open->what == question::kind::clarify)
      return approval_outcome{a.approval_id, a.choice, false};
    question q;
    take(a.approval_id, q);
    if (q.what == question::kind::terminal_approval) {
      // Logged before the agent gets the answer, so it precedes what it does next.
      emit(q.run_id, approval_resolved(q.id, a.choice));
      q.answer.deliver(a.choice);
      return approval_outcome{a.approval_id, a.choice, true};
    }
    return answer_gateway(std::move(q), std::move(a.choice));
  }

  // hermes-agent waits for gateway answers itself and may have given up
  // already; only its own verdict says whether this answer counted. The
  // verdict is logged while the GIL still holds the woken agent back.
  caf::result<approval_outcome> answer_gateway(question q, std::string choice) {
    auto rp = self->make_response_promise<approval_outcome>();
    caf::actor writer = links.writer;
    auto resolve = links.resolve_gateway;
    blocking_call(self, [=] {
      return resolve(q.session_id, choice, q.agent_request_id, q.bridge_token,
                     [&](int released, const std::string& failure) {
                       json event;
                       if (released > 0) {
                         event = approval_resolved(q.id, choice);
                       } else if (failure.empty()) {
                         event = approval_resolved(q.id, "deny", "timeout"); // the agent had given up waiting
                       } else {
                         // Still waiting, and its own deadline denies it: say
                         // why the answer did not count, not that time ran out.
                         log_event(log_level::error, "approval.route_failed", failure,
                                   {{"approval_id", q.id}, {"run_id", q.run_id}, {"choice", choice}});
                         event = approval_resolved(q.id, "deny", "answer not delivered to the agent: " + failure);
                       }
                       send_run_output(writer, q.run_id, nullptr, true, protocol::dumps(event), now_seconds());
                     }) > 0;
    }).then([=](bool resolved) mutable { rp.deliver(approval_outcome{q.id, choice, resolved}); },
            [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
    return rp;
  }

  caf::result<clarify_outcome> answer(clarify_answer& a) {
    if (auto later = wait_for_reopen<clarify_outcome>(a.clarify_id, a))
      return std::move(*later);
    const question* open = table.find(a.clarify_id);
    if (!open || open->what != question::kind::clarify) {
      if (table.was_closed(a.clarify_id))
        return clarify_outcome{a.clarify_id, false}; // answered, timed out or its run ended
      return make_error(errc::not_found, "unknown clarify request: " + a.clarify_id);
    }
    question q;
    take(a.clarify_id, q);
    emit(q.run_id, clarify_resolved(q.id, &a.response, ""));
    q.answer.deliver(a.response);
    return clarify_outcome{a.clarify_id, true};
  }

  caf::result<compression_outcome> answer(compression_answer& a) {
    if (auto later = wait_for_reopen<compression_outcome>(a.request_id, a))
      return std::move(*later);
    const question* open = table.find(a.request_id);
    if (!open || open->what != question::kind::compression)
      return make_error(errc::failed, "compression request " + a.request_id + " not found");
    question q;
    take(a.request_id, q);
    q.answer.deliver(a.reply);
    return compression_outcome{a.request_id};
  }
};

using questions_actor = caf::stateful_actor<questions_state>;

caf::behavior questions_behavior(questions_actor* self, questions_links links) {
  self->state.self = self;
  self->state.links = std::move(links);
  auto& st = self->state;
  if (!st.links.reopening.empty())
    self->delayed_send(self, reopen_window, reopen_window_over{});
  return {
    [&st](reopen_window_over) { st.close_reopen_window(); },
    [&st](question_asked& asked) { return st.open(asked); },
    [&st](gateway_approval_asked& asked) { st.open_gateway(asked); },
    [&st](const question_due& due) { st.deadline(due); },
    [&st](const session_questions_cancelled& c) { st.cancel(c); },
    [&st](const questions_withdrawn& gone) { st.withdraw(gone); },
    [&st](const run_questions_end& end) { return st.end_run(end); },
    [&st](approval_answer& a) { return st.answer(a); },
    [&st](clarify_answer& a) { return st.answer(a); },
    [&st](compression_answer& a) { return st.answer(a); },
    [&st](questions_watch) { st.watch(st.self->current_sender()); },
  };
}

} // namespace

caf::actor spawn_questions(caf::actor_system& sys, questions_links links) {
  return sys.spawn(questions_behavior, std::move(links));
}

} // namespace hb::actors
