// Turns Hermes' state.db rows for one turn into the run's stream, in row
// order: assistant text becomes deltas (and stream.delta events), tool calls
// tool.started, tool rows tool.completed. The turn is over at the first
// assistant row without tool calls after the last message we delivered.
#pragma once

#include "bridge/agent_host.hpp"
#include "bridge/tmux/hermes_state.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace hb::bridge {

class row_mirror {
public:
  // `history`: the conversation so far (a JSON array); the turn's rows are
  // appended to it in OpenAI message form.
  row_mirror(turn_sink& sink, nlohmann::json history);

  // A message of ours became row `id`: only an answer after it ends the turn.
  void delivered(int64_t id);
  void feed(const hermes_row& row);

  bool finished() const { return finished_; }
  // Hermes itself reports the final row as interrupted (Escape).
  bool interrupted() const { return interrupted_; }
  const std::string& final_text() const { return final_text_; }
  const nlohmann::json& history() const { return history_; }
  int64_t cursor() const { return cursor_; }
  void skip_to(int64_t id) { cursor_ = std::max(cursor_, id); }

private:
  void text(const std::string& content);

  turn_sink& sink_;
  nlohmann::json history_;
  std::map<std::string, std::pair<std::string, nlohmann::json>> calls_; // id -> (name, args)
  int64_t cursor_ = 0;
  int64_t last_delivered_ = 0;
  bool finished_ = false;
  bool interrupted_ = false;
  bool spoke_ = false;
  std::string final_text_;
};

} // namespace hb::bridge
