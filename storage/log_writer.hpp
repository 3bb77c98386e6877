// The only writer of the event log. Appends go into one open transaction;
// commit() makes everything since the last commit visible at once, which is
// what lets the caller batch (group commit) and what makes a run's terminal
// status arrive together with its last events.
#pragma once

#include "storage/log_rows.hpp"
#include "storage/recovery.hpp"

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hb::storage {

// A run taken up again (log_writer::continue_run).
struct continued_run {
  uint64_t host_seq = 0;                   // the worker's frames up to this seq are in the log
  std::vector<reopened_question> reopened; // questions still open, with their ids
};

struct writer_options {
  // "NORMAL" survives a process crash (kill -9) in WAL mode; "FULL" also an
  // OS crash or power loss, at the price of an fsync per commit.
  std::string synchronous = "NORMAL";
  // SQLite's default: the committing connection checkpoints the WAL (and
  // fsyncs) every 1000 pages. The daemon turns it off and checkpoints from
  // its own connection instead, off the commit path.
  bool checkpoint_on_commit = true;
};

class log_writer {
public:
  log_writer(const std::string& path, const writer_options& options = {});

  // `user_message`: the turn's message as JSON text (a string or content
  // blocks); empty for runs that have none (replays).
  void open_run(const std::string& run_id, const std::string& session_id, double started_at,
                const std::string& user_message = {});
  // Returns false for a run that is not open (late callbacks after its end).
  // `host_seq`: the seq of the host's frame that carried the row's output (0:
  // not numbered), written with the row; a daemon that re-attaches to the
  // host after a restart asks for the frames after the highest (logged_host_seq).
  bool append_delta(const std::string& run_id, const std::string& text, double at, uint64_t host_seq = 0);
  // Deltas that follow each other, in as few rows as max_delta_row_bytes
  // allows (delta_rows.hpp); each row is stamped with its last delta's time.
  bool append_deltas(const std::string& run_id, const std::vector<timed_text>& deltas);
  static constexpr size_t max_delta_row_bytes = 1 << 20;
  bool append_event(const std::string& run_id, const std::string& body, double at, uint64_t host_seq = 0);
  // For `import`: an event at the seq the exported log gave it (the seqs
  // between are its deltas').
  bool put_imported_event(const std::string& run_id, int64_t seq, const std::string& body, double at);
  void close_run(const std::string& run_id, std::string_view status,
                 const std::optional<std::string>& result,
                 const std::optional<std::string>& error, double ended_at);
  void put_session(const session_row& row) { put_session(row, row.history); }
  // The same with the history held apart from the row (a session's, shared).
  void put_session(const session_row& row, const std::string& history);
  // Takes up a run a previous daemon opened and left running (its turn went
  // on in a worker): appends continue its sequences; of the questions it
  // left open, those its agent still waits on (`waiting`, as the worker
  // reports them) stay open and come back paired with their ids, the rest
  // are settled (recovery.hpp) in the open transaction. Nothing when the
  // log does not show the run running.
  std::optional<continued_run> continue_run(const std::string& run_id, double now,
                                            const std::vector<waiting_question>& waiting = {});
  // For `import`: the run row as another log had it (its status, result,
  // error and end already), open for its deltas and events to be appended
  // until this writer goes.
  void put_imported_run(const run_row& row);

  // Commits the open transaction, if any. Returns the number of rows it held.
  size_t commit();
  // Throws away the open transaction (after a failed statement or commit),
  // and with it what that transaction did to the runs' sequence counters.
  void rollback();
  size_t pending_rows() const { return pending_rows_; }
  // An open run's counts, its open transaction's appends included: its
  // deltas, and its events (a delta counts as its stream.delta event).
  // Nothing for a run that is not open here.
  struct run_counts {
    int64_t deltas;
    int64_t events;
  };
  std::optional<run_counts> counts(const std::string& run_id) const;

  // SQLite keeps a copy of every value bound to a prepared statement until
  // it is bound again: the statement that stored a run's result (its whole
  // output twice: final_response and the messages) and the one that stored
  // the session's history kept about 3x the run's output for as long as the
  // daemon lived (160 MB after a 50 MB flood). Every statement of the writer
  // binds all its parameters before each use, so after a big row they can
  // all let go.
  void forget_bound_values();
  // Moves the whole WAL into the database file and empties it (on stop, so
  // that a copy of the database file alone holds everything). Throws when
  // SQLite cannot; what is committed stays in the WAL then.
  void fold_wal();

  // For start-up work (recovery, loading sessions) before appends begin.
  SQLite::Database& database() { return db_; }

private:
  struct open_run_state {
    int64_t run_no;
    int64_t next_delta = 0;
    int64_t next_event = 0;
  };
  void begin();
  open_run_state* find(const std::string& run_id);
  void insert_event(open_run_state& run, const std::string& body, double at, uint64_t host_seq = 0);
  void insert_deltas(open_run_state& run, const std::string& text, int64_t n, double at, uint64_t host_seq);
  void write_end(const open_run_state& run, std::string_view status, const std::optional<std::string>& result,
                 const std::optional<std::string>& error, double ended_at);

  SQLite::Database db_;
  std::unique_ptr<SQLite::Statement> insert_run_, insert_delta_, insert_event_, finish_run_,
    upsert_session_, begin_, commit_;
  std::string row_text_, row_sizes_; // a packed delta row being built (reused)
  std::unordered_map<std::string, open_run_state> runs_;
  std::unordered_map<std::string, open_run_state> runs_at_begin_;
  bool in_tx_ = false;
  size_t pending_rows_ = 0;
};

} // namespace hb::storage
