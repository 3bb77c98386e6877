#include "actors/broker_replies.hpp"

#include "protocol/json_text.hpp"
#include "protocol/json_update.hpp"

namespace hb::actors {

using protocol::object_writer;

namespace {

// The seed's members of a session, in its order, then ours.
object_writer& session_members(object_writer& w, const session_view& v, bool with_exists) {
  w.str("session_id", v.session_id);
  if (with_exists)
    w.boolean("exists", true);
  w.boolean("running", v.running);
  if (v.current_run_id.empty())
    w.null("current_run_id");
  else
    w.str("current_run_id", v.current_run_id);
  w.number("created_at", v.created_at)
    .number("last_used_at", v.last_used_at)
    .integer("message_count", v.message_count)
    .raw("config", v.config);
  // Native sessions only: embedded ones answer exactly as the seed does.
  if (!v.native.empty())
    w.raw("native", v.native);
  return w;
}

// A session as `list` shows it (Hermes Studio's bridge's fields after the seed's).
std::string list_entry(const session_view& view) {
  object_writer w;
  session_members(w, view, false).str("profile", view.profile).str("worker_key", view.profile);
  return w.finish();
}

std::string counts(const std::map<std::string, int64_t>& by_name) {
  object_writer w;
  for (const auto& [name, n] : by_name)
    w.integer(name, n);
  return w.finish();
}

} // namespace

std::string encode(const done_reply& r) {
  object_writer w;
  w.boolean("ok", true);
  if (!r.status.empty())
    w.str("status", r.status);
  return w.finish();
}

std::string encode(const ping_reply& r) {
  return object_writer{}
    .reserve(512 + r.agent_root.size() + r.endpoint.size() + r.workers.size() + r.worker_details.size() +
             r.agent.size() + r.version.size()) // ping's answer grows once, not by doubling
    .boolean("ok", true)
    .boolean("pong", true)
    .number("time", r.time)
    .str("agent_root", r.agent_root)
    .str("mode", "broker")
    .raw("broker", object_writer{}.integer("pid", r.pid).str("endpoint", r.endpoint).finish())
    .raw("workers", r.workers)
    .raw("worker_details", r.worker_details)
    .integer("active_sessions", r.activity.sessions)
    .integer("running_sessions", r.activity.running)
    .raw("sessions_by_profile", counts(r.activity.by_profile))
    .raw("running_sessions_by_profile", counts(r.activity.running_by_profile))
    .raw("agent", r.agent)
    .raw("version", r.version)
    .finish();
}

std::string encode(const worker_ping_reply& r) {
  return object_writer{}
    .boolean("ok", true)
    .boolean("pong", true)
    .number("time", r.time)
    .integer("pid", r.pid)
    .str("agent_root", r.agent_root)
    .str("profile", r.profile)
    .str("hermes_home", r.hermes_home)
    .integer("session_count", r.session_count)
    .integer("running_session_count", r.running_session_count)
    .str("worker_profile", r.profile)
    .str("worker_key", r.worker_key)
    .finish();
}

std::string encode(const session_list_reply& r) {
  std::string items = "[";
  for (size_t i = 0; i < r.sessions.size(); ++i)
    items += (i ? ", " : "") + list_entry(r.sessions[i]);
  items += ']';
  return object_writer{}.boolean("ok", true).raw("sessions", items).finish();
}

// A known session: its entry with "exists" and its agent. An unknown one:
// the seed's answer, or status_if_loaded's "loaded": false.
std::string encode(const status_reply& r) {
  object_writer w;
  w.boolean("ok", true);
  if (r.view) {
    session_members(w, *r.view, true);
    if (r.view->harness != "native")
      w.raw("agent", r.view->agent);
    if (r.if_loaded)
      w.boolean("loaded", true);
    return w.finish();
  }
  w.str("session_id", r.session_id).boolean("exists", false).boolean("running", false);
  if (r.if_loaded)
    w.boolean("loaded", false);
  else
    w.integer("message_count", 0);
  return w.finish();
}

std::string encode(const destroy_reply& r) {
  return object_writer{}.boolean("ok", true).str("session_id", r.session_id).boolean("destroyed", r.destroyed).finish();
}

std::string encode(const destroyed_count_reply& r) {
  object_writer w;
  w.boolean("ok", true);
  if (r.profile)
    w.str("profile", *r.profile);
  return w.integer("destroyed", r.destroyed).finish();
}

std::string encode(const profile_op_reply& r) {
  protocol::json out;
  out["ok"] = true;
  protocol::update_from_text(out, r.result);
  return protocol::dumps(out);
}

std::string encode(const unknown_mcp_reply& r) {
  return object_writer{}.boolean("ok", false).str("error", "unknown MCP action: " + r.action).finish();
}

// "degraded": the log takes no output now, or no agent can be started; what
// the log holds and what it had to give up on, so an operator sees it before
// a client does.
std::string encode(const health_reply& r) {
  const log_health& log = r.log;
  object_writer state;
  state.str("state", log.degraded ? "degraded" : "ok");
  if (log.degraded)
    state.str("reason", log.reason).number("since", log.degraded_since);
  state.integer("held_operations", log.held_operations)
    .integer("held_bytes", log.held_bytes)
    .integer("failed_runs", log.failed_runs);
  return object_writer{}
    .boolean("ok", true)
    .str("status", log.degraded || !r.agents_available ? "degraded" : "ok")
    .raw("log", state.finish())
    .integer("sessions", r.sessions)
    .integer("running", r.running)
    .integer("pending_questions", r.pending_questions)
    .integer("connections", r.connections)
    .integer("subscribers", r.subscribers)
    .raw("output_windows",
         object_writer{}
           .integer("runs", r.window_runs)
           .integer("ended_runs", r.window_ended_runs)
           .integer("bytes", r.window_bytes)
           .finish())
    .integer("pending_request_bytes", r.pending_request_bytes)
    .integer("queued_answer_bytes", r.queued_answer_bytes)
    .integer("log_bytes", r.log_bytes)
    .integer("commits", log.commits)
    .integer("committed_rows", log.rows)
    .number("last_commit_ms", log.last_commit_ms)
    .number("max_commit_ms", log.max_commit_ms)
    .raw("agent", r.agent)
    .raw("version", r.version)
    .finish();
}

} // namespace hb::actors
