// Response lines built from the event log, in the seed's field order.
#pragma once

#include "storage/log_reader.hpp"

#include <cstdint>
#include <string>

namespace hb::actors {

// `run` read with deltas from 0 when include_output, else from `cursor`.
std::string get_output_line(const storage::run_snapshot& run, int64_t cursor, bool include_output);
std::string get_result_line(const storage::run_snapshot& run);
std::string chat_started_line(const std::string& run_id, const std::string& session_id);

} // namespace hb::actors
