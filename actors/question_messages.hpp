// Messages about the questions an agent waits on (approvals, compression
// requests, clarify questions): runs and sessions tell the broker, which
// passes them to the questions actor (questions.hpp); it announces each to
// the client and settles it exactly once. One struct per
// message kind, each with an inspect() overload so it could cross a process.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>

namespace hb::actors {

// What a question asked through the agent's callbacks is about; the
// broker's reply to question_asked is the answer as the agent takes it.
enum class question_topic : uint8_t { approval, compression, clarify };

std::string to_string(question_topic topic);

// Run -> broker -> questions: the agent waits for the client's answer until timeout_ms.
// `request` is the announced event's JSON fields. `reopen_id`: the id the
// log already announced this question under, before a restart of the
// daemon (the agent, in a worker that outlived it, still waits); it is open
// again under that id, not announced twice, and timeout_ms is what is left.
struct question_asked {
  question_topic topic = question_topic::approval;
  std::string run_id;
  std::string session_id;
  std::string request;
  int64_t timeout_ms = 0;
  std::string reopen_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, question_asked& x) {
  return f(caf::meta::type_name("question_asked"), x.topic, x.run_id, x.session_id, x.request, x.timeout_ms,
           x.reopen_id);
}

// Run -> broker: hermes-agent's gateway approval, which the agent waits for
// itself (its answer is routed back into the agent, not to this message).
// `reopen_id` as for question_asked.
struct gateway_approval_asked {
  std::string run_id;
  std::string session_id;
  std::string request;
  int64_t timeout_ms = 0;
  std::string reopen_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gateway_approval_asked& x) {
  return f(caf::meta::type_name("gateway_approval_asked"), x.run_id, x.session_id, x.request, x.timeout_ms,
           x.reopen_id);
}

// Run -> broker: the questions the TUI showed are gone (answered at the
// terminal), or the worker that asked them died; closed with `reason`.
struct questions_withdrawn {
  std::string run_id;
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, questions_withdrawn& x) {
  return f(caf::meta::type_name("questions_withdrawn"), x.run_id, x.reason);
}

// Run -> broker, as the run ends: its open questions are settled as
// unanswered (answered true once they are, so the end is logged after them).
// `interrupted`: the run's status. hermes-agent stops waiting for a gateway
// approval only at an answer, an interrupt or its own deadline, so one still
// open when a run ends that was not interrupted timed out in the agent,
// whichever of that and the daemon's own timer came first.
struct run_questions_end {
  std::string run_id;
  bool interrupted = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_questions_end& x) {
  return f(caf::meta::type_name("run_questions_end"), x.run_id, x.interrupted);
}

// Session -> broker: the session's turn was interrupted or its session is
// going; every open question of it is settled with `reason`.
struct session_questions_cancelled {
  std::string session_id;
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_questions_cancelled& x) {
  return f(caf::meta::type_name("session_questions_cancelled"), x.session_id, x.reason);
}

// Questions -> itself: a question's deadline.
struct question_due {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, question_due& x) {
  return f(caf::meta::type_name("question_due"), x.id);
}

// Questions -> itself: answers no longer wait for questions to be opened
// again after a restart (questions_links::reopening).
struct reopen_window_over {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reopen_window_over&) {
  return f(caf::meta::type_name("reopen_window_over"));
}

// Broker -> questions: a client's answer to an approval (approval_respond).
// Answered with an approval_outcome: whether it settled the question (an
// answer to a question already settled, or to no approval, settles nothing).
struct approval_answer {
  std::string approval_id;
  std::string choice;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, approval_answer& x) {
  return f(caf::meta::type_name("approval_answer"), x.approval_id, x.choice);
}

struct approval_outcome {
  std::string approval_id;
  std::string choice;
  bool resolved = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, approval_outcome& x) {
  return f(caf::meta::type_name("approval_outcome"), x.approval_id, x.choice, x.resolved);
}

// Broker -> questions: a client's answer to a clarify question
// (clarify_respond); a clarify_outcome, or not_found for an id never asked.
struct clarify_answer {
  std::string clarify_id;
  std::string response;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, clarify_answer& x) {
  return f(caf::meta::type_name("clarify_answer"), x.clarify_id, x.response);
}

struct clarify_outcome {
  std::string clarify_id;
  bool resolved = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, clarify_outcome& x) {
  return f(caf::meta::type_name("clarify_outcome"), x.clarify_id, x.resolved);
}

// Broker -> questions: a client's compression result (compression_respond),
// `reply` as the agent takes it; a compression_outcome once handed over, or
// failed when no such request waits.
struct compression_answer {
  std::string request_id;
  std::string reply;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, compression_answer& x) {
  return f(caf::meta::type_name("compression_answer"), x.request_id, x.reply);
}

struct compression_outcome {
  std::string request_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, compression_outcome& x) {
  return f(caf::meta::type_name("compression_outcome"), x.request_id);
}

// Broker -> questions, once: report how many questions are open to me
// (questions_open, after every change), for health.
struct questions_watch {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, questions_watch&) {
  return f(caf::meta::type_name("questions_watch"));
}

struct questions_open {
  uint64_t count = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, questions_open& x) {
  return f(caf::meta::type_name("questions_open"), x.count);
}

// Names them for CAF (needed once a message crosses a process).
inline void add_question_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<question_asked>("hb::question_asked")
    .add_message_type<gateway_approval_asked>("hb::gateway_approval_asked")
    .add_message_type<questions_withdrawn>("hb::questions_withdrawn")
    .add_message_type<run_questions_end>("hb::run_questions_end")
    .add_message_type<session_questions_cancelled>("hb::session_questions_cancelled")
    .add_message_type<question_due>("hb::question_due")
    .add_message_type<reopen_window_over>("hb::reopen_window_over")
    .add_message_type<approval_answer>("hb::approval_answer")
    .add_message_type<approval_outcome>("hb::approval_outcome")
    .add_message_type<clarify_answer>("hb::clarify_answer")
    .add_message_type<clarify_outcome>("hb::clarify_outcome")
    .add_message_type<compression_answer>("hb::compression_answer")
    .add_message_type<compression_outcome>("hb::compression_outcome")
    .add_message_type<questions_watch>("hb::questions_watch")
    .add_message_type<questions_open>("hb::questions_open");
}

} // namespace hb::actors
