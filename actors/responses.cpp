#include "actors/responses.hpp"

#include "protocol/json_text.hpp"
#include "protocol/json_update.hpp"

#include <algorithm>

namespace hb::actors {

using protocol::object_writer;

namespace {

std::string json_array(const std::vector<std::string>& items, size_t from, bool quote) {
  std::string out = "[";
  for (size_t i = from; i < items.size(); ++i) {
    if (i > from)
      out += ", ";
    if (quote)
      protocol::append_quoted(out, items[i]);
    else
      out += items[i];
  }
  out += ']';
  return out;
}

std::string joined(const std::vector<std::string>& items, size_t from) {
  size_t size = 0;
  for (size_t i = from; i < items.size(); ++i)
    size += items[i].size();
  std::string out;
  out.reserve(size);
  for (size_t i = from; i < items.size(); ++i)
    out += items[i];
  return out;
}

object_writer& optional_raw(object_writer& w, const char* key, const std::optional<std::string>& v) {
  return v ? w.raw(key, *v) : w.null(key);
}

object_writer& optional_str(object_writer& w, const char* key, const std::optional<std::string>& v) {
  return v ? w.str(key, *v) : w.null(key);
}

} // namespace

std::string get_output_line(const storage::run_snapshot& run, int64_t cursor, bool include_output) {
  // run.deltas start at run.delta_from: 0 when the whole output is wanted.
  size_t from = static_cast<size_t>(std::clamp<int64_t>(cursor, run.delta_from, run.delta_count) -
                                    run.delta_from);
  bool done = run.status != "running";
  std::string delta = joined(run.deltas, from);
  std::string events = json_array(run.events, 0, false);
  std::string output = include_output ? joined(run.deltas, 0) : std::string();
  // One allocation for the line, as for a finished run in memory (a run's
  // result alone can be hundreds of MB; doubling held twice that).
  object_writer w;
  w.reserve(256 + run.run_id.size() + run.session_id.size() + (delta.size() + output.size()) * 11 / 10 +
            (done && run.result ? run.result->size() : 0) + (run.error ? run.error->size() * 2 : 0) +
            events.size());
  w.boolean("ok", true)
    .str("run_id", run.run_id)
    .str("session_id", run.session_id)
    .str("status", run.status)
    .str("delta", delta)
    .integer("cursor", run.delta_count);
  if (include_output)
    w.str("output", output);
  w.boolean("done", done);
  // Not `done ? run.result : nullopt`: that conditional copies the result.
  if (done)
    optional_raw(w, "result", run.result);
  else
    w.null("result");
  optional_str(w, "error", run.error);
  w.raw("events", events).integer("event_cursor", run.event_count);
  return w.finish();
}

std::string get_output_line(const storage::finished_run& run, int64_t cursor, int64_t event_cursor,
                            bool include_output) {
  std::string delta = run.text_from(cursor);
  std::string events_json = run.events_from(event_cursor);
  object_writer w;
  w.reserve(256 + run.run_id.size() + run.session_id.size() + delta.size() * 2 +
            (include_output ? run.quoted_text.size() : 0) + (run.result ? run.result->size() : 0) +
            (run.error ? run.error->size() * 2 : 0) + events_json.size());
  w.boolean("ok", true)
    .str("run_id", run.run_id)
    .str("session_id", run.session_id)
    .str("status", run.status)
    .str("delta", delta)
    .integer("cursor", run.delta_count());
  if (include_output)
    w.raw("output", run.quoted_text);
  w.boolean("done", true);
  optional_raw(w, "result", run.result);
  optional_str(w, "error", run.error);
  w.raw("events", events_json).integer("event_cursor", run.event_count());
  return w.finish();
}

std::string get_result_line(const storage::run_snapshot& run) {
  object_writer w;
  w.boolean("ok", true)
    .str("run_id", run.run_id)
    .str("session_id", run.session_id)
    .str("status", run.status)
    .number("started_at", run.started_at);
  if (run.ended_at)
    w.number("ended_at", *run.ended_at);
  else
    w.null("ended_at");
  w.str("output", joined(run.deltas, 0))
    .raw("deltas", json_array(run.deltas, 0, true))
    .raw("events", json_array(run.events, 0, false));
  optional_raw(w, "result", run.result);
  optional_str(w, "error", run.error);
  return w.finish();
}


std::string encode(const chat_reply& r) {
  if (!r.result.empty())
    return r.result; // the log reader's get_result answer, as it wrote it
  return object_writer{}
    .boolean("ok", true)
    .str("run_id", r.run_id)
    .str("session_id", r.session_id)
    .str("status", "running")
    .finish();
}

std::string encode(const interrupt_reply& r) {
  return object_writer{}
    .boolean("ok", true)
    .str("status", "interrupted")
    .str("session_id", r.session_id)
    .boolean("synced", r.synced)
    .finish();
}

std::string encode(const steer_reply& r) {
  return object_writer{}
    .boolean("ok", true)
    .str("status", r.accepted ? "queued" : "rejected")
    .boolean("accepted", r.accepted)
    .str("text", r.text)
    .finish();
}

std::string encode(const history_reply& r) {
  return object_writer{}.boolean("ok", true).str("session_id", r.session_id).raw("history", r.history).finish();
}

std::string encode(const switch_reply& r) {
  object_writer w;
  w.boolean("ok", true)
    .str("session_id", r.session_id)
    .str("model", r.model)
    .str("provider", r.provider)
    .boolean("loaded", r.loaded)
    .boolean("switched", r.switched);
  if (r.deferred)
    w.boolean("deferred", true);
  if (!r.reason.empty())
    w.str("reason", r.reason);
  return w.finish();
}

// The agent's estimate follows the session's members; a member it names
// again replaces the session's in place (Studio's bridge merges the same way).
std::string encode(const estimate_reply& r) {
  protocol::json out;
  out["ok"] = true;
  out["session_id"] = r.session_id;
  out["profile"] = r.profile;
  out["model"] = r.model;
  out["provider"] = r.provider.empty() ? protocol::json() : protocol::json(r.provider);
  protocol::update_from_text(out, r.estimate);
  return protocol::dumps(out);
}

std::string encode(const approval_outcome& o) {
  return object_writer{}
    .boolean("ok", true)
    .str("approval_id", o.approval_id)
    .boolean("resolved", o.resolved)
    .str("choice", o.choice)
    .finish();
}

std::string encode(const clarify_outcome& o) {
  return object_writer{}.boolean("ok", true).str("clarify_id", o.clarify_id).boolean("resolved", o.resolved).finish();
}

std::string encode(const compression_outcome& o) {
  return object_writer{}.boolean("ok", true).str("request_id", o.request_id).boolean("handled", true).finish();
}

} // namespace hb::actors
