#include "app/log_query.hpp"

#include "app/tool_support.hpp"
#include "protocol/json_text.hpp"
#include "storage/delta_rows.hpp"
#include "storage/log_file.hpp"
#include "storage/run_events.hpp"
#include "storage/schema.hpp"

#include <filesystem>

namespace hb::app {

using namespace hb::storage;

log_query::log_query(const std::string& path) : path_(path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw tool_error(exit_usage, "no event log at " + path +
                                   " (give --db FILE, or --hermes-home DIR for <DIR>/hermes-bridge/events.db)");
  if (std::filesystem::is_directory(path, ec))
    throw tool_error(exit_usage, path + " is a directory, not an event log");
  try {
    db_ = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READONLY);
    db_->setBusyTimeout(5000);
    int version = storage::stored_schema_version(*db_);
    if (version > storage::schema_version)
      throw tool_error(exit_usage, "event log " + path + " has schema version " + std::to_string(version) +
                                     ", newer than this hermes-bridge (" +
                                     std::to_string(storage::schema_version) + ")");
    if (!db_->tableExists("runs") || !db_->tableExists("events") || !db_->tableExists("deltas") ||
        !db_->tableExists("sessions"))
      throw tool_error(exit_damaged, path + " is not a hermes-bridge event log (no runs/events tables)");
    SQLite::Statement cols(*db_, "SELECT 1 FROM pragma_table_info('runs') WHERE name='pruned_at'");
    pruned_col_ = cols.executeStep() ? "pruned_at" : "NULL";
    SQLite::Statement message(*db_, "SELECT 1 FROM pragma_table_info('runs') WHERE name='user_message'");
    pruned_col_ += message.executeStep() ? ", user_message" : ", NULL";
  } catch (const SQLite::Exception& e) {
    throw tool_error(exit_damaged, "cannot read " + path + " as an event log: " + e.what());
  }
}

std::unique_ptr<SQLite::Transaction> log_query::snapshot() {
  return std::make_unique<SQLite::Transaction>(*db_);
}

namespace {

std::optional<double> opt_double(const SQLite::Column& c) {
  return c.isNull() ? std::nullopt : std::optional<double>(c.getDouble());
}

std::optional<std::string> opt_text(const SQLite::Column& c) {
  return c.isNull() ? std::nullopt : std::optional<std::string>(c.getString());
}

std::string run_columns(const std::string& pruned) {
  return "SELECT run_no, run_id, session_id, status, started_at, ended_at, result, error, " + pruned +
         " FROM runs";
}

} // namespace

run_row log_query::read_run(SQLite::Statement& q) {
  run_row r;
  r.run_no = q.getColumn(0).getInt64();
  r.run_id = q.getColumn(1).getString();
  r.session_id = q.getColumn(2).getString();
  r.status = q.getColumn(3).getString();
  r.started_at = q.getColumn(4).getDouble();
  r.ended_at = opt_double(q.getColumn(5));
  r.result = opt_text(q.getColumn(6));
  r.error = opt_text(q.getColumn(7));
  r.pruned_at = opt_double(q.getColumn(8));
  r.user_message = opt_text(q.getColumn(9));
  return r;
}

std::vector<run_row> log_query::runs(const run_filter& filter) {
  std::string sql = run_columns(pruned_col_) + " WHERE 1";
  if (!filter.session.empty())
    sql += " AND session_id = :session";
  if (!filter.status.empty())
    sql += " AND status = :status";
  if (filter.since)
    sql += " AND started_at >= :since";
  if (filter.until)
    sql += " AND started_at <= :until";
  sql += " ORDER BY started_at DESC, run_no DESC";
  if (filter.limit > 0)
    sql += " LIMIT :limit";
  SQLite::Statement q(*db_, sql);
  if (!filter.session.empty())
    q.bind(":session", filter.session);
  if (!filter.status.empty())
    q.bind(":status", filter.status);
  if (filter.since)
    q.bind(":since", *filter.since);
  if (filter.until)
    q.bind(":until", *filter.until);
  if (filter.limit > 0)
    q.bind(":limit", filter.limit);
  std::vector<run_row> out;
  while (q.executeStep())
    out.push_back(read_run(q));
  return out;
}

