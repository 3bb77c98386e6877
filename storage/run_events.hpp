// A run's events as clients see them, read from a log that keeps each
// delta's text once (FORMAT.md, schema version 5): the `events` table holds
// every event except `stream.delta`, each at its own event seq, and the
// seqs it leaves free are the deltas', in order. So the k-th free seq is
// delta k, and its event is `{"event": "stream.delta", "delta": <text>}`,
// built here byte for byte as the daemon sent it.
//
// Rows of a log written before version 5 (a stream.delta row in `events`
// beside its delta) read the same: such a row takes its delta's place.
#pragma once

#include "storage/delta_rows.hpp"

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace hb::storage {

// The body of a delta's event, into `body` (its buffer reused).
void stream_delta_body(std::string& body, std::string_view text);

// Whether an event body is a delta's (invariant 5: every body starts
// with its "event" key).
bool is_stream_delta_body(std::string_view body);

// The statements one reader of a database reuses for every run it reads.
class run_events {
public:
  explicit run_events(SQLite::Database& db);

  // How many events the run has: its event rows and its deltas.
  int64_t count(int64_t run_no);
  // How many deltas it has.
  int64_t delta_count(int64_t run_no) { return deltas_.count(run_no); }

  // Starts reading `run_no`'s events at event seq `from`.
  void open(int64_t run_no, int64_t from);
  // The next event, false after the last. seq(), at(), body() and
  // delta() describe it until the next call.
  bool next();
  int64_t seq() const { return seq_; }
  double at() const { return at_; }
  const std::string& body() const { return body_; }
  bool delta() const { return delta_; }
  // Lets go of the rows being read (a statement left mid-way keeps the
  // database's read snapshot open).
  void close();

private:
  void step_events();
  void step_deltas();

  SQLite::Statement rows_before_;
  SQLite::Statement count_;
  SQLite::Statement events_;
  delta_cursor deltas_;
  int64_t seq_ = 0;
  double at_ = 0;
  std::string body_;
  bool delta_ = false;
  bool event_ready_ = false, delta_ready_ = false; // a row waits in the statement
  int64_t event_seq_ = 0;                          // the waiting event row's seq
};

} // namespace hb::storage
