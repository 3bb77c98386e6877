// Messages for what Hermes Studio asks of a session besides chat: context
// estimates, model switches, which profile a session runs in, and the
// broker's picture of sessions for `ping`. One struct per message kind,
// decoded from the request once (in the broker) and answered with a struct
// the broker encodes (responses.hpp); each has an inspect() overload so it could cross a process.
#pragma once

#include "actors/chat_request.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>

#include <string>

namespace hb::actors {

// context_estimate: the session's agent, built from `recipe` when it has
// none, estimates what `args` (messages, instructions, workspace) cost.
struct estimate_context {
  agent_recipe recipe;
  std::string args; // a JSON object for bridge_ops' context_estimate
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, estimate_context& x) {
  return f(caf::meta::type_name("estimate_context"), x.recipe, x.args);
}

// switch_session_model: a live agent switches now, a running one after its
// turn; a session without a live agent is not loaded.
struct switch_model {
  std::string model;
  std::string provider;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, switch_model& x) {
  return f(caf::meta::type_name("switch_model"), x.model, x.provider);
}

// switch_session_model's answer: the model the session has (or will have
// after its turn: `deferred`), whether its agent was loaded and switched,
// and why not (empty when it was).
struct switch_reply {
  std::string session_id;
  std::string model;
  std::string provider;
  bool loaded = false;
  bool switched = false;
  bool deferred = false;
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, switch_reply& x) {
  return f(caf::meta::type_name("switch_reply"), x.session_id, x.model, x.provider, x.loaded, x.switched,
           x.deferred, x.reason);
}

// context_estimate's answer: the session as it ran the estimate, and the
// agent's estimate (a JSON object's text, its members follow the session's).
struct estimate_reply {
  std::string session_id;
  std::string profile;
  std::string model;
  std::string provider; // empty: none
  std::string estimate;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, estimate_reply& x) {
  return f(caf::meta::type_name("estimate_reply"), x.session_id, x.profile, x.model, x.provider, x.estimate);
}

// Which profile the session runs in (answered with created, profile).
struct profile_of {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, profile_of&) {
  return f(caf::meta::type_name("profile_of"));
}

// Names them for CAF (needed once a message crosses a process).
inline void add_studio_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<agent_recipe>("hb::agent_recipe")
    .add_message_type<estimate_context>("hb::estimate_context")
    .add_message_type<switch_model>("hb::switch_model")
    .add_message_type<switch_reply>("hb::switch_reply")
    .add_message_type<estimate_reply>("hb::estimate_reply")
    .add_message_type<profile_of>("hb::profile_of");
}

} // namespace hb::actors
