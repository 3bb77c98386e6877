// Response lines built from the event log, in the seed's field order.
#pragma once

#include "actors/session_messages.hpp"
#include "storage/finished_runs.hpp"
#include "storage/log_reader.hpp"

#include <cstdint>
#include <string>

namespace hb::actors {

// `run` read with deltas from 0 when include_output, else from `cursor`.
std::string get_output_line(const storage::run_snapshot& run, int64_t cursor, bool include_output);
// The same answer for a finished run held in memory.
std::string get_output_line(const storage::finished_run& run, int64_t cursor, int64_t event_cursor,
                            bool include_output);
std::string get_result_line(const storage::run_snapshot& run);
std::string chat_started_line(const std::string& run_id, const std::string& session_id);
std::string interrupted_line(const std::string& session_id, bool synced);
std::string steer_line(bool accepted, const std::string& text);
// A session as `list` shows it (Hermes Studio's bridge's fields after the seed's).
std::string list_entry(const session_view& view);
// `status` of a session: the entry with "exists" and its agent; `loaded` for status_if_loaded.
std::string status_line(const session_view& view, bool with_loaded = false);
// `status` for a session this daemon does not know.
std::string unknown_session_status_line(const std::string& session_id);

} // namespace hb::actors
