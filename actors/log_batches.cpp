#include "actors/log_batches.hpp"

#include "actors/daemon_log.hpp"
#include "actors/run_output.hpp"
#include "actors/vocabulary.hpp"
#include "storage/log_writer.hpp"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <utility>

namespace hb::actors {

namespace {

constexpr size_t max_batch_rows = 8192;
// A transaction is also committed once its rows hold this much text: a batch
// keeps every operation (and its text) until the commit, to redo them after
// a failure, so without it a flood of big deltas sat in memory whole.
constexpr size_t max_batch_bytes = 16u << 20;
// What an unwritable log holds for live runs at most (see the header).
constexpr size_t max_backlog_ops = 1'000'000;
constexpr size_t max_backlog_bytes = 256u << 20;

} // namespace

log_batches::log_batches(std::shared_ptr<storage::log_writer> log) : log_(std::move(log)) {}

log_batches::applied log_batches::apply(operation op, size_t bytes, const std::string* run) {
  if (run && !cut_runs_.empty() && cut_runs_.count(*run))
    return applied::refused;
  if (degraded_) {
    if (run && (backlog_.size() >= max_backlog_ops || backlog_bytes_ + bytes > max_backlog_bytes)) {
      cut_run(*run);
      return applied::refused;
    }
    backlog_.push_back(std::move(op));
    backlog_bytes_ += bytes;
    return applied::held;
  }
  batch_bytes_ += bytes;
  try {
    op(*log_);
    batch_.push_back(std::move(op));
  } catch (const std::exception& e) {
    batch_.push_back(std::move(op)); // redone with the rest of its batch
    fail(e);
    return applied::failed;
  }
  return applied::written;
}

bool log_batches::batch_full() const {
  return log_->pending_rows() >= max_batch_rows || batch_bytes_ >= max_batch_bytes;
}

size_t log_batches::pending_rows() const { return log_->pending_rows(); }

std::optional<size_t> log_batches::commit() {
  size_t rows = 0;
  try {
    auto started = std::chrono::steady_clock::now();
    rows = log_->commit();
    if (rows > 0) {
      last_commit_ms_ =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
      max_commit_ms_ = std::max(max_commit_ms_, last_commit_ms_);
      commits_ += 1;
      rows_ += static_cast<int64_t>(rows);
    }
  } catch (const std::exception& e) {
    fail(e);
    return std::nullopt;
  }
  batch_.clear();
  batch_bytes_ = 0;
  return rows;
}

void log_batches::fail(const std::exception& e) {
  if (!degraded_) {
    log_event(log_level::error, "log.write_failed", e.what(),
              {{"then", "holding new output in memory until it can be written; agents wait for it"}});
    degraded_since_ = now_seconds();
    set_writer_degraded(true);
  }
  log_->rollback();
  degraded_ = true;
  failure_ = e.what();
  backlog_.insert(backlog_.begin(), std::make_move_iterator(batch_.begin()), std::make_move_iterator(batch_.end()));
  batch_.clear();
  backlog_bytes_ += std::exchange(batch_bytes_, 0);
}

bool log_batches::retry() {
  if (!degraded_)
    return true;
  try {
    for (auto& op : backlog_)
      op(*log_);
    log_->commit();
  } catch (const std::exception& e) {
    log_->rollback();
    failure_ = e.what();
    return false;
  }
  log_event(log_level::warn, "log.writable_again", "event log writable again",
            {{"held_operations_written", std::to_string(backlog_.size())},
             {"held_bytes_written", std::to_string(backlog_bytes_)},
             {"runs_failed", std::to_string(failed_runs_)}});
  degraded_ = false;
  set_writer_degraded(false);
  std::vector<operation>().swap(backlog_); // up to max_backlog_ops: give the memory back
  backlog_bytes_ = 0;
  writer_backlog_add(-std::exchange(held_output_bytes_, 0)); // the agents waiting for it go on
  return true;
}

void log_batches::count_output(applied outcome, int64_t bytes) {
  bool kept = outcome != applied::refused;
  if (kept && degraded_)
    held_output_bytes_ += bytes; // counted until written: its agent waits meanwhile
  else
    writer_backlog_add(-bytes);
}

std::optional<std::string> log_batches::take_cut(const std::string& run_id) {
  auto cut = cut_runs_.find(run_id);
  if (cut == cut_runs_.end())
    return std::nullopt;
  std::string why = std::move(cut->second);
  cut_runs_.erase(cut);
  return why;
}

// A live run's output could not be held: it is failed rather than left with
// a gap nobody is told about.
void log_batches::cut_run(const std::string& run_id) {
  std::string why = "event log unwritable (" + failure_ + ") and the output held for it reached its limit (" +
                    std::to_string(max_backlog_bytes >> 20) + " MiB or " + std::to_string(max_backlog_ops) +
                    " operations): output after that point was not kept";
  if (cut_runs_.try_emplace(run_id, why).second) {
    ++failed_runs_;
    log_event(log_level::error, "log.run_failed", why,
              {{"run_id", run_id},
               {"held_operations", std::to_string(backlog_.size())},
               {"held_bytes", std::to_string(backlog_bytes_)}});
  }
}

} // namespace hb::actors
