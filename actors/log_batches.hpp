// The log writer's transactions, without the actor: the operations of the
// open transaction (kept to redo them after a failure), and what a failed
// write holds back until the log takes it again.
//
// When a write fails (disk full, log unwritable), what was not committed is
// kept and written again once the disk takes it; meanwhile the writer
// refuses new runs and every committed row stays as it was. A live run's
// held output stays counted in the writer's backlog, so its agent is slowed
// as by a slow disk (run_output.hpp) instead of filling memory. A run whose
// output would go past the bounds all the same (many runs, or very many tiny
// deltas) is not left with a silent hole: nothing more of it is kept and it
// ends as an error saying why.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace hb::storage {
class log_writer;
}

namespace hb::actors {

class log_batches {
public:
  using operation = std::function<void(storage::log_writer&)>;
  enum class applied {
    written,  // in the open transaction
    held,     // the log is unwritable: kept for the retry
    refused,  // the run's output could not be held: dropped, the run fails
    failed,   // this operation's write failed: the log is unwritable from now on (it is held)
  };

  explicit log_batches(std::shared_ptr<storage::log_writer> log);

  // `bytes`: the text the operation holds; `run`: the live run whose output
  // it is (none for a run's end, sessions and flushes, which are always
  // held).
  applied apply(operation op, size_t bytes, const std::string* run = nullptr);
  // Commit now rather than after the mailbox: the batch is large.
  bool batch_full() const;
  size_t pending_rows() const;
  // The rows committed (0 when there were none); nothing when the commit
  // failed: the log is unwritable from now on.
  std::optional<size_t> commit();
  // Writes the held operations again; true when that worked and the log is
  // writable again.
  bool retry();

  // A live run's output, once written, held or refused: its bytes leave
  // the writer's backlog when written or dropped, and stay in it while held
  // (its agent waits until the log takes it).
  void count_output(applied outcome, int64_t bytes);
  // Why a run's output was cut short, once: its end is recorded as that error.
  std::optional<std::string> take_cut(const std::string& run_id);

  bool degraded() const { return degraded_; }
  const std::string& failure() const { return failure_; }
  double degraded_since() const { return degraded_since_; }
  size_t held_operations() const { return backlog_.size(); }
  size_t held_bytes() const { return backlog_bytes_; }
  int64_t failed_runs() const { return failed_runs_; }
  int64_t commits() const { return commits_; }
  int64_t rows() const { return rows_; }
  double last_commit_ms() const { return last_commit_ms_; }
  double max_commit_ms() const { return max_commit_ms_; }

  storage::log_writer& log() { return *log_; }

private:
  void fail(const std::exception& e);
  void cut_run(const std::string& run_id);

  std::shared_ptr<storage::log_writer> log_;
  std::vector<operation> batch_; // the open transaction's operations, to redo after a failure
  size_t batch_bytes_ = 0;       // text they hold
  std::vector<operation> backlog_; // failed batches and everything since, in order
  size_t backlog_bytes_ = 0;
  bool degraded_ = false;
  std::string failure_;
  double degraded_since_ = 0;
  // Run output held in the backlog and still counted in writer_backlog, so
  // agents wait until it is written (back-pressure while degraded).
  int64_t held_output_bytes_ = 0;
  // Live runs whose output could not be held: run -> why; their later
  // output is refused and their end is recorded as that error.
  std::unordered_map<std::string, std::string> cut_runs_;
  int64_t failed_runs_ = 0;
  int64_t commits_ = 0;
  int64_t rows_ = 0;
  double last_commit_ms_ = 0;
  double max_commit_ms_ = 0;
};

} // namespace hb::actors
