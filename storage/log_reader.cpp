#include "storage/log_reader.hpp"

#include "storage/log_file.hpp"

#include <algorithm>
#include <limits>

namespace hb::storage {

log_reader::log_reader(const std::string& path)
  : db_(path, SQLite::OPEN_READONLY | SQLite::OPEN_FULLMUTEX) {
  db_.setBusyTimeout(5000);
  limit_page_cache(db_);
  run_ = std::make_unique<SQLite::Statement>(
    db_, "SELECT run_no, session_id, status, started_at, ended_at, pruned_at FROM runs WHERE run_id=?");
  // Apart: a run's result holds its whole output, and a cut read skips it.
  outcome_ = std::make_unique<SQLite::Statement>(db_, "SELECT result, error FROM runs WHERE run_no=?");
  deltas_ = std::make_unique<delta_cursor>(db_);
  events_ = std::make_unique<run_events>(db_);
  history_ = std::make_unique<SQLite::Statement>(db_, "SELECT history FROM sessions WHERE session_id=?");
}

std::optional<std::vector<log_reader::timed_event>>
log_reader::read_events_timed(const std::string& run_id) {
  SQLite::Transaction snapshot(db_);
  SQLite::Statement q(db_, "SELECT run_no FROM runs WHERE run_id=?");
  q.bind(1, run_id);
  if (!q.executeStep())
    return std::nullopt;
  std::vector<timed_event> events;
  events_->open(q.getColumn(0).getInt64(), 0);
  while (events_->next())
    events.push_back({events_->at(), events_->body()});
  events_->close();
  snapshot.commit();
  return events;
}

std::string log_reader::read_history(const std::string& session_id) {
  history_->reset();
  history_->bind(1, session_id);
  std::string history = history_->executeStep() ? history_->getColumn(0).getString() : "[]";
  history_->reset();
  return history;
}

std::vector<session_row> load_sessions(SQLite::Database& db) {
  std::vector<session_row> rows;
  SQLite::Statement q(db, "SELECT session_id, created_at, last_used_at, config, message_count"
                          " FROM sessions WHERE destroyed=0 ORDER BY created_at");
  while (q.executeStep()) {
    session_row row;
    row.session_id = q.getColumn(0).getString();
    row.created_at = q.getColumn(1).getDouble();
    row.last_used_at = q.getColumn(2).getDouble();
    row.config = q.getColumn(3).getString();
    row.message_count = q.getColumn(4).getInt64();
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

// Rows, in order, until they hold max_bytes of text (the row that crosses
// it included); `next(at, texts)` appends the next row's text and sets its
// `at`, false after the last.
// Returns the latest `at` taken when rows were left unread, else +infinity.
template <class Next>
double take_rows(Next next, int64_t rows_left, size_t max_bytes, std::vector<std::string>& texts,
                 std::vector<double>& ats) {
  size_t bytes = 0;
  double latest = -std::numeric_limits<double>::infinity();
  double at = 0;
  while (bytes < max_bytes && next(at, texts)) {
    ats.push_back(at);
    bytes += texts.back().size();
    latest = std::max(latest, at);
  }
  return static_cast<int64_t>(texts.size()) < rows_left ? latest : std::numeric_limits<double>::infinity();
}

// Keeps the leading rows logged before `cut` (or at it, when `inclusive`).
void keep_until(double cut, bool inclusive, std::vector<std::string>& texts, const std::vector<double>& ats) {
  size_t keep = 0;
  while (keep < ats.size() && (ats[keep] < cut || (inclusive && ats[keep] == cut)))
    ++keep;
  texts.resize(keep);
}

} // namespace

std::optional<run_snapshot> log_reader::read_run(const std::string& run_id, int64_t delta_from,
                                                 int64_t event_from, size_t max_bytes) {
  // One read transaction: every SELECT below sees the same committed state.
  SQLite::Transaction snapshot(db_);
  struct reset_all {
    log_reader* r;
    ~reset_all() {
      r->run_->reset();
      r->outcome_->reset();
      r->deltas_->close();
      r->events_->close();
    }
  } guard{this};

  run_->bind(1, run_id);
  if (!run_->executeStep())
    return std::nullopt;
  run_snapshot snap;
  int64_t run_no = run_->getColumn(0).getInt64();
  snap.run_no = run_no;
  snap.run_id = run_id;
  snap.session_id = run_->getColumn(1).getString();
  snap.status = run_->getColumn(2).getString();
  snap.started_at = run_->getColumn(3).getDouble();
  if (!run_->getColumn(4).isNull())
    snap.ended_at = run_->getColumn(4).getDouble();
  if (!run_->getColumn(5).isNull()) {
    snap.pruned_at = run_->getColumn(5).getDouble();
    snapshot.commit();
    return snap;
  }

  snap.delta_count = deltas_->count(run_no);
  snap.event_count = events_->count(run_no);
  snap.delta_from = std::clamp<int64_t>(delta_from, 0, snap.delta_count);
  snap.event_from = std::clamp<int64_t>(event_from, 0, snap.event_count);

  max_bytes = std::max<size_t>(max_bytes, 1); // every read takes at least one row
  std::vector<double> delta_ats, event_ats;
  constexpr double none = std::numeric_limits<double>::infinity();
  double delta_cut = none, event_cut = none;
  if (snap.delta_from < snap.delta_count) {
    deltas_->open(run_no, snap.delta_from);
    auto next_delta = [this](double& at, std::vector<std::string>& texts) {
      if (!deltas_->next())
        return false;
      at = deltas_->at();
      texts.emplace_back(deltas_->text());
      return true;
    };
    delta_cut = take_rows(next_delta, snap.delta_count - snap.delta_from, max_bytes, snap.deltas, delta_ats);
  }
  if (snap.event_from < snap.event_count) {
    events_->open(run_no, snap.event_from);
    auto next_event = [this](double& at, std::vector<std::string>& texts) {
      if (!events_->next())
        return false;
      at = events_->at();
      texts.push_back(events_->body());
      return true;
    };
    event_cut = take_rows(next_event, snap.event_count - snap.event_from, max_bytes, snap.events, event_ats);
  }
  double cut = std::min(delta_cut, event_cut);
  if (cut != none) {
    // The kind that set the cut keeps every row it took (all logged no later
    // than the cut), so each read moves on. The other kind keeps only rows
    // logged strictly before: one logged at the same instant may have come
    // after the cut's row (clocks are coarse), and it comes next time.
    keep_until(cut, delta_cut == cut, snap.deltas, delta_ats);
    keep_until(cut, event_cut == cut, snap.events, event_ats);
    snap.cut = true;
    snap.delta_count = snap.delta_from + static_cast<int64_t>(snap.deltas.size());
    snap.event_count = snap.event_from + static_cast<int64_t>(snap.events.size());
    snap.status = "running";
    snap.ended_at.reset();
  } else if (snap.status != "running") {
    outcome_->bind(1, run_no);
    if (outcome_->executeStep()) {
      if (!outcome_->getColumn(0).isNull())
        snap.result = outcome_->getColumn(0).getString();
      if (!outcome_->getColumn(1).isNull())
        snap.error = outcome_->getColumn(1).getString();
    }
  }
  snapshot.commit();
  return snap;
}

} // namespace hb::storage
