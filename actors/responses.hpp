// Answers as the client reads them: runs read from the event log (in the
// seed's field order) and the typed replies of sessions and questions.
// The broker's own answers: broker_replies.hpp.
#pragma once

#include "actors/question_messages.hpp"
#include "actors/session_messages.hpp"
#include "actors/studio_messages.hpp"
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

// Typed answers as the client reads them, one encoder each.
std::string encode(const chat_reply& r);
std::string encode(const interrupt_reply& r);
std::string encode(const steer_reply& r);
std::string encode(const history_reply& r);
std::string encode(const switch_reply& r);
std::string encode(const estimate_reply& r);
std::string encode(const approval_outcome& o);
std::string encode(const clarify_outcome& o);
std::string encode(const compression_outcome& o);

} // namespace hb::actors
