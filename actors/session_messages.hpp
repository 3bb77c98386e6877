// Messages the broker sends a session about its turn and its life: an
// interrupt, a steer, idle collection, what it is. One struct per message
// kind, each with an inspect() overload so it could cross a process. (A chat
// arrives as the chat_request the broker decoded: actors/chat_request.hpp.)
#pragma once

#include "actors/chat_request.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>

namespace hb::actors {

// interrupt: stop the running turn; `message` is the request's field as
// JSON text (null when absent), which the agent is given.
struct interrupt_turn {
  std::string message;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, interrupt_turn& x) {
  return f(caf::meta::type_name("interrupt_turn"), x.message);
}

// steer: text (stripped, not empty) for the running turn, or for the next
// one when none runs.
struct steer_turn {
  std::string text;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, steer_turn& x) {
  return f(caf::meta::type_name("steer_turn"), x.text);
}

// Idle collection: a session unused this long frees its agent (answered
// true when it did).
struct collect_idle {
  int64_t idle_seconds = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, collect_idle& x) {
  return f(caf::meta::type_name("collect_idle"), x.idle_seconds);
}

// get_history: the session's conversation (answered with a history_reply).
struct history_of {
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, history_of&) {
  return f(caf::meta::type_name("history_of"));
}

// destroy: answered true when it was a session anyone could use.
struct destroy_session {
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, destroy_session&) {
  return f(caf::meta::type_name("destroy_session"));
}

// The daemon stops: end the live turn; answered true once it has ended.
struct drain_session {
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, drain_session&) {
  return f(caf::meta::type_name("drain_session"));
}

// Session -> itself: a chat {wait: true} has waited its timeout.
struct wait_due {
  std::string run_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wait_due& x) {
  return f(caf::meta::type_name("wait_due"), x.run_id);
}

// Session -> itself: an interrupt's turn did not stop in time.
struct sync_due {
  uint64_t ticket = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sync_due& x) {
  return f(caf::meta::type_name("sync_due"), x.ticket);
}

// What the broker asks a session about itself (list, status, health,
// subscriptions), answered with a session_view.
struct session_query {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_query&) {
  return f(caf::meta::type_name("session_query"));
}

// A session as it is now. JSON members hold stored or agent-made JSON text.
struct session_view {
  bool created = false; // false: not (or no longer) a session anyone can use
  std::string session_id;
  bool running = false;
  std::string current_run_id; // empty when idle
  double created_at = 0;
  double last_used_at = 0;
  int64_t message_count = 0;
  std::string config = "{}"; // JSON object
  std::string profile;       // "default" when none
  std::string harness;       // "embedded" or "native"
  std::string native;        // native sessions: the TUI's live facts (JSON object); else empty
  std::string agent;         // embedded sessions: where the agent runs (JSON object)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_view& x) {
  return f(caf::meta::type_name("session_view"), x.created, x.session_id, x.running, x.current_run_id,
           x.created_at, x.last_used_at, x.message_count, x.config, x.profile, x.harness, x.native, x.agent);
}

// -- a session's answers, encoded for the client once (responses.hpp: encode) --

// chat: the turn has begun; with {wait: true}, `result` holds the finished
// run's get_result answer as the log reader wrote it (sent on as it is).
struct chat_reply {
  std::string run_id;
  std::string session_id;
  std::string result;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, chat_reply& x) {
  return f(caf::meta::type_name("chat_reply"), x.run_id, x.session_id, x.result);
}

// interrupt: `synced` once nothing runs any more (or nothing ran); false when
// the turn had not stopped within the limit.
struct interrupt_reply {
  std::string session_id;
  bool synced = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, interrupt_reply& x) {
  return f(caf::meta::type_name("interrupt_reply"), x.session_id, x.synced);
}

// steer: whether the agent took the text.
struct steer_reply {
  bool accepted = false;
  std::string text;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, steer_reply& x) {
  return f(caf::meta::type_name("steer_reply"), x.accepted, x.text);
}

// get_history: the conversation as stored (a JSON array's text).
struct history_reply {
  std::string session_id;
  std::string history;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, history_reply& x) {
  return f(caf::meta::type_name("history_reply"), x.session_id, x.history);
}

// Session -> broker: a chat or estimate could not build the session's first
// agent (or its replacement), so it is listed nowhere: the broker drops it.
struct session_unlisted {
  std::string session_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_unlisted& x) {
  return f(caf::meta::type_name("session_unlisted"), x.session_id);
}

inline void add_session_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<interrupt_turn>("hb::interrupt_turn")
    .add_message_type<steer_turn>("hb::steer_turn")
    .add_message_type<collect_idle>("hb::collect_idle")
    .add_message_type<chat_plan>("hb::chat_plan")
    .add_message_type<turn_input>("hb::turn_input")
    .add_message_type<chat_request>("hb::chat_request")
    .add_message_type<session_unlisted>("hb::session_unlisted")
    .add_message_type<history_of>("hb::history_of")
    .add_message_type<destroy_session>("hb::destroy_session")
    .add_message_type<drain_session>("hb::drain_session")
    .add_message_type<wait_due>("hb::wait_due")
    .add_message_type<sync_due>("hb::sync_due")
    .add_message_type<session_query>("hb::session_query")
    .add_message_type<session_view>("hb::session_view")
    .add_message_type<chat_reply>("hb::chat_reply")
    .add_message_type<interrupt_reply>("hb::interrupt_reply")
    .add_message_type<steer_reply>("hb::steer_reply")
    .add_message_type<history_reply>("hb::history_reply");
}

} // namespace hb::actors
