#include "storage/log_verify.hpp"

#include "protocol/json_text.hpp"
#include "protocol/names.hpp"
#include "protocol/wire_error.hpp"
#include "storage/delta_rows.hpp"
#include "storage/log_file.hpp"
#include "storage/log_rows.hpp"
#include "storage/run_events.hpp"
#include "storage/schema.hpp"

#include <functional>
#include <map>
#include <set>
#include <unordered_map>

namespace hb::storage {

using protocol::json;

namespace {

// A run's end is stamped after its last event; allow for clock rounding.
constexpr double end_slack_s = 1e-3;

class checker {
public:
  checker(SQLite::Database& db, verify_report& report) : db_(db), report_(report) {}

  void problem(std::string table, std::string run_id, std::optional<int64_t> seq, std::string what) {
    if (report_.problems.size() >= max_problems) {
      ++report_.problems_left_out;
      return;
    }
    report_.problems.push_back({std::move(table), std::move(run_id), seq, std::move(what)});
  }

  // One check; damage that stops it (a malformed page) is reported, and the
  // other checks still run.
  void step(const char* table, const std::function<void()>& check) {
    try {
      check();
    } catch (const std::exception& e) {
      problem(table, "", std::nullopt, std::string("cannot read ") + table + ": " + e.what());
    }
  }

  std::string run_id(int64_t run_no) {
    auto it = run_ids_.find(run_no);
    return it == run_ids_.end() ? "run_no " + std::to_string(run_no) : it->second;
  }
  bool has_run(int64_t run_no) const { return run_ids_.count(run_no) > 0; }

  void schema() {
    report_.schema_version = stored_schema_version(db_);
    if (report_.schema_version == 0)
      problem("meta", "", std::nullopt, "no schema_version: not an event log, or its meta table is gone");
    else if (report_.schema_version > schema_version)
      problem("meta", "", std::nullopt,
              "schema version " + std::to_string(report_.schema_version) + " is newer than this hermes-bridge (" +
                std::to_string(schema_version) + "): checked as far as this build knows it");
    for (const char* table : {"meta", "sessions", "runs", "deltas", "events"})
      if (!db_.tableExists(table))
        problem(table, "", std::nullopt, std::string("table ") + table + " is missing");
    for (const char* table : {"deltas", "events"}) {
      if (!db_.tableExists(table))
        continue;
      SQLite::Statement pk(db_, std::string("SELECT count(*) FROM pragma_table_info('") + table +
                                  "') WHERE pk > 0 AND name IN ('run_no', 'seq')");
      pk.executeStep();
      if (pk.getColumn(0).getInt() != 2)
        problem(table, "", std::nullopt,
                std::string("table ") + table + " lost its primary key (run_no, seq): nothing stops duplicates");
    }
  }

  void integrity() {
    std::string verdict;
    try {
      SQLite::Statement q(db_, "PRAGMA integrity_check");
      while (q.executeStep()) {
        std::string line = q.getColumn(0).getString();
        if (line != "ok")
          problem("sqlite", "", std::nullopt, "integrity_check: " + line);
        verdict += (verdict.empty() ? "" : "; ") + line;
      }
    } catch (const std::exception& e) {
      problem("sqlite", "", std::nullopt, std::string("integrity_check stopped: ") + e.what());
      verdict += (verdict.empty() ? "" : "; ") + std::string(e.what());
    }
    report_.integrity = verdict.empty() ? "no verdict" : verdict;
  }

