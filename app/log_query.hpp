// The event log opened read-only for the log tools, and the rows they
// select. Safe while the daemon writes (WAL readers never block the writer);
// a tool that needs several reads to agree wraps them in snapshot().
#pragma once

#include "storage/log_rows.hpp"

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hb::app {

using storage::run_row;
using storage::seq_row;
using storage::session_row;

struct run_filter {
  std::string session; // empty: any
  std::string status;  // empty: any
  std::optional<double> since, until; // on started_at, inclusive
  int64_t limit = 50;  // 0: all
};

struct run_stats {
  int64_t deltas = 0;
  int64_t events = 0;
  int64_t tool_calls = 0; // tool.started events
  int64_t approvals = 0;  // approval.requested events
};

struct session_listing {
  session_row row; // history left empty
  std::string profile, model;   // from config
  int64_t runs = 0;
};

class log_query {
public:
  // Throws tool_error: exit_usage when the file does not exist, exit_damaged
  // when it is not an event log, exit_usage when its schema is newer.
  explicit log_query(const std::string& path);

  SQLite::Database& db() { return *db_; }
  const std::string& path() const { return path_; }
  // One read transaction: everything read until it ends comes from the same
  // committed state.
  std::unique_ptr<SQLite::Transaction> snapshot();

  // Newest first (started_at, then run_no).
  std::vector<run_row> runs(const run_filter& filter);
  run_stats stats(int64_t run_no);
  std::optional<run_row> run(const std::string& run_id);
  // Oldest first.
  std::vector<run_row> runs_of_session(const std::string& session_id);
  bool session_known(const std::string& session_id);

  // Most recently used first.
  std::vector<session_listing> sessions();
  std::optional<session_row> session(const std::string& session_id); // with history

  void each_delta(int64_t run_no, const std::function<void(const seq_row&)>& f);
  void each_event(int64_t run_no, const std::function<void(const seq_row&)>& f);

private:
  run_row read_run(SQLite::Statement& q);

  std::string path_;
  std::unique_ptr<SQLite::Database> db_;
  std::string pruned_col_; // "pruned_at, user_message", with NULL for what an older log lacks
};

// Throws tool_error(exit_unknown) for an unknown or pruned run.
run_row require_readable_run(log_query& log, const std::string& run_id);

} // namespace hb::app
