// The actions Hermes Studio's current client sends on top of the seed's
// (EKKOLearnAI/hermes-studio 18618ad8; its own bridge is the reference for
// each answer): context estimates, slash commands, model switches, goals,
// titles, clarify answers, profiles, MCP servers and skills. Each request is
// decoded here once; whatever needs the agent runs off the broker's thread.
#include "actors/broker_state.hpp"

#include "actors/blocking_call.hpp"
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

const std::set<std::string> mcp_actions = {"mcp_list",          "mcp_server_add",    "mcp_server_update",
                                           "mcp_server_remove", "mcp_server_test",   "mcp_tools_list",
                                           "mcp_reload"};

// A profile a request names is refused here if it is not a plain name, so a
// path never reaches a host; whether it exists is asked where it is used
// (bridge::check_profile), off the broker's thread.
std::string profile_or_default(const json& req) {
  std::string profile = protocol::py_strip(protocol::field_str(req, "profile"));
  protocol::check_profile_name(profile);
  return profile.empty() ? "default" : profile;
}

std::string required_session_id(const json& req) {
  std::string id = protocol::py_strip(protocol::field_str(req, "session_id"));
  if (id.empty())
    throw protocol::value_error("session_id is required");
  return id;
}

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
  using outcome = std::tuple<bool, std::string, std::string>;
  blocking_call(self,
                [host, profile, op, args]() -> outcome {
                  try {
                    bridge::check_profile(profile); // before a worker is started for it
                    return {true, host->call(profile, op, args), ""};
                  } catch (const protocol::wire_error& e) {
                    return {false, e.type, e.what()};
                  }
                })
    .then(
      [=](bool ok, std::string& payload, std::string& message) {
        respond(self, to, ok ? ok_merged(payload) : error_line(payload, message));
      },
      [=](caf::error& err) { respond_failure(self, to, err); });
}

// The profile a session-scoped operation runs in: the session's own, else
// the one the request names (as Studio's broker routes), else the session
// is unknown.
template <class Then>
void with_session_profile(broker_actor* self, const reply_to& to, const std::string& id, const json& req,
                          Then then) {
  bool named = !protocol::field(req, "profile").is_null();
  std::string fallback = profile_or_default(req);
  auto it = self->state.sessions.find(id);
  if (it == self->state.sessions.end()) {
    if (!named)
      throw protocol::key_error("unknown session: " + id);
    return then(fallback);
  }
  self->request(it->second, session_reply_limit, profile_of{})
    .then(
      [=](bool created, std::string& profile) mutable {
        if (created)
          then(profile);
        else if (named)
          then(fallback);
        else
          respond(self, to, error_line(protocol::key_error("unknown session: " + id)));
      },
      [=](caf::error& err) { respond_failure(self, to, err); });
}

// A request's fields other than the routing ones, as the operation's arguments.
std::string args_of(const json& req) {
  json args = req;
  for (const char* key : {"action", "keepalive", "id", "worker_key"})
    args.erase(key);
  return protocol::dumps(args);
}

void context_estimate(broker_actor* self, const reply_to& to, const json& req) {
  // messages or conversation_history, whichever is truthy, else none.
  json messages = json::array();
  if (protocol::field_truthy(req, "messages"))
    messages = protocol::field(req, "messages");
  else if (protocol::field_truthy(req, "conversation_history"))
    messages = protocol::field(req, "conversation_history");
  if (!messages.is_array())
    throw protocol::value_error("messages must be a list");
  estimate_context msg;
  // Read like a chat's: the same profile/model/provider build the same agent.
  json as_chat = req;
  as_chat.erase("harness");
  as_chat.erase("wait");
  chat_request chat = read_chat(protocol::dumps(as_chat), "embedded");
  msg.recipe = chat.recipe;
  json args;
  args["messages"] = messages;
  const json& instructions = protocol::field_truthy(req, "instructions") ? protocol::field(req, "instructions")
                                                                          : protocol::field(req, "system_message");
  args["instructions"] = instructions;
  args["workspace"] = msg.recipe.workspace;
  msg.args = protocol::dumps(args);
  std::string id = protocol::py_strip(protocol::field_str(req, "session_id"));
  if (id.empty())
    id = new_id();
  bool known = self->state.sessions.count(id) != 0;
  caf::actor session = session_actor_for(self, id);
  self->request(session, caf::infinite, std::move(msg))
    .then(
      [=](std::string& line, bool created) {
        if (!created && !known)
          forget_session_actor(self, id, session); // its agent could not be built
        respond(self, to, std::move(line));
      },
      [=](caf::error& err) { respond_failure(self, to, err); });
}

