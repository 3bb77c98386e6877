// Finished runs kept in memory for reading. A finished run never changes
// (until retention prunes it, which erases it here too), yet every poll of
// one used to re-read all its deltas from SQLite and re-encode its output:
// 18 ms for the tail of a 100,000-delta run. Here its text is joined and
// JSON-encoded once; answers are then assembled by copying.
#pragma once

#include "storage/log_reader.hpp"
#include "storage/log_rows.hpp"

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace hb::storage {

// The run's row (never a pruned one) plus everything it streamed.
struct finished_run : run_row {
  std::string text;                  // every delta, joined
  std::vector<size_t> delta_ends;    // offset in `text` after each delta
  std::string quoted_text;           // `text` as a JSON string literal
  std::string events;                // every event body, joined by ", "
  std::vector<size_t> event_starts;  // offset in `events` of each event

  // From a snapshot holding every delta and every event (delta_from and
  // event_from 0) of a finished run.
  static std::shared_ptr<const finished_run> from(const run_snapshot& run);
  int64_t delta_count() const { return static_cast<int64_t>(delta_ends.size()); }
  int64_t event_count() const { return static_cast<int64_t>(event_starts.size()); }
  // Deltas from `cursor` on, joined (clamped like the log's cursors).
  std::string text_from(int64_t cursor) const;
  // Events from `cursor` on as a JSON array (clamped likewise).
  std::string events_from(int64_t cursor) const;
  size_t bytes() const;
};

// Least recently read runs leave first once the cache holds `max_bytes`.
// Shared by the reader actors; every call takes its lock briefly.
class finished_run_cache {
public:
  explicit finished_run_cache(size_t max_bytes) : max_bytes_(max_bytes) {}

  std::shared_ptr<const finished_run> find(const std::string& run_id);
  // A finished run was just read from the log: true when it was read before
  // (recently), i.e. it is worth keeping. Most finished runs are read once
  // (the poll that sees them done) and never again; building them would be
  // wasted work while other runs stream.
  bool read_again(const std::string& run_id);
  void put(std::shared_ptr<const finished_run> run); // runs over half the cache are not kept
  bool would_keep(size_t run_bytes) const { return run_bytes <= max_bytes_ / 2; }
  // The run was pruned: dropped, and never taken in again (a reader may
  // still hold a snapshot from before the prune).
  void forget(const std::string& run_id);
  size_t bytes() const;
  size_t size() const;

private:
  using lru_list = std::list<std::shared_ptr<const finished_run>>;
  mutable std::mutex mu_;
  size_t max_bytes_;
  size_t bytes_ = 0;
  lru_list order_; // most recently read first
  std::unordered_map<std::string, lru_list::iterator> index_;
  std::unordered_set<std::string> forgotten_;
  std::unordered_set<std::string> read_once_;
  std::list<std::string> read_once_order_; // oldest first; bounded
};

} // namespace hb::storage
