#include "storage/cut_turn.hpp"

#include "storage/run_events.hpp"

namespace hb::storage {

using protocol::json;

namespace {

// Builds the assistant/tool message sequence as the agent would have: text
// and the tool calls that follow it share one assistant message, results
// come after it, and text after a result opens the next assistant message.
class turn_builder {
public:
  explicit turn_builder(json& out) : out_(out) {}

  void text(const std::string& delta) {
    if (!open_ || !pending_results_.empty())
      open_message();
    content_ += delta;
  }

  void tool_started(const json& ev) {
    if (!open_ || !pending_results_.empty())
      open_message();
    std::string id = ev.value("tool_call_id", "");
    if (id.empty())
      id = "call_cut_" + std::to_string(unnamed_++); // a result must be able to name its call
    json args = ev.contains("args") ? ev["args"] : json::object();
    calls_.push_back({{"id", id},
                      {"type", "function"},
                      {"function", {{"name", ev.value("tool_name", "")}, {"arguments", protocol::dumps(args)}}}});
    started_.push_back(id);
  }

  void tool_completed(const json& ev) {
    std::string id = ev.value("tool_call_id", "");
    for (auto it = started_.begin(); it != started_.end(); ++it)
      if (*it == id) {
        started_.erase(it);
        const json& result = ev.contains("result") ? ev["result"] : json();
        pending_results_.push_back({{"role", "tool"},
                                    {"tool_call_id", id},
                                    {"content", result.is_string() ? result.get<std::string>()
                                                                   : result.is_null() ? "" : protocol::dumps(result)}});
        return;
      }
  }

  void finish(const std::string& cause) {
    for (const auto& id : started_)
      pending_results_.push_back({{"role", "tool"},
                                  {"tool_call_id", id},
                                  {"content", "[no result: " + cause +
                                                " before this tool reported; whether it ran, and what it did, "
                                                "is unknown]"}});
    started_.clear();
    std::string note = "[this reply was cut off: " + cause + " before the turn finished]";
    if (open_ && pending_results_.empty()) {
      content_ += content_.empty() ? note : "\n\n" + note;
    } else {
      flush();
      open_ = true;
      content_ = note; // the cut itself is the reply, so the next user message follows an answer
    }
    flush();
  }

private:
  void open_message() {
    flush();
    open_ = true;
  }

  void flush() {
    if (open_) {
      json message = {{"role", "assistant"}, {"content", content_}};
      if (!calls_.empty())
        message["tool_calls"] = calls_;
      out_.push_back(std::move(message));
    }
    for (auto& r : pending_results_)
      out_.push_back(std::move(r));
    pending_results_.clear();
    calls_ = json::array();
    content_.clear();
    open_ = false;
  }

  json& out_;
  bool open_ = false;
  std::string content_;
  json calls_ = json::array();
  std::vector<std::string> started_; // tool calls without a result yet
  std::vector<json> pending_results_;
  int unnamed_ = 0;
};

} // namespace

json cut_turn_messages(const json& user_message, const std::vector<std::string>& event_bodies,
                       const std::string& cause) {
  json out = json::array();
  out.push_back({{"role", "user"}, {"content", user_message}});
  turn_builder turn(out);
  for (const auto& body : event_bodies) {
    json ev = json::parse(body, nullptr, false);
    if (!ev.is_object())
      continue;
    std::string name = ev.value("event", "");
    if (name == "stream.delta" && ev.contains("delta") && ev["delta"].is_string())
      turn.text(ev["delta"].get<std::string>());
    else if (name == "tool.started")
      turn.tool_started(ev);
    else if (name == "tool.completed")
      turn.tool_completed(ev);
  }
  turn.finish(cause);
  return out;
}

int64_t keep_cut_turn(SQLite::Database& db, int64_t run_no, const std::string& cause) {
  SQLite::Statement run(db, "SELECT session_id, user_message FROM runs WHERE run_no=?");
  run.bind(1, run_no);
  if (!run.executeStep() || run.getColumn(1).isNull())
    return 0;
  std::string session_id = run.getColumn(0).getString();
  json user_message = json::parse(run.getColumn(1).getString(), nullptr, false);
  if (user_message.is_discarded())
    return 0;
  SQLite::Statement session(db, "SELECT history FROM sessions WHERE session_id=?");
  session.bind(1, session_id);
  if (!session.executeStep())
    return 0;
  json history = json::parse(session.getColumn(0).getString(), nullptr, false);
  if (!history.is_array())
    history = json::array();

  std::vector<std::string> bodies;
  constexpr std::string_view tool_event = "{\"event\": \"tool.";
  run_events events(db);
  events.open(run_no, 0);
  while (events.next())
    if (events.delta() || events.body().compare(0, tool_event.size(), tool_event) == 0)
      bodies.push_back(events.body());
  events.close();
  json added = cut_turn_messages(user_message, bodies, cause);
  for (auto& m : added)
    history.push_back(std::move(m));

  SQLite::Statement update(db, "UPDATE sessions SET history=?, message_count=? WHERE session_id=?");
  update.bind(1, protocol::dumps(history));
  update.bind(2, static_cast<int64_t>(history.size()));
  update.bind(3, session_id);
  update.exec();
  return static_cast<int64_t>(added.size());
}

} // namespace hb::storage
