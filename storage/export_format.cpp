#include "storage/export_format.hpp"

#include "protocol/json_text.hpp"
#include "storage/run_events.hpp"

#include <optional>

namespace hb::storage {

using protocol::json;
using protocol::object_writer;

namespace {

object_writer& opt_number(object_writer& w, const char* key, const std::optional<double>& v) {
  return v ? w.number(key, *v) : w.null(key);
}

object_writer& opt_str(object_writer& w, const char* key, const std::optional<std::string>& v) {
  return v ? w.str(key, *v) : w.null(key);
}

} // namespace

std::string encode_header(const export_header& h) {
  return object_writer{}
    .str("format", export_format_name)
    .integer("version", h.version)
    .str("type", "header")
    .integer("schema_version", h.schema_version)
    .number("exported_at", h.exported_at)
    .str("source", h.source)
    .integer("sessions", h.sessions)
    .integer("runs", h.runs)
    .finish();
}

std::string encode_session(const session_row& s) {
  return object_writer{}
    .str("type", "session")
    .str("session_id", s.session_id)
    .number("created_at", s.created_at)
    .number("last_used_at", s.last_used_at)
    .str("config", s.config)
    .str("history", s.history)
    .integer("message_count", s.message_count)
    .boolean("destroyed", s.destroyed)
    .finish();
}

std::string encode_run(const run_row& r) {
  object_writer w;
  w.str("type", "run")
    .str("run_id", r.run_id)
    .str("session_id", r.session_id)
    .str("status", r.status)
    .number("started_at", r.started_at);
  opt_number(w, "ended_at", r.ended_at);
  opt_str(w, "result", r.result);
  opt_str(w, "error", r.error);
  opt_number(w, "pruned_at", r.pruned_at);
  if (r.user_message) // absent rather than null: files from before it stay as they were
    w.str("user_message", *r.user_message);
  return w.finish();
}

namespace {

std::string encode_row(const char* type, const char* text_key, const std::string& run_id, const seq_row& row) {
  return object_writer{}
    .str("type", type)
    .str("run_id", run_id)
    .integer("seq", row.seq)
    .number("at", row.at)
    .str(text_key, row.text)
    .finish();
}

} // namespace

std::string encode_delta(const std::string& run_id, const seq_row& d) {
  return encode_row("delta", "text", run_id, d);
}

std::string encode_event(const std::string& run_id, const seq_row& e) {
  return encode_row("event", "body", run_id, e);
}

std::string encode_end(const export_counts& c) {
  return object_writer{}
    .str("type", "end")
    .integer("sessions", c.sessions)
    .integer("runs", c.runs)
    .integer("deltas", c.deltas)
    .integer("events", c.events)
    .finish();
}

// -- decoding -------------------------------------------------------------------

export_damaged::export_damaged(size_t line, const std::string& why)
  : std::runtime_error(line > 0 ? "line " + std::to_string(line) + ": " + why : why), line(line) {}

namespace {

// Typed fields of one decoded line; every failure names the field.
struct fields {
  const json& obj;
  size_t line;

