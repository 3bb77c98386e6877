// Typed messages of the log writer that are not a run's output: how the log
// is doing (for `health`) and the final flush on stop. One struct per kind
// with an inspect() overload, so they could cross a process.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>

namespace hb::actors {

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

inline void add_log_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<log_health_query>("hb::log_health_query")
    .add_message_type<log_health>("hb::log_health")
    .add_message_type<final_flush>("hb::final_flush");
}

} // namespace hb::actors
