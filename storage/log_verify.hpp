// `hermes-bridge verify`: reads an event log and names every way it breaks
// the invariants FORMAT.md promises (sequence numbers, terminal statuses,
// orphan rows, questions left open, SQLite's own integrity), so damage is
// found by a check instead of by a client that gets the wrong bytes.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hb::storage {

struct log_problem {
  std::string table;   // meta, sessions, runs, deltas, events, or sqlite (integrity_check)
  std::string run_id;  // or the session id for table sessions; empty when no row is named
  std::optional<int64_t> seq;
  std::string what;
};

struct verify_report {
  int schema_version = 0;
  std::string integrity = "ok"; // integrity_check's verdict
  int64_t sessions = 0, runs = 0, deltas = 0, events = 0;
  int64_t live_runs = 0; // 'running': live, or left by a crash for the next start to settle
  std::vector<log_problem> problems;
  int64_t problems_left_out = 0; // beyond max_problems
  bool healthy() const { return problems.empty() && problems_left_out == 0; }
};

constexpr size_t max_problems = 1000;

// Reads inside one read transaction, so a daemon writing meanwhile cannot
// make a healthy log look torn. Never throws for damage: what cannot be
// read is a problem too.
verify_report verify_log(SQLite::Database& db);

} // namespace hb::storage
