// What a crash left open, settled once at start-up before any client is
// served: runs that were live become `interrupted`, questions they were
// waiting on are answered (approvals denied, compression failed), each with
// an event saying why, and the turn each was running stays in its session's
// history. Only live runs are read, so the work does not grow
// with the size of the log.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <string>

namespace hb::storage {

struct recovery_report {
  int64_t runs_interrupted = 0;
  int64_t approvals_denied = 0;
  int64_t compressions_failed = 0;
  int64_t turns_kept = 0; // cut turns added to their session's history (cut_turn.hpp)
};

// The reason written into recovered runs and their events.
extern const char* const restart_reason;

recovery_report recover_open_runs(SQLite::Database& db, double now);

// PRAGMA quick_check's verdict: "ok", or what is wrong.
std::string check_integrity(SQLite::Database& db);

} // namespace hb::storage
