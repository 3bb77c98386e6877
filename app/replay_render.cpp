#include "app/replay_render.hpp"

#include "app/tool_text.hpp"
#include "protocol/json_text.hpp"

#include <algorithm>

namespace hb::app {

using protocol::json;

namespace {

constexpr const char* dim = "2";
constexpr const char* tool_sgr = "1;36";
constexpr const char* ask_sgr = "1;33";
constexpr const char* yes_sgr = "1;32";
constexpr const char* no_sgr = "1;31";
constexpr const char* compress_sgr = "1;35";

// Every piece of an event is someone else's text: made visible before it
// reaches the terminal (tool_text.hpp), our own styles added after.
std::string as_text(const json& v) {
  return visible_text(v.is_string() ? v.get<std::string>() : protocol::dumps(v));
}

std::string field_text(const json& ev, const char* key) {
  return ev.contains(key) && !ev[key].is_null() ? as_text(ev[key]) : std::string();
}

std::string seconds_text(double s) {
  return format_duration(s);
}

} // namespace

double replay_pause(double prev, double at, double speed, double max_pause) {
  if (speed <= 0)
    return 0;
  double pause = std::max(0.0, (at - prev) / speed);
  return max_pause > 0 ? std::min(pause, max_pause) : pause;
}

std::string replay_renderer::style(const char* sgr, const std::string& text) const {
  if (!opt_.color || text.empty())
    return text;
  return std::string("\x1b[") + sgr + "m" + text + "\x1b[0m";
}

std::string replay_renderer::indent(const std::string& s) const {
  std::string out = "  ";
  for (char c : s) {
    out += c;
    if (c == '\n')
      out += "  ";
  }
  return out;
}

std::string replay_renderer::clip(const std::string& s) const {
  return opt_.full ? s : clip_text(s, 20, 2000);
}

// A headed block on lines of its own; `rest` (already laid out) follows it.
std::string replay_renderer::block(const std::string& head_sgr, const std::string& head,
                                   const std::string& rest) {
  std::string out = line_start_ ? "" : "\n";
  out += style(head_sgr.c_str(), head) + "\n";
  if (!rest.empty())
    out += rest + (rest.back() == '\n' ? "" : "\n");
  line_start_ = true;
  in_reasoning_ = false;
  return out;
}

std::string replay_renderer::text(const std::string& s, bool reasoning) {
  if (s.empty())
    return {};
  std::string out;
  if (reasoning != in_reasoning_ && !line_start_)
    out += "\n"; // reasoning and answer text never share a line
  in_reasoning_ = reasoning;
  out += reasoning ? style(dim, s) : s;
  line_start_ = s.back() == '\n';
  return out;
}

std::string replay_renderer::header(const run_row& run) {
  started_at_ = run.started_at;
  line_start_ = true;
  return style("1", "== run " + visible_text(run.run_id) + " (session " + visible_text(run.session_id) +
                      "), started " + format_local_time(run.started_at) + " ==") +
         "\n";
}

std::string replay_renderer::event(const std::string& body, double at) {
  json ev = json::parse(body, nullptr, false);
  if (!ev.is_object())
    return block(dim, "[unreadable event] " + visible_text(body));
  std::string name = field_text(ev, "event");

  if (name == "stream.delta")
    return text(field_text(ev, "delta"), false);
  if (name == "reasoning.delta")
    return text(field_text(ev, "text"), true);
  if (name == "thinking.delta") {
    // A spinner line ("(o_o) pondering..."), cleared with "" once text flows.
    std::string t = field_text(ev, "text");
    return t.empty() ? std::string() : block(dim, t);
  }
  if (name == "turn.boundary") {
    // The end of one streamed segment (the agent goes on to a tool call).
    std::string out = line_start_ ? "" : "\n";
    line_start_ = true;
    in_reasoning_ = false;
    return out;
  }
  // Bookkeeping a reader never saw: the start of each API call, and the
  // assistant's text once more after each message (clients ignore both).
  if (name == "step" || name == "reasoning.available")
    return {};
  // What the agent's fixed context costs (Hermes Studio sizes its meter with it).
  if (name == "bridge.context.ready")
    return block(dim, "[context] " + field_text(ev, "fixed_context_tokens") + " tokens before any message, " +
                        field_text(ev, "tool_count") + " tools");
  if (name == "session.title.updated")
    return block(dim, "[title] " + field_text(ev, "title"));
  if (name == "clarify.requested")
    return block(ask_sgr, "[question] " + field_text(ev, "question"));
  if (name == "clarify.resolved") {
    std::string reason = field_text(ev, "reason");
    return block(ask_sgr, "[answered] " + (reason.empty() ? field_text(ev, "response") : "(" + reason + ")"));
  }
  if (name == "status") {
    std::string t = field_text(ev, "text");
    return block(dim, "[status " + field_text(ev, "kind") + "]" + (t.empty() ? "" : " " + t));
  }

  if (name == "tool.started") {
    std::string id = field_text(ev, "tool_call_id");
    tool_at_[id] = at;
    std::string args;
    const json empty = json::object();
    const json& a = ev.contains("args") ? ev["args"] : empty;
    if (a.is_object()) {
      for (auto it = a.begin(); it != a.end(); ++it)
        args += (args.empty() ? "" : "\n") + visible_text(it.key()) + ": " + clip(as_text(it.value()));
    } else if (!a.is_null()) {
      args = clip(as_text(a));
    }
    return block(tool_sgr, "[tool " + field_text(ev, "tool_name") + "]" + (id.empty() ? "" : " " + id),
                 args.empty() ? std::string() : indent(args));
  }
  if (name == "tool.completed") {
    std::string id = field_text(ev, "tool_call_id");
    std::string head = "[tool " + field_text(ev, "tool_name") + " done]";
    auto it = tool_at_.find(id);
    if (it != tool_at_.end())
      head += " after " + seconds_text(at - it->second);
    std::string result = field_text(ev, "result");
    if (result.empty())
      result = field_text(ev, "result_preview");
    return block(tool_sgr, head, result.empty() ? std::string() : indent(clip(result)));
  }

  if (name == "approval.requested") {
    asked_at_[field_text(ev, "approval_id")] = at;
    std::string rest;
    std::string description = field_text(ev, "description");
    if (!description.empty())
      rest += "description: " + description + "\n";
    std::string choices;
    if (ev.contains("choices") && ev["choices"].is_array())
      for (const auto& c : ev["choices"])
        choices += (choices.empty() ? "" : ", ") + as_text(c);
    if (!choices.empty())
      rest += "choices: " + choices;
    if (ev.contains("timeout_ms") && ev["timeout_ms"].is_number())
      rest += (choices.empty() ? "" : "; ") + std::string("times out after ") +
              seconds_text(ev["timeout_ms"].get<double>() / 1000);
    return block(ask_sgr, "[approval requested] " + field_text(ev, "command"), indent(rest));
  }
  if (name == "approval.resolved") {
    std::string choice = field_text(ev, "choice");
    std::string reason = field_text(ev, "reason");
    std::string head = "[approval answered] " + choice + (reason.empty() ? "" : " (" + reason + ")");
    head += " at " + format_local_clock(at);
    auto it = asked_at_.find(field_text(ev, "approval_id"));
    if (it != asked_at_.end())
      head += ", " + seconds_text(at - it->second) + " after it was asked";
    return block(choice == "deny" ? no_sgr : yes_sgr, head);
  }

  if (name == "bridge.compression.requested") {
    asked_at_[field_text(ev, "request_id")] = at;
    std::string head = "[compression requested] " + field_text(ev, "message_count") + " messages";
    std::string tokens = field_text(ev, "approx_tokens"), focus = field_text(ev, "focus_topic");
    if (!tokens.empty())
      head += ", ~" + tokens + " tokens";
    if (!focus.empty())
      head += ", focus: " + focus;
    return block(compress_sgr, head);
  }
  if (name == "bridge.compression.completed" || name == "bridge.compression.failed") {
    bool ok = name == "bridge.compression.completed";
    std::string head = ok ? "[compression completed] " + field_text(ev, "message_count") + " -> " +
                              field_text(ev, "result_messages") + " messages"
                          : "[compression failed] " + field_text(ev, "error");
    auto it = asked_at_.find(field_text(ev, "request_id"));
    if (it != asked_at_.end())
      head += ", " + seconds_text(at - it->second) + " after the request";
    return block(ok ? compress_sgr : no_sgr, head);
  }
  if (name == "bridge.recovered")
    return block(no_sgr, "[daemon restarted] run " + field_text(ev, "status") + ": " + field_text(ev, "reason"));

  // Anything newer than this renderer: shown as it is.
  json rest = ev;
  rest.erase("event");
  return block(dim, "[" + (name.empty() ? std::string("event") : name) + "]" +
                      (rest.empty() ? "" : " " + visible_text(protocol::dumps(rest))));
}

std::string replay_renderer::footer(const run_row& run) {
  std::string head;
  const char* sgr = yes_sgr;
  if (!run.ended_at || run.status == "running") {
    head = "== still running: this is what the log holds so far ==";
    sgr = ask_sgr;
  } else {
    head = "== " + visible_text(run.status) + " after " + seconds_text(*run.ended_at - run.started_at) + " ==";
    if (run.status == "error")
      sgr = no_sgr;
    else if (run.status != "complete")
      sgr = ask_sgr;
  }
  std::string rest = run.error ? "error: " + visible_text(*run.error) : std::string();
  std::string out = block(sgr, head, rest);
  return out;
}

} // namespace hb::app
