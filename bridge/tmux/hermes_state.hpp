// Read-only view of Hermes' own state.db (sessions and messages), which the
// TUI writes as it works. Opened read-only so we can never damage it; WAL
// mode lets us read while Hermes writes. Columns are introspected because
// the schema drifts between Hermes versions: a missing column reads as NULL.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hb::bridge {

struct hermes_row {
  int64_t id = 0;
  std::string session_id;
  std::string role;
  std::string content;
  std::string tool_calls; // JSON text; empty for none
  std::string tool_call_id;
  std::string tool_name;
  std::string finish_reason;
  double timestamp = 0; // when Hermes stored it (seconds since the epoch; 0: unknown)
};

struct hermes_session_row {
  std::string id;
  std::string cwd;
  double started_at = 0;
};

class hermes_state {
public:
  explicit hermes_state(std::string path);

  const std::string& path() const { return path_; }
  // False until the database exists (Hermes creates it on first use).
  bool available();

  int64_t max_message_id();
  // Sessions started at or after `since`, newest first; `cwd` is realpath'd.
  std::vector<hermes_session_row> sessions_since(double since);
  // The newest session continuing `parent` (compression ends a session and
  // goes on in a child), if any.
  std::optional<std::string> newest_child(const std::string& parent);
  // Active rows of these sessions after `after_id`, in id order.
  std::vector<hermes_row> rows_after(const std::vector<std::string>& sessions, int64_t after_id,
                                     size_t limit = 500);

  // The newest active row of these sessions, if any.
  std::optional<hermes_row> last_row(const std::vector<std::string>& sessions);

private:
  std::vector<hermes_row> select_rows(const std::vector<std::string>& sessions, int64_t after_id,
                                      const std::string& order, size_t limit);
  bool has(const std::string& table, const std::string& column) const;
  std::string column_or_null(const std::string& table, const std::string& column) const;

  std::string path_;
  std::unique_ptr<SQLite::Database> db_;
  std::vector<std::string> session_columns_;
  std::vector<std::string> message_columns_;
};

} // namespace hb::bridge
