#include "storage/retention.hpp"

namespace hb::storage {

namespace {

constexpr const char* prunable =
  "SELECT run_no FROM runs WHERE status != 'running' AND pruned_at IS NULL"
  " AND run_no NOT IN (SELECT max(run_no) FROM runs GROUP BY session_id)";

std::optional<int64_t> first_row(SQLite::Statement& q) {
  if (!q.executeStep())
    return std::nullopt;
  return q.getColumn(0).getInt64();
}

// Deletes up to `limit` rows of one run from `table`; returns how many went.
int delete_chunk(SQLite::Database& db, const char* table, int64_t run_no, int64_t limit) {
  SQLite::Statement del(db, std::string("DELETE FROM ") + table + " WHERE run_no=?1 AND seq < "
                            "(SELECT coalesce(min(seq), 0) + ?2 FROM " + table + " WHERE run_no=?1)");
  del.bind(1, run_no);
  del.bind(2, limit);
  return del.exec();
}

} // namespace

int64_t pruner::live_bytes(SQLite::Database& db) {
  int64_t pages = db.execAndGet("PRAGMA page_count").getInt64();
  int64_t free_pages = db.execAndGet("PRAGMA freelist_count").getInt64();
  int64_t page_size = db.execAndGet("PRAGMA page_size").getInt64();
  return (pages - free_pages) * page_size;
}

std::optional<int64_t> pruner::choose_run(SQLite::Database& db, const retention_policy& policy,
                                          double now) {
  if (!resumed_) {
    // A crash may have cut the last pruning short: finish that run first.
    resumed_ = true;
    SQLite::Statement last(db, "SELECT run_no FROM runs WHERE pruned_at IS NOT NULL"
                               " ORDER BY pruned_at DESC LIMIT 1");
    if (auto run = first_row(last))
      return run;
  }
  if (policy.max_age_s > 0) {
    SQLite::Statement old(db, std::string(prunable) + " AND ended_at < ? ORDER BY run_no LIMIT 1");
    old.bind(1, now - policy.max_age_s);
    if (auto run = first_row(old))
      return run;
  }
  if (policy.max_bytes > 0 && live_bytes(db) > policy.max_bytes) {
    SQLite::Statement oldest(db, std::string(prunable) + " ORDER BY run_no LIMIT 1");
    return first_row(oldest);
  }
  return std::nullopt;
}

bool pruner::step(SQLite::Database& db, const retention_policy& policy, double now) {
  SQLite::Transaction tx(db);
  if (!current_) {
    current_ = choose_run(db, policy, now);
    if (!current_)
      return false;
    SQLite::Statement mark(db, "UPDATE runs SET pruned_at=coalesce(pruned_at, ?), result=NULL"
                               " WHERE run_no=?");
    mark.bind(1, now);
    mark.bind(2, *current_);
    mark.exec();
    SQLite::Statement id(db, "SELECT run_id FROM runs WHERE run_no=?");
    id.bind(1, *current_);
    if (id.executeStep())
      pruned_.push_back(id.getColumn(0).getString());
  }
  int gone = delete_chunk(db, "deltas", *current_, policy.rows_per_step) +
             delete_chunk(db, "events", *current_, policy.rows_per_step);
  if (gone == 0)
    current_.reset();
  tx.commit();
  if (!current_)
    db.exec("PRAGMA incremental_vacuum(256)"); // hand freed pages back when the log allows it
  return true;
}

} // namespace hb::storage
