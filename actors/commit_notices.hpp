// What the log writer's pending transaction touched, for the notice of its
// commit (log_committed): each run it touched with its session and, while
// the notice can tell it whole, what the transaction added to the run
// (run_tail). Plain C++, owned by the writer.
#pragma once

#include "actors/log_messages.hpp"
#include "actors/run_windows.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hb::actors {

class commit_notices {
public:
  // A notice carries what a commit added to a run up to this much text;
  // past it, followers read the log.
  static constexpr size_t max_tail_bytes = 64 << 10;

  // The run's session, known from its opening (or its taking up again)
  // until its end.
  void opened(const std::string& run_id, const std::string& session_id) { session_of_run_[run_id] = session_id; }
  // Its end, about to be applied, with the run's counts (none: the log does
  // not know it) and how it ends. Told when the rest of the run in this
  // transaction was told too and its result and error fit the bound: those
  // are copied (the close operation owns the originals until the commit),
  // so nothing big is held twice.
  void ended(const std::string& run_id, std::optional<storage::log_writer::run_counts> counts,
             const std::string& status, const std::optional<std::string>& result,
             const std::optional<std::string>& error);

  // The run is in the next notice, with what tell() adds to it.
  void touch(const std::string& run_id) { entry(run_id); }
  // A delta ('d') or event ('e') about to be applied (none after the run's
  // end: the log drops it).
  void tell(const std::string& run_id, char kind, std::string_view text);
  // The run was touched in a way the notice cannot tell (a big end, a
  // write held for a retry): its followers read the log.
  void untold(const std::string& run_id);
  void untold_all();

  // The notice of the commit just made, with each told run's counts as
  // `counts` gives them (none once its end is written: its ending's then);
  // empty when the transaction touched no run.
  using counts_of_run = std::function<std::optional<storage::log_writer::run_counts>(const std::string&)>;
  std::optional<log_committed> take(const counts_of_run& counts);
  // Before the commit: each run the transaction touched and where the
  // commit leaves it (shared_run_windows' commit bracket).
  run_landings landings(const counts_of_run& counts) const;

private:
  struct touched_run {
    std::string session;
    run_tail tail;
    size_t tail_bytes = 0;
    bool whole = true; // every append of the run in the transaction is in `tail`
    std::optional<run_ending> ending;
  };
  touched_run* entry(const std::string& run_id);

  std::unordered_map<std::string, touched_run> touched_;
  std::unordered_map<std::string, std::string> session_of_run_;
};

} // namespace hb::actors
