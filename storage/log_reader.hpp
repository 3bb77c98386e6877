// Read-only access to the event log. Each read is one SQLite read
// transaction, so a run's status, deltas and events always come from the same
// committed snapshot: a client can never see `done` without the last delta.
#pragma once

#include "storage/delta_rows.hpp"
#include "storage/log_rows.hpp"
#include "storage/log_writer.hpp"
#include "storage/run_events.hpp"

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hb::storage {

// The run's row and what a read took of its deltas and events.
struct run_snapshot : run_row {
  std::vector<std::string> deltas;   // delta texts from delta_from on
  std::vector<std::string> events;   // event bodies from event_from on
  int64_t delta_from = 0;
  int64_t event_from = 0;
  int64_t delta_count = 0;           // all deltas of the run (up to the cut when cut)
  int64_t event_count = 0;           // all events of the run (likewise)
  bool cut = false;                  // more rows follow: see read_run's max_bytes
};

class log_reader {
public:
  explicit log_reader(const std::string& path);

  // Deltas from delta_from and events from event_from (each clamped to the
  // run's count); pass 0 for everything.
  //
  // With max_bytes, a read that would take more text than that of deltas
  // or of events stops early, at a moment of the run: only rows logged up to
  // that time are returned, deltas and events alike, so a tool event never
  // arrives ahead of the text streamed before it. The snapshot then shows
  // the run as it stood then: `cut`, still running, no result, counts up to
  // the cut. A follower reading a 100 MB run thus holds a few MB at a time.
  std::optional<run_snapshot> read_run(const std::string& run_id, int64_t delta_from,
                                       int64_t event_from, size_t max_bytes = SIZE_MAX);
  // Every event of a run with the time it was logged, in order (for
  // replaying a recorded run); nullopt for an unknown run.
  struct timed_event {
    double at;
    std::string body;
  };
  std::optional<std::vector<timed_event>> read_events_timed(const std::string& run_id);
  // A session's stored history (JSON array), "[]" when there is none.
  std::string read_history(const std::string& session_id);

private:
  SQLite::Database db_;
  std::unique_ptr<SQLite::Statement> run_, outcome_, history_;
  std::unique_ptr<delta_cursor> deltas_;
  std::unique_ptr<run_events> events_;
};

// Sessions not destroyed, oldest first, without their history (loaded on demand).
std::vector<session_row> load_sessions(SQLite::Database& db);

} // namespace hb::storage
