// Retention: finished runs are kept until they are older than max_age or the
// log holds more than max_bytes; then their deltas and events are deleted,
// oldest run first, in small steps so appends are never held up for long.
// The run's row stays as a tombstone, so a client asking for it learns that
// it was pruned instead of hearing nothing. A live run, and the latest run of
// every session, are never pruned; session histories live in `sessions` and
// are untouched.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hb::storage {

struct retention_policy {
  double max_age_s = 30.0 * 24 * 3600; // 0: no age limit
  int64_t max_bytes = int64_t{4} << 30; // 0: no size limit
  int64_t rows_per_step = 5000;
};

class pruner {
public:
  // One bounded step in its own transaction (the caller commits its appends
  // first). Returns true while more is due, so the caller keeps stepping.
  bool step(SQLite::Database& db, const retention_policy& policy, double now);

  // Bytes of the log in use (pages not on the free list).
  static int64_t live_bytes(SQLite::Database& db);

  // Runs marked pruned by the steps since the last call (their ids), so
  // copies kept elsewhere (the finished-run cache) can be dropped.
  std::vector<std::string> take_pruned() { return std::exchange(pruned_, {}); }

private:
  std::optional<int64_t> choose_run(SQLite::Database& db, const retention_policy& policy, double now);
  std::optional<int64_t> current_; // the run whose rows are being deleted
  bool resumed_ = false;
  std::vector<std::string> pruned_;
};

} // namespace hb::storage