void switch_session_model(broker_actor* self, const reply_to& to, const json& req) {
  std::string id = required_session_id(req);
  switch_model msg{protocol::py_strip(protocol::field_str(req, "model")),
                   protocol::py_strip(protocol::field_str(req, "provider"))};
  if (msg.model.empty())
    throw protocol::value_error("model is required");
  auto it = self->state.sessions.find(id);
  if (it == self->state.sessions.end())
    return respond(self, to, object_writer{}
                               .boolean("ok", true)
                               .str("session_id", id)
                               .str("model", msg.model)
                               .str("provider", msg.provider)
                               .boolean("loaded", false)
                               .boolean("switched", false)
                               .str("reason", "session_not_loaded")
                               .finish());
  self->request(it->second, caf::infinite, std::move(msg))
    .then([=](std::string& line) { respond(self, to, std::move(line)); },
          [=](caf::error& err) { respond_failure(self, to, err); });
}

// Sessions of a profile go the way destroy_all sends every session.
void destroy_profile(broker_actor* self, const reply_to& to, const json& req) {
  std::string profile = profile_or_default(req);
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

void worker_ping(broker_actor* self, const reply_to& to, const json& req) {
  std::string profile = profile_or_default(req);
  std::string key = protocol::py_strip(protocol::field_str(req, "worker_key"));
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
                      .str("worker_key", key.empty() ? profile : key)
                      .finish());
}

void status_if_loaded(broker_actor* self, const reply_to& to, const json& req) {
  std::string id = protocol::field_str(req, "session_id");
  auto not_loaded = [&] {
    return object_writer{}
      .boolean("ok", true)
      .str("session_id", id)
      .boolean("exists", false)
      .boolean("running", false)
      .boolean("loaded", false)
      .finish();
  };
  auto it = self->state.sessions.find(id);
  if (it == self->state.sessions.end())
    return respond(self, to, not_loaded());
  self->request(it->second, session_reply_limit, status_atom::value)
    .then(
      [=](bool created, double, std::string&, std::string& status) {
        if (!created)
          return respond(self, to, not_loaded());
        status.pop_back(); // the closing brace
        respond(self, to, "{\"ok\": true, " + status.substr(1) + ", \"loaded\": true}");
      },
      [=](caf::error& err) { respond_failure(self, to, err); });
}

} // namespace

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

bool route_studio(broker_actor* self, const reply_to& to, const std::string& action, const json& req) {
  if (action == "context_estimate") {
    context_estimate(self, to, req);
  } else if (action == "switch_session_model") {
    switch_session_model(self, to, req);
  } else if (action == "command" || action == "goal_evaluate" || action == "goal_pause") {
    std::string id = required_session_id(req);
    if (action == "command" && protocol::py_strip(protocol::field_str(req, "command")).empty())
      throw protocol::value_error("command is required");
    std::string args = args_of(req);
    with_session_profile(self, to, id, req, [=](const std::string& profile) {
      profile_call(self, to, profile, action, args);
    });
  } else if (action == "get_session_title") {
    std::string id = required_session_id(req);
    std::string args = args_of(req);
    with_session_profile(self, to, id, req, [=](const std::string& profile) {
      profile_call(self, to, profile, "session_title", args);
    });
  } else if (action == "skills_reload") {
    profile_call(self, to, profile_or_default(req), action, args_of(req));
  } else if (action.rfind("mcp_", 0) == 0) {
    if (!mcp_actions.count(action))
      return respond(self, to,
                     object_writer{}.boolean("ok", false).str("error", "unknown MCP action: " + action).finish()),
             true;
    profile_call(self, to, profile_or_default(req), action, args_of(req));
  } else if (action == "clarify_respond") {
    clarify_respond(self, to, req);
  } else if (action == "destroy_profile") {
    destroy_profile(self, to, req);
  } else if (action == "worker_ping") {
    worker_ping(self, to, req);
  } else if (action == "status_if_loaded") {
    status_if_loaded(self, to, req);
  } else {
    return false;
  }
  return true;
}

} // namespace hb::actors
