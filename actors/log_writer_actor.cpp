// The log writer: the only actor that writes the event log. It applies what
// it is sent as it arrives and commits once its mailbox ahead of the commit
// is applied (group commit), answers those who wait for their rows to be
// durable, keeps the run windows and tells the watcher of commits while it
// follows (shared_run_windows.hpp), and prunes by the retention limits in
// small steps between appends. Transactions, failed writes: log_batches.hpp;
// how a run's output becomes operations: log_writer_output.cpp.
#include "actors/daemon_log.hpp"
#include "actors/log_operations.hpp"
#include "actors/log_writer_state.hpp"
#include "actors/run_output.hpp"
#include "actors/shared_run_windows.hpp"
#include "actors/vocabulary.hpp"
#include "storage/finished_runs.hpp"
#include "storage/log_writer.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <unordered_map>
#include <utility>

namespace hb::actors {

namespace {

constexpr std::chrono::seconds retry_period{1};

void tell(writer_actor* self, log_committed& notice) {
  auto& st = self->state;
  if (st.windows && !st.windows->committed(notice)) // (it takes the texts: the hub wants the runs)
    return; // nobody follows: the windows were all the broker needed
  if (st.listener)
    self->send(st.listener, std::move(notice));
}

commit_notices::counts_of_run log_counts(writer_actor* self) {
  return [self](const std::string& run) { return self->state.batches->log().counts(run); };
}

void publish(writer_actor* self) {
  if (auto notice = self->state.notices.take(log_counts(self)))
    tell(self, *notice);
}

// Everything waiting for a commit is written: its callers go on, and the
// hosts of numbered output may let go of it.
void confirm_written(writer_actor* self) {
  auto& st = self->state;
  for (auto& c : st.after_commit)
    c.promise.deliver(true);
  st.after_commit.clear();
  for (auto& [_, queue_and_seq] : st.numbered)
    queue_and_seq.first->committed(queue_and_seq.second);
  st.numbered.clear();
  publish(self);
}

// A write just failed: callers that cannot wait are told, the rest wait for
// the retry.
void on_write_failed(writer_actor* self) {
  auto& st = self->state;
  st.notices.untold_all(); // the retry writes it again: followers read what it wrote
  std::vector<writer_confirmation> kept;
  for (auto& c : st.after_commit) {
    if (c.survives_failure)
      kept.push_back(std::move(c));
    else
      c.promise.deliver(caf::make_error(caf::sec::runtime_error, "event log: " + st.batches->failure()));
  }
  st.after_commit = std::move(kept);
  self->delayed_send(self, retry_period, retry_due{});
}

void commit_now(writer_actor* self) {
  auto& st = self->state;
  st.commit_queued = false;
  if (st.batches->degraded())
    return; // the retry commits
  shared_run_windows::change change(st.windows.get(),
                                    st.windows ? st.notices.landings(log_counts(self)) : run_landings{});
  auto rows = st.batches->commit();
  if (!rows)
    return on_write_failed(self);
  if (*rows > 0)
    wake_checkpointer();
  confirm_written(self);
}

// Writes the held operations again; on success the writer is back to normal.
void retry_held(writer_actor* self) {
  auto& st = self->state;
  if (!st.batches->degraded())
    return;
  shared_run_windows::change change(st.windows.get());
  if (!st.batches->retry()) {
    self->delayed_send(self, retry_period, retry_due{});
    return;
  }
  wake_checkpointer();
  confirm_written(self);
}

} // namespace

namespace log_writing {

void untold_unless_written(writer_actor* self, const std::string& run_id, log_batches::applied outcome) {
  if (outcome != log_batches::applied::written)
    self->state.notices.untold(run_id);
}

// Group commit: the first append after a commit queues a commit message
// behind everything already in the mailbox, so all of it shares one
// transaction; a lone streaming run still commits each delta at once.
log_batches::applied apply(writer_actor* self, log_batches::operation op, size_t bytes, const std::string* run) {
  auto& st = self->state;
  auto outcome = st.batches->apply(std::move(op), bytes, run);
  if (outcome == log_batches::applied::failed)
    on_write_failed(self);
  if (outcome != log_batches::applied::written)
    return outcome;
  if (st.batches->batch_full()) {
    commit_now(self);
  } else if (!st.commit_queued && (st.batches->pending_rows() > 0 || !st.after_commit.empty())) {
    st.commit_queued = true;
    self->send(self, commit_due{});
  }
  return outcome;
}

caf::result<bool> apply_then_confirm(writer_actor* self, log_batches::operation op, bool survives_failure,
                                     size_t bytes, const std::string* told_run) {
  auto rp = self->make_response_promise<bool>();
  auto& st = self->state;
  if (st.batches->degraded() && !survives_failure) {
    rp.deliver(caf::make_error(caf::sec::runtime_error, "event log unavailable (" + st.batches->failure() +
                                                          "); try again when it is writable"));
    return rp;
  }
  st.after_commit.push_back(writer_confirmation{rp, survives_failure});
  auto outcome = apply(self, std::move(op), bytes);
  if (told_run)
    untold_unless_written(self, *told_run, outcome);
  return rp;
}

} // namespace log_writing

namespace {

using namespace log_writing;

// On stop: commit, then fold the WAL into the database file, so a copy of
// events.db alone holds everything. What is still held after one last try
// is lost with this process: the caller must not exit 0.
caf::result<bool> flush_for_stop(writer_actor* self, const final_flush& flush) {
  auto& batches = *self->state.batches;
  commit_now(self);
  retry_held(self);
  if (batches.degraded())
    return caf::make_error(caf::sec::runtime_error,
                           "event log unwritable (" + batches.failure() + "): " +
                             std::to_string(batches.held_operations()) + " operations (" +
                             std::to_string(batches.held_bytes()) + " bytes) held in memory were never written");
  try {
    if (flush.fold_wal)
      batches.log().fold_wal();
  } catch (const std::exception& e) {
    // Committed in the WAL all the same: nothing is lost, the next start folds it.
    log_event(log_level::error, "log.final_checkpoint_failed", e.what());
  }
  return true;
}

// One bounded pruning step; the next one queues behind whatever appends
// arrived meanwhile, so retention never holds the writer for long. What is
// applied is committed first, as any commit (a step is a transaction of its
// own): were it left in the batch, a later failure would write it twice.
void prune_step(writer_actor* self) {
  auto& st = self->state;
  commit_now(self);
  if (st.batches->degraded()) {
    self->delayed_send(self, st.retention.interval, prune_due{});
    return;
  }
  shared_run_windows::change change(st.windows.get());
  bool more = false;
  try {
    more = st.pruner.step(st.batches->log().database(), st.retention.policy, now_seconds());
    wake_checkpointer(); // rare (a retention interval apart); deletions grow the WAL too
  } catch (const std::exception& e) {
    log_event(log_level::error, "log.prune_failed", e.what());
  }
  auto pruned = st.pruner.take_pruned();
  if (st.finished)
    for (const auto& run_id : pruned)
      st.finished->forget(run_id);
  if (!pruned.empty()) { // (the windows keep the ends of recent runs)
    log_committed notice;
    notice.pruned = std::move(pruned);
    tell(self, notice);
  }
  if (more)
    self->send(self, prune_due{});
  else
    self->delayed_send(self, st.retention.interval, prune_due{});
}

caf::behavior log_writer_actor(writer_actor* self, std::shared_ptr<storage::log_writer> log,
                               retention_settings retention,
                               std::shared_ptr<storage::finished_run_cache> finished,
                               std::shared_ptr<shared_run_windows> windows) {
  self->state.batches = std::make_unique<log_batches>(std::move(log));
  self->state.retention = retention;
  self->state.finished = std::move(finished);
  self->state.windows = std::move(windows);
  self->send(self, prune_due{});
  return {
    // -- writing -----------------------------------------------------------
    [=](run_opening& opening) { return open_run(self, opening); },
    [=](const run_continuing& run) { return continue_run(self, run); },
    [=](run_delta& delta) { write_delta(self, delta); },
    [=](run_event& event) { write_event(self, event); },
    [=](const run_output_queued& queued) { write_queued(self, queued); },
    [=](run_end& end) { return end_run(self, end); },
    [=](session_put& put) {
      size_t bytes = put.row.config.size() + put.history_text().size();
      apply(self, log_operations::put_session(std::move(put.row), std::move(put.history)), bytes);
    },
    [=](log_flush) { return apply_then_confirm(self, log_operations::nothing(), true); },
    [=](const final_flush& flush) { return flush_for_stop(self, flush); },
    // -- telling -----------------------------------------------------------
    [=](log_watch) { self->state.listener = caf::actor_cast<caf::actor>(self->current_sender()); },
    [=](log_health_query) { return health_of(*self->state.batches); },
    // -- its own timers ----------------------------------------------------
    [=](commit_due) { commit_now(self); },
    [=](retry_due) { retry_held(self); },
    [=](prune_due) { prune_step(self); },
  };
}

} // namespace

caf::actor spawn_log_writer(caf::actor_system& sys, std::shared_ptr<storage::log_writer> log,
                            const retention_settings& retention,
                            std::shared_ptr<storage::finished_run_cache> finished,
                            std::shared_ptr<shared_run_windows> windows, spawn_mode mode) {
  if (mode == spawn_mode::scheduled)
    return sys.spawn(log_writer_actor, std::move(log), retention, std::move(finished), std::move(windows));
  return sys.spawn<caf::detached>(log_writer_actor, std::move(log), retention, std::move(finished),
                                  std::move(windows));
}

} // namespace hb::actors
