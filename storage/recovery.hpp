// What a crash left open, settled once at start-up before any client is
// served: runs that were live become `interrupted`, questions they were
// waiting on are answered (approvals denied, compression failed), each with
// an event saying why, and the turn each was running stays in its session's
// history. Only live runs are read, so the work does not grow
// with the size of the log.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace hb::storage {

struct recovery_report {
  int64_t runs_interrupted = 0;
  int64_t approvals_denied = 0;
  int64_t compressions_failed = 0;
  int64_t turns_kept = 0; // cut turns added to their session's history (cut_turn.hpp)
};

// The reason written into recovered runs and their events.
extern const char* const restart_reason;

// The events that settle a run's questions still open in the log (asked,
// never resolved), each as the daemon's restart settles it: approvals
// denied, compressions failed, clarifications unanswered, with the reason.
// Counted into `report` when given. Those named in `still_open` are left:
// their agents still wait for an answer (match_waiting_questions).
std::vector<std::string> settle_open_questions(SQLite::Database& db, int64_t run_no,
                                               recovery_report* report = nullptr,
                                               const std::set<std::string>& still_open = {});

// A question a worker that outlived its daemon reports its agent still
// waiting on: the worker's number for it, its kind ("approval", "gateway",
// "compression", "clarify") and the request the agent asked it with.
struct waiting_question {
  uint64_t ask = 0;
  std::string kind;
  std::string request;
};

// A waiting question the log already announced, under the id it has there.
struct reopened_question {
  uint64_t ask = 0;
  std::string id;
  double due_at = 0; // when its deadline as announced runs out (seconds since the epoch; 0: none announced)
};

// Pairs each waiting question with the open question of the log that
// announced it (same topic, same request, in the order asked); a waiting
// question the log never announced stays unpaired.
std::vector<reopened_question> match_waiting_questions(SQLite::Database& db, int64_t run_no,
                                                       const std::vector<waiting_question>& waiting);

// How far a host's numbered output for the run is in the log: the highest
// host_seq of its rows, or of its runs row for output logged before version
// 7 (which kept it there).
uint64_t logged_host_seq(SQLite::Database& db, int64_t run_no);

// A live run left `running` because its turn goes on in a worker that
// outlived the last daemon (bridge/worker/FRAMES.md, re-attaching).
struct continuing_run {
  std::string session_id;
  uint64_t host_seq = 0; // the worker's frames up to this seq are in the log
};

// `continuing`: runs whose turns are still live somewhere; those of them the
// log shows as running are left so, and come back in `kept`.
recovery_report recover_open_runs(SQLite::Database& db, double now, const std::set<std::string>& continuing = {},
                                  std::map<std::string, continuing_run>* kept = nullptr);

// The ids of the questions the log shows asked and not settled in these
// runs: those a continued run may open again (match_waiting_questions).
std::set<std::string> open_question_ids(SQLite::Database& db, const std::set<std::string>& run_ids);

// PRAGMA quick_check's verdict: "ok", or what is wrong.
std::string check_integrity(SQLite::Database& db);

} // namespace hb::storage
