// The event log as actors: one writer that group-commits
// (log_writer_actor.cpp), readers that answer get_output / get_result from
// committed data only (log_reader_actor.cpp), and the checkpointer that
// folds the WAL into the database file (log_checkpointer.cpp). Their
// messages: log_messages.hpp.
#pragma once

#include "storage/retention.hpp"

#include <caf/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace hb::storage {
class log_writer;
class finished_run_cache;
}

namespace hb::actors {

// Where a log actor runs. The daemon gives each a thread of its own
// (detached): SQLite commits, reads and fsyncs block, and would hold up a
// scheduler thread. Tests put them on the scheduler, which CAF's test
// coordinator then runs one message at a time on the test's thread.
enum class spawn_mode { detached, scheduled };

struct retention_settings {
  storage::retention_policy policy;
  std::chrono::milliseconds interval{60'000}; // between checks when nothing is due
};

class run_output;
class shared_run_windows;

// Output that went through the log actors, in bytes (written or read): the
// checkpointer hands freed memory back once much has gone through and the
// log has been quiet for a while.
void note_output_moved(size_t bytes);

// After a commit or a prune: the checkpointer, if it sleeps, looks again.
void wake_checkpointer();

// A delta or event of a live run for the writer, through the run's queue
// (see run_output.hpp; `queue` may be null: it is looked up by run id). A
// run without a queue (closed, or never a live one) gets a message of its
// own, which the writer refuses for a closed run as before.
void send_run_output(const caf::actor& writer, const std::string& run_id, run_output* queue, bool is_event,
                     std::string text, double at, uint64_t seq = 0);
// Deltas numbered first_seq, first_seq + 1, ... of a live run, queued at
// once (a worker's `texts` frame): one lock and at most one message.
void send_run_deltas(const caf::actor& writer, const std::string& run_id, run_output& queue,
                     std::vector<std::string> texts, double at, uint64_t first_seq);

// Appends are applied as they arrive and committed once the mailbox runs dry
// or the batch is large, so one streaming run commits every delta at once
// and many runs share each commit. `finished`: runs it prunes are dropped
// from there. `windows` (may be null): kept up to date at each commit, and
// the watcher (log_watch) is told a commit only while they say it follows.
caf::actor spawn_log_writer(caf::actor_system& sys, std::shared_ptr<storage::log_writer> log,
                            const retention_settings& retention,
                            std::shared_ptr<storage::finished_run_cache> finished,
                            std::shared_ptr<shared_run_windows> windows,
                            spawn_mode mode = spawn_mode::detached);

// Moves the WAL into the database file every `period`, so the
// writer (which never checkpoints) is not held up by fsyncs; while nothing is
// committed or read it sleeps without a timer (one per process; keep the
// handle: nothing else references it then).
caf::actor spawn_log_checkpointer(caf::actor_system& sys, const std::string& db_path,
                                  std::chrono::milliseconds period, spawn_mode mode = spawn_mode::detached);

// Each with its own read-only connection. Finished runs they read
// are kept in `finished` (shared by all readers and the broker).
caf::actor spawn_log_reader(caf::actor_system& sys, const std::string& db_path,
                            std::shared_ptr<storage::finished_run_cache> finished,
                            spawn_mode mode = spawn_mode::detached);

} // namespace hb::actors
