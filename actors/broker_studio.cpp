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

using protocol::error_line;
using protocol::json;
using protocol::object_writer;

namespace {

// Studio's bridge answers {"ok": true, **result}: a result may say ok:false
// itself (an MCP server that does not exist), and then the answer does.
std::string ok_merged(const std::string& result_json) {
  json result = json::parse(result_json, nullptr, false);
  json out;
  out["ok"] = true;
  if (result.is_object())
    for (auto it = result.begin(); it != result.end(); ++it)
      out[it.key()] = it.value();
  return protocol::dumps(out);
}

// Runs `op` in `profile`'s agent environment on a thread of its own.
void profile_call(broker_actor* self, const reply_to& to, const std::string& profile, const std::string& op,
                  std::string args) {
  bridge::profile_host* host = &bridge::profiles();
  blocking_call(self,
                [host, profile, op, args]() -> expected<std::string> {
                  return catch_wire([&] {
                    bridge::check_profile(profile); // before a worker is started for it
                    return host->call(profile, op, args);
                  });
                })
    .then([=](std::string& payload) { respond(self, to, ok_merged(payload)); },
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
  with_session_profile(self, to, r, [=, op = r.op, args = r.args](const std::string& profile) {
    profile_call(self, to, profile, op, args);
  });
}

void on_request(broker_actor* self, const reply_to& to, requests::unknown_mcp& r) {
  respond(self, to, object_writer{}.boolean("ok", false).str("error", "unknown MCP action: " + r.action).finish());
}

void on_request(broker_actor* self, const reply_to& to, requests::destroy_profile& r) {
  std::string profile = r.profile;
  std::vector<std::pair<std::string, caf::actor>> doomed;
  for (auto& [id, entry] : self->state.activity)
    if (entry.first == profile)
      if (auto it = self->state.sessions.find(id); it != self->state.sessions.end())
        doomed.emplace_back(id, it->second);
  std::vector<caf::actor> sessions;
  for (auto& [id, session] : doomed) {
    forget_session_actor(self, id, session);
    sessions.push_back(session);
  }
  destroy_sessions(self, std::move(sessions), [=](int64_t count) {
    respond(self, to, object_writer{}.boolean("ok", true).str("profile", profile).integer("destroyed", count).finish());
  });
}

void on_request(broker_actor* self, const reply_to& to, requests::worker_ping& r) {
  const std::string& profile = r.profile;
  int64_t sessions = 0, running = 0;
  for (auto& [id, entry] : self->state.activity)
    if (entry.first == profile) {
      ++sessions;
      running += entry.second ? 1 : 0;
    }
  const auto& settings = *self->state.settings;
  respond(self, to, object_writer{}
                      .boolean("ok", true)
                      .boolean("pong", true)
                      .number("time", now_seconds())
                      .integer("pid", ::getpid())
                      .str("agent_root", settings.agent_root)
                      .str("profile", profile)
                      .str("hermes_home", settings.hermes_home)
                      .integer("session_count", sessions)
                      .integer("running_session_count", running)
                      .str("worker_profile", profile)
                      .str("worker_key", r.worker_key)
                      .finish());
}

void add_ping_fields(broker_actor* self, object_writer& w) {
  auto& st = self->state;
  std::map<std::string, int64_t> by_profile, running_by_profile;
  int64_t running = 0;
  for (auto& [id, entry] : st.activity) {
    ++by_profile[entry.first];
    if (entry.second) {
      ++running_by_profile[entry.first];
      ++running;
    }
  }
  auto counts = [](const std::map<std::string, int64_t>& m) {
    object_writer c;
    for (auto& [k, v] : m)
      c.integer(k, v);
    return c.finish();
  };
  auto workers = bridge::studio_workers();
  w.str("mode", "broker")
    .raw("broker", object_writer{}.integer("pid", ::getpid()).str("endpoint", st.settings->endpoint).finish())
    .raw("workers", workers.workers)
    .raw("worker_details", workers.details)
    .integer("active_sessions", static_cast<int64_t>(st.activity.size()))
    .integer("running_sessions", running)
    .raw("sessions_by_profile", counts(by_profile))
    .raw("running_sessions_by_profile", counts(running_by_profile))
    .raw("agent", bridge::agent_summary_json())
    .raw("version", st.settings->version_json);
}

} // namespace hb::actors
