// The actions Hermes Studio's current client sends on top of the seed's
// (EKKOLearnAI/hermes-studio 18618ad8; its own bridge is the reference for
// each answer): context estimates, slash commands, model switches, goals,
// titles, clarify answers, profiles, MCP servers and skills. Each request is
// decoded here once; whatever needs the agent runs off the broker's thread.
#include "actors/broker_state.hpp"

#include "actors/blocking_call.hpp"
#include "actors/errors.hpp"
#include "actors/responses.hpp"
#include "actors/session.hpp"
#include "actors/studio_messages.hpp"
#include "bridge/agent_hosting.hpp"
#include "protocol/names.hpp"
#include "protocol/request.hpp"

#include <unistd.h>

#include <set>

namespace hb::actors {


namespace {

// Runs `op` in `profile`'s agent environment on a thread of its own; for a
// session's operation, where that session's agent lives.
void profile_call(broker_actor* self, const reply_to& to, const std::string& profile, const std::string& op,
                  std::string args, const std::string& session_id = {}) {
  bridge::profile_host* host = &bridge::profiles();
  blocking_call(self,
                [host, profile, op, args, session_id]() -> expected<std::string> {
                  return catch_wire([&] {
                    bridge::check_profile(profile); // before a worker is started for it
                    return session_id.empty() ? host->call(profile, op, args)
                                              : host->call_for_session(session_id, profile, op, args);
                  });
                })
    .then([=](std::string& payload) { respond(self, to, encode(profile_op_reply{std::move(payload)})); },
          [=](caf::error& err) { respond_failure(self, to, err); });
}

// The profile a session-scoped operation runs in: the session's own, else
// the one the request names (as Studio's broker routes), else the session
// is unknown.
template <class Then>
void with_session_profile(broker_actor* self, const reply_to& to, const requests::profile_op& r, Then then) {
  auto it = self->state.sessions.find(r.session_id);
  if (it == self->state.sessions.end()) {
    if (!r.profile_named)
      throw protocol::key_error("unknown session: " + r.session_id);
    return then(r.profile);
  }
  self->request(it->second, session_reply_limit, profile_of{})
    .then(
      [=, fallback = r.profile, named = r.profile_named, id = r.session_id](bool created,
                                                                            std::string& profile) mutable {
        if (created)
          then(profile);
        else if (named)
          then(fallback);
        else
          respond_failure(self, to, make_error(errc::not_found, "unknown session: " + id));
      },
      [=](caf::error& err) { respond_failure(self, to, err); });
}

} // namespace

void on_request(broker_actor* self, const reply_to& to, requests::context_estimate& r) {
  std::string id = r.session_id.empty() ? new_id() : r.session_id;
  ask_and_answer<estimate_reply>(self, to, session_actor_for(self, id),
                                 estimate_context{std::move(r.recipe), std::move(r.args)});
}

void on_request(broker_actor* self, const reply_to& to, requests::switch_session_model& r) {
  auto it = self->state.sessions.find(r.session_id);
  if (it == self->state.sessions.end())
    return respond(self, to,
                   encode(switch_reply{r.session_id, r.model, r.provider, false, false, false, "session_not_loaded"}));
  ask_and_answer<switch_reply>(self, to, it->second, switch_model{std::move(r.model), std::move(r.provider)});
}

void on_request(broker_actor* self, const reply_to& to, requests::profile_op& r) {
  if (r.session_id.empty())
    return profile_call(self, to, r.profile, r.op, r.args);
  with_session_profile(self, to, r, [=, op = r.op, args = r.args, id = r.session_id](const std::string& profile) {
    profile_call(self, to, profile, op, args, id);
  });
}

void on_request(broker_actor* self, const reply_to& to, requests::unknown_mcp& r) {
  respond(self, to, encode(unknown_mcp_reply{r.action}));
}

void on_request(broker_actor* self, const reply_to& to, requests::destroy_profile& r) {
  std::string profile = r.profile;
  std::vector<std::pair<std::string, caf::actor>> doomed;
  for (auto& entry : live_activity(self))
    if (entry.profile == profile)
      doomed.emplace_back(entry.session_id, self->state.sessions.at(entry.session_id));
  std::vector<caf::actor> sessions;
  for (auto& [id, session] : doomed) {
    forget_session_actor(self, id, session);
    sessions.push_back(session);
  }
  destroy_sessions(self, std::move(sessions), [=](int64_t count) {
    respond(self, to, encode(destroyed_count_reply{profile, count}));
  });
}

void on_request(broker_actor* self, const reply_to& to, requests::worker_ping& r) {
  const auto& settings = *self->state.settings;
  worker_ping_reply pong{now_seconds(), self->state.pid, settings.agent_root, r.profile, settings.hermes_home, 0, 0,
                         r.worker_key};
  for (auto& entry : live_activity(self))
    if (entry.profile == r.profile) {
      ++pong.session_count;
      pong.running_session_count += entry.running ? 1 : 0;
    }
  respond(self, to, encode(pong));
}

ping_reply ping_of(broker_actor* self) {
  auto& st = self->state;
  ping_reply pong;
  pong.time = now_seconds();
  pong.agent_root = st.settings->agent_root;
  pong.pid = st.pid;
  pong.endpoint = st.settings->endpoint;
  for (auto& [_, profile, running] : live_activity(self)) {
    ++pong.activity.sessions;
    ++pong.activity.by_profile[profile];
    if (running) {
      ++pong.activity.running;
      ++pong.activity.running_by_profile[profile];
    }
  }
  auto workers = bridge::studio_workers();
  pong.workers = std::move(workers.workers);
  pong.worker_details = std::move(workers.details);
  pong.agent = bridge::agent_summary_json();
  pong.version = st.settings->version_json;
  return pong;
}

} // namespace hb::actors
