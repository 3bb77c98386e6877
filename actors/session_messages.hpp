// Messages the broker sends a session about its turn and its life: an
// interrupt, a steer, idle collection. One struct per message kind, each
// with an inspect() overload so it could cross a process. (Chat still
// arrives as the request line: the session decides which errors come first,
// "already running" before a malformed request, as the seed does.)
#pragma once

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

inline void add_session_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<interrupt_turn>("hb::interrupt_turn")
    .add_message_type<steer_turn>("hb::steer_turn")
    .add_message_type<collect_idle>("hb::collect_idle");
}

} // namespace hb::actors
