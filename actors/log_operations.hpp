// What the log writer does to the log for each kind of message, as
// operations log_batches can apply, hold and redo after a failure.
//
// Texts are moved into the operation, whose members are not const, so
// moving the operation moves them too. A run's result holds its whole output
// twice; copying it at each step (the capture, the std::function, the
// optional) cost a 200 MB flood about 1.2 GB more memory and 4 s.
#pragma once

#include "actors/log_batches.hpp"
#include "storage/log_rows.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hb::actors::log_operations {

using operation = log_batches::operation;

operation open_run(std::string run_id, std::string session_id, double started_at, std::string user_message);
// The delta (its stream.delta event takes the next event seq, with no row of
// its own: storage/run_events.hpp); nothing for a run that is not open.
operation append_delta(std::string run_id, std::string text, double at);
// Deltas that follow each other: one operation (one allocation, one run
// lookup) for what a queue held, and as few rows as their size allows.
using storage::timed_text;
operation append_deltas(std::string run_id, std::vector<timed_text> deltas);
// `host_seq`: the host's frame seq it came in (storage::log_writer::append_event).
operation append_event(std::string run_id, std::string body, double at, uint64_t host_seq = 0);
operation close_run(std::string run_id, std::string status, std::optional<std::string> result,
                    std::optional<std::string> error, double ended_at);
// `history`, when set, is the row's history (shared with its session).
operation put_session(storage::session_row row, std::shared_ptr<const std::string> history);
// Writes nothing: a flush waits for what came before it.
operation nothing();

} // namespace hb::actors::log_operations
