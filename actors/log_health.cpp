// What `health` says about the log: the writer's commits and, when the log
// is unwritable or damaged, why.
#include "actors/log_batches.hpp"
#include "actors/log_messages.hpp"

#include "storage/log_startup.hpp"

namespace hb::actors {

void add_damage_found(log_health& h) {
  auto damage = storage::damage_found_after_start();
  if (!damage)
    return;
  if (!h.degraded) {
    h.degraded = true;
    h.reason = damage->reason;
    h.degraded_since = damage->at;
  } else {
    h.reason += "; " + damage->reason;
  }
}

log_health health_of(const log_batches& b) {
  log_health h;
  h.commits = b.commits();
  h.rows = b.rows();
  h.last_commit_ms = b.last_commit_ms();
  h.max_commit_ms = b.max_commit_ms();
  h.degraded = b.degraded();
  h.reason = b.degraded() ? b.failure() : std::string();
  h.degraded_since = b.degraded() ? b.degraded_since() : 0;
  add_damage_found(h);
  h.held_operations = static_cast<int64_t>(b.held_operations());
  h.held_bytes = static_cast<int64_t>(b.held_bytes());
  h.failed_runs = b.failed_runs();
  return h;
}

} // namespace hb::actors
