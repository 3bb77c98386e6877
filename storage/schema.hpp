// The event log's tables. FORMAT.md next to this file explains every column
// and the invariants; keep the two in step.
#pragma once

namespace hb::storage {

constexpr int schema_version = 7;

constexpr const char* schema_sql = R"SQL(
CREATE TABLE IF NOT EXISTS meta(
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions(
  session_id    TEXT PRIMARY KEY,
  created_at    REAL NOT NULL,
  last_used_at  REAL NOT NULL,
  config        TEXT NOT NULL,
  history       TEXT NOT NULL DEFAULT '[]',
  message_count INTEGER NOT NULL DEFAULT 0,
  destroyed     INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS runs(
  run_no     INTEGER PRIMARY KEY,
  run_id     TEXT NOT NULL UNIQUE,
  session_id TEXT NOT NULL,
  status     TEXT NOT NULL,
  started_at REAL NOT NULL,
  ended_at   REAL,
  result     TEXT,
  error      TEXT,
  pruned_at  REAL,
  user_message TEXT,
  host_seq   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_by_session ON runs(session_id, run_no);
CREATE INDEX IF NOT EXISTS runs_live ON runs(run_no) WHERE status = 'running';
CREATE TABLE IF NOT EXISTS deltas(
  run_no INTEGER NOT NULL,
  seq    INTEGER NOT NULL,
  at     REAL NOT NULL,
  n      INTEGER NOT NULL DEFAULT 1,
  sizes  BLOB,
  text   TEXT NOT NULL,
  host_seq INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(run_no, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events(
  run_no INTEGER NOT NULL,
  seq    INTEGER NOT NULL,
  at     REAL NOT NULL,
  body   TEXT NOT NULL,
  host_seq INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(run_no, seq)
) WITHOUT ROWID;
)SQL";

// Steps that bring an older log up to date, applied in order inside one
// transaction; schema_sql above then only adds what is missing.
// SQL for "this `events` row is a delta's stream.delta event": a log before
// version 5 has one per delta; from version 5 on there are none (a macro,
// to be joined with the literals around it at compile time).
#define HB_STREAM_DELTA_ROW "body LIKE '{\"event\": \"stream.delta\", %'"

struct migration {
  int from_version;
  const char* sql;
  const char* needs_table = nullptr; // skipped in a log without it (schema_sql then makes it)
};

constexpr migration migrations[] = {
  {1, "ALTER TABLE runs ADD COLUMN pruned_at REAL;"},
  // The turn's user message, so that a turn cut by a crash stays in the
  // session's history (cut_turn.hpp); runs from before it have none.
  {2, "ALTER TABLE runs ADD COLUMN user_message TEXT;"},
  // How far a worker's numbered output is in the log, so that a daemon that
  // re-attaches to the worker asks for exactly what is missing.
  {3, "ALTER TABLE runs ADD COLUMN host_seq INTEGER NOT NULL DEFAULT 0;"},
  // A delta's text once: its stream.delta event is implied by the seq it
  // leaves free in `events` (run_events.hpp), no longer a row that repeats it.
  {4, "DELETE FROM events WHERE " HB_STREAM_DELTA_ROW ";", "events"},
  // A row may hold several deltas (delta_rows.hpp); every older row holds
  // one. The table is copied rather than altered: `n` and `sizes` must come
  // before `text`, which a packed row's spills onto overflow pages that
  // SQLite would walk to reach a column after it.
  {5,
   "CREATE TABLE deltas_v6(run_no INTEGER NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL,"
   " n INTEGER NOT NULL DEFAULT 1, sizes BLOB, text TEXT NOT NULL, PRIMARY KEY(run_no, seq)) WITHOUT ROWID;"
   "INSERT INTO deltas_v6(run_no, seq, at, text) SELECT run_no, seq, at, text FROM deltas;"
   "DROP TABLE deltas; ALTER TABLE deltas_v6 RENAME TO deltas;",
   "deltas"},
  // The host's frame seq on the rows it sent, written with them: a commit no
  // longer also rewrites its runs' rows (runs.host_seq, now only read).
  {6, "ALTER TABLE deltas ADD COLUMN host_seq INTEGER NOT NULL DEFAULT 0;", "deltas"},
  {6, "ALTER TABLE events ADD COLUMN host_seq INTEGER NOT NULL DEFAULT 0;", "events"},
};

} // namespace hb::storage
