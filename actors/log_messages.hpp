// The messages of the log actors: what the writer is asked to write (a run's
// opening, output and end, a session's row), what it tells (commits, how the
// log is doing), what the readers are asked and answer, and the timers the
// log actors send themselves. One struct per kind with an inspect()
// overload, so that any of them could cross a process.
#pragma once

#include "storage/log_rows.hpp"
#include "storage/log_writer.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

// The storage types the messages below carry (found by CAF through ADL).
namespace hb::storage {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, waiting_question& x) {
  return f(caf::meta::type_name("waiting_question"), x.ask, x.kind, x.request);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reopened_question& x) {
  return f(caf::meta::type_name("reopened_question"), x.ask, x.id, x.due_at);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, continued_run& x) {
  return f(caf::meta::type_name("continued_run"), x.host_seq, x.reopened);
}

} // namespace hb::storage

namespace hb::actors {

// -- session, run, main -> writer --------------------------------------------

// A run begins: the writer answers true once its row is committed.
struct run_opening {
  std::string run_id;
  std::string session_id;
  double started_at = 0;
  std::string user_message; // JSON text; empty when the run has none (replays)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_opening& x) {
  return f(caf::meta::type_name("run_opening"), x.run_id, x.session_id, x.started_at, x.user_message);
}

// Run -> writer: a run a previous daemon opened goes on (its turn lived on
// in a worker the daemon re-attached to), its agent still waiting on the
// questions `waiting`; answered with a storage::continued_run (how far the
// log holds the worker's frames, which waiting questions the log announced
// and under which ids), or errc::not_found when the log does not show it
// running.
struct run_continuing {
  std::string run_id;
  std::string session_id;
  std::vector<storage::waiting_question> waiting;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_continuing& x) {
  return f(caf::meta::type_name("run_continuing"), x.run_id, x.session_id, x.waiting);
}

// A delta or event of a run that has no queue of its own (see
// send_run_output); a live run's output goes through its queue instead.
struct run_delta {
  std::string run_id;
  std::string text;
  double at = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_delta& x) {
  return f(caf::meta::type_name("run_delta"), x.run_id, x.text, x.at);
}

struct run_event {
  std::string run_id;
  std::string body; // JSON object text
  double at = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_event& x) {
  return f(caf::meta::type_name("run_event"), x.run_id, x.body, x.at);
}

// A live run's queue (run_output.hpp) went from empty to not: the writer
// takes everything in it.
struct run_output_queued {
  std::string run_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_output_queued& x) {
  return f(caf::meta::type_name("run_output_queued"), x.run_id);
}

// A run's terminal status: the writer answers true once it is committed
// (held and written later while the log is unwritable).
struct run_end {
  std::string run_id;
  std::string status;
  std::string result; // JSON text; empty: none
  bool has_error = false;
  std::string error;
  double ended_at = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_end& x) {
  return f(caf::meta::type_name("run_end"), x.run_id, x.status, x.result, x.has_error, x.error, x.ended_at);
}

// A session's row, written as it stands (history_known false keeps the
// stored history). Its history, when the session sends it, is the session's
// own text shared, not a copy: a long conversation is held once while it is
// written (`row.history` is then not used). Not answered.
struct session_put {
  storage::session_row row;
  std::shared_ptr<const std::string> history;

