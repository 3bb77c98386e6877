// A turn that never finished (the daemon was killed, or, later, the agent's
// worker died) left no result.messages behind, only its rows in the log: its
// user message, the text the agent streamed, the tools it started. This
// turns those rows into history messages, so the conversation the agent
// continues from still holds the turn, told plainly that it was cut.
#pragma once

#include "protocol/json_text.hpp"

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <string>
#include <vector>

namespace hb::storage {

// Messages in the agent's own shape ({"role": "user" | "assistant" | "tool",
// ...} with OpenAI tool_calls): the user message, then the streamed text and
// tool calls in the order they happened. The last assistant text ends with a
// note that `cause` cut it (e.g. "hermes-bridge restarted"); a tool without a
// result gets one saying its outcome is unknown. `event_bodies`: the run's
// events in order (others than stream.delta and tool.* are skipped).
protocol::json cut_turn_messages(const protocol::json& user_message, const std::vector<std::string>& event_bodies,
                                 const std::string& cause);

// Appends run `run_no`'s cut turn to its session's stored history (inside
// the caller's transaction). Returns the number of messages added: 0 for a
// run without a recorded user message (replays, runs logged before schema
// version 3) or whose session has no row.
int64_t keep_cut_turn(SQLite::Database& db, int64_t run_no, const std::string& cause);

} // namespace hb::storage