run_stats log_query::stats(int64_t run_no) {
  run_stats s;
  // Every body starts with its "event" key (json.dumps of a dict built with
  // it first), which is what recovery relies on as well.
  SQLite::Statement ev(*db_,
    "SELECT count(*), coalesce(sum(body LIKE '{\"event\": \"tool.started\"%'), 0),"
    " coalesce(sum(body LIKE '{\"event\": \"approval.requested\"%'), 0) FROM events WHERE run_no=?");
  ev.bind(1, run_no);
  if (ev.executeStep()) {
    s.events = ev.getColumn(0).getInt64();
    s.tool_calls = ev.getColumn(1).getInt64();
    s.approvals = ev.getColumn(2).getInt64();
  }
  storage::run_events counts(*db_);
  s.deltas = counts.delta_count(run_no);
  s.events = counts.count(run_no); // a delta's event has no row of its own
  return s;
}

std::optional<run_row> log_query::run(const std::string& run_id) {
  SQLite::Statement q(*db_, run_columns(pruned_col_) + " WHERE run_id=?");
  q.bind(1, run_id);
  if (!q.executeStep())
    return std::nullopt;
  return read_run(q);
}

std::vector<run_row> log_query::runs_of_session(const std::string& session_id) {
  SQLite::Statement q(*db_, run_columns(pruned_col_) + " WHERE session_id=? ORDER BY run_no");
  q.bind(1, session_id);
  std::vector<run_row> out;
  while (q.executeStep())
    out.push_back(read_run(q));
  return out;
}

bool log_query::session_known(const std::string& session_id) {
  SQLite::Statement q(*db_, "SELECT 1 FROM sessions WHERE session_id=?1"
                            " UNION ALL SELECT 1 FROM runs WHERE session_id=?1 LIMIT 1");
  q.bind(1, session_id);
  return q.executeStep();
}

std::vector<session_listing> log_query::sessions() {
  SQLite::Statement q(*db_,
    "SELECT s.session_id, s.created_at, s.last_used_at, s.config, s.message_count, s.destroyed,"
    " (SELECT count(*) FROM runs r WHERE r.session_id = s.session_id)"
    " FROM sessions s ORDER BY s.last_used_at DESC, s.session_id");
  std::vector<session_listing> out;
  while (q.executeStep()) {
    session_listing s;
    s.row.session_id = q.getColumn(0).getString();
    s.row.created_at = q.getColumn(1).getDouble();
    s.row.last_used_at = q.getColumn(2).getDouble();
    s.row.config = q.getColumn(3).getString();
    s.row.history.clear();
    s.row.message_count = q.getColumn(4).getInt64();
    s.row.destroyed = q.getColumn(5).getInt64() != 0;
    s.runs = q.getColumn(6).getInt64();
    auto config = protocol::json::parse(s.row.config, nullptr, false);
    auto text = [&](const char* key) {
      return config.is_object() && config.contains(key) && config[key].is_string()
               ? config[key].get<std::string>()
               : std::string();
    };
    s.profile = text("profile");
    s.model = text("model");
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<session_row> log_query::session(const std::string& session_id) {
  SQLite::Statement q(*db_, "SELECT session_id, created_at, last_used_at, config, history, message_count,"
                            " destroyed FROM sessions WHERE session_id=?");
  q.bind(1, session_id);
  if (!q.executeStep())
    return std::nullopt;
  session_row s;
  s.session_id = q.getColumn(0).getString();
  s.created_at = q.getColumn(1).getDouble();
  s.last_used_at = q.getColumn(2).getDouble();
  s.config = q.getColumn(3).getString();
  s.history = q.getColumn(4).getString();
  s.message_count = q.getColumn(5).getInt64();
  s.destroyed = q.getColumn(6).getInt64() != 0;
  return s;
}

void log_query::each_delta(int64_t run_no, const std::function<void(const seq_row&)>& f) {
  storage::delta_cursor deltas(*db_);
  deltas.open(run_no, 0);
  seq_row row;
  while (deltas.next()) {
    row.seq = deltas.seq();
    row.at = deltas.at();
    row.text = deltas.text();
    f(row);
  }
  deltas.close();
}

void log_query::each_event(int64_t run_no, const std::function<void(const seq_row&)>& f) {
  storage::run_events events(*db_);
  events.open(run_no, 0);
  seq_row row;
  while (events.next()) {
    row.seq = events.seq();
    row.at = events.at();
    row.text = events.body();
    f(row);
  }
  events.close();
}

run_row require_readable_run(log_query& log, const std::string& run_id) {
  auto run = log.run(run_id);
  if (!run)
    throw tool_error(exit_unknown, "unknown run: " + run_id + " (not in " + log.path() + ")");
  if (run->pruned_at)
    throw tool_error(exit_unknown, "run " + run_id + " was pruned from the event log by its retention "
                                   "limits (--retain-days / --retain-mb); its output is gone");
  return *run;
}

} // namespace hb::app
