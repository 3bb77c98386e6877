// Turns Hermes' state.db rows for one turn into the run's stream, in row
// order: assistant text becomes deltas (and stream.delta events), tool calls
// tool.started, tool rows tool.completed. The turn is over at the first
// assistant row without tool calls after the last message we delivered,
// unless a /steer is still waiting for its answer (see steered()).
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
  // A /steer was typed when the newest row was `after_id`. Hermes hands it to
  // the model with the next tool result (the final answer then answers it
  // too); when no tool result comes after it, Hermes makes it the next turn
  // once this one ends: a user row, then its answer, which ends the run.
  void steered(int64_t after_id);
  // The turn's answer came but a steer may still become the next turn.
  bool awaiting_steer() const { return awaiting_steer_; }
  // It did not: the answer already mirrored ends the run.
  void steer_not_coming();

  bool finished() const { return finished_; }
  // Hermes itself reports the final row as interrupted (older builds).
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
  int64_t steer_after_ = -1; // a steer no tool result has carried yet (-1: none)
  bool awaiting_steer_ = false;
  std::string final_text_;
};

} // namespace hb::bridge
