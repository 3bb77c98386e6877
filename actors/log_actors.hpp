// The event log as actors: one writer that group-commits, and readers that
// answer get_output / get_result from committed data only.
#pragma once

#include "storage/retention.hpp"

#include <caf/fwd.hpp>

#include <chrono>

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
