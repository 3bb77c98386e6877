// Messages about the questions an agent waits on (approvals, compression
// requests, clarify questions): runs and sessions tell the broker, which
// announces each to the client and settles it exactly once. One struct per
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

// Run -> broker: the agent waits for the client's answer until timeout_ms.
// `request` is the announced event's JSON fields.
struct question_asked {
  question_topic topic = question_topic::approval;
  std::string run_id;
  std::string session_id;
  std::string request;
  int64_t timeout_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, question_asked& x) {
  return f(caf::meta::type_name("question_asked"), x.topic, x.run_id, x.session_id, x.request, x.timeout_ms);
}

// Run -> broker: hermes-agent's gateway approval, which the agent waits for
// itself (its answer is routed back into the agent, not to this message).
struct gateway_approval_asked {
  std::string run_id;
  std::string session_id;
  std::string request;
  int64_t timeout_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gateway_approval_asked& x) {
  return f(caf::meta::type_name("gateway_approval_asked"), x.run_id, x.session_id, x.request, x.timeout_ms);
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
struct run_questions_end {
  std::string run_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_questions_end& x) {
  return f(caf::meta::type_name("run_questions_end"), x.run_id);
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

// Broker -> itself: a question's deadline.
struct question_due {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, question_due& x) {
  return f(caf::meta::type_name("question_due"), x.id);
}

// Names them for CAF (needed once a message crosses a process).
inline void add_question_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<question_asked>("hb::question_asked")
    .add_message_type<gateway_approval_asked>("hb::gateway_approval_asked")
    .add_message_type<questions_withdrawn>("hb::questions_withdrawn")
    .add_message_type<run_questions_end>("hb::run_questions_end")
    .add_message_type<session_questions_cancelled>("hb::session_questions_cancelled")
    .add_message_type<question_due>("hb::question_due");
}

} // namespace hb::actors
