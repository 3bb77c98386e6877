// Response lines built from the event log, in the seed's field order.
#pragma once

#include "storage/finished_runs.hpp"
#include "storage/log_reader.hpp"

#include <cstdint>
#include <string>

namespace hb::actors {

// `run` read with deltas from 0 when include_output, else from `cursor`.
std::string get_output_line(const storage::run_snapshot& run, int64_t cursor, bool include_output);
// The same answer for a finished run held in memory; `events_json` is the
// JSON array of its events from the request's event cursor ("[]" at the tail).
std::string get_output_line(const storage::finished_run& run, int64_t cursor, bool include_output,
                            const std::string& events_json);
std::string get_result_line(const storage::run_snapshot& run);
// Items that are JSON texts already, as one JSON array.
std::string json_list(const std::vector<std::string>& items);
std::string chat_started_line(const std::string& run_id, const std::string& session_id);
std::string interrupted_line(const std::string& session_id, bool synced);
std::string steer_line(bool accepted, const std::string& text);
// `status` for a session this daemon does not know.
std::string unknown_session_status_line(const std::string& session_id);

} // namespace hb::actors
