#include "actors/log_actors.hpp"

#include "actors/daemon_log.hpp"
#include "actors/log_messages.hpp"
#include "actors/run_output.hpp"
#include "actors/vocabulary.hpp"
#include "protocol/json_text.hpp"
#include "storage/finished_runs.hpp"
#include "storage/log_writer.hpp"

#include <caf/all.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <unordered_map>
#include <utility>

namespace hb::actors {

namespace {

constexpr size_t max_batch_rows = 8192;

// SQLite keeps a copy of every value bound to a prepared statement until it
// is bound again: the statement that stored a run's result (its whole output
// twice: final_response and the messages) and the one that stored the
// session's history kept about 3x the run's output for as long as the daemon
// lived (160 MB after a 50 MB flood). Every statement of the writer binds
// all its parameters before each use, so they can all let go once the row
// is written.
void forget_bound_values(storage::log_writer& w) {
  sqlite3* db = w.database().getHandle();
  for (sqlite3_stmt* stmt = sqlite3_next_stmt(db, nullptr); stmt; stmt = sqlite3_next_stmt(db, stmt))
    sqlite3_clear_bindings(stmt);
}

using log_op = std::function<void(storage::log_writer&)>;

// When a write fails (disk full, log unwritable), what was not committed is
// kept and written again once the disk takes it; meanwhile new runs are
// refused and every committed row stays as it was. A live run's held output
// stays counted in the writer's backlog, so its agent is slowed as by a slow
// disk (run_output.hpp) instead of filling memory. A run whose output would
// go past these bounds all the same (many runs, or very many tiny deltas) is
// not left with a silent hole: nothing more of it is kept and it ends as an
// error saying why.
constexpr size_t max_backlog_ops = 1'000'000;
constexpr size_t max_backlog_bytes = 256u << 20;
// A transaction is also committed once its rows hold this much text: a batch
// keeps every operation (and its text) until the commit, to redo them after
// a failure, so without it a flood of big deltas sat in memory whole.
constexpr size_t max_batch_bytes = 16u << 20;
constexpr std::chrono::seconds retry_period{1};

struct confirmation {
  caf::response_promise promise;
  bool survives_failure; // close/flush: kept until written; open_run: fails at once
};

struct writer_state {
  std::shared_ptr<storage::log_writer> log;
  retention_settings retention;
  storage::pruner pruner;
  std::shared_ptr<storage::finished_run_cache> finished;
  // Callers that may only proceed once their rows are durable.
  std::vector<confirmation> after_commit;
  std::vector<log_op> batch;   // the open transaction's operations, to redo after a failure
  size_t batch_bytes = 0;      // text they hold
  size_t backlog_bytes = 0;
  std::vector<log_op> backlog; // failed batches and everything since, in order
  bool degraded = false;
  std::string failure;
  double degraded_since = 0;
  // Run output held in the backlog and still counted in writer_backlog, so
  // agents wait until it is written (back-pressure while degraded).
  int64_t held_output_bytes = 0;
  // Live runs whose output could not be held: run -> why; their later
  // output is refused and their end is recorded as that error.
  std::unordered_map<std::string, std::string> cut_runs;
  int64_t failed_runs = 0;
  bool commit_queued = false;
  // For the `health` action.
  int64_t commits = 0;
  int64_t rows = 0;
  double last_commit_ms = 0;
  double max_commit_ms = 0;
  // Who hears about each commit (the broker, for long-polls and
  // subscriptions), and what the pending batch touched: run -> session.
  caf::actor listener;
  std::unordered_map<std::string, std::string> touched;
  std::unordered_map<std::string, std::string> session_of_run;
  static inline const char* name = "log_writer";
};

using writer_actor = caf::stateful_actor<writer_state>;

void fail_batch(writer_actor* self, const std::exception& e) {
  auto& st = self->state;
  if (!st.degraded) {
    log_event(log_level::error, "log.write_failed", e.what(),
              {{"then", "holding new output in memory until it can be written; agents wait for it"}});
    st.degraded_since = now_seconds();
    set_writer_degraded(true);
  }
  st.log->rollback();
  st.degraded = true;
  st.failure = e.what();
  st.backlog.insert(st.backlog.begin(), std::make_move_iterator(st.batch.begin()),
                    std::make_move_iterator(st.batch.end()));
  st.batch.clear();
  st.backlog_bytes += std::exchange(st.batch_bytes, 0);
  std::vector<confirmation> kept;
  for (auto& c : st.after_commit) {
    if (c.survives_failure)
      kept.push_back(std::move(c));
    else
      c.promise.deliver(caf::make_error(caf::sec::runtime_error, std::string("event log: ") + e.what()));
  }
  st.after_commit = std::move(kept);
  self->delayed_send(self, retry_period, retry_atom::value);
}

void publish(writer_actor* self) {
  auto& st = self->state;
  if (st.touched.empty())
    return;
  if (st.listener) {
    std::vector<std::string> flat;
    flat.reserve(st.touched.size() * 2);
    for (auto& [run, session] : st.touched) {
      flat.push_back(run);
      flat.push_back(session);
    }
    self->send(st.listener, committed_atom::value, std::move(flat));
  }
  st.touched.clear();
}

void commit_now(writer_actor* self) {
  auto& st = self->state;
  st.commit_queued = false;
  if (st.degraded)
    return; // the retry commits
  try {
    auto started = std::chrono::steady_clock::now();
    size_t rows = st.log->commit();
    if (rows > 0) {
      st.last_commit_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
      st.max_commit_ms = std::max(st.max_commit_ms, st.last_commit_ms);
      st.commits += 1;
      st.rows += static_cast<int64_t>(rows);
      wake_checkpointer();
    }
  } catch (const std::exception& e) {
    fail_batch(self, e);
    return;
  }
  st.batch.clear();
  st.batch_bytes = 0;
  for (auto& c : st.after_commit)
    c.promise.deliver(true);
  st.after_commit.clear();
  publish(self);
}

// Writes the backlog again; on success the writer is back to normal.
void retry_backlog(writer_actor* self) {
  auto& st = self->state;
  if (!st.degraded)
    return;
  try {
    for (auto& op : st.backlog)
      op(*st.log);
    st.log->commit();
  } catch (const std::exception& e) {
    st.log->rollback();
    st.failure = e.what();
    self->delayed_send(self, retry_period, retry_atom::value);
    return;
  }
  log_event(log_level::warn, "log.writable_again", "event log writable again",
            {{"held_operations_written", std::to_string(st.backlog.size())},
             {"held_bytes_written", std::to_string(st.backlog_bytes)},
             {"runs_failed", std::to_string(st.failed_runs)}});
  st.degraded = false;
  wake_checkpointer();
  set_writer_degraded(false);
  std::vector<log_op>().swap(st.backlog); // up to max_backlog_ops: give the memory back
  st.backlog_bytes = 0;
  writer_backlog_add(-std::exchange(st.held_output_bytes, 0)); // the agents waiting for it go on
  for (auto& c : st.after_commit)
    c.promise.deliver(true);
  st.after_commit.clear();
  publish(self);
}

void touch(writer_actor* self, const std::string& run_id) {
  auto& st = self->state;
  auto it = st.session_of_run.find(run_id);
  if (it != st.session_of_run.end())
    st.touched.try_emplace(run_id, it->second); // (emplace would build a node per delta to throw away)
}

// A live run's output could not be held: it is failed rather than left with
// a gap nobody is told about.
void cut_run(writer_actor* self, const std::string& run_id) {
  auto& st = self->state;
  std::string why = "event log unwritable (" + st.failure + ") and the output held for it reached its limit (" +
                    std::to_string(max_backlog_bytes >> 20) + " MiB or " + std::to_string(max_backlog_ops) +
                    " operations): output after that point was not kept";
  if (st.cut_runs.try_emplace(run_id, why).second) {
    ++st.failed_runs;
    log_event(log_level::error, "log.run_failed", why,
              {{"run_id", run_id},
               {"held_operations", std::to_string(st.backlog.size())},
               {"held_bytes", std::to_string(st.backlog_bytes)}});
  }
}

// Group commit: the first append after a commit queues a commit message
// behind everything already in the mailbox, so all of it shares one
// transaction; a lone streaming run still commits each delta at once.
// `bytes`: the text the operation holds; `run`: the live run whose output it
// is (none for a run's end, sessions and flushes, which are always held).
// False: refused (the run was failed for want of room).
bool apply(writer_actor* self, log_op op, size_t bytes, const std::string* run = nullptr) {
  auto& st = self->state;
  if (run && !st.cut_runs.empty() && st.cut_runs.count(*run))
    return false;
  if (st.degraded) {
    if (run && (st.backlog.size() >= max_backlog_ops || st.backlog_bytes + bytes > max_backlog_bytes)) {
      cut_run(self, *run);
      return false;
    }
    st.backlog.push_back(std::move(op));
    st.backlog_bytes += bytes;
    return true;
  }
  st.batch_bytes += bytes;
  try {
    op(*st.log);
    st.batch.push_back(std::move(op));
  } catch (const std::exception& e) {
    st.batch.push_back(std::move(op)); // redone with the rest of its batch
    fail_batch(self, e);
    return true;
  }
  if (st.log->pending_rows() >= max_batch_rows || st.batch_bytes >= max_batch_bytes) {
    commit_now(self);
  } else if (!st.commit_queued && (st.log->pending_rows() > 0 || !st.after_commit.empty())) {
    st.commit_queued = true;
    self->send(self, commit_atom::value);
  }
  return true;
}

caf::result<bool> apply_then_confirm(writer_actor* self, log_op op, bool survives_failure,
                                     size_t bytes = 0) {
  auto rp = self->make_response_promise<bool>();
  auto& st = self->state;
  if (st.degraded && !survives_failure) {
    rp.deliver(caf::make_error(caf::sec::runtime_error,
                               "event log unavailable (" + st.failure + "); try again when it is writable"));
    return rp;
  }
  st.after_commit.push_back(confirmation{rp, survives_failure});
  apply(self, std::move(op), bytes);
  return rp;
}

std::string stream_delta_event(const std::string& text) {
  std::string body = "{\"event\": \"stream.delta\", \"delta\": ";
  protocol::append_quoted(body, text);
  body += '}';
  return body;
}

// Texts are moved into the operation, whose members are not const, so
// moving the operation moves them too. A run's result holds its whole output
// twice; copying it at each step (the capture, the std::function, the
// optional) cost a 200 MB flood about 1.2 GB more memory and 4 s.
bool apply_delta(writer_actor* self, const std::string& run_id, std::string text, double at) {
  note_output_moved(text.size());
  size_t bytes = 2 * text.size(); // the delta and its stream.delta event
  return apply(
    self,
    [run_id, at, text = std::move(text)](storage::log_writer& w) {
      if (w.append_delta(run_id, text, at))
        w.append_event(run_id, stream_delta_event(text), at);
    },
    bytes, &run_id);
}

bool apply_event(writer_actor* self, const std::string& run_id, std::string body, double at) {
  note_output_moved(body.size());
  size_t bytes = body.size();
  return apply(
    self, [run_id, at, body = std::move(body)](storage::log_writer& w) { w.append_event(run_id, body, at); },
    bytes, &run_id);
}

void write_queued(writer_actor* self, const std::string& run_id, std::vector<run_output::item> items) {
  if (items.empty())
    return;
  touch(self, run_id);
  auto& st = self->state;
  for (auto& item : items) {
    auto size = static_cast<int64_t>(item.text.size());
    bool kept = item.is_event ? apply_event(self, run_id, std::move(item.text), item.at)
                              : apply_delta(self, run_id, std::move(item.text), item.at);
    if (kept && st.degraded)
      st.held_output_bytes += size; // counted until written: its agent waits meanwhile
    else
      writer_backlog_add(-size);
  }
}

// One bounded pruning step; the next one queues behind whatever appends
// arrived meanwhile, so retention never holds the writer for long.
void prune_step(writer_actor* self) {
  auto& st = self->state;
  bool more = false;
  if (st.degraded) {
    self->delayed_send(self, st.retention.interval, prune_atom::value);
    return;
  }
  try {
    st.log->commit();
    more = st.pruner.step(st.log->database(), st.retention.policy, now_seconds());
    wake_checkpointer(); // rare (a retention interval apart); deletions grow the WAL too
  } catch (const std::exception& e) {
    log_event(log_level::error, "log.prune_failed", e.what());
  }
  for (const auto& run_id : st.pruner.take_pruned())
    if (st.finished)
      st.finished->forget(run_id);
  if (more)
    self->send(self, prune_atom::value);
  else
    self->delayed_send(self, st.retention.interval, prune_atom::value);
}

caf::behavior log_writer_actor(writer_actor* self, std::shared_ptr<storage::log_writer> log,
                               retention_settings retention,
                               std::shared_ptr<storage::finished_run_cache> finished) {
  self->state.log = std::move(log);
  self->state.retention = retention;
  self->state.finished = std::move(finished);
  self->send(self, prune_atom::value);
  return {
    [=](run_opening& opening) {
      self->state.session_of_run[opening.run_id] = opening.session_id;
      touch(self, opening.run_id);
      return apply_then_confirm(
        self,
        [opening = std::move(opening)](storage::log_writer& w) {
          w.open_run(opening.run_id, opening.session_id, opening.started_at, opening.user_message);
        },
        false);
    },
    // Texts are taken out of the message (mutable references: the message is
    // this actor's alone, so nothing is copied) and moved into the operation,
    // whose members are not const, so moving the operation moves them too.
    // A run's result holds its whole output twice; copying it at each step
    // (the capture, the std::function, the optional) cost a 200 MB flood
    // about 1.2 GB more memory and 4 s.
    [=](delta_atom, const std::string& run_id, std::string& text, double at) {
      touch(self, run_id);
      apply_delta(self, run_id, std::move(text), at);
    },
    [=](event_atom, const std::string& run_id, std::string& body, double at) {
      touch(self, run_id);
      apply_event(self, run_id, std::move(body), at);
    },
    // A live run's queue went from empty to not: take all of it.
    [=](pending_atom, const std::string& run_id) {
      if (auto queue = find_run_output(run_id))
        write_queued(self, run_id, queue->take());
    },
    [=](close_run_atom, const std::string& run_id, const std::string& status, std::string& result,
        bool has_error, std::string& error, double at) {
      if (auto queue = find_run_output(run_id)) {
        write_queued(self, run_id, queue->close()); // whatever its last message did not take
        forget_run_output(run_id);
      }
      touch(self, run_id);
      self->state.session_of_run.erase(run_id); // its entry in `touched` carries the session
      size_t bytes = result.size() + error.size();
      std::optional<std::string> stored_result, stored_error;
      if (!result.empty())
        stored_result = std::move(result);
      if (has_error)
        stored_error = std::move(error);
      std::string stored_status = status;
      if (auto cut = self->state.cut_runs.find(run_id); cut != self->state.cut_runs.end()) {
        stored_status = "error"; // its output is not whole: never `complete`
        stored_error = std::move(cut->second);
        self->state.cut_runs.erase(cut);
      }
      return apply_then_confirm(
        self,
        [run_id, status = std::move(stored_status), at, result = std::move(stored_result),
         error = std::move(stored_error)](storage::log_writer& w) {
          w.close_run(run_id, status, result, error, at);
          forget_bound_values(w);
        },
        true, bytes);
    },
    [=](put_sess_atom, const std::string& session_id, double created_at, double last_used_at,
        std::string& config, bool history_known, std::string& history, int64_t message_count,
        bool destroyed) {
      storage::session_row row{session_id,         created_at,         last_used_at,
                               std::move(config),  std::move(history), history_known,
                               message_count,      destroyed};
      size_t bytes = row.config.size() + row.history.size();
      apply(
        self,
        [row = std::move(row)](storage::log_writer& w) {
          w.put_session(row);
          forget_bound_values(w);
        },
        bytes);
    },
    [=](flush_atom) { return apply_then_confirm(self, [](storage::log_writer&) {}, true); },
    [=](retry_atom) { retry_backlog(self); },
    [=](final_flush& flush) -> caf::result<bool> {
      // On stop: commit, then fold the WAL into the database file, so a copy
      // of events.db alone holds everything. What is still held after one
      // last try is lost with this process: the caller must not exit 0.
      auto& st = self->state;
      commit_now(self);
      retry_backlog(self);
      if (st.degraded)
        return caf::make_error(caf::sec::runtime_error,
                               "event log unwritable (" + st.failure + "): " + std::to_string(st.backlog.size()) +
                                 " operations (" + std::to_string(st.backlog_bytes) +
                                 " bytes) held in memory were never written");
      try {
        if (flush.fold_wal)
          st.log->database().exec("PRAGMA wal_checkpoint(TRUNCATE)");
      } catch (const std::exception& e) {
        // Committed in the WAL all the same: nothing is lost, the next start folds it.
        log_event(log_level::error, "log.final_checkpoint_failed", e.what());
      }
      return true;
    },
    [=](commit_atom) { commit_now(self); },
    [=](log_health_query) {
      auto& st = self->state;
      log_health h;
      h.commits = st.commits;
      h.rows = st.rows;
      h.last_commit_ms = st.last_commit_ms;
      h.max_commit_ms = st.max_commit_ms;
      h.degraded = st.degraded;
      h.reason = st.degraded ? st.failure : std::string();
      h.degraded_since = st.degraded ? st.degraded_since : 0;
      add_damage_found(h);
      h.held_operations = static_cast<int64_t>(st.backlog.size());
      h.held_bytes = static_cast<int64_t>(st.backlog_bytes);
      h.failed_runs = st.failed_runs;
      return h;
    },
    [=](watch_atom) { self->state.listener = caf::actor_cast<caf::actor>(self->current_sender()); },
    [=](prune_atom) { prune_step(self); },
  };
}

} // namespace

void send_run_output(const caf::actor& writer, const std::string& run_id, run_output* queue, bool is_event,
                     std::string text, double at) {
  std::shared_ptr<run_output> found;
  if (!queue) {
    found = find_run_output(run_id);
    queue = found.get();
  }
  if (!queue) {
    if (is_event)
      caf::anon_send(writer, event_atom::value, run_id, std::move(text), at);
    else
      caf::anon_send(writer, delta_atom::value, run_id, std::move(text), at);
    return;
  }
  auto size = static_cast<int64_t>(text.size());
  switch (queue->push(is_event, std::move(text), at)) {
    case run_output::pushed::first:
      writer_backlog_add(size);
      caf::anon_send(writer, pending_atom::value, run_id);
      break;
    case run_output::pushed::more:
      writer_backlog_add(size);
      break;
    case run_output::pushed::refused:
      break; // the run is closed: dropped, as the log would refuse it
  }
}

caf::actor spawn_log_writer(caf::actor_system& sys, std::shared_ptr<storage::log_writer> log,
                            const retention_settings& retention,
                            std::shared_ptr<storage::finished_run_cache> finished) {
  return sys.spawn<caf::detached>(log_writer_actor, std::move(log), retention, std::move(finished));
}

} // namespace hb::actors