  [[noreturn]] void bad(const char* key, const char* want) const {
    throw export_damaged(line, std::string("field \"") + key + "\" must be " + want);
  }
  const json& get(const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end())
      throw export_damaged(line, std::string("field \"") + key + "\" is missing");
    return *it;
  }
  std::string str(const char* key) const {
    const json& v = get(key);
    if (!v.is_string())
      bad(key, "a string");
    return v.get<std::string>();
  }
  std::string id(const char* key) const {
    std::string s = str(key);
    if (s.empty())
      bad(key, "a non-empty string");
    return s;
  }
  std::string json_text(const char* key, json::value_t kind, const char* want) const {
    std::string s = str(key);
    json parsed = json::parse(s, nullptr, false);
    if (parsed.is_discarded() || (kind != json::value_t::discarded && parsed.type() != kind))
      bad(key, want);
    return s;
  }
  double number(const char* key) const {
    const json& v = get(key);
    if (!v.is_number())
      bad(key, "a number");
    return v.get<double>();
  }
  int64_t count(const char* key) const {
    const json& v = get(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      bad(key, "a whole number >= 0");
    return v.get<int64_t>();
  }
  bool boolean(const char* key) const {
    const json& v = get(key);
    if (!v.is_boolean())
      bad(key, "true or false");
    return v.get<bool>();
  }
  std::optional<double> opt_number(const char* key) const {
    const json& v = get(key);
    if (v.is_null())
      return std::nullopt;
    if (!v.is_number())
      bad(key, "a number or null");
    return v.get<double>();
  }
  std::optional<std::string> opt_str(const char* key) const {
    const json& v = get(key);
    if (v.is_null())
      return std::nullopt;
    if (!v.is_string())
      bad(key, "a string or null");
    return v.get<std::string>();
  }
};

} // namespace

void export_decoder::line(std::string_view text) {
  ++line_no_;
  if (!text.empty() && text.back() == '\r')
    text.remove_suffix(1);
  if (text.find_first_not_of(" \t") == std::string_view::npos)
    return; // blank lines carry nothing
  if (end_seen_)
    throw export_damaged(line_no_, "text after the end line");
  json obj = json::parse(text.begin(), text.end(), nullptr, false);
  if (obj.is_discarded())
    throw export_damaged(line_no_, "not valid JSON");
  if (!obj.is_object())
    throw export_damaged(line_no_, "not a JSON object");
  fields f{obj, line_no_};

  if (!header_seen_) {
    if (!obj.contains("format") || obj["format"] != export_format_name)
      throw export_damaged(line_no_, std::string("not a hermes-bridge export (the first line must have "
                                                 "\"format\": \"") + export_format_name + "\")");
    auto& h = bundle_.header;
    h.version = static_cast<int>(f.count("version"));
    if (h.version > export_format_version || h.version < 1)
      throw export_damaged(line_no_, "export format version " + std::to_string(h.version) +
                                       " (this hermes-bridge reads version " +
                                       std::to_string(export_format_version) + ")");
    h.schema_version = static_cast<int>(f.count("schema_version"));
    h.exported_at = f.number("exported_at");
    h.source = f.str("source");
    h.sessions = f.count("sessions");
    h.runs = f.count("runs");
    header_seen_ = true;
    if (sink_)
      sink_->header(h);
    return;
  }

  std::string type = f.str("type");
  if (type == "session") {
    session_row s;
    s.session_id = f.id("session_id");
    if (!session_ids_.insert(s.session_id).second)
      throw export_damaged(line_no_, "session " + s.session_id + " appears twice");
    s.created_at = f.number("created_at");
    s.last_used_at = f.number("last_used_at");
    s.config = f.json_text("config", json::value_t::object, "a JSON object's text");
    s.history = f.json_text("history", json::value_t::array, "a JSON array's text");
    s.message_count = f.count("message_count");
    s.destroyed = f.boolean("destroyed");
    ++bundle_.counts.sessions;
    if (sink_)
      sink_->session(std::move(s), line_no_);
    else
      bundle_.sessions.push_back(std::move(s));
  } else if (type == "run") {
    run_row r;
    r.run_id = f.id("run_id");
    if (runs_.count(r.run_id))
      throw export_damaged(line_no_, "run " + r.run_id + " appears twice");
    r.session_id = f.str("session_id");
    r.status = f.id("status");
    // A status the log does not know would be served to clients as it is
    // and read by recovery and retention as finished.
    if (!is_run_status(r.status))
      throw export_damaged(line_no_, "run " + r.run_id + " has the unknown status \"" + r.status +
                                       "\" (known: running, complete, interrupted, error)");
    r.started_at = f.number("started_at");
    r.ended_at = f.opt_number("ended_at");
    r.result = f.opt_str("result");
    if (r.result && json::parse(*r.result, nullptr, false).is_discarded())
      f.bad("result", "JSON text or null");
    r.error = f.opt_str("error");
    r.pruned_at = f.opt_number("pruned_at");
    if (f.obj.contains("user_message"))
      r.user_message = f.opt_str("user_message");
    if (r.status != "running" && !r.ended_at)
      throw export_damaged(line_no_, "run " + r.run_id + " is " + r.status + " but has no ended_at");
    runs_.emplace(r.run_id, run_progress{bundle_.runs.size()});
    ++bundle_.counts.runs;
    if (sink_) {
      sink_->run(std::move(r), line_no_);
    } else {
      bundle_.runs.emplace_back();
      bundle_.runs.back().row = std::move(r);
    }
  } else if (type == "delta" || type == "event") {
    bool delta = type == "delta";
    std::string run_id = f.id("run_id");
    auto run = runs_.find(run_id);
    if (run == runs_.end())
      throw export_damaged(line_no_, type + " of run " + run_id + ", which has no run line before it");
    int64_t& due = delta ? run->second.next_delta : run->second.next_event;
    seq_row row;
    row.seq = f.count("seq");
    if (row.seq != due)
      throw export_damaged(line_no_, type + " seq " + std::to_string(row.seq) + " of run " + run_id +
                                       " where seq " + std::to_string(due) + " was due");
    row.at = f.number("at");
    if (delta)
      row.text = f.str("text");
    else
      row.text = f.json_text("body", json::value_t::object, "a JSON object's text");
    if (!delta && is_stream_delta_body(row.text))
      ++run->second.delta_events;
    ++due;
    ++(delta ? bundle_.counts.deltas : bundle_.counts.events);
    if (sink_) {
      if (delta)
        sink_->delta(run_id, std::move(row), line_no_);
      else
        sink_->event(run_id, std::move(row), line_no_);
    } else {
      auto& stored = bundle_.runs[run->second.index];
      (delta ? stored.deltas : stored.events).push_back(std::move(row));
    }
  } else if (type == "end") {
    end_.sessions = f.count("sessions");
    end_.runs = f.count("runs");
    end_.deltas = f.count("deltas");
    end_.events = f.count("events");
    end_seen_ = true;
  } else {
    throw export_damaged(line_no_, "unknown line type \"" + type + "\"");
  }
}

export_bundle export_decoder::finish() {
  if (!header_seen_)
    throw export_damaged(0, "empty file: no export header");
  if (!end_seen_)
    throw export_damaged(0, "no end line: the file is truncated");
  const auto& c = bundle_.counts;
  if (end_.sessions != c.sessions || end_.runs != c.runs || end_.deltas != c.deltas || end_.events != c.events)
    throw export_damaged(0, "the end line counts " + std::to_string(end_.runs) + " runs, " +
                              std::to_string(end_.deltas) + " deltas, " + std::to_string(end_.events) +
                              " events, " + std::to_string(end_.sessions) + " sessions; the file holds " +
                              std::to_string(c.runs) + ", " + std::to_string(c.deltas) + ", " +
                              std::to_string(c.events) + ", " + std::to_string(c.sessions));
  // A log keeps a delta's event as the delta itself (run_events.hpp): the
  // two must agree, or the imported run would read differently.
  for (const auto& [run_id, run] : runs_)
    if (run.delta_events != run.next_delta)
      throw export_damaged(0, "run " + run_id + " has " + std::to_string(run.next_delta) + " deltas but " +
                                std::to_string(run.delta_events) + " stream.delta events; each delta is one");
  if (bundle_.header.runs != c.runs || bundle_.header.sessions != c.sessions)
    throw export_damaged(1, "the header announces " + std::to_string(bundle_.header.runs) + " runs and " +
                              std::to_string(bundle_.header.sessions) + " sessions; the file holds " +
                              std::to_string(c.runs) + " and " + std::to_string(c.sessions));
  return std::move(bundle_);
}

} // namespace hb::storage
