#include "actors/requests.hpp"

#include "actors/test_faults.hpp"
#include "protocol/names.hpp"
#include "protocol/request.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

namespace hb::actors::requests {

using protocol::field;
using protocol::field_int;
using protocol::field_str;
using protocol::field_truthy;
using protocol::has_field;
using protocol::json;
using protocol::py_strip;

namespace {

// A profile a request names is refused here if it is not a plain name, so a
// path never reaches a host; whether it exists is asked where it is used
// (bridge::check_profile), off the broker's thread.
std::string profile_or_default(const json& req) {
  std::string profile = py_strip(field_str(req, "profile"));
  protocol::check_profile_name(profile);
  return profile.empty() ? "default" : profile;
}

std::string required_session_id(const json& req) {
  std::string id = py_strip(field_str(req, "session_id"));
  if (id.empty())
    throw protocol::value_error("session_id is required");
  return id;
}

int64_t cursor_field(const json& req, const char* key) {
  return std::max<int64_t>(0, field_int(req, key));
}

// A request's fields other than the routing ones: the operation's arguments.
std::string args_of(const json& req) {
  json args = req;
  for (const char* key : {"action", "keepalive", "id", "worker_key"})
    args.erase(key);
  return protocol::dumps(args);
}

profile_op session_op(const json& req, std::string op) {
  std::string id = required_session_id(req);
  return {std::move(op), std::move(id), profile_or_default(req), !field(req, "profile").is_null(), args_of(req)};
}

profile_op profile_wide_op(const json& req, std::string op) {
  return {std::move(op), "", profile_or_default(req), true, args_of(req)};
}

get_output read_get_output(const json& req) {
  get_output r;
  r.run_id = field_str(req, "run_id");
  r.cursor = cursor_field(req, "cursor");
  r.event_cursor = cursor_field(req, "event_cursor");
  r.include_output = !has_field(req, "include_output") || field_truthy(req, "include_output");
  r.wait_ms = std::clamp<int64_t>(field_int(req, "wait_ms"), 0, max_wait_ms);
  return r;
}

subscribe read_subscribe(const json& req) {
  subscribe r{field_str(req, "run_id"), field_str(req, "session_id"), 0, 0};
  if (r.run_id.empty() && r.session_id.empty())
    throw protocol::value_error("subscribe needs a run_id or a session_id");
  if (!r.run_id.empty()) {
    r.cursor = cursor_field(req, "cursor");
    r.event_cursor = cursor_field(req, "event_cursor");
  }
  return r;
}

steer read_steer(const json& req) {
  std::string text = py_strip(field_truthy(req, "text") ? field_str(req, "text") : field_str(req, "message"));
  if (text.empty())
    throw protocol::value_error("text is required");
  return {field_str(req, "session_id"), std::move(text)};
}

approval_respond read_approval(const json& req) {
  std::string id = py_strip(field_str(req, "approval_id"));
  if (id.empty())
    throw protocol::value_error("approval_id is required");
  std::string raw = field_truthy(req, "choice") ? protocol::py_str(field(req, "choice")) : std::string("deny");
  std::string choice = protocol::py_lower(py_strip(raw));
  if (choice != "once" && choice != "session" && choice != "always" && choice != "deny")
    choice = "deny";
  return {std::move(id), std::move(choice)};
}

clarify_respond read_clarify(const json& req) {
  std::string id = py_strip(field_str(req, "clarify_id"));
  if (id.empty())
    throw protocol::value_error("clarify_id is required");
  return {std::move(id), py_strip(field_str(req, "response"))};
}

compression_respond read_compression(const json& req) {
  std::string id = py_strip(field_str(req, "request_id"));
  if (id.empty())
    throw protocol::value_error("request_id is required");
  const json& messages = field(req, "messages");
  if (!messages.is_null() && !messages.is_array())
    throw protocol::value_error("messages must be a list");
  json reply;
  reply["request_id"] = id;
  reply["messages"] = messages;
  reply["system_message"] = field(req, "system_message");
  reply["error"] = field(req, "error");
  return {std::move(id), protocol::dumps(reply)};
}

context_estimate read_estimate(const json& req) {
  // messages or conversation_history, whichever is truthy, else none.
  json messages = json::array();
  if (field_truthy(req, "messages"))
    messages = field(req, "messages");
  else if (field_truthy(req, "conversation_history"))
    messages = field(req, "conversation_history");
  if (!messages.is_array())
    throw protocol::value_error("messages must be a list");
  // Read like a chat's: the same profile/model/provider build the same
  // agent; an estimate always runs in an embedded agent.
  json as_chat = req;
  as_chat.erase("harness");
  context_estimate r;
  r.session_id = py_strip(field_str(req, "session_id"));
  r.recipe = read_recipe(as_chat);
  r.recipe.harness = "embedded";
  json args;
  args["messages"] = std::move(messages);
  args["instructions"] = field_truthy(req, "instructions") ? field(req, "instructions") : field(req, "system_message");
  args["workspace"] = r.recipe.workspace;
  r.args = protocol::dumps(args);
  return r;
}

switch_session_model read_switch(const json& req) {
  switch_session_model r{required_session_id(req), py_strip(field_str(req, "model")),
                         py_strip(field_str(req, "provider"))};
  if (r.model.empty())
    throw protocol::value_error("model is required");
  return r;
}

const std::set<std::string> mcp_actions = {"mcp_list",          "mcp_server_add",  "mcp_server_update",
                                           "mcp_server_remove", "mcp_server_test", "mcp_tools_list",
                                           "mcp_reload"};

using decoder = std::function<any(const json&)>;

template <class T>
decoder nothing_to_read() {
  return [](const json&) -> any { return T{}; };
}

template <class T>
decoder session_named() {
  return [](const json& req) -> any { return T{field_str(req, "session_id")}; };
}

const std::unordered_map<std::string, decoder>& decoders() {
  static const std::unordered_map<std::string, decoder> table = {
    {"ping", nothing_to_read<ping>()},
    {"health", nothing_to_read<health>()},
    {"list", nothing_to_read<list>()},
    {"destroy_all", nothing_to_read<destroy_all>()},
    {"shutdown", nothing_to_read<shutdown>()},
    {"chat", [](const json& req) -> any { return read_chat(req); }},
    {"get_result", [](const json& req) -> any { return get_result{field_str(req, "run_id")}; }},
    {"get_output", read_get_output},
    {"subscribe", read_subscribe},
    {"get_history", session_named<get_history>()},
    {"status", session_named<status>()},
    {"status_if_loaded", session_named<status_if_loaded>()},
    {"destroy", session_named<destroy>()},
    {"interrupt",
     [](const json& req) -> any {
       return interrupt{field_str(req, "session_id"), protocol::dumps(field(req, "message"))};
     }},
    {"steer", read_steer},
    {"approval_respond", read_approval},
    {"clarify_respond", read_clarify},
    {"compression_respond", read_compression},
    {"context_estimate", read_estimate},
    {"switch_session_model", read_switch},
    {"command",
     [](const json& req) -> any {
       required_session_id(req);
       if (py_strip(field_str(req, "command")).empty())
         throw protocol::value_error("command is required");
       return session_op(req, "command");
     }},
    {"goal_evaluate", [](const json& req) -> any { return session_op(req, "goal_evaluate"); }},
    {"goal_pause", [](const json& req) -> any { return session_op(req, "goal_pause"); }},
    {"get_session_title", [](const json& req) -> any { return session_op(req, "session_title"); }},
    {"skills_reload", [](const json& req) -> any { return profile_wide_op(req, "skills_reload"); }},
    {"destroy_profile", [](const json& req) -> any { return destroy_profile{profile_or_default(req)}; }},
    {"worker_ping",
     [](const json& req) -> any {
       std::string profile = profile_or_default(req);
       std::string key = py_strip(field_str(req, "worker_key"));
       return worker_ping{profile, key.empty() ? profile : key};
     }},
  };
  return table;
}

} // namespace

envelope read_envelope(const json& req) {
  envelope e;
  e.keepalive = field_truthy(req, "keepalive");
  if (has_field(req, "id"))
    e.id = protocol::dumps(field(req, "id"));
  return e;
}

any decode(const json& req) {
  std::string action = py_strip(field_str(req, "action"));
  if (action.empty())
    throw protocol::value_error("action is required");
  const auto& table = decoders();
  if (auto it = table.find(action); it != table.end())
    return it->second(req);
  if (action.rfind("mcp_", 0) == 0) {
    if (!mcp_actions.count(action))
      return unknown_mcp{action};
    return profile_wide_op(req, action);
  }
  if (action == "test_fault" && test_fault_enabled("actions"))
    return test_fault{field_str(req, "fault")};
  throw protocol::value_error("unknown action: " + action);
}

} // namespace hb::actors::requests