  void runs() {
    bool has_pruned = column_exists("runs", "pruned_at");
    SQLite::Statement q(db_, std::string("SELECT run_no, run_id, session_id, status, ended_at, result, ") +
                               (has_pruned ? "pruned_at" : "NULL") + " FROM runs ORDER BY run_no");
    struct run_facts {
      std::string session;
      bool running;
      bool ended;
    };
    std::vector<std::pair<int64_t, run_facts>> order;
    while (q.executeStep()) {
      int64_t run_no = q.getColumn(0).getInt64();
      std::string id = q.getColumn(1).getString(), status = q.getColumn(3).getString();
      run_ids_[run_no] = id;
      ++report_.runs;
      bool ended = !q.getColumn(4).isNull();
      if (!q.getColumn(4).isNull())
        ended_at_[run_no] = q.getColumn(4).getDouble();
      if (status == "running") {
        ++report_.live_runs;
        live_.insert(run_no);
        if (ended || !q.getColumn(5).isNull())
          problem("runs", id, std::nullopt,
                  "status is 'running' but the run has an end (ended_at or result): its terminal status is lost");
      } else if (is_run_status(status)) {
        if (!ended)
          problem("runs", id, std::nullopt, "status '" + status + "' without ended_at");
      } else {
        problem("runs", id, std::nullopt, "unknown status '" + status + "'");
      }
      order.push_back({run_no, run_facts{q.getColumn(2).getString(), status == "running", ended}});
    }
    // A session runs one turn at a time: a run still 'running' after a later
    // run of its session finished never got its terminal status.
    std::map<std::string, int64_t> later_finished; // session -> a finished run after the one looked at
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      auto& [run_no, facts] = *it;
      if (facts.running && later_finished.count(facts.session))
        problem("runs", run_id(run_no), std::nullopt,
                "still 'running' although run " + run_id(later_finished[facts.session]) +
                  " of its session started and finished after it: its terminal status is missing");
      if (!facts.running && facts.ended)
        later_finished[facts.session] = run_no;
    }
  }

  // In `deltas` seq runs 0, 1, 2, ... in every run, a row at seq holding
  // deltas seq .. seq + n - 1 (one before version 6); in `events` it only
  // rises, the seqs it skips being the deltas' (run_events.hpp).
  void sequences(const char* table, int64_t& count) {
    bool contiguous = std::string(table) == "deltas";
    std::string span = contiguous && column_exists("deltas", "n") ? "n" : "1";
    // `next`: the first seq the rows before leave for this one (the highest
    // end among them: a row may hold the seqs of several after it).
    SQLite::Statement q(db_, "SELECT run_no, seq, next, at FROM (SELECT run_no, seq, at, max(seq + " + span +
                               ") OVER (PARTITION BY run_no ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND"
                               " 1 PRECEDING) AS next FROM " + table + ") WHERE " +
                               (contiguous ? "(next IS NULL AND seq != 0) OR (next IS NOT NULL AND seq != next)"
                                           : "seq < next"));
    while (q.executeStep()) {
      int64_t run_no = q.getColumn(0).getInt64(), seq = q.getColumn(1).getInt64();
      if (q.getColumn(2).isNull()) {
        problem(table, run_id(run_no), seq, "the run's first row has seq " + std::to_string(seq) + ", not 0");
        continue;
      }
      int64_t next = q.getColumn(2).getInt64();
      if (seq < next)
        problem(table, run_id(run_no), seq,
                span == "1" ? "duplicate seq " + std::to_string(seq)
                            : "seq " + std::to_string(seq) + " is already held by an earlier row (up to " +
                                std::to_string(next - 1) + ")");
      else
        problem(table, run_id(run_no), seq,
                "gap: seq " + std::to_string(next) +
                  (seq - next > 1 ? " to " + std::to_string(seq - 1) : std::string()) + " missing");
    }
    if (span == "n")
      packed_rows();
    SQLite::Statement per_run(db_, "SELECT run_no, sum(" + span + "), max(at), count(*) FROM " + std::string(table) +
                                     " GROUP BY run_no");
    while (per_run.executeStep()) {
      // Deltas or events (a row of `deltas` may hold several).
      int64_t run_no = per_run.getColumn(0).getInt64(), items = per_run.getColumn(1).getInt64();
      count += items;
      if (!has_run(run_no)) {
        problem(table, run_id(run_no), std::nullopt,
                std::to_string(per_run.getColumn(3).getInt64()) + " orphan row(s): no run with run_no " +
                  std::to_string(run_no));
        continue;
      }
      auto end = ended_at_.find(run_no);
      if (end != ended_at_.end() && per_run.getColumn(2).getDouble() > end->second + end_slack_s)
        problem(table, run_id(run_no), std::nullopt,
                "rows written after the run's terminal status (ended_at): the status was not written with its "
                "last events");
      if (contiguous)
        delta_counts_[run_no] = items;
    }
  }

