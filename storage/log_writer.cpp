#include "storage/log_writer.hpp"

#include "storage/delta_rows.hpp"
#include "storage/log_file.hpp"
#include "storage/private_files.hpp"
#include "storage/recovery.hpp"
#include "storage/run_events.hpp"

#include <sqlite3.h>

#include <stdexcept>

namespace hb::storage {

namespace {

// The file exists, owner-only, before SQLite opens it (see private_files.hpp).
const std::string& made_private(const std::string& path) {
  prepare_private_log_file(path);
  return path;
}

} // namespace

// One thread at a time uses a writer (built on one, then handed to the writer
// actor's), so SQLite's own connection mutex, taken by every bind, step and
// reset, is pure cost: about 5 % of the writer's time under W3.
log_writer::log_writer(const std::string& path, const writer_options& options)
  : db_(made_private(path), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE | SQLite::OPEN_NOMUTEX) {
  prepare_log(db_, options.synchronous);
  if (!options.checkpoint_on_commit)
    db_.exec("PRAGMA wal_autocheckpoint=0"); // a separate connection checkpoints
  insert_run_ = std::make_unique<SQLite::Statement>(
    db_, "INSERT INTO runs(run_id, session_id, status, started_at, user_message) VALUES(?, ?, 'running', ?, ?)");
  insert_delta_ = std::make_unique<SQLite::Statement>(
    db_, "INSERT INTO deltas(run_no, seq, at, n, sizes, text, host_seq) VALUES(?, ?, ?, ?, ?, ?, ?)");
  insert_event_ = std::make_unique<SQLite::Statement>(
    db_, "INSERT INTO events(run_no, seq, at, body, host_seq) VALUES(?, ?, ?, ?, ?)");
  finish_run_ = std::make_unique<SQLite::Statement>(
    db_, "UPDATE runs SET status=?, result=?, error=?, ended_at=? WHERE run_no=?");
  // Prepared once: every commit has them, and SQLite parses an exec()'s text anew each time.
  begin_ = std::make_unique<SQLite::Statement>(db_, "BEGIN");
  commit_ = std::make_unique<SQLite::Statement>(db_, "COMMIT");
  upsert_session_ = std::make_unique<SQLite::Statement>(
    db_,
    "INSERT INTO sessions(session_id, created_at, last_used_at, config, history, message_count, destroyed)"
    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(session_id) DO UPDATE SET"
    " created_at=excluded.created_at, last_used_at=excluded.last_used_at, config=excluded.config,"
    " history=CASE WHEN ?8 THEN excluded.history ELSE sessions.history END,"
    " message_count=excluded.message_count, destroyed=excluded.destroyed");
}

void log_writer::begin() {
  if (!in_tx_) {
    begin_->exec();
    begin_->reset();
    in_tx_ = true;
    runs_at_begin_ = runs_; // what a rollback goes back to
  }
}

log_writer::open_run_state* log_writer::find(const std::string& run_id) {
  auto it = runs_.find(run_id);
  return it == runs_.end() ? nullptr : &it->second;
}

void log_writer::open_run(const std::string& run_id, const std::string& session_id,
                          double started_at, const std::string& user_message) {
  begin();
  insert_run_->bind(1, run_id);
  insert_run_->bind(2, session_id);
  insert_run_->bind(3, started_at);
  if (user_message.empty())
    insert_run_->bind(4);
  else
    insert_run_->bindNoCopy(4, user_message);
  insert_run_->exec();
  insert_run_->reset();
  runs_[run_id] = open_run_state{db_.getLastInsertRowid()};
  ++pending_rows_;
}

bool log_writer::append_delta(const std::string& run_id, const std::string& text, double at, uint64_t host_seq) {
  auto* run = find(run_id);
  if (!run)
    return false;
  insert_deltas(*run, text, 1, at, host_seq);
  return true;
}

bool log_writer::append_deltas(const std::string& run_id, const std::vector<timed_text>& deltas) {
  auto* run = find(run_id);
  if (!run)
    return false;
  for (size_t first = 0; first < deltas.size();) {
    size_t end = first + 1, bytes = deltas[first].text.size();
    while (end < deltas.size() && bytes + deltas[end].text.size() <= max_delta_row_bytes)
      bytes += deltas[end++].text.size();
    if (end - first == 1) {
      insert_deltas(*run, deltas[first].text, 1, deltas[first].at, deltas[first].host_seq);
    } else {
      row_text_.clear();
      row_sizes_.clear();
      for (size_t i = first; i < end; ++i) {
        row_text_ += deltas[i].text;
        append_delta_size(row_sizes_, deltas[i].text.size());
      }
      insert_deltas(*run, row_text_, static_cast<int64_t>(end - first), deltas[end - 1].at, deltas[end - 1].host_seq);
    }
    first = end;
  }
  return true;
}

// One row of `n` deltas (their sizes in row_sizes_ when n > 1).
void log_writer::insert_deltas(open_run_state& run, const std::string& text, int64_t n, double at,
                               uint64_t host_seq) {
  begin();
  insert_delta_->bind(1, run.run_no);
  insert_delta_->bind(2, run.next_delta);
  insert_delta_->bind(3, at);
  insert_delta_->bind(4, n);
  if (n == 1)
    insert_delta_->bind(5);
  else
    insert_delta_->bindNoCopy(5, static_cast<const void*>(row_sizes_.data()), static_cast<int>(row_sizes_.size()));
  insert_delta_->bindNoCopy(6, text); // TEXT, not BLOB: readable in the sqlite3 shell
  insert_delta_->bind(7, static_cast<int64_t>(host_seq));
  insert_delta_->exec();
  insert_delta_->reset();
  run.next_delta += n;
  run.next_event += n; // their stream.delta events' seqs, which only `deltas` holds (run_events.hpp)
  ++pending_rows_;
}

void log_writer::insert_event(open_run_state& run, const std::string& body, double at, uint64_t host_seq) {
  begin();
  insert_event_->bind(1, run.run_no);
  insert_event_->bind(2, run.next_event);
  insert_event_->bind(3, at);
  insert_event_->bindNoCopy(4, body);
  insert_event_->bind(5, static_cast<int64_t>(host_seq));
  insert_event_->exec();
  insert_event_->reset();
  ++run.next_event;
  ++pending_rows_;
}

bool log_writer::append_event(const std::string& run_id, const std::string& body, double at, uint64_t host_seq) {
  auto* run = find(run_id);
  if (!run)
    return false;
  insert_event(*run, body, at, host_seq);
  return true;
}

bool log_writer::put_imported_event(const std::string& run_id, int64_t seq, const std::string& body, double at) {
  auto* run = find(run_id);
  if (!run)
    return false;
  run->next_event = seq;
  insert_event(*run, body, at);
  return true;
}

void log_writer::write_end(const open_run_state& run, std::string_view status,
                          const std::optional<std::string>& result, const std::optional<std::string>& error,
                          double ended_at) {
  begin();
  finish_run_->bind(1, std::string(status));
  // NoCopy: a result can hold the run's whole output twice; the strings
  // outlive the exec() below, and the writer clears its bindings after.
  if (result)
    finish_run_->bindNoCopy(2, *result);
  else
    finish_run_->bind(2);
  if (error)
    finish_run_->bindNoCopy(3, *error);
  else
    finish_run_->bind(3);
  finish_run_->bind(4, ended_at);
  finish_run_->bind(5, run.run_no);
  finish_run_->exec();
  finish_run_->reset();
  ++pending_rows_;
}

void log_writer::close_run(const std::string& run_id, std::string_view status,
                           const std::optional<std::string>& result,
                           const std::optional<std::string>& error, double ended_at) {
  auto* run = find(run_id);
  if (!run)
    return;
  write_end(*run, status, result, error, ended_at);
  runs_.erase(run_id);
}

void log_writer::put_imported_run(const run_row& row) {
  open_run(row.run_id, row.session_id, row.started_at, row.user_message.value_or(""));
  if (row.status != "running")
    write_end(*find(row.run_id), row.status, row.result, row.error, row.ended_at.value_or(row.started_at));
}

void log_writer::put_session(const session_row& row, const std::string& history) {
  begin();
  upsert_session_->bind(1, row.session_id);
  upsert_session_->bind(2, row.created_at);
  upsert_session_->bind(3, row.last_used_at);
  upsert_session_->bindNoCopy(4, row.config); // (see close_run)
  upsert_session_->bindNoCopy(5, history);
  upsert_session_->bind(6, row.message_count);
  upsert_session_->bind(7, row.destroyed ? 1 : 0);
  upsert_session_->bind(8, row.history_known ? 1 : 0);
  upsert_session_->exec();
  upsert_session_->reset();
  ++pending_rows_;
}

std::optional<continued_run> log_writer::continue_run(const std::string& run_id, double now,
                                                     const std::vector<waiting_question>& waiting) {
  SQLite::Statement row(db_, "SELECT run_no FROM runs WHERE run_id=? AND status='running'");
  row.bind(1, run_id);
  if (!row.executeStep())
    return std::nullopt;
  open_run_state run{row.getColumn(0).getInt64()};
  run_events counts(db_);
  run.next_delta = counts.delta_count(run.run_no);
  run.next_event = counts.count(run.run_no);
  continued_run out;
  out.host_seq = logged_host_seq(db_, run.run_no);
  if (in_tx_)
    runs_at_begin_[run_id] = run; // a rollback of the open transaction keeps it: nothing of it was in there
  auto& taken = runs_[run_id] = run;
  // A question the agent no longer waits on was settled somewhere nobody
  // saw (the worker's own fail-closed default): the log says so now, so
  // every question in it is resolved.
  out.reopened = match_waiting_questions(db_, taken.run_no, waiting);
  std::set<std::string> still_open;
  for (const auto& q : out.reopened)
    still_open.insert(q.id);
  for (const auto& body : settle_open_questions(db_, taken.run_no, nullptr, still_open))
    insert_event(taken, body, now);
  return out;
}

std::optional<log_writer::run_counts> log_writer::counts(const std::string& run_id) const {
  auto it = runs_.find(run_id);
  if (it == runs_.end())
    return std::nullopt;
  return run_counts{it->second.next_delta, it->second.next_event};
}

size_t log_writer::commit() {
  if (!in_tx_)
    return 0;
  commit_->exec();
  commit_->reset();
  in_tx_ = false;
  size_t n = pending_rows_;
  pending_rows_ = 0;
  return n;
}

void log_writer::forget_bound_values() {
  sqlite3* db = db_.getHandle();
  for (sqlite3_stmt* stmt = sqlite3_next_stmt(db, nullptr); stmt; stmt = sqlite3_next_stmt(db, stmt))
    sqlite3_clear_bindings(stmt);
}

void log_writer::fold_wal() { db_.exec("PRAGMA wal_checkpoint(TRUNCATE)"); }

void log_writer::rollback() {
  if (in_tx_) {
    try {
      db_.exec("ROLLBACK");
    } catch (const SQLite::Exception&) {
      // SQLite may already have rolled back on its own (e.g. SQLITE_FULL).
    }
  }
  if (in_tx_)
    runs_ = runs_at_begin_; // sequence numbers stay contiguous: no gap for rolled-back rows
  in_tx_ = false;
  pending_rows_ = 0;
  // tryReset: reset() throws the statement's last error (SQLITE_FULL after
  // a failed step), which killed the writer on a full disk: a rollback must
  // not fail for the error it cleans up after.
  insert_run_->tryReset();
  insert_delta_->tryReset();
  insert_event_->tryReset();
  finish_run_->tryReset();
  upsert_session_->tryReset();
  begin_->tryReset();
  commit_->tryReset();
}

} // namespace hb::storage
