// The event log as actors: one writer that group-commits, and readers that
// answer get_output / get_result from committed data only.
#pragma once

#include <caf/fwd.hpp>

#include <memory>
#include <string>

namespace hb::storage {
class log_writer;
}

namespace hb::actors {

// Detached: SQLite commits block. Appends are applied as they arrive and
// committed once the mailbox runs dry or the batch is large, so one streaming
// run commits every delta at once and many runs share each commit.
caf::actor spawn_log_writer(caf::actor_system& sys, std::shared_ptr<storage::log_writer> log);

// Detached, each with its own read-only connection.
caf::actor spawn_log_reader(caf::actor_system& sys, const std::string& db_path);

} // namespace hb::actors
