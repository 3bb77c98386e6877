// The event log as actors: one writer that group-commits, and readers that
// answer get_output / get_result from committed data only.
#pragma once

#include "storage/retention.hpp"

#include <caf/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace hb::storage {
class log_writer;
class finished_run_cache;
}

namespace hb::actors {

// Detached: SQLite commits block. Appends are applied as they arrive and
// committed once the mailbox runs dry or the batch is large, so one streaming
// run commits every delta at once and many runs share each commit.
struct retention_settings {
  storage::retention_policy policy;
  std::chrono::milliseconds interval{60'000}; // between checks when nothing is due
};

// Output (deltas, events) sent to the writer and not yet written, in bytes,
// across all runs. An agent that streams faster than the log takes it (a
// 100 MB flood arrives in a tenth of a second) would otherwise leave all of
// it in the writer's mailbox: its sink waits instead while this is over
// writer_backlog_limit, as a slow network would make it wait.
constexpr int64_t writer_backlog_limit = 8 << 20;
void writer_backlog_add(int64_t bytes); // the sender, before sending
bool writer_backlogged();
// Blocks (in short sleeps) until the backlog is down to half the limit,
// `stop` says to give up, or 30 s have passed.
void wait_for_writer(const std::function<bool()>& stop);

// `finished`: runs it prunes are dropped from there.
caf::actor spawn_log_writer(caf::actor_system& sys, std::shared_ptr<storage::log_writer> log,
                            const retention_settings& retention,
                            std::shared_ptr<storage::finished_run_cache> finished);

// Detached: moves the WAL into the database file every `period`, so the
// writer (which never checkpoints) is not held up by fsyncs.
caf::actor spawn_log_checkpointer(caf::actor_system& sys, const std::string& db_path,
                                  std::chrono::milliseconds period);

// Detached, each with its own read-only connection. Finished runs they read
// are kept in `finished` (shared by all readers and the broker).
caf::actor spawn_log_reader(caf::actor_system& sys, const std::string& db_path,
                            std::shared_ptr<storage::finished_run_cache> finished);

} // namespace hb::actors
