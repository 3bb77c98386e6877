#include "bridge/tmux/row_mirror.hpp"

#include "protocol/json_text.hpp"

namespace hb::bridge {

using nlohmann::json;

namespace {

json parsed_or(const std::string& text, json fallback) {
  if (text.empty())
    return fallback;
  auto doc = json::parse(text, nullptr, false);
  return doc.is_discarded() ? fallback : doc;
}

std::string utf8_prefix(const std::string& s, size_t bytes) {
  if (s.size() <= bytes)
    return s;
  size_t end = bytes;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80)
    --end;
  return s.substr(0, end);
}

} // namespace

row_mirror::row_mirror(turn_sink& sink, json history)
  : sink_(sink), history_(history.is_array() ? std::move(history) : json::array()) {}

void row_mirror::delivered(int64_t id) { last_delivered_ = std::max(last_delivered_, id); }

void row_mirror::steered(int64_t after_id) {
  if (steer_after_ < 0)
    steer_after_ = after_id;
}

void row_mirror::steer_not_coming() {
  if (!awaiting_steer_)
    return;
  awaiting_steer_ = false;
  steer_after_ = -1;
  finished_ = true;
}

void row_mirror::text(const std::string& content) {
  if (content.empty())
    return;
  // Rows are whole messages: keep consecutive ones apart as the TUI does.
  // (Each delta is its stream.delta event as well: storage/run_events.hpp.)
  sink_.delta(spoke_ ? "\n\n" + content : content);
  spoke_ = true;
}

void row_mirror::feed(const hermes_row& row) {
  cursor_ = std::max(cursor_, row.id);
  if (row.role == "user") {
    // A steer (or someone typing at the TUI) asks more of this turn: it ends
    // only once that is answered too.
    last_delivered_ = std::max(last_delivered_, row.id);
    if (awaiting_steer_) { // the steer came back as the next turn
      awaiting_steer_ = false;
      steer_after_ = -1;
    }
    history_.push_back({{"role", "user"}, {"content", row.content}});
    return;
  }
  if (row.role == "assistant") {
    json calls = parsed_or(row.tool_calls, json::array());
    if (!calls.is_array())
      calls = json::array();
    text(row.content);
    json message = {{"role", "assistant"}, {"content", row.content}};
    for (const auto& call : calls) {
      if (!call.is_object())
        continue;
      std::string id = call.value("id", "");
      json function = call.contains("function") && call["function"].is_object() ? call["function"] : json::object();
      std::string name = function.value("name", "");
      json args = function.contains("arguments") && function["arguments"].is_string()
                    ? parsed_or(function["arguments"].get<std::string>(), json::object())
                    : function.value("arguments", json::object());
      if (!args.is_object())
        args = json::object();
      calls_[id] = {name, args};
      sink_.event(protocol::object_writer{}
                    .str("event", "tool.started")
                    .str("tool_call_id", id)
                    .str("tool_name", name)
                    .value("args", args)
                    .finish());
    }
    if (!calls.empty())
      message["tool_calls"] = calls;
    history_.push_back(std::move(message));
    if (calls.empty() && row.id > last_delivered_) {
      interrupted_ = row.finish_reason == "interrupted";
      final_text_ = row.content;
      if (steer_after_ >= 0)
        awaiting_steer_ = true;
      else
        finished_ = true;
    }
    return;
  }
  if (row.role == "tool") {
    if (steer_after_ >= 0 && row.id > steer_after_)
      steer_after_ = -1; // this tool result carried the steer to the model
    auto it = calls_.find(row.tool_call_id);
    std::string name = it != calls_.end() ? it->second.first : row.tool_name;
    json args = it != calls_.end() ? it->second.second : json::object();
    // Field order as the embedded harness writes it.
    sink_.event(protocol::object_writer{}
                  .str("event", "tool.completed")
                  .str("tool_call_id", row.tool_call_id)
                  .str("tool_name", name)
                  .value("args", args)
                  .str("result", row.content)
                  .value("result_preview", row.content.empty() ? json(nullptr) : json(utf8_prefix(row.content, 500)))
                  .finish());
    history_.push_back({{"role", "tool"}, {"content", row.content}, {"tool_call_id", row.tool_call_id}});
  }
  // system and unknown roles only move the cursor
}

} // namespace hb::bridge