  const std::string& history_text() const { return history ? *history : row.history; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_put& x) {
  // Inspected (a local send never is), the shared text becomes the row's own:
  // history_text() reads the same, and one field list serves both ways.
  if (x.history) {
    x.row.history = *x.history;
    x.history.reset();
  }
  auto& r = x.row;
  return f(caf::meta::type_name("session_put"), r.session_id, r.created_at, r.last_used_at, r.config, r.history,
           r.history_known, r.message_count, r.destroyed);
}

// Answered true once everything sent before it is committed (held while the
// log is unwritable).
struct log_flush {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_flush&) {
  return f(caf::meta::type_name("log_flush"));
}

// main -> writer on stop: commit everything (and fold the WAL into the
// database file when `fold_wal`). Answered true only once all of it is
// written; an error (with what is left unwritten) otherwise, and the daemon
// then exits non-zero.
struct final_flush {
  bool fold_wal = true;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, final_flush& x) {
  return f(caf::meta::type_name("final_flush"), x.fold_wal);
}

// -- the writer's notices ------------------------------------------------------

// The sender hears of every commit from now on (the broker, for long-polls
// and subscriptions): a log_committed each.
struct log_watch {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_watch&) {
  return f(caf::meta::type_name("log_watch"));
}

// What one commit added to a live run: its deltas and events in the order
// written, and the run's counts once committed. A follower whose cursors
// stand where the commit began is answered from it without reading the log
// back: at 64 streaming sessions that read (a message to a reader, SQLite,
// a message back) cost more than the rest of a delta's way to a client.
struct run_tail {
  std::string run_id;
  int64_t delta_count = 0; // the run's, with this commit
  int64_t event_count = 0; // (a delta counts as an event too: its stream.delta)
  // Delta texts and event bodies in order, one after another in `text`
  // (each `sizes` long): one buffer a run, not a string a delta. At 64
  // streaming sessions a string a delta cost the writer thread about 15 %
  // of the daemon's CPU in copies and vector growth.
  std::string text;
  std::vector<uint32_t> sizes;
  std::string kinds; // one per text: 'd' a delta, 'e' an event

