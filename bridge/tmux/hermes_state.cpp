#include "bridge/tmux/hermes_state.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <sys/stat.h>

namespace hb::bridge {

namespace {

std::vector<std::string> columns_of(SQLite::Database& db, const std::string& table) {
  std::vector<std::string> out;
  SQLite::Statement q(db, "PRAGMA table_info(" + table + ")");
  while (q.executeStep())
    out.push_back(q.getColumn(1).getString());
  return out;
}

std::string real_path(const std::string& path) {
  char buffer[PATH_MAX];
  return ::realpath(path.c_str(), buffer) ? std::string(buffer) : path;
}

std::string text_of(const SQLite::Column& c) { return c.isNull() ? std::string() : c.getString(); }

} // namespace

hermes_state::hermes_state(std::string path) : path_(std::move(path)) {}

bool hermes_state::available() {
  if (db_ && !message_columns_.empty())
    return true;
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0)
    return false;
  try {
    if (!db_)
      db_ = std::make_unique<SQLite::Database>(path_, SQLite::OPEN_READONLY, 5000);
    session_columns_ = columns_of(*db_, "sessions");
    message_columns_ = columns_of(*db_, "messages");
  } catch (const SQLite::Exception&) {
    db_.reset();
    return false;
  }
  return !message_columns_.empty() && !session_columns_.empty();
}

bool hermes_state::has(const std::string& table, const std::string& column) const {
  const auto& cols = table == "sessions" ? session_columns_ : message_columns_;
  return std::find(cols.begin(), cols.end(), column) != cols.end();
}

std::string hermes_state::column_or_null(const std::string& table, const std::string& column) const {
  return has(table, column) ? column : "NULL";
}

int64_t hermes_state::max_message_id() {
  if (!available())
    return 0;
  SQLite::Statement q(*db_, "SELECT COALESCE(MAX(id), 0) FROM messages");
  return q.executeStep() ? q.getColumn(0).getInt64() : 0;
}

std::vector<hermes_session_row> hermes_state::sessions_since(double since) {
  std::vector<hermes_session_row> out;
  if (!available())
    return out;
  SQLite::Statement q(*db_, "SELECT id, " + column_or_null("sessions", "cwd") +
                              ", started_at FROM sessions WHERE started_at >= ? "
                              "ORDER BY started_at DESC");
  q.bind(1, since);
  while (q.executeStep()) {
    std::string cwd = text_of(q.getColumn(1));
    out.push_back({q.getColumn(0).getString(), cwd.empty() ? cwd : real_path(cwd),
                   q.getColumn(2).getDouble()});
  }
  return out;
}

std::optional<std::string> hermes_state::newest_child(const std::string& parent) {
  if (!available() || !has("sessions", "parent_session_id"))
    return std::nullopt;
  SQLite::Statement q(*db_, "SELECT id FROM sessions WHERE parent_session_id = ? "
                            "ORDER BY started_at DESC LIMIT 1");
  q.bind(1, parent);
  if (q.executeStep())
    return q.getColumn(0).getString();
  return std::nullopt;
}

std::vector<hermes_row> hermes_state::rows_after(const std::vector<std::string>& sessions,
                                                 int64_t after_id, size_t limit) {
  return select_rows(sessions, after_id, "id", limit);
}

std::optional<hermes_row> hermes_state::last_row(const std::vector<std::string>& sessions) {
  auto rows = select_rows(sessions, 0, "id DESC", 1);
  if (rows.empty())
    return std::nullopt;
  return rows.front();
}

std::vector<hermes_row> hermes_state::select_rows(const std::vector<std::string>& sessions, int64_t after_id,
                                                  const std::string& order, size_t limit) {
  std::vector<hermes_row> out;
  if (sessions.empty() || !available())
    return out;
  std::string placeholders;
  for (size_t i = 0; i < sessions.size(); ++i)
    placeholders += i ? ",?" : "?";
  std::string sql = "SELECT id, session_id, role, content, " + column_or_null("messages", "tool_calls") +
                    ", " + column_or_null("messages", "tool_call_id") + ", " +
                    column_or_null("messages", "tool_name") + ", " +
                    column_or_null("messages", "finish_reason") + ", " +
                    column_or_null("messages", "timestamp") +
                    " FROM messages WHERE session_id IN (" + placeholders + ") AND id > ?" +
                    (has("messages", "active") ? " AND COALESCE(active, 1) = 1" : "") +
                    " ORDER BY " + order + " LIMIT " + std::to_string(limit);
  SQLite::Statement q(*db_, sql);
  int at = 1;
  for (const auto& s : sessions)
    q.bind(at++, s);
  q.bind(at, static_cast<int64_t>(after_id));
  while (q.executeStep()) {
    hermes_row row;
    row.id = q.getColumn(0).getInt64();
    row.session_id = q.getColumn(1).getString();
    row.role = text_of(q.getColumn(2));
    row.content = text_of(q.getColumn(3));
    row.tool_calls = text_of(q.getColumn(4));
    row.tool_call_id = text_of(q.getColumn(5));
    row.tool_name = text_of(q.getColumn(6));
    row.finish_reason = text_of(q.getColumn(7));
    row.timestamp = q.getColumn(8).isNull() ? 0 : q.getColumn(8).getDouble();
    out.push_back(std::move(row));
  }
  return out;
}

} // namespace hb::bridge