  // A row of several deltas splits into exactly n texts by its sizes; a
  // row of one has none.
  void packed_rows() {
    SQLite::Statement q(db_, "SELECT run_no, seq, n, text, sizes FROM deltas WHERE n != 1 OR sizes IS NOT NULL");
    std::vector<std::string_view> pieces;
    while (q.executeStep()) {
      int64_t run_no = q.getColumn(0).getInt64(), seq = q.getColumn(1).getInt64(), n = q.getColumn(2).getInt64();
      if (n < 1)
        problem("deltas", run_id(run_no), seq, "a row of " + std::to_string(n) + " deltas");
      else if (!split_delta_row(column_bytes(q, 3), column_bytes(q, 4), n, pieces))
        problem("deltas", run_id(run_no), seq,
                "the row's sizes do not split its text into its " + std::to_string(n) + " deltas");
    }
  }

  // Every event seq holds an event row or a delta: the seqs `events` skips
  // are exactly as many as the run's deltas, up to its last row. A log
  // from before version 5 has a stream.delta row for every delta instead.
  void event_slots() {
    SQLite::Statement q(db_, "SELECT run_no, count(*), sum(" HB_STREAM_DELTA_ROW "), max(seq)"
                             " FROM events GROUP BY run_no");
    bool rows_for_deltas = report_.schema_version < 5;
    std::set<int64_t> seen;
    while (q.executeStep()) {
      int64_t run_no = q.getColumn(0).getInt64(), rows = q.getColumn(1).getInt64();
      int64_t delta_rows = q.getColumn(2).getInt64(), last = q.getColumn(3).getInt64();
      seen.insert(run_no);
      if (!has_run(run_no))
        continue;
      auto found = delta_counts_.find(run_no);
      int64_t deltas = found == delta_counts_.end() ? 0 : found->second;
      if (rows_for_deltas && delta_rows != deltas)
        problem("deltas", run_id(run_no), std::nullopt,
                std::to_string(deltas) + " deltas but " + std::to_string(delta_rows) + " stream.delta events");
      if (!rows_for_deltas && delta_rows > 0)
        problem("events", run_id(run_no), std::nullopt,
                std::to_string(delta_rows) + " stream.delta event row(s): since schema version 5 a delta's text "
                                             "is kept once, in deltas");
      int64_t slots = rows - delta_rows + deltas;
      if (last >= slots)
        problem("events", run_id(run_no), last,
                "gap: " + std::to_string(last + 1 - slots) + " event seq(s) up to " + std::to_string(last) +
                  " hold neither an event nor a delta");
    }
    if (rows_for_deltas)
      for (const auto& [run_no, deltas] : delta_counts_)
        if (has_run(run_no) && !seen.count(run_no))
          problem("deltas", run_id(run_no), std::nullopt, std::to_string(deltas) + " deltas but 0 stream.delta events");
  }

  // Questions: every resolution answers a request of its run, once; a
  // finished run leaves none open (recovery settles a crashed one's).
  // bridge.recovered, a recovered run's last word, comes once and last.
  void questions_and_endings() {
    SQLite::Statement q(db_, "SELECT run_no, seq, body FROM events WHERE body LIKE '{\"event\": \"approval.%' "
                             "OR body LIKE '{\"event\": \"bridge.recovered\"%' ORDER BY run_no, seq");
    int64_t current = -1;
    std::map<std::string, int64_t> open; // approval id -> seq asked
    std::set<std::string> settled;
    int64_t recovered_at = -1;
    auto close_run = [&]() {
      if (current < 0 || !has_run(current))
        return;
      if (!live_.count(current))
        for (const auto& [id, seq] : open)
          problem("events", run_id(current), seq,
                  "approval " + id + " was asked and never resolved, yet the run finished");
      if (recovered_at >= 0 && live_.count(current))
        problem("runs", run_id(current), std::nullopt,
                "still 'running' although recovery settled it (bridge.recovered at seq " + std::to_string(recovered_at) +
                  "): its terminal status is missing");
      if (recovered_at >= 0) {
        if (run_events(db_).count(current) != recovered_at + 1)
          problem("events", run_id(current), recovered_at, "events after bridge.recovered, which ends a run");
      }
    };
    while (q.executeStep()) {
      int64_t run_no = q.getColumn(0).getInt64(), seq = q.getColumn(1).getInt64();
      if (run_no != current) {
        close_run();
        current = run_no;
        open.clear();
        settled.clear();
        recovered_at = -1;
      }
      json ev = json::parse(q.getColumn(2).getString(), nullptr, false);
      if (!ev.is_object()) {
        problem("events", run_id(run_no), seq, "body is not a JSON object");
        continue;
      }
      std::string name = ev.value("event", ""), id = ev.value("approval_id", "");
      if (name == "approval.requested") {
        open[id] = seq;
      } else if (name == "approval.resolved") {
        if (settled.count(id))
          problem("events", run_id(run_no), seq, "approval " + id + " resolved twice");
        else if (!open.count(id))
          problem("events", run_id(run_no), seq, "orphan approval.resolved: approval " + id + " was never asked");
        open.erase(id);
        settled.insert(id);
      } else if (name == "bridge.recovered") {
        if (recovered_at >= 0)
          problem("events", run_id(run_no), seq, "a second bridge.recovered (the run was settled twice)");
        recovered_at = seq;
      }
    }
    close_run();
  }

