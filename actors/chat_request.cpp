#include "actors/chat_request.hpp"

#include "actors/errors.hpp"

#include "protocol/json_check.hpp"
#include "protocol/json_text.hpp"
#include "protocol/names.hpp"
#include "protocol/request.hpp"
#include "protocol/wire_error.hpp"

#include <sys/stat.h>

#include <climits>
#include <cstdint>
#include <cstdlib>

namespace hb::actors {

namespace {

std::string real_path(const std::string& path) {
  char buffer[PATH_MAX];
  return ::realpath(path.c_str(), buffer) ? std::string(buffer) : path;
}

} // namespace

agent_recipe read_recipe(const protocol::json& req) {
  agent_recipe recipe;
  auto& [profile, model, provider, harness, workspace] = recipe;
  profile = protocol::field_str(req, "profile");
  protocol::check_profile_name(profile); // it becomes <hermes-home>/profiles/<profile>
  model = protocol::py_strip(protocol::field_str(req, "model"));
  provider = protocol::py_strip(protocol::field_str(req, "provider"));
  harness = protocol::py_lower(protocol::py_strip(protocol::field_str(req, "harness")));
  if (!harness.empty() && harness != "embedded" && harness != "native")
    throw protocol::value_error("harness must be 'embedded' or 'native', not '" + harness + "'");
  // Where the agent's tools run (embedded) or the TUI starts (native); a
  // path that is not a directory is refused before anything is touched.
  workspace = protocol::py_strip(protocol::field_str(req, "workspace"));
  if (!workspace.empty()) {
    struct stat info {};
    if (::stat(workspace.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
      throw protocol::value_error("workspace is not a directory: " + workspace);
    workspace = real_path(workspace);
  }
  return recipe;
}

namespace {

chat_plan read_plan(const protocol::json& req, const protocol::json& message) {
  chat_plan plan;
  plan.wait = protocol::field_truthy(req, "wait");
  if (plan.wait)
    plan.timeout = protocol::clamp_timeout_s(protocol::field_float(req, "timeout")); // "inf", "nan", -1, 1e300
  plan.replay = protocol::py_strip(protocol::field_str(req, "replay"));
  // Kept with the run so a crash mid-turn cannot take the turn out of the history.
  if (plan.replay.empty())
    plan.user_message = protocol::dumps(message.is_null() ? protocol::json("") : message);
  if (!plan.replay.empty() && protocol::has_field(req, "speed")) {
    plan.replay_speed = protocol::field_float(req, "speed");
    if (!(plan.replay_speed > 0))
      throw protocol::value_error("speed must be a positive number");
  }
  return plan;
}

turn_input read_turn(const protocol::json& req, const protocol::json& message) {
  turn_input turn;
  protocol::json fields = req;
  fields.erase("workspace");
  fields.erase("conversation_history");
  turn.fields = protocol::dumps(fields);
  const protocol::json& history = protocol::field(req, "conversation_history");
  if (!history.is_null())
    turn.history = protocol::dumps(history);
  turn.message_text = message.is_string() ? message.get<std::string>() : protocol::py_str(message);
  turn.tui_command = protocol::field_truthy(req, "tui_command");
  return turn;
}

} // namespace

chat_request read_chat(const protocol::json& req) {
  // Types the agent would only choke on later, inside a run: refused now.
  const protocol::json& history = protocol::field(req, "conversation_history");
  if (!history.is_null() && !history.is_array())
    throw protocol::value_error("conversation_history must be a list of messages");
  const protocol::json& message = protocol::has_field(req, "message") ? protocol::field(req, "message")
                                                                      : protocol::field(req, "input");
  if (!message.is_null() && !message.is_string() && !message.is_array())
    throw protocol::value_error("message must be a string or a list of content blocks");
  chat_request out;
  out.session_id = protocol::py_strip(protocol::field_str(req, "session_id"));
  out.turn = read_turn(req, message);
  try {
    out.recipe = read_recipe(req);
    out.plan = read_plan(req, message);
  } catch (const protocol::wire_error& e) {
    out.invalid = to_error(e);
  }
  return out;
}

std::string agent_request(const turn_input& turn, const std::string& workspace, const std::string& history) {
  protocol::object_writer w;
  w.members(turn.fields);
  if (!workspace.empty())
    w.str("workspace", workspace);
  if (!history.empty())
    w.raw("conversation_history", history);
  return w.finish();
}

std::string replay_session_config(const std::string& session_id) {
  return protocol::object_writer{}
    .str("requested_session_id", session_id)
    .str("profile", "default")
    .str("model", "replay")
    .null("provider")
    .null("base_url")
    .null("api_mode")
    .str("platform", "replay")
    .boolean("resumed", false)
    .integer("resumed_message_count", 0)
    .null("db_error")
    .finish();
}

std::string resumed_config(const std::string& config, int64_t message_count) {
  auto doc = protocol::json::parse(config, nullptr, false);
  if (!doc.is_object())
    return config;
  doc["resumed"] = true;
  doc["resumed_message_count"] = message_count;
  return protocol::dumps(doc);
}

} // namespace hb::actors