  void add(char kind, std::string_view piece) {
    text.append(piece);
    sizes.push_back(static_cast<uint32_t>(piece.size()));
    kinds.push_back(kind);
  }
  size_t items() const { return sizes.size(); }
  int64_t delta_from() const { return delta_count - std::count(kinds.begin(), kinds.end(), 'd'); }
  int64_t event_from() const { return event_count - static_cast<int64_t>(sizes.size()); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_tail& x) {
  return f(caf::meta::type_name("run_tail"), x.run_id, x.delta_count, x.event_count, x.text, x.sizes, x.kinds);
}

// A run's end as a commit wrote it, told when it is small (a result and
// an error under a notice's bound), so that the poll that sees the run done
// is answered from memory too. The counts are the run's, whole.
struct run_ending {
  std::string run_id;
  int64_t delta_count = 0;
  int64_t event_count = 0;
  std::string status;
  bool has_result = false;
  std::string result; // JSON text
  bool has_error = false;
  std::string error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_ending& x) {
  return f(caf::meta::type_name("run_ending"), x.run_id, x.delta_count, x.event_count, x.status, x.has_result,
           x.result, x.has_error, x.error);
}

// The runs a commit touched, each with its session (sessions[i] is the
// session of runs[i]), and for some of them (small commits of live runs)
// what it added and, for small ends, how the run ended. A run without a
// tail or an ending was touched in a way only a read shows (a big end, too
// much text, a write that was retried). Runs retention pruned are told
// too, so that no copy in memory outlives what the log holds.
struct log_committed {
  std::vector<std::string> runs;
  std::vector<std::string> sessions;
  std::vector<run_tail> tails;
  std::vector<run_ending> endings;
  std::vector<std::string> pruned;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_committed& x) {
  return f(caf::meta::type_name("log_committed"), x.runs, x.sessions, x.tails, x.endings, x.pruned);
}

// broker -> writer; answered with a log_health.
struct log_health_query {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_health_query&) {
  return f(caf::meta::type_name("log_health_query"));
}

struct log_health {
  int64_t commits = 0;
  int64_t rows = 0;
  double last_commit_ms = 0;
  double max_commit_ms = 0;
  // Degraded: the last write failed (disk full, log unwritable); what was
  // not committed is held until a retry writes it.
  bool degraded = false;
  std::string reason;        // the failure, as SQLite gave it
  double degraded_since = 0; // wall clock seconds
  int64_t held_operations = 0;
  int64_t held_bytes = 0;
  int64_t failed_runs = 0; // runs ended as errors because their output could not be held
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_health& x) {
  return f(caf::meta::type_name("log_health"), x.commits, x.rows, x.last_commit_ms, x.max_commit_ms,
           x.degraded, x.reason, x.degraded_since, x.held_operations, x.held_bytes, x.failed_runs);
}

// Adds what the integrity check after start found wrong with the log
// (storage::damage_found_after_start) to `h` as a degraded state with its
// reason: writes go on, but an operator must see it in `health`, not only on
// stderr. A write failure's reason comes first when both hold.
void add_damage_found(log_health& h);

class log_batches;
// The writer's log as `health` reports it: its commits, whether a write
// failed and what is held, and the damage found after start.
log_health health_of(const log_batches& batches);

// -- readers -------------------------------------------------------------------

// get_output and followers' reads, answered with an output_reply. max_bytes
// 0: everything from the cursors on; else a bounded read (see
// log_reader::read_run).
struct output_query {
  std::string run_id;
  int64_t cursor = 0;
  int64_t event_cursor = 0;
  bool include_output = true;
  int64_t max_bytes = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, output_query& x) {
  return f(caf::meta::type_name("output_query"), x.run_id, x.cursor, x.event_cursor, x.include_output,
           x.max_bytes);
}

// A read answered as a response line, plus what a waiting client needs to
// know: whether it carries anything new, where the cursors now stand, and
// whether the run is over. Errors count as news and as the end.
struct output_reply {
  std::string line;
  bool news = true;
  int64_t cursor = 0;
  int64_t event_cursor = 0;
  bool done = true;
  bool more = false; // a bounded read stopped early: more is in the log already
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, output_reply& x) {
  return f(caf::meta::type_name("output_reply"), x.line, x.news, x.cursor, x.event_cursor, x.done, x.more);
}

// get_result: answered with the response line.
struct result_query {
  std::string run_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, result_query& x) {
  return f(caf::meta::type_name("result_query"), x.run_id);
}

// A session's stored history: answered with its JSON array text ("[]" when
// none), or an error when the log cannot be read.
struct history_query {
  std::string session_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, history_query& x) {
  return f(caf::meta::type_name("history_query"), x.session_id);
}

// -- timers the log actors send themselves ---------------------------------------

struct commit_due {};     // writer: the mailbox ahead of it is applied, commit
struct retry_due {};      // writer: try the held operations again
struct prune_due {};      // writer: the next retention step
struct checkpoint_due {}; // checkpointer: look at the WAL again

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, commit_due&) {
  return f(caf::meta::type_name("commit_due"));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, retry_due&) {
  return f(caf::meta::type_name("retry_due"));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prune_due&) {
  return f(caf::meta::type_name("prune_due"));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_due&) {
  return f(caf::meta::type_name("checkpoint_due"));
}

inline void add_log_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<run_opening>("hb::run_opening")
    .add_message_type<run_delta>("hb::run_delta")
    .add_message_type<run_continuing>("hb::run_continuing")
    .add_message_type<storage::continued_run>("hb::continued_run")
    .add_message_type<run_event>("hb::run_event")
    .add_message_type<run_output_queued>("hb::run_output_queued")
    .add_message_type<run_end>("hb::run_end")
    .add_message_type<session_put>("hb::session_put")
    .add_message_type<log_flush>("hb::log_flush")
    .add_message_type<final_flush>("hb::final_flush")
    .add_message_type<log_watch>("hb::log_watch")
    .add_message_type<run_tail>("hb::run_tail")
    .add_message_type<run_ending>("hb::run_ending")
    .add_message_type<log_committed>("hb::log_committed")
    .add_message_type<log_health_query>("hb::log_health_query")
    .add_message_type<log_health>("hb::log_health")
    .add_message_type<output_query>("hb::output_query")
    .add_message_type<output_reply>("hb::output_reply")
    .add_message_type<result_query>("hb::result_query")
    .add_message_type<history_query>("hb::history_query")
    .add_message_type<commit_due>("hb::commit_due")
    .add_message_type<retry_due>("hb::retry_due")
    .add_message_type<prune_due>("hb::prune_due")
    .add_message_type<checkpoint_due>("hb::checkpoint_due");
}

} // namespace hb::actors