  void sessions() {
    SQLite::Statement q(db_, "SELECT session_id, config, history, message_count FROM sessions");
    while (q.executeStep()) {
      ++report_.sessions;
      std::string id = q.getColumn(0).getString();
      json history = json::parse(q.getColumn(2).getString(), nullptr, false);
      if (!history.is_array())
        problem("sessions", id, std::nullopt, "history is not a JSON array");
      else if (static_cast<int64_t>(history.size()) != q.getColumn(3).getInt64())
        problem("sessions", id, std::nullopt,
                "message_count " + std::to_string(q.getColumn(3).getInt64()) + " but history holds " +
                  std::to_string(history.size()) + " messages");
      json config = json::parse(q.getColumn(1).getString(), nullptr, false);
      if (!config.is_object()) {
        problem("sessions", id, std::nullopt, "config is not a JSON object");
        continue;
      }
      if (config.contains("profile") && config["profile"].is_string()) {
        try {
          protocol::check_profile_name(config["profile"].get<std::string>());
        } catch (const protocol::wire_error& e) {
          problem("sessions", id, std::nullopt, e.what());
        }
      }
    }
  }

private:
  bool column_exists(const char* table, const char* column) {
    SQLite::Statement q(db_, std::string("SELECT 1 FROM pragma_table_info('") + table + "') WHERE name=?");
    q.bind(1, column);
    return q.executeStep();
  }

  SQLite::Database& db_;
  verify_report& report_;
  std::unordered_map<int64_t, std::string> run_ids_;
  std::unordered_map<int64_t, double> ended_at_;
  std::unordered_map<int64_t, int64_t> delta_counts_;
  std::set<int64_t> live_;
};

} // namespace

verify_report verify_log(SQLite::Database& db) {
  verify_report report;
  checker check(db, report);
  std::unique_ptr<SQLite::Transaction> snapshot;
  try {
    snapshot = std::make_unique<SQLite::Transaction>(db, SQLite::TransactionBehavior::DEFERRED);
  } catch (const std::exception& e) {
    check.problem("sqlite", "", std::nullopt, std::string("cannot begin a read: ") + e.what());
  }
  auto exists = [&](const char* table) {
    try {
      return db.tableExists(table);
    } catch (const std::exception&) {
      return false; // the schema itself is unreadable: integrity_check says why
    }
  };
  check.step("meta", [&] { check.schema(); });
  check.step("sqlite", [&] { check.integrity(); });
  if (!exists("runs"))
    return report;
  check.step("runs", [&] { check.runs(); });
  if (exists("deltas"))
    check.step("deltas", [&] { check.sequences("deltas", report.deltas); });
  if (exists("events"))
    check.step("events", [&] { check.sequences("events", report.events); });
  if (exists("deltas") && exists("events")) {
    check.step("events", [&] { check.event_slots(); });
    check.step("events", [&] { check.questions_and_endings(); });
  }
  if (exists("sessions"))
    check.step("sessions", [&] { check.sessions(); });
  return report;
}

} // namespace hb::storage
