// The last stretch of each live run's committed output, kept by the log
// writer from the commits' notices (run_tail; shared with the broker by
// shared_run_windows.hpp), so that a poll, a long-poll or a subscriber that
// is up to date is answered from memory when the next commit lands. A run whose end was told (run_ending) keeps its window a
// while, done, for the poll that sees it end. Each answer is the line a
// read of the log at the same cursors gives, built by the same code. What a
// window cannot answer (cursors before its start, or past its end while the
// log may hold a commit the windows do not; a run whose end or a retried
// write the notices could not tell, one retention pruned) is read from the
// log, as before.
#pragma once

#include "actors/log_messages.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hb::actors {

// Where the commit in flight leaves a run it touches: its counts once the
// commit lands, when the writer knows them (not for a run whose end the
// commit writes).
struct run_landing {
  bool known = false;
  int64_t delta_count = 0;
  int64_t event_count = 0;
};
// Each run a commit touches, and where it lands it.
using run_landings = std::vector<std::pair<std::string, run_landing>>;

class run_windows {
public:
  struct limits {
    size_t run_bytes = 64 << 10;    // a run's window keeps about its last this many bytes of text
    size_t total_bytes = 16 << 20;  // past this, runs get no window (many runs streaming at once)
    size_t ended_runs = 64;         // ended runs kept, the latest; they leave first when memory is short
  };

  explicit run_windows(limits lim) : limits_(lim) {}

  // What a commit added (its tails' texts are taken); a run it touched
  // without a tail is forgotten.
  void on_committed(log_committed& touched);
  // A read's answer (log_reader_actor's), when the run's window holds it.
  // `log_held`: the windows hold every change made to the log but for the
  // commit in flight, which leaves this run at `landing` (none: it does not
  // touch the run). A cursor past the window's end and past where that
  // commit lands the run is past the run's end in the log too (a client's
  // mistake, or a poller asking only for the status): answered as the log
  // answers it before the commit.
  std::optional<output_reply> answer(const output_query& q, bool log_held,
                                     const run_landing* landing = nullptr) const;

  size_t runs() const { return windows_.size(); }
  size_t ended_runs() const { return ended_.size(); }
  size_t bytes() const { return bytes_; }

private:
  struct ended {
    std::string status;
    std::optional<std::string> result, error;
    size_t bytes() const { return (result ? result->size() : 0) + (error ? error->size() : 0); }
  };
  struct window {
    std::string session_id;
    int64_t delta_base = 0, event_base = 0;   // the run's counts where the window starts
    int64_t delta_count = 0, event_count = 0; // and where it ends: what the log holds
    struct item {
      uint32_t size; // of its text: a delta's, or an event's body
      bool delta;
    };
    std::deque<item> items; // in the order written
    // The items' texts one after another, from `start` on (what trimming
    // dropped is before it, until the buffer is compacted).
    std::string text;
    size_t start = 0;
    size_t bytes() const { return text.size() - start; }
    std::optional<ended> end;
  };

  void add(run_tail& tail, const std::string& session_id);
  void end(run_ending& ending, const std::string& session_id);
  void forget(const std::string& run_id);
  void trim(window& w);
  void make_room();

  limits limits_;
  std::unordered_map<std::string, window> windows_;
  std::deque<std::string> ended_; // runs with an ended window, oldest first
  size_t bytes_ = 0;
};

} // namespace hb::actors
